// Fused attention (backend flash_attention_forward/backward) against attention written out in
// float64 with the whole T x T matrix: grouped-query heads, T across several 64-query strips, causal
// and document masks (documents of 37 positions), each with and without a sliding window (the last
// W positions: i - j < W; W < 37, so that both matter together), each with and without Gemma 2's
// soft-capped scores (2 tanh(s / 2)). Outputs within 1e-6 of the reference's largest magnitude, gradients within 1e-5
// (issue 34's bounds); negative controls: the reference without the document mask, with the key/value heads paired the
// other way, without the window, with a window one wider and without the cap are far from the fused results.
// flash_attention_decode (the queries from a position on, their whole qkv rows or their query
// columns alone, against every position's keys and values as a cache keeps them) gives the
// reference's rows from there.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "hpctrain/backend/ops.hpp"
#include "unit_test_util.hpp"

using namespace hpctrain;

namespace {

struct Case {
  std::int64_t n, t, heads, kv, d, window;  // window: the sliding window the windowed runs take
};
// Which keys a query sees besides the causal ones, and the scores' cap.
struct Mask {
  const std::int32_t* docs;  // null: any document
  std::int64_t window;       // 0: any distance
  double softcap = 0;        // Gemma 2's: scores s -> softcap tanh(s / softcap); 0: none
  double scale = 0;          // the scores' factor (Gemma 2's query_pre_attn_scalar^-1/2); 0: 1 / sqrt(D)
};
using Vec = std::vector<double>;

// The reference: y, and dqkv for the upstream gradient g, in float64.
struct Reference {
  Vec y, dqkv;
};
Reference reference(const Case& c, const Vec& qkv, const Vec& g, const Mask& m, bool swap_groups) {
  const std::int64_t ld = (c.heads + 2 * c.kv) * c.d, yw = c.heads * c.d, group = c.heads / c.kv;
  const double scale = m.scale > 0 ? m.scale : 1 / std::sqrt(static_cast<double>(c.d));
  Reference r{Vec(static_cast<std::size_t>(c.n * c.t * yw)), Vec(qkv.size())};
  auto at = [&](std::int64_t n, std::int64_t t, std::int64_t col) {
    return static_cast<std::size_t>((n * c.t + t) * ld + col);
  };
  for (std::int64_t n = 0; n < c.n; ++n)
    for (std::int64_t h = 0; h < c.heads; ++h) {
      const std::int64_t kvh = swap_groups ? (c.kv - 1 - h / group) : h / group;
      const std::int64_t q0 = h * c.d, k0 = (c.heads + kvh) * c.d, v0 = (c.heads + c.kv + kvh) * c.d;
      for (std::int64_t i = 0; i < c.t; ++i) {
        Vec p(static_cast<std::size_t>(c.t), 0.0), dp(p.size(), 0.0), slope(p.size(), 1.0);
        double mx = -INFINITY, sum = 0, di = 0;
        auto seen = [&](std::int64_t j) {
          return j <= i && (m.window == 0 || i - j < m.window) &&
                 (!m.docs || m.docs[n * c.t + j] == m.docs[n * c.t + i]);
        };
        for (std::int64_t j = 0; j < c.t; ++j) {
          if (!seen(j)) continue;
          double s = 0;
          for (std::int64_t e = 0; e < c.d; ++e) s += qkv[at(n, i, q0 + e)] * qkv[at(n, j, k0 + e)];
          s *= scale;
          if (m.softcap > 0) {
            const double th = std::tanh(s / m.softcap);
            s = m.softcap * th, slope[static_cast<std::size_t>(j)] = 1 - th * th;
          }
          p[static_cast<std::size_t>(j)] = s;
          mx = std::max(mx, s);
        }
        for (std::int64_t j = 0; j < c.t; ++j)
          if (seen(j)) sum += p[static_cast<std::size_t>(j)] = std::exp(p[static_cast<std::size_t>(j)] - mx);
        const std::size_t yo = static_cast<std::size_t>((n * c.t + i) * yw + h * c.d);
        for (std::int64_t j = 0; j < c.t; ++j) {
          if (!seen(j)) continue;
          const double pj = p[static_cast<std::size_t>(j)] /= sum;
          for (std::int64_t e = 0; e < c.d; ++e) r.y[yo + e] += pj * qkv[at(n, j, v0 + e)];
        }
        for (std::int64_t j = 0; j < c.t; ++j) {  // dp_j = g . v_j; di = sum_j p_j dp_j
          if (!seen(j)) continue;
          for (std::int64_t e = 0; e < c.d; ++e) dp[static_cast<std::size_t>(j)] += g[yo + e] * qkv[at(n, j, v0 + e)];
          di += p[static_cast<std::size_t>(j)] * dp[static_cast<std::size_t>(j)];
        }
        for (std::int64_t j = 0; j < c.t; ++j) {
          if (!seen(j)) continue;
          const std::size_t jj = static_cast<std::size_t>(j);
          const double pj = p[jj], ds = pj * (dp[jj] - di) * scale * slope[jj];
          for (std::int64_t e = 0; e < c.d; ++e) {
            r.dqkv[at(n, i, q0 + e)] += ds * qkv[at(n, j, k0 + e)];
            r.dqkv[at(n, j, k0 + e)] += ds * qkv[at(n, i, q0 + e)];
            r.dqkv[at(n, j, v0 + e)] += pj * g[yo + e];
          }
        }
      }
    }
  return r;
}

// Largest |got - want| over the largest |want|.
double error(const Tensor& got, const Vec& want) {
  double worst = 0, big = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(got.data()[i]) - want[i]));
    big = std::max(big, std::fabs(want[i]));
  }
  return worst / big;
}

// flash_attention_decode's operands from qkv [N, T, (H + 2K) D]: the queries from `first` on (their
// whole rows, or their H D query columns alone) and every position's keys and values [N, T, 2K D].
struct DecodeOperands {
  Tensor q, kv;
};
DecodeOperands decode_operands(const Tensor& qkv, const Case& c, std::int64_t first, bool whole_rows,
                               Allocator& alloc) {
  const std::int64_t per = c.heads + 2 * c.kv, ld = per * c.d, tq = c.t - first, w = whole_rows ? per : c.heads;
  DecodeOperands o{Tensor::zeros({c.n, tq, w * c.d}, alloc), Tensor::zeros({c.n, c.t, 2 * c.kv * c.d}, alloc)};
  copy_planes(qkv, per, c.heads, o.kv, 2 * c.kv, 0, 2 * c.kv, c.d, false);
  for (std::int64_t n = 0; n < c.n; ++n) {
    Tensor to = o.q.view(n * tq * w * c.d, {1, tq, w * c.d});
    copy_planes(qkv.view((n * c.t + first) * ld, {1, tq, ld}), per, 0, to, w, 0, w, c.d, false);
  }
  return o;
}

class FlashAttention : public ::testing::TestWithParam<Case> {};

TEST_P(FlashAttention, MatchesFloat64AttentionWithTheWholeMatrix) {
  const Case c = GetParam();
  Allocator alloc;
  const std::int64_t ld = (c.heads + 2 * c.kv) * c.d;
  Tensor qkv = Tensor::zeros({c.n, c.t, ld}, alloc), g = Tensor::zeros({c.n, c.t, c.heads * c.d}, alloc);
  const auto a = unittest::random_values(qkv.numel(), 11), b = unittest::random_values(g.numel(), 12);
  std::transform(a.begin(), a.end(), qkv.data(), [](float v) { return 3 * v; });  // scores of a few units
  std::copy(b.begin(), b.end(), g.data());
  Tensor docs = Tensor::zeros({c.n, c.t}, alloc, DType::i32);
  for (std::int64_t i = 0; i < c.n * c.t; ++i)  // documents of 37 positions, shifted per sequence
    docs.data_as<std::int32_t>()[i] = static_cast<std::int32_t>((i % c.t + 5 * (i / c.t)) / 37);
  const Vec q64(qkv.data(), qkv.data() + qkv.numel()), g64(g.data(), g.data() + g.numel());
  for (int masks = 0; masks < 8; ++masks) {  // documents (1), a window (2), soft-capped scores (4)
    const bool by_doc = masks & 1;
    const std::int64_t w = masks & 2 ? c.window : 0;
    const double cap = masks & 4 ? 2.0 : 0.0;  // (the scores are a few units: the cap bends them)
    const AttentionOptions opt{w, static_cast<float>(cap)};
    const Tensor none, &dc = by_doc ? docs : none;
    Tensor y = Tensor::zeros(g.shape(), alloc), lse = Tensor::zeros({c.n, c.heads, c.t}, alloc);
    Tensor dqkv = Tensor::zeros(qkv.shape(), alloc);
    flash_attention_forward(qkv, c.heads, c.kv, dc, opt, y, lse);
    flash_attention_backward(qkv, y, lse, g, c.heads, c.kv, dc, opt, dqkv);
    const std::int32_t* d = by_doc ? docs.data_as<std::int32_t>() : nullptr;
    const Reference want = reference(c, q64, g64, {d, w, cap}, false);
    EXPECT_LT(error(y, want.y), 1e-6) << "outputs, documents " << by_doc << ", window " << w << ", cap " << cap;
    EXPECT_LT(error(dqkv, want.dqkv), 1e-5) << "gradients, documents " << by_doc << ", window " << w << ", cap " << cap;
    // Negative controls: the other document mask, (grouped heads) the other pairing of heads,
    // (windowed) no window and a window one wider, (capped) no cap.
    if (w != 1) {  // (a window of one: each query sees itself, in any document)
      EXPECT_GT(error(y, reference(c, q64, g64, {by_doc ? nullptr : docs.data_as<std::int32_t>(), w, cap}, false).y),
                1e-3);
    }
    if (c.kv > 1) {
      EXPECT_GT(error(y, reference(c, q64, g64, {d, w, cap}, true).y), 1e-3);
    }
    if (w) {
      EXPECT_GT(error(y, reference(c, q64, g64, {d, 0, cap}, false).y), 1e-3);
      EXPECT_GT(error(y, reference(c, q64, g64, {d, w + 1, cap}, false).y), 1e-3);
    }
    if (cap > 0 && w != 1) {
      EXPECT_GT(error(y, reference(c, q64, g64, {d, w, 0}, false).y), 1e-3);
      EXPECT_GT(error(dqkv, reference(c, q64, g64, {d, w, 0}, false).dqkv), 1e-3);
    }
    // A score scale of its own (Gemma 2 27B's query_pre_attn_scalar of 144 for heads of 128): both
    // directions against the reference with that scale, far from 1 / sqrt(D)'s.
    if (masks == 0 || masks == 7) {
      const AttentionOptions scaled{w, static_cast<float>(cap), 0.2f};
      Tensor ys = Tensor::zeros(y.shape(), alloc), lses = Tensor::zeros(lse.shape(), alloc);
      Tensor dqkvs = Tensor::zeros(qkv.shape(), alloc);
      flash_attention_forward(qkv, c.heads, c.kv, dc, scaled, ys, lses);
      flash_attention_backward(qkv, ys, lses, g, c.heads, c.kv, dc, scaled, dqkvs);
      const Reference want_scaled = reference(c, q64, g64, {d, w, cap, 0.2f}, false);
      EXPECT_LT(error(ys, want_scaled.y), 1e-6) << "outputs scaled by 0.2, masks " << masks;
      EXPECT_LT(error(dqkvs, want_scaled.dqkv), 1e-5) << "gradients scaled by 0.2, masks " << masks;
      if (w != 1) {
        EXPECT_GT(error(ys, want.y), 1e-3) << "the scale changes nothing, masks " << masks;
      }
    }
    // flash_attention_decode: the queries from `first` on (a key/value cache's new positions),
    // mid-strip, the last alone and all of them, are the reference's rows from there.
    for (const std::int64_t first : {c.t / 2 + 3, c.t - 1, std::int64_t{0}})
      for (const bool whole_rows : {false, true}) {  // (the queries' columns alone, the fused rows)
        const std::int64_t tq = c.t - first, yw = c.heads * c.d;
        const DecodeOperands o = decode_operands(qkv, c, first, whole_rows, alloc);
        Tensor yq = Tensor::zeros({c.n, tq, yw}, alloc), lq = Tensor::zeros({c.n, c.heads, tq}, alloc);
        flash_attention_decode(o.q, o.kv, c.heads, c.kv, dc, opt, yq, lq);
        Vec rows;
        for (std::int64_t n = 0; n < c.n; ++n)
          rows.insert(rows.end(), want.y.begin() + (n * c.t + first) * yw, want.y.begin() + (n + 1) * c.t * yw);
        EXPECT_LT(error(yq, rows), 1e-6) << "decode from " << first << ", whole rows " << whole_rows << ", documents "
                                         << by_doc << ", window " << w;
        for (std::int64_t n = 0; n < c.n; ++n)
          for (std::int64_t h = 0; h < c.heads; ++h)
            for (std::int64_t i = 0; i < tq; ++i)
              ASSERT_NEAR(lq.data()[(n * c.heads + h) * tq + i], lse.data()[(n * c.heads + h) * c.t + first + i], 1e-5);
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, FlashAttention,
                         ::testing::Values(Case{2, 150, 4, 2, 8, 30},   // grouped-query, three strips
                                           Case{1, 64, 3, 3, 4, 20},    // multi-head, one whole strip
                                           Case{2, 45, 4, 1, 6, 7},     // multi-query, one part strip
                                           Case{1, 140, 2, 1, 4, 1}));  // a window of one: itself only

}  // namespace
