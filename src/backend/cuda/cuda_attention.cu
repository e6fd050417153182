// The CUDA backend's fused attention and what turns its queries and keys (backend/cuda/cuda_ops.hpp):
// rotary position embeddings, QK-norm, and causal attention that never holds T x T.
//
// Plain kernels, the simplest correct form until a GPU has measured them (README's rule): fused
// attention is one thread per query with FlashAttention's online softmax over the keys (its output
// row kept in the thread's local memory, D <= 256); the backward is one thread per query for dq
// and one per key for dk and dv (summing over the query heads that read it), each recomputing the
// probabilities from q, k and the kept log-sum-exp (with a sliding window each thread loops over
// the window's keys or queries only). Deterministic: no atomics. cuDNN's fused
// scaled-dot-product attention (fp16/bf16 through its graph API) is not used yet: the layer's
// GEMM operands are float32 in every precision (docs/language-models.md).
#include <cmath>

#include "hpctrain/backend/checks.hpp"
#include "hpctrain/backend/cuda/context.hpp"
#include "hpctrain/backend/cuda/cuda_ops.hpp"
#include "hpctrain/backend/cuda/kernels.cuh"
#include "hpctrain/backend/qkv_dims.hpp"

namespace hpctrain::cuda {

using detail::launch;
using i64 = std::int64_t;

namespace {
constexpr i64 kMaxHeadDim = 256;

using backend::AttendRows;
using backend::doc_numbers;
using backend::qkv_dims;
using backend::QkvDims;

// Whether query i sees key j: causal, within the last `window` positions (0: all), the same document.
__device__ inline bool sees(const std::int32_t* doc, i64 window, i64 i, i64 j) {
  return j <= i && (window == 0 || i - j < window) && (!doc || doc[j] == doc[i]);
}
__device__ inline i64 first_key(i64 window, i64 i) { return window > 0 && i >= window ? i - window + 1 : 0; }
// A scaled score after Gemma 2's soft-capping (cap 0: none): c = cap tanh(s / cap).
__device__ inline float capped(float s, float cap) { return cap > 0.f ? cap * tanhf(s / cap) : s; }
// d capped / d score, from the capped score c: 1 - (c / cap)^2 (1 without a cap).
__device__ inline float cap_slope(float c, float cap) { return cap > 0.f ? 1.f - (c / cap) * (c / cap) : 1.f; }
__device__ inline float dot(const float* a, const float* b, i64 d) {
  float s = 0.f;
  for (i64 c = 0; c < d; ++c) s += a[c] * b[c];
  return s;
}

// RoPE: one thread per (position, query or key head, pair); the angle in double.
__global__ void rope_kernel(float* qkv, i64 t, i64 ld, i64 qk_heads, i64 d, i64 half, const float* inv_freq, i64 offset,
                            float sign, float amplitude, i64 total) {
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    const i64 i = idx % half, h = (idx / half) % qk_heads, row = idx / (half * qk_heads);
    const double angle = static_cast<double>(row % t + offset) * static_cast<double>(inv_freq[i]);
    const float cs = static_cast<float>(amplitude * cos(angle)), sn = static_cast<float>(sign * amplitude * sin(angle));
    float* x = qkv + row * ld + h * d;
    const float x0 = x[i], x1 = x[i + half];
    x[i] = x0 * cs - x1 * sn;
    x[i + half] = x1 * cs + x0 * sn;
  }
}

// QK-norm: one thread per (position, query or key head).
__global__ void qk_norm_kernel(float* qkv, i64 ld, i64 qk_heads, i64 d, float eps, float* rstd, i64 total) {
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    float* x = qkv + (idx / qk_heads) * ld + (idx % qk_heads) * d;
    const float f = rsqrtf(dot(x, x, d) / static_cast<float>(d) + eps);
    for (i64 c = 0; c < d; ++c) x[c] *= f;
    rstd[idx] = f;
  }
}
__global__ void qk_norm_grad_kernel(const float* normed, const float* rstd, i64 ld, i64 qk_heads, i64 d, float* g,
                                    i64 total) {
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    const i64 off = (idx / qk_heads) * ld + (idx % qk_heads) * d;
    const float m = dot(g + off, normed + off, d) / static_cast<float>(d), f = rstd[idx];
    for (i64 c = 0; c < d; ++c) g[off + c] = f * (g[off + c] - normed[off + c] * m);
  }
}

__global__ void document_numbers_kernel(const std::int32_t* ids, std::int32_t separator, i64 t, std::int32_t* docs,
                                        i64 rows) {
  for (i64 r = detail::global_index(); r < rows; r += detail::grid_stride()) {
    std::int32_t count = 0;
    for (i64 i = 0; i < t; ++i) {
      count += ids[r * t + i] == separator;
      docs[r * t + i] = count;
    }
  }
}

// One thread per (sequence, query head, query): online softmax over its visible keys.
// The queries r holds (the last r.q_len of T; flash_attention_decode's or all): y and lse hold them.
__global__ void flash_forward_kernel(AttendRows r, const std::int32_t* docs, AttentionOptions opt, QkvDims a, float* y,
                                     float* lse, i64 total) {
  const i64 window = opt.window;
  const i64 tq = r.q_len, first = a.t - tq;
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    const i64 i = first + idx % tq, h = (idx / tq) % a.heads, n = idx / (tq * a.heads), g = h / (a.heads / a.kv);
    const float* base = r.kv + n * a.t * r.kv_ld;
    const float* q = r.q + (n * tq + i - first) * r.q_ld + h * a.d;
    const std::int32_t* doc = docs ? docs + n * a.t : nullptr;
    float acc[kMaxHeadDim];
    for (i64 c = 0; c < a.d; ++c) acc[c] = 0.f;
    float m = -INFINITY, l = 0.f;
    for (i64 j = first_key(window, i); j <= i; ++j) {
      if (!sees(doc, window, i, j)) continue;
      const float* k = base + j * r.kv_ld + r.k_col + g * a.d;
      const float* v = base + j * r.kv_ld + r.v_col + g * a.d;
      const float s = capped(dot(q, k, a.d) * a.scale, opt.softcap), m2 = fmaxf(m, s);
      const float corr = expf(m - m2), p = expf(s - m2);
      l = l * corr + p;
      for (i64 c = 0; c < a.d; ++c) acc[c] = acc[c] * corr + p * v[c];
      m = m2;
    }
    float* out = y + (n * tq + i - first) * a.heads * a.d + h * a.d;
    for (i64 c = 0; c < a.d; ++c) out[c] = acc[c] / l;
    lse[idx] = m + logf(l);
  }
}

// dq: one thread per (sequence, query head, query).
__global__ void flash_dq_kernel(const float* qkv, const float* y, const float* lse, const float* dy,
                                const std::int32_t* docs, AttentionOptions opt, QkvDims a, float* dqkv, i64 total) {
  const i64 window = opt.window;
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    const i64 i = idx % a.t, h = (idx / a.t) % a.heads, n = idx / (a.t * a.heads), g = h / (a.heads / a.kv);
    const float* base = qkv + n * a.t * a.ld;
    const float* q = base + i * a.ld + h * a.d;
    const float* gi = dy + (n * a.t + i) * a.heads * a.d + h * a.d;
    const float di = dot(gi, y + (n * a.t + i) * a.heads * a.d + h * a.d, a.d);
    const std::int32_t* doc = docs ? docs + n * a.t : nullptr;
    float acc[kMaxHeadDim];
    for (i64 c = 0; c < a.d; ++c) acc[c] = 0.f;
    for (i64 j = first_key(window, i); j <= i; ++j) {
      if (!sees(doc, window, i, j)) continue;
      const float* k = base + j * a.ld + (a.heads + g) * a.d;
      const float* v = base + j * a.ld + (a.heads + a.kv + g) * a.d;
      const float s = capped(dot(q, k, a.d) * a.scale, opt.softcap), p = expf(s - lse[idx]);
      const float ds = p * (dot(gi, v, a.d) - di) * a.scale * cap_slope(s, opt.softcap);
      for (i64 c = 0; c < a.d; ++c) acc[c] += ds * k[c];
    }
    float* dq = dqkv + (n * a.t + i) * a.ld + h * a.d;
    for (i64 c = 0; c < a.d; ++c) dq[c] = acc[c];
  }
}

// dk and dv: one thread per (sequence, key/value head, key), over the query heads of its group.
__global__ void flash_dkv_kernel(const float* qkv, const float* y, const float* lse, const float* dy,
                                 const std::int32_t* docs, AttentionOptions opt, QkvDims a, float* dqkv, i64 total) {
  const i64 window = opt.window;
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    const i64 j = idx % a.t, g = (idx / a.t) % a.kv, n = idx / (a.t * a.kv), group = a.heads / a.kv;
    const float* base = qkv + n * a.t * a.ld;
    const float* k = base + j * a.ld + (a.heads + g) * a.d;
    const float* v = base + j * a.ld + (a.heads + a.kv + g) * a.d;
    const std::int32_t* doc = docs ? docs + n * a.t : nullptr;
    float dk[kMaxHeadDim], dv[kMaxHeadDim];
    for (i64 c = 0; c < a.d; ++c) dk[c] = dv[c] = 0.f;
    const i64 last = window > 0 && j + window < a.t ? j + window : a.t;  // (past it no query sees key j)
    for (i64 h = g * group; h < (g + 1) * group; ++h)
      for (i64 i = j; i < last; ++i) {
        if (!sees(doc, window, i, j)) continue;
        const float* q = base + i * a.ld + h * a.d;
        const float* gi = dy + (n * a.t + i) * a.heads * a.d + h * a.d;
        const float di = dot(gi, y + (n * a.t + i) * a.heads * a.d + h * a.d, a.d);
        const float s = capped(dot(q, k, a.d) * a.scale, opt.softcap), p = expf(s - lse[(n * a.heads + h) * a.t + i]);
        const float ds = p * (dot(gi, v, a.d) - di) * a.scale * cap_slope(s, opt.softcap);
        for (i64 c = 0; c < a.d; ++c) {
          dv[c] += p * gi[c];
          dk[c] += ds * q[c];
        }
      }
    float* out = dqkv + (n * a.t + j) * a.ld;
    for (i64 c = 0; c < a.d; ++c) {
      out[(a.heads + g) * a.d + c] = dk[c];
      out[(a.heads + a.kv + g) * a.d + c] = dv[c];
    }
  }
}
}  // namespace

void rope_rotate(Tensor& qkv, i64 heads, i64 kv_heads, const std::vector<float>& inv_freq, i64 offset, bool inverse,
                 float amplitude) {
  const QkvDims a = qkv_dims(qkv, heads, kv_heads, "rope_rotate");
  const auto half = static_cast<i64>(inv_freq.size());
  HPCT_CHECK(half >= 1 && 2 * half <= a.d, "rope_rotate: " + std::to_string(half) + " frequencies for heads of " +
                                               std::to_string(a.d) + " columns (at most D/2)");
  auto* freq = static_cast<float*>(context().scratch(inv_freq.size() * sizeof(float) + 256));
  memcpy_to_device(freq, inv_freq.data(), inv_freq.size() * sizeof(float));
  const i64 total = a.n * a.t * (heads + kv_heads) * half;
  launch(rope_kernel, total, qkv.data(), a.t, a.ld, heads + kv_heads, a.d, half, static_cast<const float*>(freq),
         offset, inverse ? -1.f : 1.f, amplitude, total);
}

void qk_norm_forward(Tensor& qkv, i64 heads, i64 kv_heads, float eps, Tensor& rstd) {
  const QkvDims a = qkv_dims(qkv, heads, kv_heads, "qk_norm_forward");
  const i64 total = a.n * a.t * (heads + kv_heads);
  HPCT_CHECK(rstd.numel() >= total, "qk_norm_forward: rstd " + shape_string(rstd.shape()));
  launch(qk_norm_kernel, total, qkv.data(), a.ld, heads + kv_heads, a.d, eps, rstd.data(), total);
}

void qk_norm_backward(const Tensor& normed, const Tensor& rstd, i64 heads, i64 kv_heads, Tensor& dqkv) {
  const QkvDims a = qkv_dims(normed, heads, kv_heads, "qk_norm_backward");
  detail::same_size(normed, dqkv, "qk_norm_backward");
  const i64 total = a.n * a.t * (heads + kv_heads);
  launch(qk_norm_grad_kernel, total, normed.data(), rstd.data(), a.ld, heads + kv_heads, a.d, dqkv.data(), total);
}

void document_numbers(const Tensor& ids, std::int32_t separator, Tensor& docs) {
  backend::check_ids(ids, "document_numbers");
  HPCT_CHECK(docs.dtype() == DType::i32 && docs.numel() == ids.numel() && ids.shape().size() == 2,
             "document_numbers: ids " + shape_string(ids.shape()) + ", docs " + shape_string(docs.shape()));
  const i64 rows = ids.shape()[0];
  launch(document_numbers_kernel, rows, ids.data_as<std::int32_t>(), separator, ids.shape()[1],
         docs.data_as<std::int32_t>(), rows);
}

namespace {

// Fused attention for the queries `r` holds (the last r.q_len of the T positions).
void attend(const AttendRows& r, const QkvDims& a, const Tensor& docs, const AttentionOptions& opt, Tensor& y,
            Tensor& lse, const char* op) {
  HPCT_CHECK(a.d <= kMaxHeadDim, std::string(op) + ": heads of " + std::to_string(a.d) + " columns (at most 256)");
  const i64 tq = r.q_len;
  HPCT_CHECK(y.numel() == a.n * tq * a.heads * a.d && lse.numel() == a.n * a.heads * tq,
             std::string(op) + ": y " + shape_string(y.shape()) + ", lse " + shape_string(lse.shape()) + " for " +
                 std::to_string(tq) + " queries of " + std::to_string(a.heads) + " heads of " + std::to_string(a.d));
  const i64 total = a.n * a.heads * tq;
  launch(flash_forward_kernel, total, r, doc_numbers(docs, a, op), opt, a, y.data(), lse.data(), total);
}
}  // namespace

void flash_attention_forward(const Tensor& qkv, i64 heads, i64 kv_heads, const Tensor& docs,
                             const AttentionOptions& opt, Tensor& y, Tensor& lse) {
  const QkvDims a =
      backend::with_options(qkv_dims(qkv, heads, kv_heads, "flash_attention_forward"), opt, "flash_attention_forward");
  attend(backend::fused_rows(qkv, a), a, docs, opt, y, lse, "flash_attention_forward");
}

void flash_attention_decode(const Tensor& q, const Tensor& kv, i64 heads, i64 kv_heads, const Tensor& docs,
                            const AttentionOptions& opt, Tensor& y, Tensor& lse) {
  const QkvDims a = backend::with_options(backend::decode_dims(q, kv, heads, kv_heads, "flash_attention_decode"), opt,
                                          "flash_attention_decode");
  attend(backend::decode_rows(q, kv, a), a, docs, opt, y, lse, "flash_attention_decode");
}

void flash_attention_backward(const Tensor& qkv, const Tensor& y, const Tensor& lse, const Tensor& dy, i64 heads,
                              i64 kv_heads, const Tensor& docs, const AttentionOptions& opt, Tensor& dqkv) {
  const QkvDims a = backend::with_options(qkv_dims(qkv, heads, kv_heads, "flash_attention_backward"), opt,
                                          "flash_attention_backward");
  HPCT_CHECK(a.d <= kMaxHeadDim,
             "flash_attention_backward: heads of " + std::to_string(a.d) + " columns (at most 256)");
  detail::same_size(qkv, dqkv, "flash_attention_backward");
  detail::same_size(y, dy, "flash_attention_backward");
  HPCT_CHECK(y.numel() == a.n * a.t * heads * a.d && lse.numel() == a.n * heads * a.t,
             "flash_attention_backward: y " + shape_string(y.shape()) + ", lse " + shape_string(lse.shape()));
  const std::int32_t* doc = doc_numbers(docs, a, "flash_attention_backward");
  const i64 queries = a.n * heads * a.t, keys = a.n * kv_heads * a.t;
  launch(flash_dq_kernel, queries, qkv.data(), y.data(), lse.data(), dy.data(), doc, opt, a, dqkv.data(), queries);
  launch(flash_dkv_kernel, keys, qkv.data(), y.data(), lse.data(), dy.data(), doc, opt, a, dqkv.data(), keys);
}

}  // namespace hpctrain::cuda
