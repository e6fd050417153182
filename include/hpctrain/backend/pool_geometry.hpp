// Pooling index arithmetic shared by the CPU tests and the CUDA kernels.
#pragma once

#include <cstdint>

#include "hpctrain/core/host_device.hpp"

namespace hpctrain::backend {

// Along one axis of a pooling with window k, stride s and `out` outputs: the outputs whose window
// covers input position r are lo..hi (empty when lo > hi). A backward pass that walks these, and
// not the whole window, costs O(input) even for a global pooling (window = input).
struct WindowRange {
  std::int64_t lo, hi;
};
HPCT_HOST_DEVICE inline WindowRange covering_windows(std::int64_t r, std::int64_t k, std::int64_t s, std::int64_t out) {
  // Output i covers r when i*s <= r <= i*s + k - 1.
  const std::int64_t lo = r - k + 1 > 0 ? (r - k + s) / s : 0;
  const std::int64_t hi = r / s < out - 1 ? r / s : out - 1;
  return {lo, hi};
}

}  // namespace hpctrain::backend
