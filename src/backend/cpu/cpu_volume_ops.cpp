// The CPU backend's operations on volumes (3-D pooling, the padding box, leaky ReLU) and the
// regression losses besides mean squared error (backend/op_list.inc). Plain loops: the
// reference the CUDA backend is tested against; the convolutions themselves are oneDNN's
// (backend/cpu/onednn_conv.hpp) or the direct loops of backend/cpu/conv3d_direct.hpp.
#include <algorithm>
#include <cmath>

#include "hpctrain/backend/checks.hpp"
#include "hpctrain/backend/cpu/cpu_ops.hpp"
#include "hpctrain/backend/regression_math.hpp"
#include "hpctrain/tensor/step_scalars.hpp"
#include "vector_clones.hpp"

namespace hpctrain::cpu {

using backend::same_size;
using i64 = std::int64_t;

namespace {
i64 pooled(i64 n, i64 k, i64 s) { return (n - k) / s + 1; }
}  // namespace

void maxpool3d_forward(const Tensor& x, i64 depth, i64 height, i64 width, i64 kernel, i64 stride, Tensor& y,
                       Tensor& argmax_buf) {
  const i64 d_o = pooled(depth, kernel, stride), ho = pooled(height, kernel, stride),
            wo = pooled(width, kernel, stride);
  const i64 vol = depth * height * width, blocks = x.numel() / vol;
  HPCT_CHECK(y.numel() == blocks * d_o * ho * wo && argmax_buf.numel() >= y.numel(), "maxpool3d shapes");
  backend::checked_int(x.numel(), "3-D max pooling: input elements (argmax indices are 32-bit)");
  std::int32_t* argmax = argmax_buf.data_as<std::int32_t>();
  float* out = y.data();
  for (i64 p = 0; p < blocks; ++p) {
    const float* in = x.data() + p * vol;
    for (i64 a = 0; a < d_o; ++a)
      for (i64 i = 0; i < ho; ++i)
        for (i64 j = 0; j < wo; ++j) {
          i64 best = ((a * stride) * height + i * stride) * width + j * stride;
          for (i64 u = 0; u < kernel; ++u)
            for (i64 v = 0; v < kernel; ++v)
              for (i64 w = 0; w < kernel; ++w) {
                const i64 at = ((a * stride + u) * height + i * stride + v) * width + j * stride + w;
                if (in[at] > in[best]) best = at;  // strict: the first largest
              }
          const i64 o = ((p * d_o + a) * ho + i) * wo + j;
          out[o] = in[best];
          argmax[o] = static_cast<std::int32_t>(p * vol + best);
        }
  }
}

void avgpool3d_forward(const Tensor& x, i64 depth, i64 height, i64 width, i64 kernel, i64 stride, Tensor& y) {
  const i64 d_o = pooled(depth, kernel, stride), ho = pooled(height, kernel, stride),
            wo = pooled(width, kernel, stride);
  const i64 vol = depth * height * width, blocks = x.numel() / vol;
  HPCT_CHECK(y.numel() == blocks * d_o * ho * wo, "avgpool3d shapes");
  const double inv = 1.0 / static_cast<double>(kernel * kernel * kernel);
  for (i64 p = 0; p < blocks; ++p) {
    const float* in = x.data() + p * vol;
    for (i64 a = 0; a < d_o; ++a)
      for (i64 i = 0; i < ho; ++i)
        for (i64 j = 0; j < wo; ++j) {
          double s = 0;
          for (i64 u = 0; u < kernel; ++u)
            for (i64 v = 0; v < kernel; ++v)
              for (i64 w = 0; w < kernel; ++w)
                s += in[((a * stride + u) * height + i * stride + v) * width + j * stride + w];
          y.data()[((p * d_o + a) * ho + i) * wo + j] = static_cast<float>(s * inv);
        }
  }
}

void avgpool3d_backward(const Tensor& dy, i64 depth, i64 height, i64 width, i64 kernel, i64 stride, Tensor& dx) {
  const i64 d_o = pooled(depth, kernel, stride), ho = pooled(height, kernel, stride),
            wo = pooled(width, kernel, stride);
  const i64 vol = depth * height * width, blocks = dx.numel() / vol;
  HPCT_CHECK(dy.numel() == blocks * d_o * ho * wo, "avgpool3d backward shapes");
  cpu::fill(dx, 0.f);
  const float inv = 1.f / static_cast<float>(kernel * kernel * kernel);
  for (i64 p = 0; p < blocks; ++p) {
    float* out = dx.data() + p * vol;
    for (i64 a = 0; a < d_o; ++a)
      for (i64 i = 0; i < ho; ++i)
        for (i64 j = 0; j < wo; ++j) {
          const float g = dy.data()[((p * d_o + a) * ho + i) * wo + j] * inv;
          for (i64 u = 0; u < kernel; ++u)
            for (i64 v = 0; v < kernel; ++v)
              for (i64 w = 0; w < kernel; ++w)
                out[((a * stride + u) * height + i * stride + v) * width + j * stride + w] += g;
        }
  }
}

void shift_volume(const Tensor& x, i64 depth, i64 height, i64 width, i64 offset, i64 out_depth, i64 out_height,
                  i64 out_width, Tensor& y) {
  const i64 vol = depth * height * width, out_vol = out_depth * out_height * out_width, blocks = x.numel() / vol;
  HPCT_CHECK(x.numel() == blocks * vol && y.numel() == blocks * out_vol, "shift_volume shapes");
  for (i64 p = 0; p < blocks; ++p)
    for (i64 a = 0; a < out_depth; ++a)
      for (i64 i = 0; i < out_height; ++i) {
        float* row = y.data() + ((p * out_depth + a) * out_height + i) * out_width;
        const i64 sd = a + offset, sh = i + offset;
        for (i64 j = 0; j < out_width; ++j) {
          const i64 sw = j + offset;
          const bool inside = sd >= 0 && sd < depth && sh >= 0 && sh < height && sw >= 0 && sw < width;
          row[j] = inside ? x.data()[p * vol + (sd * height + sh) * width + sw] : 0.f;
        }
      }
}

void copy_planes(const Tensor& src, i64 src_depth, i64 src_at, Tensor& dst, i64 dst_depth, i64 dst_at, i64 count,
                 i64 plane, bool add) {
  const i64 blocks = src.numel() / (src_depth * plane);
  HPCT_CHECK(src.numel() == blocks * src_depth * plane && dst.numel() == blocks * dst_depth * plane && src_at >= 0 &&
                 dst_at >= 0 && src_at + count <= src_depth && dst_at + count <= dst_depth,
             "copy_planes shapes");
  for (i64 b = 0; b < blocks; ++b) {
    const float* from = src.data() + (b * src_depth + src_at) * plane;
    float* to = dst.data() + (b * dst_depth + dst_at) * plane;
    if (add)
      for (i64 i = 0; i < count * plane; ++i) to[i] += from[i];
    else
      std::copy(from, from + count * plane, to);
  }
}

namespace {
// Both candidates computed for every element, then selected: GCC keeps the product inside a
// branch (no vectors) unless told that computing it where the source would not cannot trap
// (no-trapping-math: nothing here traps floating-point exceptions). Vectorized (vector_clones.hpp),
// the same bits: inputs/cosmoflow_32.ini's step went from 540 to 972 samples/s on 2 ranks
// (2026-12-05), leaky_relu from 27% of its profile to 4%.
#if defined(__GNUC__) && !defined(__clang__)
#define HPCT_SELECT_VECTORIZES __attribute__((optimize("no-trapping-math")))
#else
#define HPCT_SELECT_VECTORIZES
#endif
HPCT_VECTOR_CLONES HPCT_SELECT_VECTORIZES void leaky_relu_loop(const float* in, float slope, float* out, i64 n) {
  for (i64 i = 0; i < n; ++i) {
    const float v = in[i], s = slope * v;
    out[i] = v > 0.f ? v : s;
  }
}
HPCT_VECTOR_CLONES HPCT_SELECT_VECTORIZES void leaky_relu_backward_loop(const float* in, const float* g, float slope,
                                                                        float* out, i64 n) {
  for (i64 i = 0; i < n; ++i) {
    const float gi = g[i], s = slope * gi;
    out[i] = in[i] > 0.f ? gi : s;
  }
}
}  // namespace

void leaky_relu_forward(const Tensor& x, float slope, Tensor& y) {
  same_size(x, y, "leaky_relu");
  leaky_relu_loop(x.data(), slope, y.data(), x.numel());
}

void leaky_relu_backward(const Tensor& x, const Tensor& dy, float slope, Tensor& dx) {
  same_size(x, dy, "leaky_relu backward");
  same_size(x, dx, "leaky_relu backward");
  leaky_relu_backward_loop(x.data(), dy.data(), slope, dx.data(), x.numel());
}

void regression_loss(RegressionLoss kind, float delta, const Tensor& pred, const float* target, Tensor& scalars) {
  HPCT_CHECK(scalars.numel() >= step_scalars::count, "regression loss: step scalars too small");
  const i64 n = pred.numel(), width = std::max<i64>(1, pred.cols());
  double s = 0;
  for (i64 i = 0; i < n; ++i)
    s += backend::regression_value(kind, delta, static_cast<double>(pred.data()[i]) - target[i]);
  scalars.data()[step_scalars::loss_sum] += static_cast<float>(s / static_cast<double>(width));  // sum of row means
  scalars.data()[step_scalars::samples] += static_cast<float>(pred.rows());
}

void regression_loss_backward(RegressionLoss kind, float delta, const Tensor& pred, const float* target,
                              float grad_scale, Tensor& dpred) {
  same_size(pred, dpred, "regression loss backward");
  const float k = grad_scale / static_cast<float>(std::max<i64>(1, pred.cols()));
  const i64 n = pred.numel();
  for (i64 i = 0; i < n; ++i) dpred.data()[i] = k * backend::regression_grad(kind, delta, pred.data()[i] - target[i]);
}

void absolute_error_sums(const Tensor& pred, const float* target, Tensor& sums) {
  const i64 rows = pred.rows(), cols = pred.cols();
  HPCT_CHECK(sums.numel() == cols, "absolute_error_sums: sums " + shape_string(sums.shape()));
  for (i64 j = 0; j < cols; ++j) {
    double s = 0;
    for (i64 i = 0; i < rows; ++i)
      s += std::fabs(static_cast<double>(pred.data()[i * cols + j]) - target[i * cols + j]);
    sums.data()[j] += static_cast<float>(s);
  }
}

}  // namespace hpctrain::cpu
