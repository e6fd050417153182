// The CUDA backend's operations (the same list as backend/cpu). Until the GPU
// issue fills them (cuBLAS, cuDNN, own kernels), each throws a clear
// "not implemented on cuda" error. Called through the dispatching functions.
#pragma once

#include "hpctrain/backend/ops.hpp"

namespace hpctrain::cuda {

void gemm(bool trans_a, bool trans_b, float alpha, const Tensor& a, const Tensor& b, float beta, Tensor& c);
void add_bias(Tensor& y, const Tensor& bias);
void accumulate_bias_grad(const Tensor& dy, Tensor& db);
void activation_forward(Activation f, const Tensor& x, Tensor& y);
void activation_backward(Activation f, const Tensor& x, const Tensor& dy, Tensor& dx);
void copy(const Tensor& src, Tensor& dst);
void fill(Tensor& t, float value);
void scale(Tensor& t, float factor);
float softmax_cross_entropy(const Tensor& logits, const std::int32_t* labels, Tensor& probs);
void softmax_cross_entropy_backward(const Tensor& probs, const std::int32_t* labels, float grad_scale, Tensor& dlogits);
float mean_squared_error(const Tensor& pred, const float* target);
void mean_squared_error_backward(const Tensor& pred, const float* target, float grad_scale, Tensor& dpred);
std::int64_t count_correct(const Tensor& logits, const std::int32_t* labels);
void sgd_update(Tensor& w, const Tensor& g, Tensor& m, float lr, float momentum, float weight_decay, bool nesterov);
void adam_update(Tensor& w, const Tensor& g, Tensor& m, Tensor& v, float lr, float beta1, float beta2, float eps,
                 float weight_decay, bool decoupled, std::int64_t step);
double sum_of_squares(const Tensor& t);

}  // namespace hpctrain::cuda
