// The CPU backend, second half: the convolution helpers (im2col, col2im,
// per-channel bias), max and average pooling, dropout and batch norm's
// passes (backend/cpu/cpu_ops.hpp).
#include <algorithm>
#include <cstring>

#include "hpctrain/backend/checks.hpp"
#include "hpctrain/backend/cpu/cpu_ops.hpp"
#include "hpctrain/core/hash.hpp"
#include "vector_clones.hpp"

namespace hpctrain::cpu {

using backend::same_size;

namespace {
// The hot element-wise loops of a CNN, compiled twice (vector_clones.hpp).
HPCT_VECTOR_CLONES void add_constant(float* row, float v, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) row[j] += v;
}

// 2x2 max pooling with stride 2 over `planes` planes of height x width: the maximum and the
// flat index it came from (the first on ties, as the generic loop picks).
HPCT_VECTOR_CLONES void maxpool_2x2(const float* x, std::int64_t planes, std::int64_t height, std::int64_t width,
                                    std::int64_t ho, std::int64_t wo, float* y, std::int32_t* argmax) {
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* in = x + p * height * width;
    float* out = y + p * ho * wo;
    std::int32_t* arg = argmax + p * ho * wo;
    const auto base = static_cast<std::int32_t>(p * height * width);
    for (std::int64_t i = 0; i < ho; ++i) {
      const float* r0 = in + 2 * i * width;
      const float* r1 = r0 + width;
      const auto row0 = static_cast<std::int32_t>(base + 2 * i * width);
      const auto w32 = static_cast<std::int32_t>(width);
      for (std::int64_t j = 0; j < wo; ++j) {  // branch-free: the data decide nothing but selects
        const float a = r0[2 * j], b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
        const float m0 = std::max(a, b), m1 = std::max(c, d);  // std::max keeps the first on ties
        const std::int32_t top = b > a, bottom = d > c, second = m1 > m0;
        out[i * wo + j] = std::max(m0, m1);
        const std::int32_t best = row0 + 2 * static_cast<std::int32_t>(j) + top + second * (w32 + bottom - top);
        arg[i * wo + j] = best;
      }
    }
  }
}

// The output columns j of one kernel tap (kj) whose input column j*stride-pad+kj
// lies inside [0, width): [first, last).
void valid_columns(std::int64_t kj, std::int64_t stride, std::int64_t pad, std::int64_t width, std::int64_t wo,
                   std::int64_t& first, std::int64_t& last) {
  first = std::min(wo, std::max<std::int64_t>(0, (pad - kj + stride - 1) / stride));
  last = std::max(first, std::min(wo, (width + pad - kj + stride - 1) / stride));
}
}  // namespace

void im2col(const Tensor& x, std::int64_t channels, std::int64_t height, std::int64_t width, std::int64_t kernel,
            std::int64_t stride, std::int64_t pad, std::int64_t cols_ld, Tensor& cols) {
  const std::int64_t ho = (height + 2 * pad - kernel) / stride + 1, wo = (width + 2 * pad - kernel) / stride + 1;
  HPCT_CHECK(cols_ld >= ho * wo && cols.numel() >= (channels * kernel * kernel - 1) * cols_ld + ho * wo,
             "im2col buffer size");
  const float* in = x.data();
  float* out = cols.data();
  for (std::int64_t c = 0; c < channels; ++c)
    for (std::int64_t ki = 0; ki < kernel; ++ki)
      for (std::int64_t kj = 0; kj < kernel; ++kj) {
        float* row = out + ((c * kernel + ki) * kernel + kj) * cols_ld;
        std::int64_t first, last;
        valid_columns(kj, stride, pad, width, wo, first, last);
        for (std::int64_t i = 0; i < ho; ++i) {
          float* dst = row + i * wo;
          const std::int64_t h = i * stride - pad + ki;
          if (h < 0 || h >= height) {
            std::fill(dst, dst + wo, 0.f);
            continue;
          }
          std::fill(dst, dst + first, 0.f);
          const float* src = in + (c * height + h) * width - pad + kj;
          if (stride == 1)
            std::memcpy(dst + first, src + first, static_cast<std::size_t>(last - first) * sizeof(float));
          else
            for (std::int64_t j = first; j < last; ++j) dst[j] = src[j * stride];
          std::fill(dst + last, dst + wo, 0.f);
        }
      }
}

void col2im(const Tensor& cols, std::int64_t channels, std::int64_t height, std::int64_t width, std::int64_t kernel,
            std::int64_t stride, std::int64_t pad, std::int64_t cols_ld, Tensor& dx) {
  const std::int64_t ho = (height + 2 * pad - kernel) / stride + 1, wo = (width + 2 * pad - kernel) / stride + 1;
  HPCT_CHECK(cols_ld >= ho * wo && cols.numel() >= (channels * kernel * kernel - 1) * cols_ld + ho * wo,
             "col2im buffer size");
  const float* in = cols.data();
  float* out = dx.data();
  for (std::int64_t c = 0; c < channels; ++c)
    for (std::int64_t ki = 0; ki < kernel; ++ki)
      for (std::int64_t kj = 0; kj < kernel; ++kj) {
        const float* row = in + ((c * kernel + ki) * kernel + kj) * cols_ld;
        std::int64_t first, last;
        valid_columns(kj, stride, pad, width, wo, first, last);
        for (std::int64_t i = 0; i < ho; ++i) {
          const std::int64_t h = i * stride - pad + ki;
          if (h < 0 || h >= height) continue;
          const float* src = row + i * wo;
          float* dst = out + (c * height + h) * width - pad + kj;
          for (std::int64_t j = first; j < last; ++j) dst[j * stride] += src[j];
        }
      }
}

void add_channel_bias(Tensor& y, const Tensor& bias) {
  const std::int64_t c = bias.numel(), p = y.numel() / c;
  for (std::int64_t i = 0; i < c; ++i) add_constant(y.data() + i * p, bias.data()[i], p);
}

void accumulate_channel_bias_grad(const Tensor& dy, Tensor& db) {
  const std::int64_t c = db.numel(), p = dy.numel() / c;
  for (std::int64_t i = 0; i < c; ++i) {
    const float* row = dy.data() + i * p;
    float lanes[8] = {};  // eight partial sums: vectorizes, and keeps the error of a long sum small
    std::int64_t j = 0;
    for (; j + 8 <= p; j += 8)
      for (int l = 0; l < 8; ++l) lanes[l] += row[j + l];
    float s = 0;
    for (; j < p; ++j) s += row[j];
    for (int l = 0; l < 8; ++l) s += lanes[l];
    db.data()[i] += s;
  }
}

void maxpool_forward(const Tensor& x, std::int64_t channels, std::int64_t height, std::int64_t width,
                     std::int64_t kernel, std::int64_t stride, Tensor& y, Tensor& argmax_buf) {
  const std::int64_t ho = (height - kernel) / stride + 1, wo = (width - kernel) / stride + 1;
  const std::int64_t planes = x.numel() / (height * width);
  HPCT_CHECK(y.numel() == planes * ho * wo && planes % channels == 0 && argmax_buf.numel() >= y.numel(),
             "maxpool shapes");
  backend::checked_int(x.numel(), "max pooling: input elements (argmax indices are 32-bit)");
  std::int32_t* argmax = argmax_buf.data_as<std::int32_t>();
  if (kernel == 2 && stride == 2) {  // the common case, without the generic window loops
    maxpool_2x2(x.data(), planes, height, width, ho, wo, y.data(), argmax);
    return;
  }
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* in = x.data() + p * height * width;
    for (std::int64_t i = 0; i < ho; ++i)
      for (std::int64_t j = 0; j < wo; ++j) {
        std::int64_t best = (i * stride) * width + j * stride;
        for (std::int64_t a = 0; a < kernel; ++a)
          for (std::int64_t b = 0; b < kernel; ++b) {
            const std::int64_t at = (i * stride + a) * width + j * stride + b;
            if (in[at] > in[best]) best = at;
          }
        const std::int64_t o = (p * ho + i) * wo + j;
        y.data()[o] = in[best];
        argmax[o] = static_cast<std::int32_t>(p * height * width + best);
      }
  }
}

void maxpool_backward(const Tensor& dy, const Tensor& argmax_buf, Tensor& dx) {
  cpu::fill(dx, 0.f);
  const std::int64_t n = dy.numel();
  const float* g = dy.data();
  const std::int32_t* argmax = argmax_buf.data_as<std::int32_t>();
  float* out = dx.data();
  for (std::int64_t o = 0; o < n; ++o) out[argmax[o]] += g[o];
}

void avgpool_forward(const Tensor& x, std::int64_t height, std::int64_t width, std::int64_t kh, std::int64_t kw,
                     std::int64_t sh, std::int64_t sw, Tensor& y) {
  const std::int64_t ho = (height - kh) / sh + 1, wo = (width - kw) / sw + 1, planes = x.numel() / (height * width);
  HPCT_CHECK(y.numel() == planes * ho * wo, "avgpool shapes");
  const float inv = 1.f / static_cast<float>(kh * kw);
  for (std::int64_t p = 0; p < planes; ++p) {
    const float* in = x.data() + p * height * width;
    for (std::int64_t i = 0; i < ho; ++i)
      for (std::int64_t j = 0; j < wo; ++j) {
        double s = 0;
        for (std::int64_t a = 0; a < kh; ++a)
          for (std::int64_t b = 0; b < kw; ++b) s += in[(i * sh + a) * width + j * sw + b];
        y.data()[(p * ho + i) * wo + j] = static_cast<float>(s) * inv;
      }
  }
}

void avgpool_backward(const Tensor& dy, std::int64_t height, std::int64_t width, std::int64_t kh, std::int64_t kw,
                      std::int64_t sh, std::int64_t sw, Tensor& dx) {
  const std::int64_t ho = (height - kh) / sh + 1, wo = (width - kw) / sw + 1, planes = dx.numel() / (height * width);
  HPCT_CHECK(dy.numel() == planes * ho * wo, "avgpool backward shapes");
  cpu::fill(dx, 0.f);
  const float inv = 1.f / static_cast<float>(kh * kw);
  for (std::int64_t p = 0; p < planes; ++p) {
    float* out = dx.data() + p * height * width;
    for (std::int64_t i = 0; i < ho; ++i)
      for (std::int64_t j = 0; j < wo; ++j) {
        const float g = dy.data()[(p * ho + i) * wo + j] * inv;
        for (std::int64_t a = 0; a < kh; ++a)
          for (std::int64_t b = 0; b < kw; ++b) out[(i * sh + a) * width + j * sw + b] += g;
      }
  }
}

namespace {}  // namespace

void dropout_forward(const Tensor& x, float p, std::uint64_t layer_key, const std::uint64_t* step_key,
                     const std::int64_t* sample_ids, std::int64_t column_offset, Tensor& mask, Tensor& y) {
  const std::uint64_t key = splitmix64(layer_key ^ *step_key);
  same_size(x, y, "dropout");
  same_size(x, mask, "dropout mask");
  const std::int64_t n = x.cols();
  const float keep_scale = 1.f / (1.f - p);
  for (std::int64_t i = 0; i < x.rows(); ++i) {
    const std::uint64_t row_key = splitmix64(key ^ splitmix64(static_cast<std::uint64_t>(sample_ids[i])));
    for (std::int64_t j = 0; j < n; ++j) {
      const double u = static_cast<double>(splitmix64(row_key + static_cast<std::uint64_t>(column_offset + j)) >> 11) *
                       (1.0 / 9007199254740992.0);
      const float m = u >= p ? keep_scale : 0.f;
      mask.data()[i * n + j] = m;
      y.data()[i * n + j] = x.data()[i * n + j] * m;
    }
  }
}

void channel_moments(const Tensor& x, std::int64_t channels, std::int64_t plane, std::vector<double>& sums) {
  const std::int64_t n = x.numel() / (channels * plane);
  const auto uc = static_cast<std::size_t>(channels);
  HPCT_CHECK(sums.size() >= 2 * uc && n * channels * plane == x.numel(), "channel_moments shapes");
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t ch = 0; ch < channels; ++ch) {
      const float* v = x.data() + (i * channels + ch) * plane;
      for (std::int64_t k = 0; k < plane; ++k) {
        sums[static_cast<std::size_t>(ch)] += v[k];
        sums[uc + static_cast<std::size_t>(ch)] += static_cast<double>(v[k]) * v[k];
      }
    }
}

void batchnorm_grad_sums(const Tensor& x, const Tensor& dy, const std::vector<float>& mean,
                         const std::vector<float>& inv_std, std::int64_t plane, std::vector<double>& sums) {
  same_size(x, dy, "batchnorm_grad_sums");
  const auto uc = mean.size();
  const auto c = static_cast<std::int64_t>(uc);
  const std::int64_t n = x.numel() / (c * plane);
  HPCT_CHECK(sums.size() >= 2 * uc && inv_std.size() == uc, "batchnorm_grad_sums shapes");
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t ch = 0; ch < c; ++ch) {
      const auto u = static_cast<std::size_t>(ch);
      const float* v = x.data() + (i * c + ch) * plane;
      const float* g = dy.data() + (i * c + ch) * plane;
      for (std::int64_t k = 0; k < plane; ++k) {
        sums[u] += g[k];
        sums[uc + u] += static_cast<double>(g[k]) * (v[k] - mean[u]) * inv_std[u];
      }
    }
}

void channel_affine(const Tensor& x, const std::vector<float>& a, const std::vector<float>& b, std::int64_t plane,
                    Tensor& y) {
  same_size(x, y, "channel_affine");
  const auto c = static_cast<std::int64_t>(a.size());
  const std::int64_t n = x.numel() / (c * plane);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t ch = 0; ch < c; ++ch) {
      const auto u = static_cast<std::size_t>(ch);
      const float* v = x.data() + (i * c + ch) * plane;
      float* o = y.data() + (i * c + ch) * plane;
      for (std::int64_t k = 0; k < plane; ++k) o[k] = a[u] * v[k] + b[u];
    }
}

void batchnorm_backward_data(const Tensor& x, const Tensor& dy, const std::vector<float>& mean,
                             const std::vector<float>& inv_std, const std::vector<float>& scale,
                             const std::vector<float>& mean_dy, const std::vector<float>& mean_dyx, std::int64_t plane,
                             Tensor& dx) {
  same_size(x, dy, "batchnorm_backward_data");
  same_size(x, dx, "batchnorm_backward_data");
  const auto c = static_cast<std::int64_t>(mean.size());
  const std::int64_t n = x.numel() / (c * plane);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t ch = 0; ch < c; ++ch) {
      const auto u = static_cast<std::size_t>(ch);
      const float* v = x.data() + (i * c + ch) * plane;
      const float* g = dy.data() + (i * c + ch) * plane;
      float* o = dx.data() + (i * c + ch) * plane;
      for (std::int64_t k = 0; k < plane; ++k) {
        const float xhat = (v[k] - mean[u]) * inv_std[u];
        o[k] = scale[u] * (g[k] - mean_dy[u] - xhat * mean_dyx[u]);
      }
    }
}

}  // namespace hpctrain::cpu
