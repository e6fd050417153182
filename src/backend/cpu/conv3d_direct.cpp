// The direct 3-D convolution (backend/cpu/conv3d_direct.hpp). For each output channel, input
// channel and kernel tap, one pass over the output volume: the innermost loop runs along a row of
// the output, contiguous in memory.
#include "hpctrain/backend/cpu/conv3d_direct.hpp"

#include <algorithm>
#include <vector>

namespace hpctrain::cpu {

namespace {
using i64 = std::int64_t;

// The output positions o along an axis whose input o * s - p + t (tap t) lies in [0, n).
struct Span {
  i64 lo, hi;  // [lo, hi)
};
Span valid(i64 n, i64 out, i64 s, i64 p, i64 t) {
  i64 lo = 0;
  while (lo < out && lo * s - p + t < 0) ++lo;
  i64 hi = out;
  while (hi > lo && (hi - 1) * s - p + t >= n) --hi;
  return {lo, hi};
}

// Calls f(out_index, in_index) for every output position and its input at tap (u, v, t) of one
// [D, H, W] block: the taps' valid spans, rows innermost.
template <typename F>
void for_tap(const ConvGeometry& g, i64 u, i64 v, i64 t, F f) {
  const i64 s = g.stride, p = g.pad;
  const Span a = valid(g.depth, g.out_depth, s, p, u), i = valid(g.height, g.out_height, s, p, v),
             j = valid(g.width, g.out_width, s, p, t);
  for (i64 oa = a.lo; oa < a.hi; ++oa)
    for (i64 oi = i.lo; oi < i.hi; ++oi) {
      const i64 out_row = (oa * g.out_height + oi) * g.out_width;
      const i64 in_row = ((oa * s - p + u) * g.height + oi * s - p + v) * g.width - p + t;
      for (i64 oj = j.lo; oj < j.hi; ++oj) f(out_row + oj, in_row + oj * s);
    }
}
}  // namespace

void conv3d_direct_forward(const ConvGeometry& g, const float* x, const float* w, const float* b, float* y, i64 n) {
  const i64 k = g.kernel, in_vol = g.depth * g.height * g.width, out_vol = g.out_depth * g.out_height * g.out_width;
  for (i64 s = 0; s < n; ++s)
    for (i64 o = 0; o < g.out; ++o) {
      float* yo = y + (s * g.out + o) * out_vol;
      std::fill(yo, yo + out_vol, b[o]);
      for (i64 c = 0; c < g.channels; ++c) {
        const float* xc = x + (s * g.channels + c) * in_vol;
        for (i64 u = 0; u < k; ++u)
          for (i64 v = 0; v < k; ++v)
            for (i64 t = 0; t < k; ++t) {
              const float wt = w[(((o * g.channels + c) * k + u) * k + v) * k + t];
              for_tap(g, u, v, t, [&](i64 oi, i64 ii) { yo[oi] += wt * xc[ii]; });
            }
      }
    }
}

void conv3d_direct_backward(const ConvGeometry& g, const float* x, const float* dy, const float* w, float* dw,
                            float* db, float* dx, i64 n, bool accumulate) {
  const i64 k = g.kernel, in_vol = g.depth * g.height * g.width, out_vol = g.out_depth * g.out_height * g.out_width;
  const i64 nw = g.weight_elements();
  if (!accumulate) {
    std::fill(dw, dw + nw, 0.f);
    std::fill(db, db + g.out, 0.f);
  }
  if (dx) std::fill(dx, dx + n * g.channels * in_vol, 0.f);
  for (i64 s = 0; s < n; ++s)
    for (i64 o = 0; o < g.out; ++o) {
      const float* go = dy + (s * g.out + o) * out_vol;
      double bias = 0;
      for (i64 q = 0; q < out_vol; ++q) bias += go[q];
      db[o] += static_cast<float>(bias);
      for (i64 c = 0; c < g.channels; ++c) {
        const float* xc = x + (s * g.channels + c) * in_vol;
        float* dxc = dx ? dx + (s * g.channels + c) * in_vol : nullptr;
        for (i64 u = 0; u < k; ++u)
          for (i64 v = 0; v < k; ++v)
            for (i64 t = 0; t < k; ++t) {
              const i64 at = (((o * g.channels + c) * k + u) * k + v) * k + t;
              double acc = 0;
              for_tap(g, u, v, t, [&](i64 oi, i64 ii) { acc += static_cast<double>(go[oi]) * xc[ii]; });
              dw[at] += static_cast<float>(acc);
              if (dxc) {
                const float wt = w[at];
                for_tap(g, u, v, t, [&](i64 oi, i64 ii) { dxc[ii] += wt * go[oi]; });
              }
            }
      }
    }
}

}  // namespace hpctrain::cpu
