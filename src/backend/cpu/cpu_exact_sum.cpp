// Order-independent sums on the CPU (backend/op_list.inc: exact_accumulate, exact_round; the
// arithmetic is backend/exact_sum.hpp's, shared with the CUDA kernels).
#include <limits>

#include "hpctrain/backend/checks.hpp"
#include "hpctrain/backend/cpu/cpu_ops.hpp"
#include "hpctrain/backend/exact_sum.hpp"

namespace hpctrain::cpu {

void exact_accumulate(const Tensor& x, bool overwrite, Tensor& acc, Tensor& flag) {
  backend::check_exact(x, acc, flag, "exact_accumulate");
  const float* v = x.data();
  auto* limbs = static_cast<std::int64_t*>(acc.raw());
  const std::int64_t n = x.numel();
  bool refused = false;
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t lo = overwrite ? 0 : limbs[2 * i], hi = overwrite ? 0 : limbs[2 * i + 1];
    refused |= !exact::add(v[i], lo, hi);
    limbs[2 * i] = lo;
    limbs[2 * i + 1] = hi;
  }
  if (refused) *static_cast<std::int32_t*>(flag.raw()) = 1;
}

void exact_round(const Tensor& acc, const Tensor& flag, Tensor& y) {
  backend::check_exact(y, acc, flag, "exact_round");
  const auto* limbs = static_cast<const std::int64_t*>(acc.raw());
  const bool refused = *static_cast<const std::int32_t*>(flag.raw()) != 0;
  float* out = y.data();
  const std::int64_t n = y.numel();
  for (std::int64_t i = 0; i < n; ++i)
    out[i] = refused ? std::numeric_limits<float>::quiet_NaN() : exact::value(limbs[2 * i], limbs[2 * i + 1]);
}

}  // namespace hpctrain::cpu
