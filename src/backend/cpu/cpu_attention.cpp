// The CPU backend's fused attention and what turns its queries and keys (backend/cpu/cpu_ops.hpp):
// rotary position embeddings, QK-norm, and causal attention that never holds T x T.
//
// Fused attention works on strips of 64 queries: the strip's scores against the keys up to its
// last query (64 x T floats, O(T); with a sliding window of W only the keys from the first query's
// window on, 64 x (W + 63), O(W) work per query) by one sgemm, an exact softmax per row (a strip's row is the
// whole row, so the online rescaling FlashAttention needs for tiles that do not fit its SRAM is not
// needed here), the weighted values by a second sgemm. The backward (FlashAttention-2's) recomputes
// a strip's probabilities from the kept log-sum-exp, then dq, and adds the strip's part of dk and dv.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "hpctrain/backend/checks.hpp"
#include "hpctrain/backend/cpu/cpu_ops.hpp"
#include "hpctrain/backend/cpu/sgemm.hpp"
#include "hpctrain/backend/qkv_dims.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain::cpu {

namespace {
constexpr std::int64_t kStrip = 64;  // queries per strip

using backend::AttendRows;
using backend::doc_numbers;
using backend::qkv_dims;
using backend::QkvDims;

// One (sequence, query head): where its queries, keys, values and document numbers are, its window
// and its scores' cap. Query i (first <= i < T) is row i - first of q; key and value j row j.
struct Head {
  const float *q, *k, *v;
  std::int64_t q_ld, kv_ld, first;
  const std::int32_t* doc;  // null: causal only
  std::int64_t window;      // 0: every earlier key
  float softcap;            // 0: none
};
Head head_of(const AttendRows& r, const std::int32_t* docs, const AttentionOptions& opt, const QkvDims& a,
             std::int64_t n, std::int64_t h) {
  const float* base = r.kv + n * a.t * r.kv_ld;
  const std::int64_t g = h / (a.heads / a.kv);  // its key/value head
  return {r.q + n * r.q_len * r.q_ld + h * a.d,
          base + r.k_col + g * a.d,
          base + r.v_col + g * a.d,
          r.q_ld,
          r.kv_ld,
          a.t - r.q_len,
          docs ? docs + n * a.t : nullptr,
          opt.window,
          opt.softcap};
}

bool visible(const Head& hd, std::int64_t i, std::int64_t j) {
  return j <= i && (hd.window == 0 || i - j < hd.window) && (!hd.doc || hd.doc[j] == hd.doc[i]);
}
// The first key query i can see.
std::int64_t first_key(const Head& hd, std::int64_t i) {
  return hd.window > 0 ? std::max<std::int64_t>(0, i - hd.window + 1) : 0;
}
// A strip's keys (or a window's, held by the scratch vectors): at most this many.
std::int64_t strip_keys(const QkvDims& a, std::int64_t window) {
  return window > 0 ? std::min(a.t, window + kStrip - 1) : a.t;
}
// Gemma 2's soft-capping of a score s (cap > 0): c = cap tanh(s / cap), whose slope is 1 - (c / cap)^2.
float capped(float s, float cap) { return cap * std::tanh(s / cap); }

// Scores of queries i0 .. i0 + rows - 1 against keys j0 .. j0 + cols - 1 into s [rows, cols], scaled.
void strip_scores(const Head& hd, const QkvDims& a, std::int64_t i0, std::int64_t rows, std::int64_t j0,
                  std::int64_t cols, float* s) {
  sgemm(false, true, rows, cols, a.d, a.scale, hd.q + (i0 - hd.first) * hd.q_ld, hd.q_ld, hd.k + j0 * hd.kv_ld,
        hd.kv_ld, 0.f, s, cols);
}
}  // namespace

void rope_rotate(Tensor& qkv, std::int64_t heads, std::int64_t kv_heads, const std::vector<float>& inv_freq,
                 std::int64_t offset, bool inverse, float amplitude) {
  const QkvDims a = qkv_dims(qkv, heads, kv_heads, "rope_rotate");
  const auto half = static_cast<std::int64_t>(inv_freq.size());
  HPCT_CHECK(half >= 1 && 2 * half <= a.d, "rope_rotate: " + std::to_string(half) + " frequencies for heads of " +
                                               std::to_string(a.d) + " columns (at most D/2)");
  for (std::int64_t p = 0; p < a.t; ++p)
    for (std::int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p + offset) * static_cast<double>(inv_freq[static_cast<std::size_t>(i)]);
      const auto cs = static_cast<float>(amplitude * std::cos(angle));
      const auto sn = static_cast<float>(amplitude * (inverse ? -std::sin(angle) : std::sin(angle)));
      for (std::int64_t b = 0; b < a.n; ++b)
        for (std::int64_t h = 0; h < a.heads + a.kv; ++h) {  // the query heads, then the key heads
          float* row = qkv.data() + (b * a.t + p) * a.ld + h * a.d;
          const float x0 = row[i], x1 = row[i + half];
          row[i] = x0 * cs - x1 * sn;
          row[i + half] = x1 * cs + x0 * sn;
        }
    }
}

void qk_norm_forward(Tensor& qkv, std::int64_t heads, std::int64_t kv_heads, float eps, Tensor& rstd) {
  const QkvDims a = qkv_dims(qkv, heads, kv_heads, "qk_norm_forward");
  const std::int64_t per = a.heads + a.kv, rows = a.n * a.t;
  HPCT_CHECK(rstd.numel() >= rows * per, "qk_norm_forward: rstd " + shape_string(rstd.shape()));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t h = 0; h < per; ++h) {
      float* x = qkv.data() + r * a.ld + h * a.d;
      float ss = 0.f;
      for (std::int64_t j = 0; j < a.d; ++j) ss += x[j] * x[j];
      const float f = 1.f / std::sqrt(ss / static_cast<float>(a.d) + eps);
      for (std::int64_t j = 0; j < a.d; ++j) x[j] *= f;
      rstd.data()[r * per + h] = f;
    }
}

void qk_norm_backward(const Tensor& normed, const Tensor& rstd, std::int64_t heads, std::int64_t kv_heads,
                      Tensor& dqkv) {
  const QkvDims a = qkv_dims(normed, heads, kv_heads, "qk_norm_backward");
  backend::same_size(normed, dqkv, "qk_norm_backward");
  const std::int64_t per = a.heads + a.kv, rows = a.n * a.t;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t h = 0; h < per; ++h) {
      const float* xhat = normed.data() + r * a.ld + h * a.d;
      float* g = dqkv.data() + r * a.ld + h * a.d;
      double dot = 0;
      for (std::int64_t j = 0; j < a.d; ++j) dot += static_cast<double>(g[j]) * xhat[j];
      const auto m = static_cast<float>(dot / static_cast<double>(a.d));
      const float f = rstd.data()[r * per + h];
      for (std::int64_t j = 0; j < a.d; ++j) g[j] = f * (g[j] - xhat[j] * m);
    }
}

void document_numbers(const Tensor& ids, std::int32_t separator, Tensor& docs) {
  backend::check_ids(ids, "document_numbers");
  HPCT_CHECK(docs.dtype() == DType::i32 && docs.numel() == ids.numel() && ids.shape().size() == 2,
             "document_numbers: ids " + shape_string(ids.shape()) + ", docs " + shape_string(docs.shape()));
  const std::int64_t n = ids.shape()[0], t = ids.shape()[1];
  for (std::int64_t r = 0; r < n; ++r) {
    std::int32_t count = 0;
    for (std::int64_t i = 0; i < t; ++i) {
      count += ids.data_as<std::int32_t>()[r * t + i] == separator;
      docs.data_as<std::int32_t>()[r * t + i] = count;
    }
  }
}

namespace {
// Fused attention for the queries `at` holds (the last at.q_len of the T positions; all of them
// in flash_attention_forward, a pass's in flash_attention_decode): y and lse hold those queries.
void attend(const AttendRows& at, const QkvDims& a, const Tensor& docs, const AttentionOptions& opt, Tensor& y,
            Tensor& lse, const char* op) {
  const std::int32_t* doc = doc_numbers(docs, a, op);
  const std::int64_t yw = a.heads * a.d, tq = at.q_len, first = a.t - tq;
  HPCT_CHECK(y.numel() == a.n * tq * yw && lse.numel() == a.n * a.heads * tq,
             std::string(op) + ": y " + shape_string(y.shape()) + ", lse " + shape_string(lse.shape()) + " for " +
                 std::to_string(tq) + " queries of " + std::to_string(a.heads) + " heads of " + std::to_string(a.d));
  std::vector<float> strip(static_cast<std::size_t>(kStrip * strip_keys(a, opt.window)));
  for (std::int64_t n = 0; n < a.n; ++n)
    for (std::int64_t h = 0; h < a.heads; ++h) {
      const Head hd = head_of(at, doc, opt, a, n, h);
      for (std::int64_t i0 = first; i0 < a.t; i0 += kStrip) {
        const std::int64_t rows = std::min(kStrip, a.t - i0), j0 = first_key(hd, i0), cols = i0 + rows - j0;
        strip_scores(hd, a, i0, rows, j0, cols, strip.data());
        if (hd.softcap > 0.f)
          for (std::int64_t e = 0; e < rows * cols; ++e)
            strip[static_cast<std::size_t>(e)] = capped(strip[static_cast<std::size_t>(e)], hd.softcap);
        for (std::int64_t r = 0; r < rows; ++r) {
          const std::int64_t i = i0 + r;
          float* s = strip.data() + r * cols;  // s[c]: key j0 + c's score
          float mx = -std::numeric_limits<float>::infinity();
          for (std::int64_t c = 0; c <= i - j0; ++c)
            if (visible(hd, i, j0 + c)) mx = std::max(mx, s[c]);
          float sum = 0.f;
          for (std::int64_t c = 0; c < cols; ++c) sum += s[c] = visible(hd, i, j0 + c) ? std::exp(s[c] - mx) : 0.f;
          const float inv = 1.f / sum;
          for (std::int64_t c = 0; c <= i - j0; ++c) s[c] *= inv;
          lse.data()[(n * a.heads + h) * tq + i - first] = mx + std::log(sum);
        }
        sgemm(false, false, rows, a.d, cols, 1.f, strip.data(), cols, hd.v + j0 * hd.kv_ld, hd.kv_ld, 0.f,
              y.data() + (n * tq + i0 - first) * yw + h * a.d, yw);
      }
    }
}
}  // namespace

void flash_attention_forward(const Tensor& qkv, std::int64_t heads, std::int64_t kv_heads, const Tensor& docs,
                             const AttentionOptions& opt, Tensor& y, Tensor& lse) {
  const QkvDims a =
      backend::with_options(qkv_dims(qkv, heads, kv_heads, "flash_attention_forward"), opt, "flash_attention_forward");
  attend(backend::fused_rows(qkv, a), a, docs, opt, y, lse, "flash_attention_forward");
}

void flash_attention_decode(const Tensor& q, const Tensor& kv, std::int64_t heads, std::int64_t kv_heads,
                            const Tensor& docs, const AttentionOptions& opt, Tensor& y, Tensor& lse) {
  const QkvDims a = backend::with_options(backend::decode_dims(q, kv, heads, kv_heads, "flash_attention_decode"), opt,
                                          "flash_attention_decode");
  attend(backend::decode_rows(q, kv, a), a, docs, opt, y, lse, "flash_attention_decode");
}

void flash_attention_backward(const Tensor& qkv, const Tensor& y, const Tensor& lse, const Tensor& dy,
                              std::int64_t heads, std::int64_t kv_heads, const Tensor& docs,
                              const AttentionOptions& opt, Tensor& dqkv) {
  const QkvDims a = backend::with_options(qkv_dims(qkv, heads, kv_heads, "flash_attention_backward"), opt,
                                          "flash_attention_backward");
  const std::int32_t* doc = doc_numbers(docs, a, "flash_attention_backward");
  const std::int64_t yw = a.heads * a.d;
  backend::same_size(qkv, dqkv, "flash_attention_backward");
  backend::same_size(y, dy, "flash_attention_backward");
  HPCT_CHECK(y.numel() == a.n * a.t * yw && lse.numel() == a.n * a.heads * a.t,
             "flash_attention_backward: y " + shape_string(y.shape()) + ", lse " + shape_string(lse.shape()));
  std::fill(dqkv.data(), dqkv.data() + dqkv.numel(), 0.f);  // dk and dv add up over strips and query heads
  std::vector<float> p(static_cast<std::size_t>(kStrip * strip_keys(a, opt.window))), ds(p.size());
  for (std::int64_t n = 0; n < a.n; ++n)
    for (std::int64_t h = 0; h < a.heads; ++h) {
      const Head hd = head_of(backend::fused_rows(qkv, a), doc, opt, a, n, h);
      float* dq = dqkv.data() + (hd.q - qkv.data());  // the same heads' places in dqkv
      float* dk = dqkv.data() + (hd.k - qkv.data());
      float* dv = dqkv.data() + (hd.v - qkv.data());
      const float* lse_h = lse.data() + (n * a.heads + h) * a.t;
      for (std::int64_t i0 = 0; i0 < a.t; i0 += kStrip) {
        const std::int64_t rows = std::min(kStrip, a.t - i0), j0 = first_key(hd, i0), cols = i0 + rows - j0;
        const float* g = dy.data() + (n * a.t + i0) * yw + h * a.d;  // dy of the strip's queries
        strip_scores(hd, a, i0, rows, j0, cols, p.data());
        sgemm(false, true, rows, cols, a.d, 1.f, g, yw, hd.v + j0 * a.ld, a.ld, 0.f, ds.data(), cols);  // dP = dy v^T
        for (std::int64_t r = 0; r < rows; ++r) {
          const std::int64_t i = i0 + r;
          const float* yi = y.data() + (n * a.t + i) * yw + h * a.d;
          double di = 0;  // dy_i . y_i
          for (std::int64_t c = 0; c < a.d; ++c) di += static_cast<double>(g[r * yw + c]) * yi[c];
          float *pr = p.data() + r * cols, *dr = ds.data() + r * cols;  // [c]: key j0 + c's
          for (std::int64_t c = 0; c < cols; ++c) {
            const float s = hd.softcap > 0.f ? capped(pr[c], hd.softcap) : pr[c];
            const float slope = hd.softcap > 0.f ? 1.f - (s / hd.softcap) * (s / hd.softcap) : 1.f;  // (d s / d score)
            pr[c] = visible(hd, i, j0 + c) ? std::exp(s - lse_h[i]) : 0.f;
            dr[c] = pr[c] * (dr[c] - static_cast<float>(di)) * a.scale * slope;
          }
        }
        sgemm(false, false, rows, a.d, cols, 1.f, ds.data(), cols, hd.k + j0 * a.ld, a.ld, 0.f, dq + i0 * a.ld, a.ld);
        sgemm(true, false, cols, a.d, rows, 1.f, ds.data(), cols, hd.q + i0 * a.ld, a.ld, 1.f, dk + j0 * a.ld, a.ld);
        sgemm(true, false, cols, a.d, rows, 1.f, p.data(), cols, g, yw, 1.f, dv + j0 * a.ld, a.ld);
      }
    }
}

}  // namespace hpctrain::cpu
