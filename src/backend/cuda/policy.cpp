// The CUDA backend's pure decisions (device_api.hpp), compiled in every build so the CPU tests
// check them: the cuDNN convolution math per precision and the refusal during graph capture.
#include "hpctrain/backend/cuda/device_api.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain::cuda {

ConvMath conv_math(GemmMath m) {
  switch (m) {
    case GemmMath::fp32: return ConvMath::fma;
    case GemmMath::tf32:
    case GemmMath::bf16: return ConvMath::default_math;
    case GemmMath::fp16: return ConvMath::allow_fp16_conversion;
  }
  return ConvMath::fma;
}

const char* to_string(ConvMath m) {
  switch (m) {
    case ConvMath::fma: return "CUDNN_FMA_MATH";
    case ConvMath::default_math: return "CUDNN_DEFAULT_MATH";
    case ConvMath::allow_fp16_conversion: return "CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION";
  }
  return "?";
}

void refuse_during_capture(bool capturing, const char* what) {
  if (capturing)
    throw Error(ExitCode::internal, Scope::this_rank,
                std::string(what) +
                    " while the compute stream is recorded as a CUDA graph ([kernels] cuda_graphs): the warm-up step "
                    "should have made this memory; set [kernels] cuda_graphs = false to run without recording");
}

}  // namespace hpctrain::cuda
