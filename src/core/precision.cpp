// Names of the number formats (core/precision.hpp).
#include "hpctrain/core/precision.hpp"

namespace hpctrain {

const char* to_string(Precision v) {
  switch (v) {
    case Precision::fp32: return "fp32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
  }
  return "?";
}

}  // namespace hpctrain
