// The CUDA backend, second half: the convolution helpers (im2col, col2im,
// per-channel bias), max and average pooling, dropout and batch norm's
// pieces. col2im and average pooling's backward gather per input element
// (no atomics, deterministic); max pooling's backward adds with atomics only
// where windows overlap (stride < kernel).
#include "hpctrain/backend/checks.hpp"
#include "hpctrain/backend/cuda/context.hpp"
#include "hpctrain/backend/cuda/cuda_ops.hpp"
#include "hpctrain/backend/cuda/kernels.cuh"
#include "hpctrain/backend/pool_geometry.hpp"
#include "hpctrain/core/hash.hpp"

namespace hpctrain::cuda {

using detail::launch;
using detail::launch_check;
using detail::same_size;
using i64 = std::int64_t;

namespace {

__global__ void im2col_kernel(const float* x, i64 h, i64 w, i64 k, i64 stride, i64 pad, i64 ho, i64 wo, i64 ld,
                              float* cols, i64 total) {
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    const i64 pos = idx % (ho * wo), r = idx / (ho * wo);  // r = (c * k + ki) * k + kj
    const i64 kj = r % k, ki = (r / k) % k, c = r / (k * k);
    const i64 i = pos / wo, j = pos % wo;
    const i64 hh = i * stride - pad + ki, ww = j * stride - pad + kj;
    cols[r * ld + pos] = (hh >= 0 && hh < h && ww >= 0 && ww < w) ? x[(c * h + hh) * w + ww] : 0.f;
  }
}

__global__ void col2im_kernel(const float* cols, i64 h, i64 w, i64 k, i64 stride, i64 pad, i64 ho, i64 wo, i64 ld,
                              float* dx, i64 total) {
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    const i64 ww = idx % w, hh = (idx / w) % h, c = idx / (w * h);
    float s = 0.f;
    for (i64 ki = 0; ki < k; ++ki) {
      const i64 ti = hh + pad - ki;
      if (ti < 0 || ti % stride) continue;
      const i64 i = ti / stride;
      if (i >= ho) continue;
      for (i64 kj = 0; kj < k; ++kj) {
        const i64 tj = ww + pad - kj;
        if (tj < 0 || tj % stride) continue;
        const i64 j = tj / stride;
        if (j < wo) s += cols[((c * k + ki) * k + kj) * ld + i * wo + j];
      }
    }
    dx[idx] += s;
  }
}

__global__ void channel_bias_kernel(float* y, const float* b, i64 total, i64 plane) {
  for (i64 i = detail::global_index(); i < total; i += detail::grid_stride()) y[i] += b[i / plane];
}

// One block per channel row of dy [C, P].
__global__ void channel_bias_grad_kernel(const float* dy, float* db, i64 plane) {
  float acc = 0.f;
  const float* row = dy + blockIdx.x * plane;
  for (i64 j = threadIdx.x; j < plane; j += blockDim.x) acc += row[j];
  const float s = detail::block_sum(acc);
  if (threadIdx.x == 0) db[blockIdx.x] += s;
}

__global__ void maxpool_kernel(const float* x, i64 h, i64 w, i64 k, i64 stride, i64 ho, i64 wo, float* y,
                               std::int32_t* argmax, i64 total) {
  for (i64 o = detail::global_index(); o < total; o += detail::grid_stride()) {
    const i64 j = o % wo, i = (o / wo) % ho, p = o / (wo * ho);
    const float* in = x + p * h * w;
    i64 best = (i * stride) * w + j * stride;
    for (i64 a = 0; a < k; ++a)
      for (i64 b = 0; b < k; ++b) {
        const i64 at = (i * stride + a) * w + j * stride + b;
        if (in[at] > in[best]) best = at;  // strict: the first largest, as on the CPU
      }
    y[o] = in[best];
    argmax[o] = static_cast<std::int32_t>(p * h * w + best);
  }
}

__global__ void maxpool_backward_kernel(const float* dy, const std::int32_t* argmax, float* dx, i64 n,
                                        bool overlapping) {
  for (i64 o = detail::global_index(); o < n; o += detail::grid_stride()) {
    if (overlapping)
      atomicAdd(dx + argmax[o], dy[o]);
    else
      dx[argmax[o]] += dy[o];  // windows are disjoint: each input has at most one writer
  }
}

__global__ void avgpool_kernel(const float* x, i64 h, i64 w, i64 kh, i64 kw, i64 sh, i64 sw, i64 ho, i64 wo, float inv,
                               float* y, i64 total) {
  for (i64 o = detail::global_index(); o < total; o += detail::grid_stride()) {
    const i64 j = o % wo, i = (o / wo) % ho, p = o / (wo * ho);
    const float* in = x + p * h * w;
    double s = 0;
    for (i64 a = 0; a < kh; ++a)
      for (i64 b = 0; b < kw; ++b) s += in[(i * sh + a) * w + j * sw + b];
    y[o] = static_cast<float>(s) * inv;
  }
}

__global__ void avgpool_backward_kernel(const float* dy, i64 h, i64 w, i64 kh, i64 kw, i64 sh, i64 sw, i64 ho, i64 wo,
                                        float inv, float* dx, i64 total) {
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    const i64 c = idx % w, r = (idx / w) % h, p = idx / (w * h);
    // Only the windows that cover (r, c): O(1) per input for a global pooling, not O(h * w).
    const backend::WindowRange rows = backend::covering_windows(r, kh, sh, ho);
    const backend::WindowRange cols = backend::covering_windows(c, kw, sw, wo);
    float s = 0.f;
    for (i64 i = rows.lo; i <= rows.hi; ++i)
      for (i64 j = cols.lo; j <= cols.hi; ++j) s += dy[(p * ho + i) * wo + j] * inv;
    dx[idx] = s;
  }
}

__global__ void dropout_kernel(const float* x, float p, float keep_scale, std::uint64_t layer_key,
                               const std::uint64_t* step_key, const std::int64_t* ids, i64 column_offset, float* mask,
                               float* y, i64 total, i64 n) {
  const std::uint64_t key = splitmix64(layer_key ^ *step_key);
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    const i64 i = idx / n, j = idx % n;
    const std::uint64_t row_key = splitmix64(key ^ splitmix64(static_cast<std::uint64_t>(ids[i])));
    const double u = static_cast<double>(splitmix64(row_key + static_cast<std::uint64_t>(column_offset + j)) >> 11) *
                     (1.0 / 9007199254740992.0);
    const float m = u >= p ? keep_scale : 0.f;
    mask[idx] = m;
    y[idx] = x[idx] * m;
  }
}

// One block per channel: sums over [N, ., P] of x and x^2, or of dy and dy * xhat (with_grad).
__global__ void channel_sums_kernel(const float* x, const float* dy, const float* mean, const float* inv_std, i64 n,
                                    i64 c, i64 plane, double* out) {
  const i64 ch = blockIdx.x;
  double a = 0, b = 0;
  for (i64 e = threadIdx.x; e < n * plane; e += blockDim.x) {
    const i64 i = e / plane, k = e % plane, at = (i * c + ch) * plane + k;
    const float v = x[at];
    if (dy) {
      const float g = dy[at];
      a += g;
      b += static_cast<double>(g) * (v - mean[ch]) * inv_std[ch];
    } else {
      a += v;
      b += static_cast<double>(v) * v;
    }
  }
  const double sa = detail::block_sum(a), sb = detail::block_sum(b);
  if (threadIdx.x == 0) out[ch] = sa, out[c + ch] = sb;
}

__global__ void channel_affine_kernel(const float* x, const float* a, const float* b, i64 c, i64 plane, float* y,
                                      i64 total) {
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    const i64 ch = (idx / plane) % c;
    y[idx] = a[ch] * x[idx] + b[ch];
  }
}

// per[0..5][c]: mean, inv_std, scale, mean_dy, mean_dyx.
__global__ void batchnorm_backward_kernel(const float* x, const float* dy, const float* per, i64 c, i64 plane,
                                          float* dx, i64 total) {
  for (i64 idx = detail::global_index(); idx < total; idx += detail::grid_stride()) {
    const i64 ch = (idx / plane) % c;
    const float xhat = (x[idx] - per[ch]) * per[c + ch];
    dx[idx] = per[2 * c + ch] * (dy[idx] - per[3 * c + ch] - xhat * per[4 * c + ch]);
  }
}

// Host vectors of per-channel floats, concatenated into the context's scratch (on the stream).
float* upload_channels(std::initializer_list<const std::vector<float>*> parts) {
  std::vector<float> all;
  for (const auto* p : parts) all.insert(all.end(), p->begin(), p->end());
  auto* d = static_cast<float*>(context().scratch(all.size() * sizeof(float) + 256));
  memcpy_to_device(d, all.data(), all.size() * sizeof(float));
  return d;
}

}  // namespace

void im2col(const Tensor& x, i64 channels, i64 height, i64 width, i64 kernel, i64 stride, i64 pad, i64 cols_ld,
            Tensor& cols) {
  const i64 ho = (height + 2 * pad - kernel) / stride + 1, wo = (width + 2 * pad - kernel) / stride + 1;
  HPCT_CHECK(cols_ld >= ho * wo && cols.numel() >= (channels * kernel * kernel - 1) * cols_ld + ho * wo,
             "im2col buffer size");
  const i64 total = channels * kernel * kernel * ho * wo;
  launch(im2col_kernel, total, x.data(), height, width, kernel, stride, pad, ho, wo, cols_ld, cols.data(), total);
}

void col2im(const Tensor& cols, i64 channels, i64 height, i64 width, i64 kernel, i64 stride, i64 pad, i64 cols_ld,
            Tensor& dx) {
  const i64 ho = (height + 2 * pad - kernel) / stride + 1, wo = (width + 2 * pad - kernel) / stride + 1;
  HPCT_CHECK(cols_ld >= ho * wo && cols.numel() >= (channels * kernel * kernel - 1) * cols_ld + ho * wo,
             "col2im buffer size");
  const i64 total = channels * height * width;
  launch(col2im_kernel, total, cols.data(), height, width, kernel, stride, pad, ho, wo, cols_ld, dx.data(), total);
}

void add_channel_bias(Tensor& y, const Tensor& bias) {
  launch(channel_bias_kernel, y.numel(), y.data(), bias.data(), y.numel(), y.numel() / bias.numel());
}

void accumulate_channel_bias_grad(const Tensor& dy, Tensor& db) {
  if (db.numel() == 0) return;
  channel_bias_grad_kernel<<<static_cast<unsigned>(db.numel()), 256, 0, context().stream()>>>(dy.data(), db.data(),
                                                                                              dy.numel() / db.numel());
  launch_check();
}

void maxpool_forward(const Tensor& x, i64 channels, i64 height, i64 width, i64 kernel, i64 stride, Tensor& y,
                     Tensor& argmax) {
  const i64 ho = (height - kernel) / stride + 1, wo = (width - kernel) / stride + 1;
  const i64 planes = x.numel() / (height * width);
  HPCT_CHECK(y.numel() == planes * ho * wo && planes % channels == 0 && argmax.numel() >= y.numel(), "maxpool shapes");
  backend::checked_int(x.numel(), "max pooling: input elements (argmax indices are 32-bit)");
  launch(maxpool_kernel, y.numel(), x.data(), height, width, kernel, stride, ho, wo, y.data(),
         argmax.data_as<std::int32_t>(), y.numel());
}

void maxpool_backward(const Tensor& dy, const Tensor& argmax, Tensor& dx) {
  cuda::fill(dx, 0.f);
  // The layer does not pass the geometry: atomics always (exact for disjoint windows too, since
  // each input then receives a single addition).
  launch(maxpool_backward_kernel, dy.numel(), dy.data(), argmax.data_as<std::int32_t>(), dx.data(), dy.numel(), true);
}

void avgpool_forward(const Tensor& x, i64 height, i64 width, i64 kh, i64 kw, i64 sh, i64 sw, Tensor& y) {
  const i64 ho = (height - kh) / sh + 1, wo = (width - kw) / sw + 1, planes = x.numel() / (height * width);
  HPCT_CHECK(y.numel() == planes * ho * wo, "avgpool shapes");
  const float inv = 1.f / static_cast<float>(kh * kw);
  launch(avgpool_kernel, y.numel(), x.data(), height, width, kh, kw, sh, sw, ho, wo, inv, y.data(), y.numel());
}

void avgpool_backward(const Tensor& dy, i64 height, i64 width, i64 kh, i64 kw, i64 sh, i64 sw, Tensor& dx) {
  const i64 ho = (height - kh) / sh + 1, wo = (width - kw) / sw + 1, planes = dx.numel() / (height * width);
  HPCT_CHECK(dy.numel() == planes * ho * wo, "avgpool backward shapes");
  const float inv = 1.f / static_cast<float>(kh * kw);
  launch(avgpool_backward_kernel, dx.numel(), dy.data(), height, width, kh, kw, sh, sw, ho, wo, inv, dx.data(),
         dx.numel());
}

void dropout_forward(const Tensor& x, float p, std::uint64_t layer_key, const std::uint64_t* step_key,
                     const std::int64_t* sample_ids, i64 column_offset, Tensor& mask, Tensor& y) {
  same_size(x, y, "dropout");
  same_size(x, mask, "dropout mask");
  const float keep_scale = 1.f / (1.f - p);
  launch(dropout_kernel, x.numel(), x.data(), p, keep_scale, layer_key, step_key, sample_ids, column_offset,
         mask.data(), y.data(), x.numel(), x.cols());
}

void channel_moments(const Tensor& x, i64 channels, i64 plane, std::vector<double>& sums) {
  const i64 n = x.numel() / (channels * plane);
  HPCT_CHECK(sums.size() >= 2 * static_cast<std::size_t>(channels) && n * channels * plane == x.numel(),
             "channel_moments shapes");
  if (channels == 0) return;
  auto* out = static_cast<double*>(context().scratch(2 * static_cast<std::size_t>(channels) * sizeof(double)));
  channel_sums_kernel<<<static_cast<unsigned>(channels), 256, 0, context().stream()>>>(
      x.data(), nullptr, nullptr, nullptr, n, channels, plane, out);
  launch_check();
  std::vector<double> host(2 * static_cast<std::size_t>(channels));
  memcpy_to_host(host.data(), out, host.size() * sizeof(double));
  for (std::size_t i = 0; i < host.size(); ++i) sums[i] += host[i];
}

void batchnorm_grad_sums(const Tensor& x, const Tensor& dy, const std::vector<float>& mean,
                         const std::vector<float>& inv_std, i64 plane, std::vector<double>& sums) {
  same_size(x, dy, "batchnorm_grad_sums");
  const auto c = static_cast<i64>(mean.size());
  const i64 n = x.numel() / (c * plane);
  HPCT_CHECK(sums.size() >= 2 * mean.size() && inv_std.size() == mean.size(), "batchnorm_grad_sums shapes");
  if (c == 0) return;
  const std::size_t out_bytes = 2 * mean.size() * sizeof(double);
  // Scratch layout: [out doubles][mean][inv_std].
  auto* base = static_cast<char*>(context().scratch(out_bytes + 2 * mean.size() * sizeof(float)));
  auto* out = reinterpret_cast<double*>(base);
  auto* per = reinterpret_cast<float*>(base + out_bytes);
  memcpy_to_device(per, mean.data(), mean.size() * sizeof(float));
  memcpy_to_device(per + c, inv_std.data(), inv_std.size() * sizeof(float));
  channel_sums_kernel<<<static_cast<unsigned>(c), 256, 0, context().stream()>>>(x.data(), dy.data(), per, per + c, n, c,
                                                                                plane, out);
  launch_check();
  std::vector<double> host(2 * mean.size());
  memcpy_to_host(host.data(), out, host.size() * sizeof(double));
  for (std::size_t i = 0; i < host.size(); ++i) sums[i] += host[i];
}

void channel_affine(const Tensor& x, const std::vector<float>& a, const std::vector<float>& b, i64 plane, Tensor& y) {
  same_size(x, y, "channel_affine");
  const auto c = static_cast<i64>(a.size());
  const float* per = upload_channels({&a, &b});
  launch(channel_affine_kernel, x.numel(), x.data(), per, per + c, c, plane, y.data(), x.numel());
}

void batchnorm_backward_data(const Tensor& x, const Tensor& dy, const std::vector<float>& mean,
                             const std::vector<float>& inv_std, const std::vector<float>& scale,
                             const std::vector<float>& mean_dy, const std::vector<float>& mean_dyx, i64 plane,
                             Tensor& dx) {
  same_size(x, dy, "batchnorm_backward_data");
  same_size(x, dx, "batchnorm_backward_data");
  const float* per = upload_channels({&mean, &inv_std, &scale, &mean_dy, &mean_dyx});
  launch(batchnorm_backward_kernel, x.numel(), x.data(), dy.data(), per, static_cast<i64>(mean.size()), plane,
         dx.data(), x.numel());
}

}  // namespace hpctrain::cuda
