// The backend operations layers and optimizers use, declared once and
// dispatched on the tensors' device to backend/cpu (the reference) or
// backend/cuda. Tensors are f32; "rows" is the batch dimension, "cols" the
// product of the others.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hpctrain/core/precision.hpp"
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

// gelu: exact, x * Phi(x); relu2: relu(x)^2 (modded-nanogpt's MLP); gelu_tanh: GELU's tanh
// approximation (GPT-2's gelu_new, PyTorch's gelu(approximate='tanh')).
enum class Activation { relu, tanh, gelu, relu2, gelu_tanh };
// [train] loss for regression targets (backend regression_loss).
enum class RegressionLoss { mse, mae, huber };
// What fused attention computes beside causal softmax(q k^T / sqrt(D)) v (backend flash_attention_*).
struct AttentionOptions {
  std::int64_t window = 0;  // sliding window: query i sees key j when i - j < window; 0: every earlier key
  float softcap = 0;        // scores s -> softcap tanh(s / softcap) before the softmax (Gemma 2's); 0: none
  float scale = 0;          // the scores q . k times this (Gemma 2's query_pre_attn_scalar^-1/2); 0: 1 / sqrt(D)
};

#define HPCT_OP(ret, name, params, args) ret name params;
#include "hpctrain/backend/op_list.inc"  // NOLINT(bugprone-suspicious-include)
#undef HPCT_OP

// The sizes of c = op(a) op(b) for gemm, checked for both backends: an internal error names the
// shapes when they do not fit.
struct GemmDims {
  int m, n, k;
};
GemmDims gemm_dims(bool trans_a, bool trans_b, const Tensor& a, const Tensor& b, const Tensor& c);
// The same for a strided batched GEMM (attention's per-head products on cuBLAS): the sizes, leading
// dimensions and batch count as the 32-bit ints cuBLAS takes, or one clear error.
struct BatchedGemmDims {
  int m, n, k, lda, ldb, ldc, batch;
};
BatchedGemmDims batched_gemm_dims(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda, std::int64_t ldb,
                                  std::int64_t ldc, std::int64_t batch);

// Every operation above, by name (tests check each is dispatched to both backends).
const std::vector<std::string>& backend_operations();

}  // namespace hpctrain
