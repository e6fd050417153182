// The CPU backend's operations for sequence models (backend/cpu/cpu_ops.hpp): token embedding,
// layer norm and RMS norm over the last dimension and causal multi-head attention (its GEMMs through sgemm
// (backend/cpu/sgemm.hpp) on strided views of the fused query/key/value rows, the masked softmax in plain loops).
#include <algorithm>
#include <cmath>
#include <vector>

#include "hpctrain/backend/checks.hpp"
#include "hpctrain/backend/cpu/cpu_ops.hpp"
#include "hpctrain/backend/cpu/sgemm.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain::cpu {

namespace {
std::int64_t token_id(std::int32_t id, std::int64_t vocabulary) {
  HPCT_CHECK(id >= 0 && id < vocabulary,
             "token id " + std::to_string(id) + " outside the embedding's vocabulary of " + std::to_string(vocabulary));
  return id;
}

// The sizes of one attention call: N sequences of T positions, C = heads * D.
struct AttentionDims {
  std::int64_t n, t, c, heads, d;
  float scale;
};
AttentionDims attention_dims(const Tensor& qkv, std::int64_t heads, const Tensor& att, const char* op) {
  const Shape& s = qkv.shape();
  HPCT_CHECK(s.size() == 3 && s[2] % 3 == 0 && heads > 0 && (s[2] / 3) % heads == 0,
             std::string(op) + ": qkv " + shape_string(s) + " for " + std::to_string(heads) + " heads");
  AttentionDims a{s[0], s[1], s[2] / 3, heads, s[2] / 3 / heads, 0.f};
  a.scale = 1.f / std::sqrt(static_cast<float>(a.d));
  HPCT_CHECK(att.numel() == a.n * heads * a.t * a.t, std::string(op) + ": att " + shape_string(att.shape()));
  return a;
}
}  // namespace

void embedding_forward(const Tensor& ids, const Tensor& table, std::int64_t row_offset, std::int64_t vocabulary,
                       Tensor& y) {
  const std::int64_t rows = table.shape()[0], width = table.numel() / rows, positions = ids.numel();
  backend::check_ids(ids, "embedding_forward");
  HPCT_CHECK(y.numel() == positions * width, "embedding_forward: y " + shape_string(y.shape()));
  const std::int32_t* id = ids.data_as<std::int32_t>();
  for (std::int64_t i = 0; i < positions; ++i) {
    const std::int64_t r = token_id(id[i], vocabulary) - row_offset;
    if (r < 0 || r >= rows) {
      std::fill(y.data() + i * width, y.data() + (i + 1) * width, 0.f);
      continue;
    }
    const float* row = table.data() + r * width;
    std::copy(row, row + width, y.data() + i * width);
  }
}

void embedding_backward(const Tensor& ids, const Tensor& dy, std::int64_t row_offset, std::int64_t vocabulary,
                        Tensor& dtable) {
  const std::int64_t rows = dtable.shape()[0], width = dtable.numel() / rows, positions = ids.numel();
  backend::check_ids(ids, "embedding_backward");
  HPCT_CHECK(dy.numel() == positions * width, "embedding_backward: dy " + shape_string(dy.shape()));
  const std::int32_t* id = ids.data_as<std::int32_t>();
  for (std::int64_t i = 0; i < positions; ++i) {
    const std::int64_t r = token_id(id[i], vocabulary) - row_offset;
    if (r < 0 || r >= rows) continue;
    float* row = dtable.data() + r * width;
    const float* g = dy.data() + i * width;
    for (std::int64_t j = 0; j < width; ++j) row[j] += g[j];
  }
}

void layernorm_forward(const Tensor& x, const Tensor& w, const Tensor& b, std::int64_t width, float eps, Tensor& mean,
                       Tensor& rstd, Tensor& y) {
  const std::int64_t rows = x.numel() / width;
  HPCT_CHECK(w.numel() == width && y.numel() == x.numel() && mean.numel() >= rows && rstd.numel() >= rows,
             "layernorm_forward: x " + shape_string(x.shape()) + " width " + std::to_string(width));
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* in = x.data() + i * width;
    float* out = y.data() + i * width;
    float s = 0.f, ss = 0.f;  // two passes in float, as PyTorch's CPU kernel
    for (std::int64_t j = 0; j < width; ++j) s += in[j];
    const float m = s / static_cast<float>(width);
    for (std::int64_t j = 0; j < width; ++j) ss += (in[j] - m) * (in[j] - m);
    const float r = 1.f / std::sqrt(ss / static_cast<float>(width) + eps);
    for (std::int64_t j = 0; j < width; ++j) out[j] = (in[j] - m) * r * w.data()[j] + (b.defined() ? b.data()[j] : 0.f);
    mean.data()[i] = m;
    rstd.data()[i] = r;
  }
}

void layernorm_backward(const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& rstd, const Tensor& dy,
                        std::int64_t width, Tensor& dx, Tensor& dw, Tensor& db) {
  const std::int64_t rows = x.numel() / width;
  HPCT_CHECK(dy.numel() == x.numel() && dw.numel() == width, "layernorm_backward: " + shape_string(x.shape()));
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* in = x.data() + i * width;
    const float* g = dy.data() + i * width;
    const float m = mean.data()[i], r = rstd.data()[i];
    double sum_g = 0, sum_gx = 0;  // mean of dy*w and of dy*w*xhat
    for (std::int64_t j = 0; j < width; ++j) {
      const float xhat = (in[j] - m) * r, gw = g[j] * w.data()[j];
      sum_g += gw;
      sum_gx += gw * xhat;
      dw.data()[j] += g[j] * xhat;
      if (db.defined()) db.data()[j] += g[j];
    }
    if (!dx.defined()) continue;
    const auto mg = static_cast<float>(sum_g / static_cast<double>(width));
    const auto mgx = static_cast<float>(sum_gx / static_cast<double>(width));
    float* out = dx.data() + i * width;
    for (std::int64_t j = 0; j < width; ++j) out[j] = r * (g[j] * w.data()[j] - mg - (in[j] - m) * r * mgx);
  }
}

void rmsnorm_forward(const Tensor& x, const Tensor& w, std::int64_t width, float eps, Tensor& rstd, Tensor& y) {
  const std::int64_t rows = x.numel() / width;
  HPCT_CHECK(w.numel() == width && y.numel() == x.numel() && rstd.numel() >= rows,
             "rmsnorm_forward: x " + shape_string(x.shape()) + " width " + std::to_string(width));
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* in = x.data() + i * width;
    float* out = y.data() + i * width;
    float ss = 0.f;
    for (std::int64_t j = 0; j < width; ++j) ss += in[j] * in[j];
    const float r = 1.f / std::sqrt(ss / static_cast<float>(width) + eps);
    for (std::int64_t j = 0; j < width; ++j) out[j] = in[j] * r * w.data()[j];
    rstd.data()[i] = r;
  }
}

void rmsnorm_backward(const Tensor& x, const Tensor& w, const Tensor& rstd, const Tensor& dy, std::int64_t width,
                      Tensor& dx, Tensor& dw) {
  const std::int64_t rows = x.numel() / width;
  HPCT_CHECK(dy.numel() == x.numel() && dw.numel() == width, "rmsnorm_backward: " + shape_string(x.shape()));
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* in = x.data() + i * width;
    const float* g = dy.data() + i * width;
    const float r = rstd.data()[i];
    double sum_gx = 0;  // of dy*w*xhat
    for (std::int64_t j = 0; j < width; ++j) {
      const float xhat = in[j] * r;
      sum_gx += g[j] * w.data()[j] * xhat;
      dw.data()[j] += g[j] * xhat;
    }
    if (!dx.defined()) continue;
    const auto mgx = static_cast<float>(sum_gx / static_cast<double>(width));
    float* out = dx.data() + i * width;
    for (std::int64_t j = 0; j < width; ++j) out[j] = r * (g[j] * w.data()[j] - in[j] * r * mgx);
  }
}

namespace {
// GELU's tanh approximation and its derivative (cpu_ops.cpp's activation, for one element).
constexpr float kSqrt2OverPi = 0.79788456080286536f, kGeluCubic = 0.044715f;
float gelu_tanh_of(float a) { return 0.5f * a * (1.f + std::tanh(kSqrt2OverPi * (a + kGeluCubic * a * a * a))); }
float gelu_tanh_slope(float a) {
  const float t = std::tanh(kSqrt2OverPi * (a + kGeluCubic * a * a * a));
  return 0.5f * (1.f + t) + 0.5f * a * (1.f - t * t) * kSqrt2OverPi * (1.f + 3.f * kGeluCubic * a * a);
}

// A gated unit's rows (SwiGLU's, GeGLU's): each row of x [rows, 2F] is the gate a and up b, and
// `element(a, b, g, da, db)` computes one output (forward: dy absent) or one gradient pair.
template <typename Element>
void gated_rows(const char* what, const Tensor& x, const Tensor& narrow, Element element) {
  const std::int64_t f = narrow.shape().back(), rows = narrow.numel() / f;
  HPCT_CHECK(x.numel() == 2 * narrow.numel() && x.shape().back() == 2 * f,
             std::string(what) + ": x " + shape_string(x.shape()) + ", " + shape_string(narrow.shape()));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < f; ++j) element(i * 2 * f + j, i * 2 * f + f + j, i * f + j);
}
}  // namespace

void swiglu_forward(const Tensor& x, Tensor& y) {
  const float* in = x.data();
  float* out = y.data();
  gated_rows("swiglu_forward", x, y, [&](std::int64_t a, std::int64_t b, std::int64_t o) {
    out[o] = in[a] / (1.f + std::exp(-in[a])) * in[b];
  });
}

void swiglu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  HPCT_CHECK(dx.numel() == x.numel(), "swiglu_backward: x " + shape_string(x.shape()));
  const float *in = x.data(), *g = dy.data();
  float* d = dx.data();
  gated_rows("swiglu_backward", x, dy, [&](std::int64_t a, std::int64_t b, std::int64_t o) {
    const float s = 1.f / (1.f + std::exp(-in[a]));
    d[a] = g[o] * in[b] * s * (1.f + in[a] * (1.f - s));
    d[b] = g[o] * in[a] * s;
  });
}

void geglu_forward(const Tensor& x, Tensor& y) {
  const float* in = x.data();
  float* out = y.data();
  gated_rows("geglu_forward", x, y,
             [&](std::int64_t a, std::int64_t b, std::int64_t o) { out[o] = gelu_tanh_of(in[a]) * in[b]; });
}

void geglu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  HPCT_CHECK(dx.numel() == x.numel(), "geglu_backward: x " + shape_string(x.shape()));
  const float *in = x.data(), *g = dy.data();
  float* d = dx.data();
  gated_rows("geglu_backward", x, dy, [&](std::int64_t a, std::int64_t b, std::int64_t o) {
    d[a] = g[o] * in[b] * gelu_tanh_slope(in[a]);
    d[b] = g[o] * gelu_tanh_of(in[a]);
  });
}

void softcap_forward(Tensor& x, float cap) {
  HPCT_CHECK(cap > 0.f, "softcap_forward: a cap of " + std::to_string(cap));
  float* v = x.data();
  for (std::int64_t i = 0; i < x.numel(); ++i) v[i] = std::isinf(v[i]) ? v[i] : cap * std::tanh(v[i] / cap);
}

void softcap_backward(const Tensor& y, float cap, Tensor& dy) {
  backend::same_size(y, dy, "softcap_backward");
  HPCT_CHECK(cap > 0.f, "softcap_backward: a cap of " + std::to_string(cap));
  const float* out = y.data();
  float* g = dy.data();
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    const float t = out[i] / cap;
    g[i] = std::isinf(out[i]) ? 0.f : g[i] * (1.f - t * t);
  }
}

void attention_probs(const Tensor& qkv, std::int64_t heads, Tensor& att) {
  const AttentionDims a = attention_dims(qkv, heads, att, "attention_probs");
  const std::int64_t ld = 3 * a.c;
  for (std::int64_t n = 0; n < a.n; ++n)
    for (std::int64_t h = 0; h < heads; ++h) {
      const float* q = qkv.data() + n * a.t * ld + h * a.d;
      float* s = att.data() + (n * heads + h) * a.t * a.t;
      sgemm(false, true, a.t, a.t, a.d, a.scale, q, ld, q + a.c, ld, 0.f, s, a.t);
      for (std::int64_t i = 0; i < a.t; ++i) {
        float* row = s + i * a.t;
        const float mx = *std::max_element(row, row + i + 1);
        float sum = 0.f;  // at most T terms of at most 1: float is enough
        for (std::int64_t j = 0; j <= i; ++j) sum += row[j] = std::exp(row[j] - mx);
        const float inv = 1.f / sum;
        for (std::int64_t j = 0; j <= i; ++j) row[j] *= inv;
        std::fill(row + i + 1, row + a.t, 0.f);
      }
    }
}

void attention_values(const Tensor& att, const Tensor& qkv, std::int64_t heads, Tensor& y) {
  const AttentionDims a = attention_dims(qkv, heads, att, "attention_values");
  HPCT_CHECK(y.numel() == a.n * a.t * a.c, "attention_values: y " + shape_string(y.shape()));
  const std::int64_t ld = 3 * a.c;
  for (std::int64_t n = 0; n < a.n; ++n)
    for (std::int64_t h = 0; h < heads; ++h)
      sgemm(false, false, a.t, a.d, a.t, 1.f, att.data() + (n * heads + h) * a.t * a.t, a.t,
            qkv.data() + n * a.t * ld + 2 * a.c + h * a.d, ld, 0.f, y.data() + n * a.t * a.c + h * a.d, a.c);
}

void attention_values_backward(const Tensor& att, const Tensor& qkv, const Tensor& dy, std::int64_t heads, Tensor& datt,
                               Tensor& dqkv) {
  const AttentionDims a = attention_dims(qkv, heads, att, "attention_values_backward");
  backend::same_size(att, datt, "attention_values_backward");
  backend::same_size(qkv, dqkv, "attention_values_backward");
  const std::int64_t ld = 3 * a.c;
  for (std::int64_t n = 0; n < a.n; ++n)
    for (std::int64_t h = 0; h < heads; ++h) {
      const float* p = att.data() + (n * heads + h) * a.t * a.t;
      const float* g = dy.data() + n * a.t * a.c + h * a.d;
      sgemm(false, true, a.t, a.t, a.d, 1.f, g, a.c, qkv.data() + n * a.t * ld + 2 * a.c + h * a.d, ld, 0.f,
            datt.data() + (n * heads + h) * a.t * a.t, a.t);
      sgemm(true, false, a.t, a.d, a.t, 1.f, p, a.t, g, a.c, 0.f, dqkv.data() + n * a.t * ld + 2 * a.c + h * a.d, ld);
    }
}

void attention_probs_backward(const Tensor& att, Tensor& datt, const Tensor& qkv, std::int64_t heads,
                              Precision rounding, Tensor& dqkv) {
  const AttentionDims a = attention_dims(qkv, heads, att, "attention_probs_backward");
  backend::same_size(att, datt, "attention_probs_backward");
  backend::same_size(qkv, dqkv, "attention_probs_backward");
  const std::int64_t ld = 3 * a.c;
  for (std::int64_t n = 0; n < a.n; ++n)
    for (std::int64_t h = 0; h < heads; ++h) {
      const float* p = att.data() + (n * heads + h) * a.t * a.t;
      float* ds = datt.data() + (n * heads + h) * a.t * a.t;
      for (std::int64_t i = 0; i < a.t; ++i) {
        double dot = 0;
        for (std::int64_t j = 0; j <= i; ++j) dot += static_cast<double>(p[i * a.t + j]) * ds[i * a.t + j];
        for (std::int64_t j = 0; j < a.t; ++j)
          ds[i * a.t + j] = j <= i ? p[i * a.t + j] * (ds[i * a.t + j] - static_cast<float>(dot)) * a.scale : 0.f;
      }
      if (rounding != Precision::fp32) {  // the GEMMs' operand as cuBLAS takes it in 16 bits
        Tensor block = datt.view((n * heads + h) * a.t * a.t, {a.t * a.t});
        cpu::round_to_precision(block, rounding);
      }
      const float* q = qkv.data() + n * a.t * ld + h * a.d;
      float* dq = dqkv.data() + n * a.t * ld + h * a.d;
      sgemm(false, false, a.t, a.d, a.t, 1.f, ds, a.t, q + a.c, ld, 0.f, dq, ld);  // dq = dS k
      sgemm(true, false, a.t, a.d, a.t, 1.f, ds, a.t, q, ld, 0.f, dq + a.c, ld);   // dk = dS^T q
    }
}

}  // namespace hpctrain::cpu
