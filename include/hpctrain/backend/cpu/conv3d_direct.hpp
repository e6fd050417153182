// A direct 3-D convolution on the CPU: the reference the oneDNN and cuDNN paths are tested
// against, and conv3d's fallback in builds without oneDNN ([kernels] conv = im2col on a volume).
// Plain loops over our [N, C, D, H, W] layout, weights [out, C, k, k, k], padding `pad` before
// and `pad_end()` after each axis (backend/cpu/onednn_conv.hpp ConvGeometry, depth > 0).
#pragma once

#include <cstdint>

#include "hpctrain/backend/cpu/onednn_conv.hpp"  // ConvGeometry

namespace hpctrain::cpu {

// y = conv(x) + b for n samples.
void conv3d_direct_forward(const ConvGeometry& g, const float* x, const float* w, const float* b, float* y,
                           std::int64_t n);
// dw, db: overwritten, or added to when `accumulate`; dx (may be null) overwritten.
void conv3d_direct_backward(const ConvGeometry& g, const float* x, const float* dy, const float* w, float* dw,
                            float* db, float* dx, std::int64_t n, bool accumulate);

}  // namespace hpctrain::cpu
