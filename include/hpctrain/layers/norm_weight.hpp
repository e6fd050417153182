// Gemma's RMS norms (rmsnorm(offset=1), attention's qk_offset=1) scale by 1 + w, the weight kept
// as Gemma's checkpoints hold it (zeros at first; Hugging Face's Gemma3RMSNorm: x_hat * (1 + w) in
// float32). The factor is formed in scratch from the existing ops (fill, add) and handed to the
// backend's rmsnorm, whose weight gradient is then w's too (d(1 + w) = dw).
#pragma once

#include "hpctrain/backend/ops.hpp"

namespace hpctrain {

// `w` itself, or with `offset` 1 + w written into `scratch` (f32, w's shape and device).
inline Tensor norm_factor(const Tensor& w, bool offset, Tensor scratch) {
  if (!offset) return w;
  fill(scratch, 1.f);
  add(w, scratch, scratch);
  return scratch;
}

}  // namespace hpctrain
