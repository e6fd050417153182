// The CUDA backend's convolution: cuDNN's, on our [N, C, H, W] float32
// layout. For each batch size the forward, backward-data and backward-filter
// algorithms are chosen once by cuDNN's own measurement (cudnnFind...), the
// fastest whose workspace fits kWorkspaceLimit, and kept with their workspace
// (from the caching pool). Tensor-core math (TF32 or the format of [run]
// precision) only where the GEMMs may use it too (device_api.hpp GemmMath);
// otherwise plain float32 FMA math, as on the CPU.
//
// Built with the CUDA backend; otherwise cudnn_compiled() is false and
// constructing one throws. conv layers on a GPU use it unless [kernels] conv = im2col.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "hpctrain/backend/cpu/onednn_conv.hpp"  // ConvGeometry

namespace hpctrain::cuda {

bool cudnn_compiled();
inline constexpr std::size_t kWorkspaceLimit = std::size_t{256} << 20;

class CudnnConv {
 public:
  explicit CudnnConv(const cpu::ConvGeometry& g);
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;
  // Device pointers. y [n, out, Ho, Wo] = conv(x [n, C, H, W], w [out, C, k, k]) + b
  void forward(const float* x, const float* w, const float* b, float* y, std::int64_t n);
  // dw, db: overwritten, or added to when `accumulate`; dx (may be null: not needed) overwritten.
  void backward(const float* x, const float* dy, const float* w, float* dw, float* db, float* dx, std::int64_t n,
                bool accumulate);
  // The algorithms chosen for batch size n ("fwd 1 / data 1 / filter 1, workspace 3.2 MiB"), for logs and tests.
  std::string describe(std::int64_t n);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hpctrain::cuda
