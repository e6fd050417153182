// Argument checks shared by the backends' operations (backend/cpu, backend/cuda).
#pragma once

#include <climits>
#include <cstdint>
#include <string>

#include "hpctrain/core/error.hpp"
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain::backend {

// An internal error naming the operation and both shapes when a and b differ in size.
inline void same_size(const Tensor& a, const Tensor& b, const char* op) {
  HPCT_CHECK(a.numel() == b.numel(),
             std::string(op) + ": sizes " + shape_string(a.shape()) + " and " + shape_string(b.shape()) + " differ");
}

// pack_16bit / unpack_16bit: an f32 tensor and a bf16 or f16 one of as many elements.
inline void check_packed(const Tensor& f32, const Tensor& packed, const char* op) {
  HPCT_CHECK(f32.numel() == packed.numel() && (packed.dtype() == DType::bf16 || packed.dtype() == DType::f16),
             std::string(op) + ": " + dtype_name(packed.dtype()) + " " + shape_string(packed.shape()) + " and f32 " +
                 shape_string(f32.shape()));
}

// exact_accumulate / exact_round: x f32, acc int64 [numel(x), 2], flag int32 [1].
inline void check_exact(const Tensor& x, const Tensor& acc, const Tensor& flag, const char* op) {
  HPCT_CHECK(x.dtype() == DType::f32 && acc.dtype() == DType::i64 && acc.numel() == 2 * x.numel() &&
                 flag.dtype() == DType::i32 && flag.numel() == 1,
             std::string(op) + ": " + dtype_name(x.dtype()) + " " + shape_string(x.shape()) + ", accumulator " +
                 dtype_name(acc.dtype()) + " " + shape_string(acc.shape()) + ", flag " + dtype_name(flag.dtype()) +
                 " " + shape_string(flag.shape()));
}

// embedding_forward / embedding_backward: token ids are int32 tensors.
inline void check_ids(const Tensor& ids, const char* op) {
  HPCT_CHECK(ids.dtype() == DType::i32, std::string(op) + ": token ids of dtype " + dtype_name(ids.dtype()) +
                                            " (they are int32) " + shape_string(ids.shape()));
}

// `v` as an int for a library that takes 32-bit sizes (BLAS, cuBLAS, cuDNN) or a 32-bit index
// (max pooling's argmax): a too-large model gets one line naming what and the limit instead of a
// silently wrapped size.
inline int checked_int(std::int64_t v, const std::string& what) {
  if (v < 0 || v > INT_MAX)
    throw bad_input(what + " is " + std::to_string(v) + ", beyond the 32-bit limit (" + std::to_string(INT_MAX) +
                    ") of the libraries hpctrain calls: use smaller layers or batches");
  return static_cast<int>(v);
}

}  // namespace hpctrain::backend
