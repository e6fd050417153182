// Argument checks shared by the backends' operations (backend/cpu, backend/cuda).
#pragma once

#include <string>

#include "hpctrain/core/error.hpp"
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain::backend {

// An internal error naming the operation and both shapes when a and b differ in size.
inline void same_size(const Tensor& a, const Tensor& b, const char* op) {
  HPCT_CHECK(a.numel() == b.numel(),
             std::string(op) + ": sizes " + shape_string(a.shape()) + " and " + shape_string(b.shape()) + " differ");
}

}  // namespace hpctrain::backend
