// cudnn_conv.hpp and cudnn_batchnorm.hpp for builds without CUDA: nothing to construct.
#include "hpctrain/backend/cuda/cudnn_batchnorm.hpp"
#include "hpctrain/backend/cuda/cudnn_conv.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain::cuda {

bool cudnn_compiled() { return false; }
struct CudnnConv::Impl {};
CudnnConv::CudnnConv(const cpu::ConvGeometry&) {
  throw bad_input("a convolution on a GPU needs the CUDA backend, but hpctrain was built without CUDA");
}
CudnnConv::~CudnnConv() = default;
void CudnnConv::forward(const float*, const float*, const float*, float*, std::int64_t) {}
void CudnnConv::backward(const float*, const float*, const float*, float*, float*, float*, std::int64_t, bool) {}
std::string CudnnConv::describe(std::int64_t) { return ""; }

struct CudnnBatchNorm::Impl {};
CudnnBatchNorm::CudnnBatchNorm(std::int64_t, std::int64_t, double) {
  throw bad_input("batch norm on a GPU needs the CUDA backend, but hpctrain was built without CUDA");
}
CudnnBatchNorm::~CudnnBatchNorm() = default;
void CudnnBatchNorm::forward_training(const float*, float*, std::int64_t, const float*, const float*, double, float*,
                                      float*, float*, float*) {}
void CudnnBatchNorm::forward_inference(const float*, float*, std::int64_t, const float*, const float*, const float*,
                                       const float*) {}
void CudnnBatchNorm::backward(const float*, const float*, float*, std::int64_t, const float*, float*, float*, bool,
                              const float*, const float*) {}

}  // namespace hpctrain::cuda
