// 16-bit storage of f32 values on the GPU (backend/op_list.inc: pack_16bit, unpack_16bit): bf16 as
// the top half of the float's bits rounded to nearest even (as round_bf16_kernel rounds), fp16 by
// CUDA's round-to-nearest conversion.
#include <cuda_fp16.h>

#include <cstdint>

#include "hpctrain/backend/checks.hpp"
#include "hpctrain/backend/cuda/cuda_ops.hpp"
#include "hpctrain/backend/cuda/kernels.cuh"

namespace hpctrain::cuda {

using detail::launch;
using i64 = std::int64_t;

namespace {
__global__ void pack_bf16_kernel(const float* x, unsigned short* d, i64 n) {
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride()) {
    const unsigned u = __float_as_uint(x[i]);
    d[i] = (u & 0x7f800000u) == 0x7f800000u ? static_cast<unsigned short>((u >> 16) | ((u & 0x007fffffu) ? 0x40u : 0u))
                                            : static_cast<unsigned short>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
}
__global__ void unpack_bf16_kernel(const unsigned short* s, float* x, i64 n) {
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride())
    x[i] = __uint_as_float(static_cast<unsigned>(s[i]) << 16);
}
__global__ void pack_fp16_kernel(const float* x, __half* d, i64 n) {
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride()) d[i] = __float2half_rn(x[i]);
}
__global__ void unpack_fp16_kernel(const __half* s, float* x, i64 n) {
  for (i64 i = detail::global_index(); i < n; i += detail::grid_stride()) x[i] = __half2float(s[i]);
}

}  // namespace

void pack_16bit(const Tensor& x, Tensor& packed) {
  backend::check_packed(x, packed, "pack_16bit");
  if (packed.dtype() == DType::bf16)
    launch(pack_bf16_kernel, x.numel(), x.data(), static_cast<unsigned short*>(packed.raw()), x.numel());
  else
    launch(pack_fp16_kernel, x.numel(), x.data(), static_cast<__half*>(packed.raw()), x.numel());
}

void unpack_16bit(const Tensor& packed, Tensor& x) {
  backend::check_packed(x, packed, "unpack_16bit");
  if (packed.dtype() == DType::bf16)
    launch(unpack_bf16_kernel, x.numel(), static_cast<const unsigned short*>(packed.raw()), x.data(), x.numel());
  else
    launch(unpack_fp16_kernel, x.numel(), static_cast<const __half*>(packed.raw()), x.data(), x.numel());
}

}  // namespace hpctrain::cuda
