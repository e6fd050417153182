// The CUDA backend's operations in builds without CUDA, made from the operation list
// (backend/op_list.inc): each throws a clear error naming the operation. With CUDA, cuda_ops.cu
// and cuda_layer_ops.cu implement them.
#include "hpctrain/backend/cuda/cuda_ops.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain::cuda {

namespace {
template <typename... Args>
[[noreturn]] void not_implemented(const char* op, const Args&...) {
  throw Error(
      ExitCode::internal, Scope::this_rank,
      std::string("backend operation '") + op + "' needs the CUDA backend, but hpctrain was built without CUDA");
}
}  // namespace

#define HPCT_EXPAND(...) __VA_ARGS__
#define HPCT_OP(ret, name, params, args) \
  ret name params { not_implemented(#name, HPCT_EXPAND args); }
#include "hpctrain/backend/op_list.inc"  // NOLINT(bugprone-suspicious-include)
#undef HPCT_OP

}  // namespace hpctrain::cuda
