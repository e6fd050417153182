// The backend operations layers and optimizers use, declared once and
// dispatched on the tensors' device to backend/cpu (the reference) or
// backend/cuda. Tensors are f32; "rows" is the batch dimension, "cols" the
// product of the others.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

enum class Activation { relu, tanh, gelu };

// c = alpha * op(a) * op(b) + beta * c, on 2-D views (rows x cols) of the tensors.
void gemm(bool trans_a, bool trans_b, float alpha, const Tensor& a, const Tensor& b, float beta, Tensor& c);
// y[i, :] += bias
void add_bias(Tensor& y, const Tensor& bias);
// db += sum_i dy[i, :]
void accumulate_bias_grad(const Tensor& dy, Tensor& db);
void activation_forward(Activation f, const Tensor& x, Tensor& y);
// dx = dy * f'(x)
void activation_backward(Activation f, const Tensor& x, const Tensor& dy, Tensor& dx);
void copy(const Tensor& src, Tensor& dst);
void fill(Tensor& t, float value);
void scale(Tensor& t, float factor);
// Mean over rows of -log softmax(logits)[label]; probs receives the softmax.
float softmax_cross_entropy(const Tensor& logits, const std::int32_t* labels, Tensor& probs);
// dlogits = (probs - onehot(labels)) * grad_scale
void softmax_cross_entropy_backward(const Tensor& probs, const std::int32_t* labels, float grad_scale, Tensor& dlogits);
// Mean over rows of sum_j (pred - target)^2 / cols; and its gradient times grad_scale.
float mean_squared_error(const Tensor& pred, const float* target);
void mean_squared_error_backward(const Tensor& pred, const float* target, float grad_scale, Tensor& dpred);
// Rows whose largest logit is the label.
std::int64_t count_correct(const Tensor& logits, const std::int32_t* labels);
// SGD with momentum (PyTorch's form): g' = g + wd*w; m = mu*m + g'; w -= lr * (nesterov ? g' + mu*m : m).
void sgd_update(Tensor& w, const Tensor& g, Tensor& m, float lr, float momentum, float weight_decay, bool nesterov);
// Adam (decoupled = false: L2 weight decay added to the gradient) or AdamW
// (decoupled = true: w -= lr * wd * w), PyTorch's update with bias correction;
// `step` counts from 1.
void adam_update(Tensor& w, const Tensor& g, Tensor& m, Tensor& v, float lr, float beta1, float beta2, float eps,
                 float weight_decay, bool decoupled, std::int64_t step);
// Convolution helpers on one sample, channels-first: x [C, H, W] -> cols [C*k*k, Ho*Wo], row r
// of cols at cols.data() + r * cols_ld (so a batch's samples can sit side by side in one matrix).
void im2col(const Tensor& x, std::int64_t channels, std::int64_t height, std::int64_t width, std::int64_t kernel,
            std::int64_t stride, std::int64_t pad, std::int64_t cols_ld, Tensor& cols);
// The adjoint of im2col: dx [C, H, W] += scattered cols.
void col2im(const Tensor& cols, std::int64_t channels, std::int64_t height, std::int64_t width, std::int64_t kernel,
            std::int64_t stride, std::int64_t pad, std::int64_t cols_ld, Tensor& dx);
// y [C, P] += bias[c] on row c;  db[c] += sum over row c of dy [C, P].
void add_channel_bias(Tensor& y, const Tensor& bias);
void accumulate_channel_bias_grad(const Tensor& dy, Tensor& db);
// Max pooling of a batch x [N, C, H, W] -> y [N, C, Ho, Wo]; argmax keeps the input index of each output.
void maxpool_forward(const Tensor& x, std::int64_t channels, std::int64_t height, std::int64_t width,
                     std::int64_t kernel, std::int64_t stride, Tensor& y, std::vector<std::int32_t>& argmax);
// dx = 0, then dx[argmax[i]] += dy[i].
void maxpool_backward(const Tensor& dy, const std::vector<std::int32_t>& argmax, Tensor& dx);
// Average pooling over kh x kw windows with strides sh, sw of a batch x [N, C, H, W]; and its adjoint (dx = ...).
void avgpool_forward(const Tensor& x, std::int64_t height, std::int64_t width, std::int64_t kh, std::int64_t kw,
                     std::int64_t sh, std::int64_t sw, Tensor& y);
void avgpool_backward(const Tensor& dy, std::int64_t height, std::int64_t width, std::int64_t kh, std::int64_t kw,
                      std::int64_t sh, std::int64_t sw, Tensor& dx);
// Inverted dropout: row i, element j is kept when a counter-based uniform draw keyed by
// (key, sample_ids[i], j) is >= p; kept values are scaled by 1/(1-p). mask receives the factors.
void dropout_forward(const Tensor& x, float p, std::uint64_t key, const std::int64_t* sample_ids, Tensor& mask,
                     Tensor& y);
// out = a * b, element-wise
void multiply(const Tensor& a, const Tensor& b, Tensor& out);
double sum_of_squares(const Tensor& t);

// Every operation above, by name (tests check each is dispatched to both backends).
const std::vector<std::string>& backend_operations();

}  // namespace hpctrain
