// Dispatch of the backend operations (backend/ops.hpp) on the tensors' device.
#include "hpctrain/backend/ops.hpp"

#include "hpctrain/backend/checks.hpp"
#include "hpctrain/backend/cpu/cpu_ops.hpp"
#include "hpctrain/backend/cuda/cuda_ops.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain {

void gemm(bool trans_a, bool trans_b, float alpha, const Tensor& a, const Tensor& b, float beta, Tensor& c) {
  if (a.device() == Device::cuda) {
    cuda::gemm(trans_a, trans_b, alpha, a, b, beta, c);
    return;
  }
  cpu::gemm(trans_a, trans_b, alpha, a, b, beta, c);
}

void add_bias(Tensor& y, const Tensor& bias) {
  if (y.device() == Device::cuda) {
    cuda::add_bias(y, bias);
    return;
  }
  cpu::add_bias(y, bias);
}

void add_bias_activation(Tensor& y, const Tensor& bias, Activation f, Tensor& z) {
  if (y.device() == Device::cuda) {
    cuda::add_bias_activation(y, bias, f, z);
    return;
  }
  cpu::add_bias_activation(y, bias, f, z);
}

void accumulate_bias_grad(const Tensor& dy, Tensor& db) {
  if (dy.device() == Device::cuda) {
    cuda::accumulate_bias_grad(dy, db);
    return;
  }
  cpu::accumulate_bias_grad(dy, db);
}

void activation_forward(Activation f, const Tensor& x, Tensor& y) {
  if (x.device() == Device::cuda) {
    cuda::activation_forward(f, x, y);
    return;
  }
  cpu::activation_forward(f, x, y);
}

void activation_backward(Activation f, const Tensor& x, const Tensor& dy, Tensor& dx) {
  if (x.device() == Device::cuda) {
    cuda::activation_backward(f, x, dy, dx);
    return;
  }
  cpu::activation_backward(f, x, dy, dx);
}

void copy(const Tensor& src, Tensor& dst) {
  if (src.device() == Device::cuda) {
    cuda::copy(src, dst);
    return;
  }
  cpu::copy(src, dst);
}

void fill(Tensor& t, float value) {
  if (t.device() == Device::cuda) {
    cuda::fill(t, value);
    return;
  }
  cpu::fill(t, value);
}

void scale(Tensor& t, float factor) {
  if (t.device() == Device::cuda) {
    cuda::scale(t, factor);
    return;
  }
  cpu::scale(t, factor);
}

void softmax_cross_entropy(const Tensor& logits, const std::int32_t* labels, Tensor& probs, Tensor& scalars) {
  if (logits.device() == Device::cuda) {
    return cuda::softmax_cross_entropy(logits, labels, probs, scalars);
  }
  cpu::softmax_cross_entropy(logits, labels, probs, scalars);
}

void softmax_cross_entropy_backward(const Tensor& probs, const std::int32_t* labels, float grad_scale,
                                    Tensor& dlogits) {
  if (probs.device() == Device::cuda) {
    cuda::softmax_cross_entropy_backward(probs, labels, grad_scale, dlogits);
    return;
  }
  cpu::softmax_cross_entropy_backward(probs, labels, grad_scale, dlogits);
}

void mean_squared_error(const Tensor& pred, const float* target, Tensor& scalars) {
  if (pred.device() == Device::cuda) {
    return cuda::mean_squared_error(pred, target, scalars);
  }
  cpu::mean_squared_error(pred, target, scalars);
}

void mean_squared_error_backward(const Tensor& pred, const float* target, float grad_scale, Tensor& dpred) {
  if (pred.device() == Device::cuda) {
    cuda::mean_squared_error_backward(pred, target, grad_scale, dpred);
    return;
  }
  cpu::mean_squared_error_backward(pred, target, grad_scale, dpred);
}

std::int64_t count_correct(const Tensor& logits, const std::int32_t* labels) {
  if (logits.device() == Device::cuda) {
    return cuda::count_correct(logits, labels);
  }
  return cpu::count_correct(logits, labels);
}

void sgd_update(Tensor& w, const Tensor& g, Tensor& m, const Tensor& scalars, float momentum, float weight_decay,
                bool nesterov) {
  if (w.device() == Device::cuda) {
    cuda::sgd_update(w, g, m, scalars, momentum, weight_decay, nesterov);
    return;
  }
  cpu::sgd_update(w, g, m, scalars, momentum, weight_decay, nesterov);
}

void adam_update(Tensor& w, const Tensor& g, Tensor& m, Tensor& v, const Tensor& scalars, float beta1, float beta2,
                 float eps, float weight_decay, bool decoupled) {
  if (w.device() == Device::cuda) {
    cuda::adam_update(w, g, m, v, scalars, beta1, beta2, eps, weight_decay, decoupled);
    return;
  }
  cpu::adam_update(w, g, m, v, scalars, beta1, beta2, eps, weight_decay, decoupled);
}

void im2col(const Tensor& x, std::int64_t channels, std::int64_t height, std::int64_t width, std::int64_t kernel,
            std::int64_t stride, std::int64_t pad, std::int64_t cols_ld, Tensor& cols) {
  if (x.device() == Device::cuda) {
    cuda::im2col(x, channels, height, width, kernel, stride, pad, cols_ld, cols);
    return;
  }
  cpu::im2col(x, channels, height, width, kernel, stride, pad, cols_ld, cols);
}

void col2im(const Tensor& cols, std::int64_t channels, std::int64_t height, std::int64_t width, std::int64_t kernel,
            std::int64_t stride, std::int64_t pad, std::int64_t cols_ld, Tensor& dx) {
  if (cols.device() == Device::cuda) {
    cuda::col2im(cols, channels, height, width, kernel, stride, pad, cols_ld, dx);
    return;
  }
  cpu::col2im(cols, channels, height, width, kernel, stride, pad, cols_ld, dx);
}

void add_channel_bias(Tensor& y, const Tensor& bias) {
  if (y.device() == Device::cuda) {
    cuda::add_channel_bias(y, bias);
    return;
  }
  cpu::add_channel_bias(y, bias);
}

void accumulate_channel_bias_grad(const Tensor& dy, Tensor& db) {
  if (dy.device() == Device::cuda) {
    cuda::accumulate_channel_bias_grad(dy, db);
    return;
  }
  cpu::accumulate_channel_bias_grad(dy, db);
}

void maxpool_forward(const Tensor& x, std::int64_t channels, std::int64_t height, std::int64_t width,
                     std::int64_t kernel, std::int64_t stride, Tensor& y, Tensor& argmax) {
  if (x.device() == Device::cuda) {
    cuda::maxpool_forward(x, channels, height, width, kernel, stride, y, argmax);
    return;
  }
  cpu::maxpool_forward(x, channels, height, width, kernel, stride, y, argmax);
}

void maxpool_backward(const Tensor& dy, const Tensor& argmax, Tensor& dx) {
  if (dy.device() == Device::cuda) {
    cuda::maxpool_backward(dy, argmax, dx);
    return;
  }
  cpu::maxpool_backward(dy, argmax, dx);
}

void avgpool_forward(const Tensor& x, std::int64_t height, std::int64_t width, std::int64_t kh, std::int64_t kw,
                     std::int64_t sh, std::int64_t sw, Tensor& y) {
  if (x.device() == Device::cuda) {
    cuda::avgpool_forward(x, height, width, kh, kw, sh, sw, y);
    return;
  }
  cpu::avgpool_forward(x, height, width, kh, kw, sh, sw, y);
}

void avgpool_backward(const Tensor& dy, std::int64_t height, std::int64_t width, std::int64_t kh, std::int64_t kw,
                      std::int64_t sh, std::int64_t sw, Tensor& dx) {
  if (dy.device() == Device::cuda) {
    cuda::avgpool_backward(dy, height, width, kh, kw, sh, sw, dx);
    return;
  }
  cpu::avgpool_backward(dy, height, width, kh, kw, sh, sw, dx);
}

void dropout_forward(const Tensor& x, float p, std::uint64_t layer_key, const std::uint64_t* step_key,
                     const std::int64_t* sample_ids, Tensor& mask, Tensor& y) {
  if (x.device() == Device::cuda) {
    cuda::dropout_forward(x, p, layer_key, step_key, sample_ids, mask, y);
    return;
  }
  cpu::dropout_forward(x, p, layer_key, step_key, sample_ids, mask, y);
}

void multiply(const Tensor& a, const Tensor& b, Tensor& out) {
  if (a.device() == Device::cuda) {
    cuda::multiply(a, b, out);
    return;
  }
  cpu::multiply(a, b, out);
}

void add(const Tensor& a, const Tensor& b, Tensor& out) {
  if (a.device() == Device::cuda) {
    cuda::add(a, b, out);
    return;
  }
  cpu::add(a, b, out);
}

void channel_moments(const Tensor& x, std::int64_t channels, std::int64_t plane, std::vector<double>& sums) {
  if (x.device() == Device::cuda) {
    cuda::channel_moments(x, channels, plane, sums);
    return;
  }
  cpu::channel_moments(x, channels, plane, sums);
}

void batchnorm_grad_sums(const Tensor& x, const Tensor& dy, const std::vector<float>& mean,
                         const std::vector<float>& inv_std, std::int64_t plane, std::vector<double>& sums) {
  if (x.device() == Device::cuda) {
    cuda::batchnorm_grad_sums(x, dy, mean, inv_std, plane, sums);
    return;
  }
  cpu::batchnorm_grad_sums(x, dy, mean, inv_std, plane, sums);
}

void channel_affine(const Tensor& x, const std::vector<float>& a, const std::vector<float>& b, std::int64_t plane,
                    Tensor& y) {
  if (x.device() == Device::cuda) {
    cuda::channel_affine(x, a, b, plane, y);
    return;
  }
  cpu::channel_affine(x, a, b, plane, y);
}

void batchnorm_backward_data(const Tensor& x, const Tensor& dy, const std::vector<float>& mean,
                             const std::vector<float>& inv_std, const std::vector<float>& scale,
                             const std::vector<float>& mean_dy, const std::vector<float>& mean_dyx, std::int64_t plane,
                             Tensor& dx) {
  if (x.device() == Device::cuda) {
    cuda::batchnorm_backward_data(x, dy, mean, inv_std, scale, mean_dy, mean_dyx, plane, dx);
    return;
  }
  cpu::batchnorm_backward_data(x, dy, mean, inv_std, scale, mean_dy, mean_dyx, plane, dx);
}

void round_to_precision(Tensor& t, Precision p) {
  if (t.device() == Device::cuda) {
    cuda::round_to_precision(t, p);
    return;
  }
  cpu::round_to_precision(t, p);
}

double sum_of_squares(const Tensor& t) {
  if (t.device() == Device::cuda) {
    return cuda::sum_of_squares(t);
  }
  return cpu::sum_of_squares(t);
}

GemmDims gemm_dims(bool ta, bool tb, const Tensor& a, const Tensor& b, const Tensor& c) {
  using backend::checked_int;
  const int m = checked_int(ta ? a.cols() : a.rows(), "gemm: rows of the product");
  const int k = checked_int(ta ? a.rows() : a.cols(), "gemm: inner dimension");
  const int kb = checked_int(tb ? b.cols() : b.rows(), "gemm: inner dimension");
  const int n = checked_int(tb ? b.rows() : b.cols(), "gemm: columns of the product");
  checked_int(a.cols(), "gemm: leading dimension of A");
  checked_int(b.cols(), "gemm: leading dimension of B");
  HPCT_CHECK(k == kb && c.rows() == m && c.cols() == n, "gemm shapes " + shape_string(a.shape()) + (ta ? "^T" : "") +
                                                            " x " + shape_string(b.shape()) + (tb ? "^T" : "") +
                                                            " -> " + shape_string(c.shape()));
  return {m, n, k};
}

const std::vector<std::string>& backend_operations() {
  static const std::vector<std::string> names{"gemm",
                                              "add_bias",
                                              "accumulate_bias_grad",
                                              "activation_forward",
                                              "activation_backward",
                                              "copy",
                                              "fill",
                                              "scale",
                                              "softmax_cross_entropy",
                                              "softmax_cross_entropy_backward",
                                              "mean_squared_error",
                                              "mean_squared_error_backward",
                                              "count_correct",
                                              "sgd_update",
                                              "adam_update",
                                              "im2col",
                                              "col2im",
                                              "add_channel_bias",
                                              "accumulate_channel_bias_grad",
                                              "maxpool_forward",
                                              "maxpool_backward",
                                              "avgpool_forward",
                                              "avgpool_backward",
                                              "dropout_forward",
                                              "multiply",
                                              "sum_of_squares",
                                              "round_to_precision",
                                              "add",
                                              "channel_moments",
                                              "batchnorm_grad_sums",
                                              "channel_affine",
                                              "batchnorm_backward_data",
                                              "add_bias_activation"};
  return names;
}

}  // namespace hpctrain
