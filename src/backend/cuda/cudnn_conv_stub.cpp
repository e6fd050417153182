// cudnn_conv.hpp for builds without CUDA: nothing to construct.
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

}  // namespace hpctrain::cuda
