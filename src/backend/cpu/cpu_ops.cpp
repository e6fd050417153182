// The CPU backend (backend/cpu/cpu_ops.hpp), first half: GEMM (OpenBLAS, or
// oneDNN's bf16 matmul), element-wise work, losses, the optimizer updates,
// precision rounding and sums; cpu_layer_ops.cpp holds the rest. The
// reference every other backend is tested against.
#include "hpctrain/backend/cpu/cpu_ops.hpp"
#include "vector_clones.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#if defined(_OPENMP)
#include <omp.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "hpctrain/backend/checks.hpp"
#include "hpctrain/backend/cpu/onednn_matmul.hpp"
#include "hpctrain/backend/cpu/sgemm.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/tensor/step_scalars.hpp"

namespace hpctrain::cpu {

using backend::same_size;

namespace {
constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

// erf(x) in float as a rational function (Eigen's and TensorFlow's generic_fast_erf_float), with
// no branch and no library call, so GELU's loops vectorize: within 4.3e-7 of erf over the floats
// (measured against double erf in steps of 1e-5 over [-8, 8]), where libm's erff took a fifth of
// a GPT step (docs/performance.md).
inline float erf_rational(float x) {
  x = x > 4.f ? 4.f : x;  // selects, not std::min/max: they if-convert (with -fno-trapping-math)
  x = x < -4.f ? -4.f : x;
  const float x2 = x * x;
  float p = x2 * -2.72614225801306e-10f + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  float q = x2 * -1.45660718464996e-05f + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  return x * p / q;
}

// exp(y) for y <= 0 in float without a library call (Cephes' expf: y = n ln2 + r, a degree-6
// polynomial in r, times 2^n through the exponent bits), so the loops calling it vectorize;
// within 2 ulp; 0 below -87.
inline float exp_nonpositive(float y) {
  y = y < -87.f ? -87.f : y;
  const float n = std::floor(y * 1.44269504088896341f + 0.5f);
  const float r = y - n * 0.693359375f - n * -2.12194440e-4f;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  const float e = p * r * r + r + 1.f;
  const auto bits = static_cast<std::uint32_t>(static_cast<std::int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return e * scale;
}

// Softmax's row loops (a language model's logits: 50,304 wide for GPT-2's vocabulary, where the
// loss took more of a small model's step than its GEMMs did with libm's double exp): the
// exponentials in float without a library call, and a sum and a maximum with eight accumulators in
// a fixed order, so they vectorize and give the same bits at any vector width. exp_or_zero is
// exp_nonpositive that gives 0 (not exp(-87)) below -87: a masked logit (-inf) gets probability 0.
inline float exp_or_zero(float y) { return y < -87.f ? 0.f : exp_nonpositive(y); }

HPCT_VECTOR_CLONES void exp_shifted(const float* z, float shift, float* p, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) p[j] = exp_or_zero(z[j] - shift);
}

// Eight lanes written out (GCC's vector extensions: one AVX register, or two SSE ones in the
// baseline clone), so the reductions vectorize without reassociating: the same lanes, combined in
// the same order, at any vector width.
typedef float Floats8 __attribute__((vector_size(32)));
typedef double Doubles4 __attribute__((vector_size(32)));

// Eight double lanes, element j of a row in lane j % 8 and the lanes combined in a fixed order:
// summed in chunks (each but the last a multiple of 8 long) or at once, a row gives the same bits.
struct LaneSum {
  Doubles4 lo = {0, 0, 0, 0}, hi = {0, 0, 0, 0};
  double tail[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // the elements after the last whole eight
  double total() const {
    double acc[8] = {lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]};
    for (int k = 0; k < 8; ++k) acc[k] += tail[k];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  }
};

HPCT_VECTOR_CLONES void add_lanes(LaneSum& s, const float* p, std::int64_t n) {
  std::int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    Floats8 v;
    std::memcpy(&v, p + j, sizeof v);
    s.lo += __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3), Doubles4);
    s.hi += __builtin_convertvector(__builtin_shufflevector(v, v, 4, 5, 6, 7), Doubles4);
  }
  for (int k = 0; j < n; ++j, ++k) s.tail[k] += static_cast<double>(p[j]);
}

// The squares of p[0, n) into s's lanes as add_lanes adds values: each square exact in double
// (24 by 24 significant bits), so a fused multiply-add gives the same bits as a product and a sum.
HPCT_VECTOR_CLONES void add_square_lanes(LaneSum& s, const float* p, std::int64_t n) {
  std::int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    Floats8 v;
    std::memcpy(&v, p + j, sizeof v);
    const Doubles4 a = __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3), Doubles4);
    const Doubles4 b = __builtin_convertvector(__builtin_shufflevector(v, v, 4, 5, 6, 7), Doubles4);
    s.lo += a * a;
    s.hi += b * b;
  }
  for (int k = 0; j < n; ++j, ++k) s.tail[k] += static_cast<double>(p[j]) * p[j];
}

double sum_of(const float* p, std::int64_t n) {
  LaneSum s;
  add_lanes(s, p, n);
  return s.total();
}

// sum_of(exp_shifted(z, shift)) without writing the exponentials out: they go through a buffer
// that stays in L1, so evaluation reads each logit once and writes nothing. The same bits.
double sum_of_exp_shifted(const float* z, float shift, std::int64_t n) {
  constexpr std::int64_t kChunk = 1024;  // (a multiple of 8)
  float e[kChunk];
  LaneSum s;
  for (std::int64_t j = 0; j < n; j += kChunk) {
    const std::int64_t m = std::min(kChunk, n - j);
    exp_shifted(z + j, shift, e, m);
    add_lanes(s, e, m);
  }
  return s.total();
}

HPCT_VECTOR_CLONES float max_of(const float* z, std::int64_t n) {
  Floats8 m = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  std::int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    Floats8 v;
    std::memcpy(&v, z + j, sizeof v);
    m = v > m ? v : m;
  }
  float acc[8] = {m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7]};
  for (int k = 0; j < n; ++j, ++k) acc[k] = z[j] > acc[k] ? z[j] : acc[k];
  float r = acc[0];
  for (int k = 1; k < 8; ++k) r = acc[k] > r ? acc[k] : r;
  return r;
}

HPCT_VECTOR_CLONES void scale_row(float* p, float factor, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) p[j] *= factor;
}

HPCT_VECTOR_CLONES void add_row(float* __restrict y, const float* __restrict b, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) y[j] += b[j];
}

// Whether `label` is the first position of the row's maximum `mx` (std::max_element's answer).
bool first_maximum_at(const float* z, float mx, std::int64_t label) {
  if (!(z[label] == mx)) return false;
  for (std::int64_t j = 0; j < label; ++j)
    if (z[j] == mx) return false;
  return true;
}

// body(begin, end) over [0, n) in pieces of `grain`, on the [kernels] threads (OpenMP's pool,
// sized by configure_backend) where the build has OpenMP (with oneDNN), else in order. The pieces
// do not depend on the thread count: code that sums per piece and then over the pieces in order
// gives the same bits with any number of threads. `body` must not throw (an exception cannot
// leave an OpenMP region).
constexpr std::int64_t kElementGrain = 1 << 16;  // element-wise loops' piece: 256 KiB of float32

template <class Body>
void parallel_pieces(std::int64_t n, std::int64_t grain, const Body& body) {
  const std::int64_t pieces = (n + grain - 1) / grain;
#if defined(_OPENMP)
  if (pieces > 1 && omp_get_max_threads() > 1) {
#pragma omp parallel for schedule(static)
    for (std::int64_t c = 0; c < pieces; ++c) body(c * grain, std::min(n, (c + 1) * grain));
    return;
  }
#endif
  for (std::int64_t c = 0; c < pieces; ++c) body(c * grain, std::min(n, (c + 1) * grain));
}

// GELU's loops, compiled twice (vector_clones.hpp): the build targets any x86-64, and these
// loops are where a GPT spends most of its non-GEMM time; ReLU's, where a CNN spends its.

HPCT_VECTOR_CLONES void relu_forward(const float* in, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = in[i] > 0 ? in[i] : 0.f;
}

// Both operands loaded unconditionally, so the select vectorizes (no branch).
HPCT_VECTOR_CLONES void relu_backward(const float* in, const float* g, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float gi = g[i], xi = in[i];
    out[i] = xi > 0 ? gi : 0.f;
  }
}

HPCT_VECTOR_CLONES void gelu_forward(const float* in, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = 0.5f * in[i] * (1.f + erf_rational(in[i] * kInvSqrt2));
}

// GELU's tanh approximation (GPT-2's gelu_new): 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).
constexpr float kSqrt2OverPi = 0.79788456080286536f, kGeluCubic = 0.044715f;
void gelu_tanh_forward(const float* in, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float x = in[i];
    out[i] = 0.5f * x * (1.f + std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x)));
  }
}
void gelu_tanh_backward(const float* in, const float* g, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float x = in[i], t = std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
    const float du = kSqrt2OverPi * (1.f + 3.f * kGeluCubic * x * x);
    out[i] = g[i] * (0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * du);
  }
}

HPCT_VECTOR_CLONES void gelu_backward(const float* in, const float* g, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float cdf = 0.5f * (1.f + erf_rational(in[i] * kInvSqrt2));
    const float pdf = kInvSqrt2Pi * exp_nonpositive(-0.5f * in[i] * in[i]);
    out[i] = g[i] * (cdf + in[i] * pdf);
  }
}
}  // namespace

void gemm(bool ta, bool tb, float alpha, const Tensor& a, const Tensor& b, float beta, Tensor& c) {
  const auto [m, n, k] = gemm_dims(ta, tb, a, b, c);
  if (m == 0 || n == 0) return;
  if (bf16_math_enabled()) {  // [precision] dtype = bf16 on a CPU with native bf16 (backend/cpu/onednn_matmul.hpp)
    bf16_gemm(ta, tb, m, n, k, alpha, a.data(), static_cast<int>(a.cols()), b.data(), static_cast<int>(b.cols()), beta,
              c.data(), n);
    return;
  }
  sgemm(ta, tb, m, n, k, alpha, a.data(), a.cols(), b.data(), b.cols(), beta, c.data(), n);
}

void add_bias(Tensor& y, const Tensor& bias) {
  HPCT_CHECK(y.cols() == bias.numel(), "add_bias: " + shape_string(y.shape()) + " + " + shape_string(bias.shape()));
  const std::int64_t n = y.cols();
  for (std::int64_t i = 0; i < y.rows(); ++i) add_row(y.data() + i * n, bias.data(), n);
}

void add_bias_activation(Tensor& y, const Tensor& bias, Activation f, Tensor& z) {
  HPCT_CHECK(y.cols() == bias.numel(),
             "add_bias_activation: " + shape_string(y.shape()) + " + " + shape_string(bias.shape()));
  same_size(y, z, "add_bias_activation");
  const std::int64_t n = y.cols();
  for (std::int64_t i = 0; i < y.rows(); ++i) {  // row by row: the row stays in cache for the second loop
    add_row(y.data() + i * n, bias.data(), n);
    Tensor in = y.view(i * n, {n}), out = z.view(i * n, {n});
    cpu::activation_forward(f, in, out);
  }
}

void accumulate_bias_grad(const Tensor& dy, Tensor& db) {
  HPCT_CHECK(dy.cols() == db.numel(), "bias grad: " + shape_string(dy.shape()) + " -> " + shape_string(db.shape()));
  const std::int64_t n = dy.cols();
  for (std::int64_t i = 0; i < dy.rows(); ++i) {
    const float* row = dy.data() + i * n;
    for (std::int64_t j = 0; j < n; ++j) db.data()[j] += row[j];
  }
}

void activation_forward(Activation f, const Tensor& x, Tensor& y) {
  same_size(x, y, "activation");
  const float* in = x.data();
  float* out = y.data();
  const std::int64_t n = x.numel();
  switch (f) {
    case Activation::relu: relu_forward(in, out, n); break;
    case Activation::tanh:
      for (std::int64_t i = 0; i < n; ++i) out[i] = std::tanh(in[i]);
      break;
    case Activation::gelu:  // exact: x * Phi(x)
      gelu_forward(in, out, n);
      break;
    case Activation::relu2:
      for (std::int64_t i = 0; i < n; ++i) out[i] = in[i] > 0 ? in[i] * in[i] : 0.f;
      break;
    case Activation::gelu_tanh: gelu_tanh_forward(in, out, n); break;
  }
}

void activation_backward(Activation f, const Tensor& x, const Tensor& dy, Tensor& dx) {
  same_size(x, dy, "activation backward");
  same_size(x, dx, "activation backward");
  const float* in = x.data();
  const float* g = dy.data();
  float* out = dx.data();
  const std::int64_t n = x.numel();
  switch (f) {
    case Activation::relu: relu_backward(in, g, out, n); break;
    case Activation::tanh:
      for (std::int64_t i = 0; i < n; ++i) {
        const float t = std::tanh(in[i]);
        out[i] = g[i] * (1.f - t * t);
      }
      break;
    case Activation::gelu: gelu_backward(in, g, out, n); break;
    case Activation::relu2:
      for (std::int64_t i = 0; i < n; ++i) out[i] = in[i] > 0 ? 2.f * in[i] * g[i] : 0.f;
      break;
    case Activation::gelu_tanh: gelu_tanh_backward(in, g, out, n); break;
  }
}

void copy(const Tensor& src, Tensor& dst) {
  same_size(src, dst, "copy");
  if (src.data() != dst.data())
    std::memcpy(dst.data(), src.data(), static_cast<std::size_t>(src.numel()) * sizeof(float));
}

void fill(Tensor& t, float value) { std::fill(t.data(), t.data() + t.numel(), value); }

void fill_columns(Tensor& y, std::int64_t first, float value) {
  const std::int64_t n = y.cols();
  HPCT_CHECK(first >= 0 && first <= n, "fill_columns: column " + std::to_string(first) + " of " + std::to_string(n));
  for (std::int64_t i = 0; i < y.rows(); ++i) std::fill(y.data() + i * n + first, y.data() + (i + 1) * n, value);
}

void scale(Tensor& t, float factor) { scale_row(t.data(), factor, t.numel()); }

// One row's gradient d = grad_scale (e inv_sum - onehot(label)), the probability e inv_sum
// rounded to float first: from the exponentials (inv_sum = 1 / their sum), or from stored
// probabilities (inv_sum = 1, exact), the same bits either way. `e` may be `d` (in place); a label
// outside [0, n) (another rank's block of the vocabulary) has no one here.
HPCT_VECTOR_CLONES void gradient_row(const float* e, float inv_sum, float grad_scale, std::int64_t label, float* d,
                                     std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) {
    const float p = e[j] * inv_sum;
    d[j] = grad_scale * (p - (j == label ? 1.f : 0.f));
  }
}

void softmax_cross_entropy(const Tensor& logits, const std::int32_t* labels, Tensor& scalars, float grad_scale,
                           Tensor* dlogits) {
  if (dlogits) same_size(logits, *dlogits, "softmax cross-entropy's gradient");
  HPCT_CHECK(scalars.numel() >= step_scalars::count, "softmax: step scalars too small");
  const std::int64_t rows = logits.rows(), n = logits.cols();
  for (std::int64_t i = 0; i < rows; ++i)
    HPCT_CHECK(labels[i] >= 0 && labels[i] < n, "label " + std::to_string(labels[i]) + " outside the logits");
  std::vector<double> row_loss(static_cast<std::size_t>(rows));  // (added in row order below: any thread count)
  std::vector<char> row_correct(static_cast<std::size_t>(rows));
  parallel_pieces(rows, 1, [&](std::int64_t i, std::int64_t) {
    const float* z = logits.data() + i * n;
    const float mx = max_of(z, n);
    double sum;
    if (dlogits) {  // the row's exponentials, their sum and its gradient while the row is in cache
      float* d = dlogits->data() + i * n;
      exp_shifted(z, mx, d, n);
      sum = sum_of(d, n);
      gradient_row(d, static_cast<float>(1.0 / sum), grad_scale, labels[i], d, n);
    } else {
      sum = sum_of_exp_shifted(z, mx, n);
    }
    row_loss[static_cast<std::size_t>(i)] = std::log(sum) - static_cast<double>(z[labels[i]] - mx);
    row_correct[static_cast<std::size_t>(i)] = first_maximum_at(z, mx, labels[i]);
  });
  double loss = 0;
  std::int64_t correct = 0;
  for (std::int64_t i = 0; i < rows; ++i) {
    loss += row_loss[static_cast<std::size_t>(i)];
    correct += row_correct[static_cast<std::size_t>(i)];
  }
  float* s = scalars.data();
  s[step_scalars::loss_sum] += static_cast<float>(loss);
  s[step_scalars::correct] += static_cast<float>(correct);
  s[step_scalars::samples] += static_cast<float>(rows);
}

void softmax_cross_entropy_backward(const Tensor& probs, const std::int32_t* labels, std::int64_t label_offset,
                                    float grad_scale, Tensor& dlogits) {
  same_size(probs, dlogits, "softmax backward");
  const std::int64_t n = probs.cols();
  parallel_pieces(probs.rows(), 1, [&](std::int64_t i, std::int64_t) {
    gradient_row(probs.data() + i * n, 1.f, grad_scale, labels[i] - label_offset, dlogits.data() + i * n, n);
  });
}

void row_max(const Tensor& logits, Tensor& out) {
  const std::int64_t rows = logits.rows(), n = logits.cols();
  HPCT_CHECK(out.numel() == rows && n > 0, "row_max: out " + shape_string(out.shape()));
  parallel_pieces(rows, 1, [&](std::int64_t i, std::int64_t) { out.data()[i] = max_of(logits.data() + i * n, n); });
}

void softmax_partial(const Tensor& logits, const Tensor& row_max, const std::int32_t* labels, std::int64_t label_offset,
                     Tensor& probs, Tensor& sums) {
  same_size(logits, probs, "softmax_partial");
  const std::int64_t rows = logits.rows(), n = logits.cols();
  HPCT_CHECK(row_max.numel() == rows && sums.numel() == 2 * rows, "softmax_partial: row_max or sums");
  parallel_pieces(rows, 1, [&](std::int64_t i, std::int64_t) {
    const float* z = logits.data() + i * n;
    float* p = probs.data() + i * n;
    const float mx = row_max.data()[i];
    exp_shifted(z, mx, p, n);
    const double sum = sum_of(p, n);
    const std::int64_t label = labels[i] - label_offset;
    sums.data()[2 * i] = static_cast<float>(sum);
    sums.data()[2 * i + 1] = label >= 0 && label < n ? z[label] : 0.f;
  });
}

void softmax_finish(Tensor& probs, const Tensor& row_max, const Tensor& sums, Tensor& scalars) {
  HPCT_CHECK(scalars.numel() >= step_scalars::count, "softmax_finish: step scalars too small");
  const std::int64_t rows = probs.rows(), n = probs.cols();
  HPCT_CHECK(row_max.numel() == rows && sums.numel() == 2 * rows, "softmax_finish: row_max or sums");
  parallel_pieces(rows, 1, [&](std::int64_t i, std::int64_t) {
    scale_row(probs.data() + i * n, static_cast<float>(1.0 / static_cast<double>(sums.data()[2 * i])), n);
  });
  double loss = 0;
  std::int64_t correct = 0;
  for (std::int64_t i = 0; i < rows; ++i) {
    const double sum = sums.data()[2 * i], mx = row_max.data()[i], label_logit = sums.data()[2 * i + 1];
    loss += std::log(sum) + mx - label_logit;
    correct += label_logit >= mx;
  }
  float* s = scalars.data();
  s[step_scalars::loss_sum] += static_cast<float>(loss);
  s[step_scalars::correct] += static_cast<float>(correct);
  s[step_scalars::samples] += static_cast<float>(rows);
}

std::int64_t count_correct(const Tensor& logits, const std::int32_t* labels) {
  const std::int64_t n = logits.cols();
  std::int64_t correct = 0;
  for (std::int64_t i = 0; i < logits.rows(); ++i) {
    const float* z = logits.data() + i * n;
    correct += (std::max_element(z, z + n) - z) == labels[i];
  }
  return correct;
}

void sgd_update(Tensor& w, const Tensor& g, Tensor& m, const Tensor& scalars, float momentum, float weight_decay,
                bool nesterov) {
  same_size(w, g, "sgd");
  const float lr = scalars.data()[step_scalars::learning_rate];
  same_size(w, m, "sgd");
  float* pw = w.data();
  const float* pg = g.data();
  float* pm = m.data();
  const std::int64_t n = w.numel();
  if (!nesterov) {
    for (std::int64_t i = 0; i < n; ++i) {
      pm[i] = momentum * pm[i] + (pg[i] + weight_decay * pw[i]);
      pw[i] -= lr * pm[i];
    }
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const float grad = pg[i] + weight_decay * pw[i];
    pm[i] = momentum * pm[i] + grad;
    pw[i] -= lr * (grad + momentum * pm[i]);
  }
}

void adam_update(Tensor& w, const Tensor& g, Tensor& m, Tensor& v, const Tensor& scalars, float beta1, float beta2,
                 float eps, float weight_decay, bool decoupled) {
  same_size(w, g, "adam");
  const float lr = scalars.data()[step_scalars::learning_rate];
  const auto step = static_cast<std::int64_t>(scalars.data()[step_scalars::adam_step]);
  same_size(w, m, "adam");
  same_size(w, v, "adam");
  const double c1 = 1 - std::pow(static_cast<double>(beta1), static_cast<double>(step));
  const double c2 = 1 - std::pow(static_cast<double>(beta2), static_cast<double>(step));
  const float step_size = static_cast<float>(lr / c1), root_c2 = static_cast<float>(std::sqrt(c2));
  float* pw = w.data();
  const float* pg = g.data();
  float* pm = m.data();
  float* pv = v.data();
  // (by value: the stores to pw must not be taken to change the rates, or the loop would not vectorize)
  parallel_pieces(w.numel(), kElementGrain, [=](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      float grad = pg[i];
      if (decoupled)
        pw[i] -= lr * weight_decay * pw[i];
      else
        grad += weight_decay * pw[i];
      pm[i] = beta1 * pm[i] + (1 - beta1) * grad;
      pv[i] = beta2 * pv[i] + (1 - beta2) * grad * grad;
      pw[i] -= step_size * pm[i] / (std::sqrt(pv[i]) / root_c2 + eps);
    }
  });
}

namespace {
float round_fp16(float x) {  // IEEE half: 11-bit significand, max 65504, subnormal steps of 2^-24
  if (!std::isfinite(x)) return x;
  const float a = std::fabs(x);
  if (a >= 65520.f) return std::copysign(INFINITY, x);                           // rounds past the largest half
  if (a < 6.103515625e-05f) return std::nearbyint(x * 16777216.f) / 16777216.f;  // subnormal grid 2^-24
  int e;
  std::frexp(a, &e);                           // a = m * 2^e, m in [0.5, 1)
  const float step = std::ldexp(1.f, e - 11);  // 11 significant bits
  return std::nearbyint(x / step) * step;      // nearbyint: round half to even
}

#if defined(__x86_64__)
// The same rounding by the F16C conversion instructions (float -> half -> float, round to
// nearest even, overflow to infinity, half subnormals), 8 values at a time; compiled for F16C
// here and used only where the CPU reports it.
__attribute__((target("avx,f16c"))) void round_fp16_f16c(float* d, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(d + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) d[i] = round_fp16(d[i]);
}
#endif
}  // namespace

void round_to_precision(Tensor& t, Precision p) {
  float* d = t.data();
  const std::int64_t n = t.numel();
  if (p == Precision::bf16) {
    // Keep the top 16 bits, rounding to nearest even; inf and NaN stay as they are. Without
    // branches, on the bits, so the loop vectorizes (activations are large).
    for (std::int64_t i = 0; i < n; ++i) {
      std::uint32_t x;
      std::memcpy(&x, d + i, 4);
      const std::uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) & 0xffff0000u;
      x = (x & 0x7f800000u) == 0x7f800000u ? x : r;
      std::memcpy(d + i, &x, 4);
    }
  } else if (p == Precision::fp16) {
#if defined(__x86_64__)
    if (have_f16c()) {
      round_fp16_f16c(d, n);
      return;
    }
#endif
    for (std::int64_t i = 0; i < n; ++i) d[i] = round_fp16(d[i]);
  }
}

double sum_of_squares(const Tensor& t) {  // (per piece, then the pieces in order: any thread count)
  const float* p = t.data();
  const std::int64_t n = t.numel();
  std::vector<double> piece(static_cast<std::size_t>((n + kElementGrain - 1) / kElementGrain));
  parallel_pieces(n, kElementGrain, [&](std::int64_t begin, std::int64_t end) {
    LaneSum s;  // (eight chains in flight, vectorized: one chain waited on each add)
    add_square_lanes(s, p + begin, end - begin);
    piece[static_cast<std::size_t>(begin / kElementGrain)] = s.total();
  });
  double s = 0;
  for (double x : piece) s += x;
  return s;
}

void multiply(const Tensor& a, const Tensor& b, Tensor& out) {
  same_size(a, b, "multiply");
  same_size(a, out, "multiply");
  const std::int64_t n = a.numel();
  const float *pa = a.data(), *pb = b.data();
  float* po = out.data();
  for (std::int64_t i = 0; i < n; ++i) po[i] = pa[i] * pb[i];
}

void add(const Tensor& a, const Tensor& b, Tensor& out) {
  same_size(a, b, "add");
  same_size(a, out, "add");
  const std::int64_t n = a.numel();
  const float *pa = a.data(), *pb = b.data();
  float* po = out.data();
  for (std::int64_t i = 0; i < n; ++i) po[i] = pa[i] + pb[i];
}

}  // namespace hpctrain::cpu
