// Attention (the unfused path, fused=0) in bf16 and fp16 rounds its GEMM operands as cuBLAS takes them
// (layers/attention.cpp): the layer's weight gradients on the CPU equal a float64 reference built from tensors rounded
// at those points (qkv, the probabilities, the heads' output; the heads' gradient, the score gradient, dqkv), and
// differ from one that rounds nothing (the negative control: the test can tell the two apart).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/model/model.hpp"
#include "unit_test_util.hpp"

using namespace hpctrain;

namespace {

constexpr std::int64_t N = 3, T = 6, C = 8, H = 2, D = C / H;
using Mat = std::vector<double>;  // row-major

// Rounds to the run's format (through the backend's own rounding) when `on`.
Mat rounded(const Mat& m, Precision p, bool on) {
  if (!on) return m;
  Allocator alloc;
  Tensor t = Tensor::zeros({static_cast<std::int64_t>(m.size())}, alloc);
  for (std::size_t i = 0; i < m.size(); ++i) t.data()[i] = static_cast<float>(m[i]);
  round_to_precision(t, p);
  return Mat(t.data(), t.data() + m.size());
}

// c[r x k] = a[r x inner] b[inner x k] with strides; a_t / b_t read the transposes.
Mat matmul(const Mat& a, const Mat& b, std::int64_t r, std::int64_t inner, std::int64_t k, bool a_t, bool b_t) {
  Mat c(static_cast<std::size_t>(r * k), 0.0);
  for (std::int64_t i = 0; i < r; ++i)
    for (std::int64_t j = 0; j < k; ++j) {
      double s = 0;
      for (std::int64_t l = 0; l < inner; ++l)
        s += (a_t ? a[l * r + i] : a[i * inner + l]) * (b_t ? b[j * inner + l] : b[l * k + j]);
      c[i * k + j] = s;
    }
  return c;
}

struct Grads {
  Mat dwqkv, dwproj;
};

// attention(H, bias=0) forward and backward for one batch in float64, rounding where the layer
// does when `round16`.
Grads reference(const Mat& x, const Mat& wqkv, const Mat& wproj, const Mat& dy, Precision p, bool round16) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  Grads g{Mat(wqkv.size(), 0.0), Mat(wproj.size(), 0.0)};
  for (std::int64_t n = 0; n < N; ++n) {
    const Mat xn(x.begin() + n * T * C, x.begin() + (n + 1) * T * C);
    const Mat dyn(dy.begin() + n * T * C, dy.begin() + (n + 1) * T * C);
    const Mat qkv = rounded(matmul(xn, wqkv, T, C, 3 * C, false, true), p, round16);  // [T, 3C]
    Mat heads(static_cast<std::size_t>(T * C)), probs(static_cast<std::size_t>(H * T * T));
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < T; ++i) {
        std::vector<double> s(static_cast<std::size_t>(i + 1));
        double mx = -1e300, sum = 0;
        for (std::int64_t j = 0; j <= i; ++j) {
          double d = 0;
          for (std::int64_t e = 0; e < D; ++e) d += qkv[i * 3 * C + h * D + e] * qkv[j * 3 * C + C + h * D + e];
          s[j] = d * scale, mx = std::max(mx, s[j]);
        }
        for (std::int64_t j = 0; j <= i; ++j) sum += std::exp(s[j] - mx);
        for (std::int64_t j = 0; j < T; ++j) probs[(h * T + i) * T + j] = j <= i ? std::exp(s[j] - mx) / sum : 0.0;
      }
    probs = rounded(probs, p, round16);
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < T; ++i)
        for (std::int64_t e = 0; e < D; ++e) {
          double v = 0;
          for (std::int64_t j = 0; j < T; ++j) v += probs[(h * T + i) * T + j] * qkv[j * 3 * C + 2 * C + h * D + e];
          heads[i * C + h * D + e] = v;
        }
    heads = rounded(heads, p, round16);
    const Mat dwp = matmul(dyn, heads, C, T, C, true, false);  // dWproj = dy^T heads
    for (std::size_t k = 0; k < dwp.size(); ++k) g.dwproj[k] += dwp[k];
    const Mat dheads = rounded(matmul(dyn, wproj, T, C, C, false, false), p, round16);
    Mat dqkv(static_cast<std::size_t>(T * 3 * C), 0.0), ds(static_cast<std::size_t>(H * T * T), 0.0);
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < T; ++i) {
        std::vector<double> da(static_cast<std::size_t>(T));
        double dot = 0;
        for (std::int64_t j = 0; j < T; ++j) {
          double d = 0;
          for (std::int64_t e = 0; e < D; ++e) d += dheads[i * C + h * D + e] * qkv[j * 3 * C + 2 * C + h * D + e];
          da[j] = d;
          if (j <= i) dot += probs[(h * T + i) * T + j] * d;
        }
        for (std::int64_t j = 0; j <= i; ++j)
          ds[(h * T + i) * T + j] = probs[(h * T + i) * T + j] * (da[j] - dot) * scale;
        for (std::int64_t e = 0; e < D; ++e)  // dv[i] += sum over the queries that see i
          for (std::int64_t q = i; q < T; ++q)
            dqkv[i * 3 * C + 2 * C + h * D + e] += probs[(h * T + q) * T + i] * dheads[q * C + h * D + e];
      }
    ds = rounded(ds, p, round16);
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < T; ++i)
        for (std::int64_t e = 0; e < D; ++e) {
          double dq = 0, dk = 0;
          for (std::int64_t j = 0; j < T; ++j) {
            dq += ds[(h * T + i) * T + j] * qkv[j * 3 * C + C + h * D + e];
            dk += ds[(h * T + j) * T + i] * qkv[j * 3 * C + h * D + e];
          }
          dqkv[i * 3 * C + h * D + e] = dq;
          dqkv[i * 3 * C + C + h * D + e] = dk;
        }
    dqkv = rounded(dqkv, p, round16);
    const Mat dwq = matmul(dqkv, xn, 3 * C, T, C, true, false);  // dWqkv = dqkv^T x
    for (std::size_t k = 0; k < dwq.size(); ++k) g.dwqkv[k] += dwq[k];
  }
  return g;
}

double relative_error(const float* got, const Mat& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / den);
}

}  // namespace

TEST(AttentionPrecision, SixteenBitRunsRoundTheGemmOperandsAsCublasDoes) {
  LayerRegistry r;
  register_builtin_layers(r);
  for (const Precision p : {Precision::bf16, Precision::fp16}) {
    Allocator alloc;
    Model m("attention(2, bias=0, fused=0)", {T, C}, r, alloc);
    m.init_parameters(11);
    m.set_precision(p);
    m.set_batch(N);
    Tensor x = Tensor::zeros({N, T, C}, alloc), dy = Tensor::zeros({N, T, C}, alloc);
    const auto xv = unittest::random_values(N * T * C, 3), gv = unittest::random_values(N * T * C, 4);
    std::copy(xv.begin(), xv.end(), x.data());
    std::copy(gv.begin(), gv.end(), dy.data());
    for (Tensor* t : {&x, &dy}) round_to_precision(*t, p);  // as the model hands them on
    m.forward(x);
    m.backward(x, dy, {}, false);
    // The layer computes with the rounded copy of the parameters: the reference uses the same.
    Tensor w = Tensor::zeros(m.parameters().shape(), alloc);
    copy(m.parameters(), w);
    round_to_precision(w, p);
    const Mat wqkv(w.data(), w.data() + 3 * C * C), wproj(w.data() + 3 * C * C, w.data() + 4 * C * C);
    const Mat xm(x.data(), x.data() + x.numel()), dym(dy.data(), dy.data() + dy.numel());
    const float* g = m.gradients().data();
    const Grads want = reference(xm, wqkv, wproj, dym, p, true), plain = reference(xm, wqkv, wproj, dym, p, false);
    const char* name = p == Precision::bf16 ? "bf16" : "fp16";
    // Each block on its own: the query and key rows (through the score gradient), the value rows,
    // the output projection.
    const char* block[] = {"dWq", "dWk", "dWv"};
    for (std::int64_t b = 0; b < 3; ++b) {
      const Mat wb(want.dwqkv.begin() + b * C * C, want.dwqkv.begin() + (b + 1) * C * C);
      const Mat pb(plain.dwqkv.begin() + b * C * C, plain.dwqkv.begin() + (b + 1) * C * C);
      EXPECT_LT(relative_error(g + b * C * C, wb), 1e-5) << name << " " << block[b];
      // Negative control: the unrounded reference is told apart.
      EXPECT_GT(relative_error(g + b * C * C, pb), 1e-4) << name << " " << block[b] << ", no rounding";
    }
    EXPECT_LT(relative_error(g + 3 * C * C, want.dwproj), 1e-5) << name << " dWproj";
    EXPECT_GT(relative_error(g + 3 * C * C, plain.dwproj), 1e-4) << name << " dWproj, no rounding";
  }
}
