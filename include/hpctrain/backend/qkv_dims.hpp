// The sizes of a fused query/key/value tensor qkv [N, T, (H + 2K) D] (backend rope_rotate,
// qk_norm_*, flash_attention_*) and of a key/value cache's (flash_attention_decode): checked once
// here for both backends.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain::backend {

struct QkvDims {
  std::int64_t n, t, heads, kv, d, ld;  // ld: one position's row, (H + 2K) D (a cache's: 2K D)
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

// `a` with the fused attention's options checked and its score scale taken (opt.scale; 0: 1 / sqrt(D)).
inline QkvDims with_options(QkvDims a, const AttentionOptions& opt, const std::string& op) {
  HPCT_CHECK(opt.window >= 0 && opt.softcap >= 0.f && opt.scale >= 0.f,
             op + ": a window of " + std::to_string(opt.window) + " positions, a score cap of " +
                 std::to_string(opt.softcap) + ", a score scale of " + std::to_string(opt.scale));
  if (opt.scale > 0.f) a.scale = opt.scale;
  return a;
}

// Where attention's queries, keys and values lie (flash_attention_forward and _decode): the
// q_len queries of sequence n are positions t - q_len .. t - 1 of its t, query r's row at
// q + (n q_len + r) q_ld (its heads the row's first H D columns); position j's keys and values at
// kv + (n t + j) kv_ld, the key heads from column k_col, the value heads from v_col.
struct AttendRows {
  const float* q;
  std::int64_t q_ld, q_len;
  const float* kv;
  std::int64_t kv_ld, k_col, v_col;
};
// A fused qkv [N, T, (H + 2K) D]: every position's query, keys and values in one row.
inline AttendRows fused_rows(const Tensor& qkv, const QkvDims& a) {
  return {qkv.data(), a.ld, a.t, qkv.data(), a.ld, a.heads * a.d, (a.heads + a.kv) * a.d};
}

// flash_attention_decode's q [N, L, W] (the heads the first H D columns: W = H D, or a fused
// qkv row) and kv [N, T, 2K D] (K key heads, then K value heads): n, t = T, d and ld = 2K D.
inline QkvDims decode_dims(const Tensor& q, const Tensor& kv, std::int64_t heads, std::int64_t kv_heads,
                           const std::string& op) {
  const Shape &qs = q.shape(), &ks = kv.shape();
  const bool shaped = qs.size() == 3 && ks.size() == 3 && heads > 0 && kv_heads > 0 && heads % kv_heads == 0 &&
                      ks[2] % (2 * kv_heads) == 0 && qs[0] == ks[0] && qs[1] >= 1 && qs[1] <= ks[1];
  const std::int64_t d = shaped ? ks[2] / (2 * kv_heads) : 0;
  HPCT_CHECK(shaped && d > 0 && (qs[2] == heads * d || qs[2] == (heads + 2 * kv_heads) * d),
             op + ": queries " + shape_string(qs) + " and keys/values " + shape_string(ks) + " for " +
                 std::to_string(heads) + " query and " + std::to_string(kv_heads) + " key/value heads");
  return {ks[0], ks[1], heads, kv_heads, d, ks[2], 1.f / std::sqrt(static_cast<float>(d))};
}
inline AttendRows decode_rows(const Tensor& q, const Tensor& kv, const QkvDims& a) {
  return {q.data(), q.shape()[2], q.shape()[1], kv.data(), a.ld, 0, a.kv * a.d};
}

// The document numbers of [model] attention_mask = document (int32 [N, T]), or null when undefined.
inline const std::int32_t* doc_numbers(const Tensor& docs, const QkvDims& a, const std::string& op) {
  if (!docs.defined()) return nullptr;
  HPCT_CHECK(docs.dtype() == DType::i32 && docs.numel() == a.n * a.t,
             op + ": docs " + shape_string(docs.shape()) + " for " + std::to_string(a.n * a.t) + " positions");
  return docs.data_as<std::int32_t>();
}

}  // namespace hpctrain::backend
