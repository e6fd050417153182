// Element types shared by tensors, communicators and file I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace hpctrain {

enum class DType : std::uint8_t { f32, f64, f16, bf16, i32, i64, u8 };

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f64:
    case DType::i64: return 8;
    case DType::f32:
    case DType::i32: return 4;
    case DType::f16:
    case DType::bf16: return 2;
    case DType::u8: return 1;
  }
  return 0;
}

constexpr bool dtype_is_float(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16;
}

const char* dtype_name(DType t);

template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::f32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::f64;
}
template <>
constexpr DType dtype_of<std::int32_t>() {
  return DType::i32;
}
template <>
constexpr DType dtype_of<std::int64_t>() {
  return DType::i64;
}
template <>
constexpr DType dtype_of<std::uint8_t>() {
  return DType::u8;
}

}  // namespace hpctrain
