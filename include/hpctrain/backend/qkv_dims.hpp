// The sizes of a fused query/key/value tensor qkv [N, T, (H + 2K) D] (backend rope_rotate,
// qk_norm_*, flash_attention_*): checked once here for both backends.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "hpctrain/core/error.hpp"
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain::backend {

struct QkvDims {
  std::int64_t n, t, heads, kv, d, ld;  // ld = (H + 2K) D: one position's row
  float scale;                          // 1 / sqrt(D)
};

inline QkvDims qkv_dims(const Tensor& qkv, std::int64_t heads, std::int64_t kv_heads, const std::string& op) {
  const Shape& s = qkv.shape();
  HPCT_CHECK(s.size() == 3 && heads > 0 && kv_heads > 0 && heads % kv_heads == 0 && s[2] % (heads + 2 * kv_heads) == 0,
             op + ": qkv " + shape_string(s) + " for " + std::to_string(heads) + " query and " +
                 std::to_string(kv_heads) + " key/value heads");
  QkvDims a{s[0], s[1], heads, kv_heads, s[2] / (heads + 2 * kv_heads), s[2], 0.f};
  a.scale = 1.f / std::sqrt(static_cast<float>(a.d));
  return a;
}

// The document numbers of [model] attention_mask = document (int32 [N, T]), or null when undefined.
inline const std::int32_t* doc_numbers(const Tensor& docs, const QkvDims& a, const std::string& op) {
  if (!docs.defined()) return nullptr;
  HPCT_CHECK(docs.dtype() == DType::i32 && docs.numel() == a.n * a.t,
             op + ": docs " + shape_string(docs.shape()) + " for " + std::to_string(a.n * a.t) + " positions");
  return docs.data_as<std::int32_t>();
}

}  // namespace hpctrain::backend
