// Helpers shared by the CUDA backend's kernel files: grid-stride indexing, a
// deterministic block sum, the post-launch check and the launch helper.
#pragma once

#include <cstdint>
#include <string>

#include "hpctrain/backend/checks.hpp"
#include "hpctrain/backend/column_sums.hpp"
#include "hpctrain/backend/cuda/context.hpp"
#include "hpctrain/backend/cuda/device_api.hpp"
#include "hpctrain/core/cuda_check.hpp"
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain::cuda::detail {

__device__ inline std::int64_t global_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::int64_t grid_stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

// The sum of every thread's v over the block (blockDim.x a power of two, at most 256), in a fixed
// order (deterministic), returned to every thread. Every thread of the block must call it.
template <typename T>
__device__ T block_sum(T v) {
  __shared__ T part[256];
  part[threadIdx.x] = v;
  __syncthreads();
  for (unsigned k = blockDim.x / 2; k > 0; k /= 2) {
    if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
    __syncthreads();
  }
  const T total = part[0];
  __syncthreads();  // the next call may reuse part
  return total;
}

// A launch's configuration errors surface here; faults inside kernels at the next synchronizing call.
inline void launch_check() { CHECK_CUDA(cudaGetLastError()); }

using backend::same_size;  // backend/checks.hpp

// kernel<<<enough blocks for n, 256 threads>>>(args...) on the compute stream, checked; nothing for n <= 0.
template <typename... Args, typename... Params>
void launch(void (*kernel)(Params...), std::int64_t n, Args... args) {
  if (n <= 0) return;
  kernel<<<blocks_for(static_cast<std::size_t>(n)), 256, 0, context().stream()>>>(args...);
  launch_check();
}

// Column sums over tall inputs (backend/column_sums.hpp): the plan for this GPU's SM count, and the
// second pass that adds a plan's chunk sums (partial[chunk][col]) into out in chunk order (nothing
// for one chunk: its kernel added into out itself). Defined in cuda_ops.cu.
ColumnSumPlan column_sum_plan(std::int64_t rows, std::int64_t cols);
void add_column_chunks(const float* partial, const ColumnSumPlan& plan, float* out);

}  // namespace hpctrain::cuda::detail
