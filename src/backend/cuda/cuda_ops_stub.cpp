// The CUDA backend's operations in builds without CUDA: each throws a clear
// error naming the operation. With CUDA, cuda_ops.cu and cuda_conv_pool.cu
// implement them.
#include "hpctrain/backend/cuda/cuda_ops.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain::cuda {

namespace {
[[noreturn]] void not_implemented(const char* op) {
  throw Error(
      ExitCode::internal, Scope::this_rank,
      std::string("backend operation '") + op + "' needs the CUDA backend, but hpctrain was built without CUDA");
}
}  // namespace

void gemm(bool, bool, float, const Tensor&, const Tensor&, float, Tensor&) { not_implemented("gemm"); }

void add_bias(Tensor&, const Tensor&) { not_implemented("add_bias"); }

void accumulate_bias_grad(const Tensor&, Tensor&) { not_implemented("accumulate_bias_grad"); }

void add_bias_activation(Tensor&, const Tensor&, Activation, Tensor&) { not_implemented("add_bias_activation"); }

void activation_forward(Activation, const Tensor&, Tensor&) { not_implemented("activation_forward"); }

void activation_backward(Activation, const Tensor&, const Tensor&, Tensor&) { not_implemented("activation_backward"); }

void copy(const Tensor&, Tensor&) { not_implemented("copy"); }

void fill(Tensor&, float) { not_implemented("fill"); }

void scale(Tensor&, float) { not_implemented("scale"); }

void softmax_cross_entropy(const Tensor&, const std::int32_t*, Tensor&, Tensor&) {
  not_implemented("softmax_cross_entropy");
}

void softmax_cross_entropy_backward(const Tensor&, const std::int32_t*, float, Tensor&) {
  not_implemented("softmax_cross_entropy_backward");
}

void mean_squared_error(const Tensor&, const float*, Tensor&) { not_implemented("mean_squared_error"); }

void mean_squared_error_backward(const Tensor&, const float*, float, Tensor&) {
  not_implemented("mean_squared_error_backward");
}

std::int64_t count_correct(const Tensor&, const std::int32_t*) { not_implemented("count_correct"); }

void sgd_update(Tensor&, const Tensor&, Tensor&, const Tensor&, float, float, bool) { not_implemented("sgd_update"); }

void adam_update(Tensor&, const Tensor&, Tensor&, Tensor&, const Tensor&, float, float, float, float, bool) {
  not_implemented("adam_update");
}

void im2col(const Tensor&, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
            std::int64_t, Tensor&) {
  not_implemented("im2col");
}

void col2im(const Tensor&, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
            std::int64_t, Tensor&) {
  not_implemented("col2im");
}

void add_channel_bias(Tensor&, const Tensor&) { not_implemented("add_channel_bias"); }

void accumulate_channel_bias_grad(const Tensor&, Tensor&) { not_implemented("accumulate_channel_bias_grad"); }

void maxpool_forward(const Tensor&, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, Tensor&,
                     Tensor&) {
  not_implemented("maxpool_forward");
}

void maxpool_backward(const Tensor&, const Tensor&, Tensor&) { not_implemented("maxpool_backward"); }

void avgpool_forward(const Tensor&, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                     Tensor&) {
  not_implemented("avgpool_forward");
}

void avgpool_backward(const Tensor&, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                      Tensor&) {
  not_implemented("avgpool_backward");
}

void dropout_forward(const Tensor&, float, std::uint64_t, const std::uint64_t*, const std::int64_t*, Tensor&, Tensor&) {
  not_implemented("dropout_forward");
}

void multiply(const Tensor&, const Tensor&, Tensor&) { not_implemented("multiply"); }

double sum_of_squares(const Tensor&) { not_implemented("sum_of_squares"); }
void round_to_precision(Tensor&, Precision) { not_implemented("round_to_precision"); }
void add(const Tensor&, const Tensor&, Tensor&) { not_implemented("add"); }
void channel_moments(const Tensor&, std::int64_t, std::int64_t, std::vector<double>&) {
  not_implemented("channel_moments");
}
void batchnorm_grad_sums(const Tensor&, const Tensor&, const std::vector<float>&, const std::vector<float>&,
                         std::int64_t, std::vector<double>&) {
  not_implemented("batchnorm_grad_sums");
}
void channel_affine(const Tensor&, const std::vector<float>&, const std::vector<float>&, std::int64_t, Tensor&) {
  not_implemented("channel_affine");
}
void batchnorm_backward_data(const Tensor&, const Tensor&, const std::vector<float>&, const std::vector<float>&,
                             const std::vector<float>&, const std::vector<float>&, const std::vector<float>&,
                             std::int64_t, Tensor&) {
  not_implemented("batchnorm_backward_data");
}

}  // namespace hpctrain::cuda
