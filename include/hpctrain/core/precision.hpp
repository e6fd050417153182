// The number formats a run may compute in ([precision] dtype): a core type, so the backend can take
// it without the configuration.
#pragma once

#include "hpctrain/core/dtype.hpp"

namespace hpctrain {

enum class Precision { fp32, bf16, fp16 };
const char* to_string(Precision v);
// Whether the format holds v exactly (every float does in fp32).
bool exact_in(float v, Precision p);
// The 16-bit element type a bf16 or fp16 run stores its activations and parameter copy in.
inline DType storage_dtype(Precision p) { return p == Precision::bf16 ? DType::bf16 : DType::f16; }

}  // namespace hpctrain
