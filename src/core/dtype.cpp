// Names of element types (core/dtype.hpp).
#include "hpctrain/core/dtype.hpp"

namespace hpctrain {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u8: return "u8";
  }
  return "?";
}

}  // namespace hpctrain
