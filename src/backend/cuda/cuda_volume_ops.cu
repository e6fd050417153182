// The CUDA backend's operations on volumes (3-D pooling, the padding box, leaky ReLU) and the
// regression losses besides mean squared error (backend/op_list.inc); the CPU backend's
// cpu_volume_ops.cpp is their reference. One thread per output element; average pooling's
// backward gathers per input element (no atomics), max pooling's backward is maxpool_backward.
#include "hpctrain/backend/checks.hpp"
#include "hpctrain/backend/cuda/context.hpp"
#include "hpctrain/backend/cuda/cuda_ops.hpp"
#include "hpctrain/backend/cuda/kernels.cuh"
#include "hpctrain/backend/pool_geometry.hpp"
#include "hpctrain/backend/regression_math.hpp"
#include "hpctrain/tensor/step_scalars.hpp"

namespace hpctrain::cuda {

using detail::launch;
using detail::launch_check;
using detail::same_size;
using i64 = std::int64_t;

namespace {
i64 pooled(i64 n, i64 k, i64 s) { return (n - k) / s + 1; }

struct Vol {  // an input block's and an output block's extents
  i64 d, h, w, d_o, ho, wo;
};
Vol pooled_volume(i64 d, i64 h, i64 w, i64 k, i64 s) {
  return {d, h, w, pooled(d, k, s), pooled(h, k, s), pooled(w, k, s)};
}

__global__ void maxpool3d_kernel(const float* x, Vol g, i64 k, i64 s, float* y, std::int32_t* argmax, i64 total) {
  for (i64 o = detail::global_index(); o < total; o += detail::grid_stride()) {
    const i64 j = o % g.wo, i = (o / g.wo) % g.ho, a = (o / (g.wo * g.ho)) % g.d_o, p = o / (g.wo * g.ho * g.d_o);
    const float* in = x + p * g.d * g.h * g.w;
    i64 best = ((a * s) * g.h + i * s) * g.w + j * s;
    for (i64 u = 0; u < k; ++u)
      for (i64 v = 0; v < k; ++v)
        for (i64 w = 0; w < k; ++w) {
          const i64 at = ((a * s + u) * g.h + i * s + v) * g.w + j * s + w;
          if (in[at] > in[best]) best = at;  // strict: the first largest, as on the CPU
        }
    y[o] = in[best];
    argmax[o] = static_cast<std::int32_t>(p * g.d * g.h * g.w + best);
  }
}

__global__ void avgpool3d_kernel(const float* x, Vol g, i64 k, i64 s, double inv, float* y, i64 total) {
  for (i64 o = detail::global_index(); o < total; o += detail::grid_stride()) {
    const i64 j = o % g.wo, i = (o / g.wo) % g.ho, a = (o / (g.wo * g.ho)) % g.d_o, p = o / (g.wo * g.ho * g.d_o);
    const float* in = x + p * g.d * g.h * g.w;
    double acc = 0;
    for (i64 u = 0; u < k; ++u)
      for (i64 v = 0; v < k; ++v)
        for (i64 w = 0; w < k; ++w) acc += in[((a * s + u) * g.h + i * s + v) * g.w + j * s + w];
    y[o] = static_cast<float>(acc * inv);
  }
}

__global__ void avgpool3d_backward_kernel(const float* dy, Vol g, i64 k, i64 s, float inv, float* dx, i64 total) {
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    const i64 c = idx % g.w, r = (idx / g.w) % g.h, z = (idx / (g.w * g.h)) % g.d, p = idx / (g.w * g.h * g.d);
    const backend::WindowRange zs = backend::covering_windows(z, k, s, g.d_o);
    const backend::WindowRange rs = backend::covering_windows(r, k, s, g.ho);
    const backend::WindowRange cs = backend::covering_windows(c, k, s, g.wo);
    float acc = 0.f;
    for (i64 a = zs.lo; a <= zs.hi; ++a)
      for (i64 i = rs.lo; i <= rs.hi; ++i)
        for (i64 j = cs.lo; j <= cs.hi; ++j) acc += dy[((p * g.d_o + a) * g.ho + i) * g.wo + j] * inv;
    dx[idx] = acc;
  }
}

__global__ void shift_volume_kernel(const float* x, Vol g, i64 offset, float* y, i64 total) {
  for (i64 o = detail::global_index(); o < total; o += detail::grid_stride()) {
    const i64 j = o % g.wo, i = (o / g.wo) % g.ho, a = (o / (g.wo * g.ho)) % g.d_o, p = o / (g.wo * g.ho * g.d_o);
    const i64 sd = a + offset, sh = i + offset, sw = j + offset;
    const bool inside = sd >= 0 && sd < g.d && sh >= 0 && sh < g.h && sw >= 0 && sw < g.w;
    y[o] = inside ? x[p * g.d * g.h * g.w + (sd * g.h + sh) * g.w + sw] : 0.f;
  }
}

__global__ void copy_planes_kernel(const float* src, i64 src_depth, i64 src_at, float* dst, i64 dst_depth, i64 dst_at,
                                   i64 count, i64 plane, bool add, i64 total) {
  for (i64 o = detail::global_index(); o < total; o += detail::grid_stride()) {
    const i64 e = o % plane, z = (o / plane) % count, b = o / (plane * count);
    const float v = src[(b * src_depth + src_at + z) * plane + e];
    float& d = dst[(b * dst_depth + dst_at + z) * plane + e];
    d = add ? d + v : v;
  }
}

__global__ void leaky_relu_kernel(const float* x, float slope, float* y, i64 n) {
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride()) y[i] = x[i] > 0.f ? x[i] : slope * x[i];
}

__global__ void leaky_relu_backward_kernel(const float* x, const float* dy, float slope, float* dx, i64 n) {
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride()) dx[i] = x[i] > 0.f ? dy[i] : slope * dy[i];
}

// One block: the sum over all elements (as doubles), divided by the width, and the rows, into the scalars.
__global__ void regression_loss_kernel(RegressionLoss kind, double delta, const float* p, const float* t, i64 n,
                                       i64 width, i64 rows, float* scalars) {
  double acc = 0;
  for (i64 i = threadIdx.x; i < n; i += blockDim.x)
    acc += backend::regression_value(kind, delta, static_cast<double>(p[i]) - t[i]);
  const double total = detail::block_sum(acc);
  if (threadIdx.x == 0) {
    scalars[step_scalars::loss_sum] += static_cast<float>(total / static_cast<double>(width));
    scalars[step_scalars::samples] += static_cast<float>(rows);
  }
}

__global__ void regression_backward_kernel(RegressionLoss kind, float delta, const float* p, const float* t, float k,
                                           float* d, i64 n) {
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride())
    d[i] = k * backend::regression_grad(kind, delta, p[i] - t[i]);
}

// Block j: the sum over rows of |p - t| in column j.
__global__ void absolute_error_kernel(const float* p, const float* t, i64 rows, i64 cols, float* sums) {
  const i64 j = blockIdx.x;
  double acc = 0;
  for (i64 i = threadIdx.x; i < rows; i += blockDim.x)
    acc += fabs(static_cast<double>(p[i * cols + j]) - t[i * cols + j]);
  const double total = detail::block_sum(acc);
  if (threadIdx.x == 0) sums[j] += static_cast<float>(total);
}
}  // namespace

void maxpool3d_forward(const Tensor& x, i64 depth, i64 height, i64 width, i64 kernel, i64 stride, Tensor& y,
                       Tensor& argmax) {
  const Vol g = pooled_volume(depth, height, width, kernel, stride);
  const i64 blocks = x.numel() / (depth * height * width);
  HPCT_CHECK(y.numel() == blocks * g.d_o * g.ho * g.wo && argmax.numel() >= y.numel(), "maxpool3d shapes");
  backend::checked_int(x.numel(), "3-D max pooling: input elements (argmax indices are 32-bit)");
  launch(maxpool3d_kernel, y.numel(), x.data(), g, kernel, stride, y.data(), argmax.data_as<std::int32_t>(), y.numel());
}

void avgpool3d_forward(const Tensor& x, i64 depth, i64 height, i64 width, i64 kernel, i64 stride, Tensor& y) {
  const Vol g = pooled_volume(depth, height, width, kernel, stride);
  HPCT_CHECK(y.numel() == x.numel() / (depth * height * width) * g.d_o * g.ho * g.wo, "avgpool3d shapes");
  const double inv = 1.0 / static_cast<double>(kernel * kernel * kernel);
  launch(avgpool3d_kernel, y.numel(), x.data(), g, kernel, stride, inv, y.data(), y.numel());
}

void avgpool3d_backward(const Tensor& dy, i64 depth, i64 height, i64 width, i64 kernel, i64 stride, Tensor& dx) {
  const Vol g = pooled_volume(depth, height, width, kernel, stride);
  HPCT_CHECK(dy.numel() == dx.numel() / (depth * height * width) * g.d_o * g.ho * g.wo, "avgpool3d backward shapes");
  const float inv = 1.f / static_cast<float>(kernel * kernel * kernel);
  launch(avgpool3d_backward_kernel, dx.numel(), dy.data(), g, kernel, stride, inv, dx.data(), dx.numel());
}

void shift_volume(const Tensor& x, i64 depth, i64 height, i64 width, i64 offset, i64 out_depth, i64 out_height,
                  i64 out_width, Tensor& y) {
  const Vol g{depth, height, width, out_depth, out_height, out_width};
  const i64 blocks = x.numel() / (depth * height * width);
  HPCT_CHECK(x.numel() == blocks * depth * height * width && y.numel() == blocks * out_depth * out_height * out_width,
             "shift_volume shapes");
  launch(shift_volume_kernel, y.numel(), x.data(), g, offset, y.data(), y.numel());
}

void copy_planes(const Tensor& src, i64 src_depth, i64 src_at, Tensor& dst, i64 dst_depth, i64 dst_at, i64 count,
                 i64 plane, bool add) {
  const i64 blocks = src.numel() / (src_depth * plane);
  HPCT_CHECK(src.numel() == blocks * src_depth * plane && dst.numel() == blocks * dst_depth * plane && src_at >= 0 &&
                 dst_at >= 0 && src_at + count <= src_depth && dst_at + count <= dst_depth,
             "copy_planes shapes");
  const i64 total = blocks * count * plane;
  if (total > 0)
    launch(copy_planes_kernel, total, src.data(), src_depth, src_at, dst.data(), dst_depth, dst_at, count, plane, add,
           total);
}

void leaky_relu_forward(const Tensor& x, float slope, Tensor& y) {
  same_size(x, y, "leaky_relu");
  launch(leaky_relu_kernel, x.numel(), x.data(), slope, y.data(), x.numel());
}

void leaky_relu_backward(const Tensor& x, const Tensor& dy, float slope, Tensor& dx) {
  same_size(x, dy, "leaky_relu backward");
  same_size(x, dx, "leaky_relu backward");
  launch(leaky_relu_backward_kernel, x.numel(), x.data(), dy.data(), slope, dx.data(), x.numel());
}

void regression_loss(RegressionLoss kind, float delta, const Tensor& pred, const float* target, Tensor& scalars) {
  HPCT_CHECK(scalars.numel() >= step_scalars::count, "regression loss: step scalars too small");
  if (pred.rows() == 0) return;
  regression_loss_kernel<<<1, 256, 0, context().stream()>>>(kind, delta, pred.data(), target, pred.numel(),
                                                            std::max<i64>(1, pred.cols()), pred.rows(), scalars.data());
  launch_check();
}

void regression_loss_backward(RegressionLoss kind, float delta, const Tensor& pred, const float* target,
                              float grad_scale, Tensor& dpred) {
  same_size(pred, dpred, "regression loss backward");
  const float k = grad_scale / static_cast<float>(std::max<i64>(1, pred.cols()));
  launch(regression_backward_kernel, pred.numel(), kind, delta, pred.data(), target, k, dpred.data(), pred.numel());
}

void absolute_error_sums(const Tensor& pred, const float* target, Tensor& sums) {
  const i64 rows = pred.rows(), cols = pred.cols();
  HPCT_CHECK(sums.numel() == cols, "absolute_error_sums: sums " + shape_string(sums.shape()));
  if (rows == 0 || cols == 0) return;
  absolute_error_kernel<<<static_cast<unsigned>(cols), 256, 0, context().stream()>>>(pred.data(), target, rows, cols,
                                                                                     sums.data());
  launch_check();
}

}  // namespace hpctrain::cuda
