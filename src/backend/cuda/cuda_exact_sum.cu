// Order-independent sums on the GPU (backend/op_list.inc: exact_accumulate, exact_round; the
// arithmetic is backend/exact_sum.hpp's, shared with the CPU backend). Integer additions per
// element, no atomics: the result is the CPU's bit for bit.
#include <cstdint>

#include "hpctrain/backend/checks.hpp"
#include "hpctrain/backend/cuda/cuda_ops.hpp"
#include "hpctrain/backend/cuda/kernels.cuh"
#include "hpctrain/backend/exact_sum.hpp"

namespace hpctrain::cuda {

using detail::launch;
using i64 = std::int64_t;

namespace {
__global__ void exact_accumulate_kernel(const float* x, bool overwrite, i64* limbs, int* flag, i64 n) {
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride()) {
    i64 lo = overwrite ? 0 : limbs[2 * i], hi = overwrite ? 0 : limbs[2 * i + 1];
    if (!exact::add(x[i], lo, hi)) *flag = 1;  // (any writer: the same 1)
    limbs[2 * i] = lo;
    limbs[2 * i + 1] = hi;
  }
}
__global__ void exact_round_kernel(const i64* limbs, const int* flag, float* y, i64 n) {
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride())
    y[i] = *flag ? __int_as_float(0x7fc00000) : exact::value(limbs[2 * i], limbs[2 * i + 1]);
}
}  // namespace

void exact_accumulate(const Tensor& x, bool overwrite, Tensor& acc, Tensor& flag) {
  backend::check_exact(x, acc, flag, "exact_accumulate");
  launch(exact_accumulate_kernel, x.numel(), x.data(), overwrite, static_cast<i64*>(acc.raw()),
         static_cast<int*>(flag.raw()), x.numel());
}

void exact_round(const Tensor& acc, const Tensor& flag, Tensor& y) {
  backend::check_exact(y, acc, flag, "exact_round");
  launch(exact_round_kernel, y.numel(), static_cast<const i64*>(acc.raw()), static_cast<const int*>(flag.raw()),
         y.data(), y.numel());
}

}  // namespace hpctrain::cuda
