// The number formats a run may compute in ([run] precision): a core type, so the backend can take
// it without the configuration.
#pragma once

namespace hpctrain {

enum class Precision { fp32, bf16, fp16 };
const char* to_string(Precision v);
// Whether the format holds v exactly (every float does in fp32).
bool exact_in(float v, Precision p);

}  // namespace hpctrain
