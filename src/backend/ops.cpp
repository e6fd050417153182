// Dispatch of the backend operations (backend/ops.hpp) on the tensors' device, made from the one
// operation list (backend/op_list.inc): each operation checks that its tensor arguments share one
// device and calls backend/cpu (the reference) or backend/cuda.
#include "hpctrain/backend/ops.hpp"

#include "hpctrain/backend/checks.hpp"
#include "hpctrain/backend/cpu/cpu_ops.hpp"
#include "hpctrain/backend/cuda/cuda_ops.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain {

namespace {

// The device of a call's tensor arguments (cpu when it has none); an internal error naming the
// operation and argument when two tensors are on different devices.
struct DeviceOf {
  const char* op;
  int seen = -1;  // -1: no tensor yet, else the Device
  int argument = 0;
  void look(const Tensor& t) {
    ++argument;
    if (!t.defined()) return;
    const int d = static_cast<int>(t.device());
    HPCT_CHECK(seen < 0 || seen == d, std::string("backend operation '") + op + "': tensor argument " +
                                          std::to_string(argument) + " is on another device than the ones before it");
    seen = d;
  }
  void look(Tensor* t) {  // (an optional output)
    if (t) {
      look(*t);
    } else {
      ++argument;
    }
  }
  template <typename T>
  void look(const T&) {
    ++argument;
  }
};

template <typename... Args>
Device device_of(const char* op, const Args&... args) {
  DeviceOf d{op};
  (d.look(args), ...);
  return d.seen == static_cast<int>(Device::cuda) ? Device::cuda : Device::cpu;
}

}  // namespace

#define HPCT_EXPAND(...) __VA_ARGS__
#define HPCT_OP(ret, name, params, args)                                            \
  ret name params {                                                                 \
    if (device_of(#name, HPCT_EXPAND args) == Device::cuda) return cuda::name args; \
    return cpu::name args;                                                          \
  }
#include "hpctrain/backend/op_list.inc"  // NOLINT(bugprone-suspicious-include)
#undef HPCT_OP

GemmDims gemm_dims(bool ta, bool tb, const Tensor& a, const Tensor& b, const Tensor& c) {
  using backend::checked_int;
  const int m = checked_int(ta ? a.cols() : a.rows(), "gemm: rows of the product");
  const int k = checked_int(ta ? a.rows() : a.cols(), "gemm: inner dimension");
  const int kb = checked_int(tb ? b.cols() : b.rows(), "gemm: inner dimension");
  const int n = checked_int(tb ? b.rows() : b.cols(), "gemm: columns of the product");
  checked_int(a.cols(), "gemm: leading dimension of A");
  checked_int(b.cols(), "gemm: leading dimension of B");
  HPCT_CHECK(k == kb && c.rows() == m && c.cols() == n, "gemm shapes " + shape_string(a.shape()) + (ta ? "^T" : "") +
                                                            " x " + shape_string(b.shape()) + (tb ? "^T" : "") +
                                                            " -> " + shape_string(c.shape()));
  return {m, n, k};
}

BatchedGemmDims batched_gemm_dims(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda, std::int64_t ldb,
                                  std::int64_t ldc, std::int64_t batch) {
  using backend::checked_int;
  return {checked_int(m, "batched gemm: rows of the product"),
          checked_int(n, "batched gemm: columns of the product"),
          checked_int(k, "batched gemm: inner dimension"),
          checked_int(lda, "batched gemm: leading dimension of A"),
          checked_int(ldb, "batched gemm: leading dimension of B"),
          checked_int(ldc, "batched gemm: leading dimension of C"),
          checked_int(batch, "batched gemm: batch count")};
}

const std::vector<std::string>& backend_operations() {
  static const std::vector<std::string> names{
#define HPCT_OP(ret, name, params, args) #name,
#include "hpctrain/backend/op_list.inc"  // NOLINT(bugprone-suspicious-include)
#undef HPCT_OP
  };
  return names;
}

}  // namespace hpctrain
