// The CUDA backend's operations (the same list as backend/cpu). Until the GPU
// issue fills them (cuBLAS, cuDNN, own kernels), each throws a clear
// "not implemented on cuda" error. Called through the dispatching functions.
#pragma once

#include "hpctrain/backend/ops.hpp"

namespace hpctrain::cuda {

#define HPCT_OP(ret, name, params, args) ret name params;
#include "hpctrain/backend/op_list.inc"  // NOLINT(bugprone-suspicious-include)
#undef HPCT_OP

}  // namespace hpctrain::cuda
