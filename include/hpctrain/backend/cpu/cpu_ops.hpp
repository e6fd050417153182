// The CPU backend: the reference implementation of backend/ops.hpp (OpenBLAS
// for GEMM, plain loops elsewhere). Called through the dispatching functions.
#pragma once

#include "hpctrain/backend/ops.hpp"

namespace hpctrain::cpu {

#define HPCT_OP(ret, name, params, args) ret name params;
#include "hpctrain/backend/op_list.inc"  // NOLINT(bugprone-suspicious-include)
#undef HPCT_OP

}  // namespace hpctrain::cpu
