// Unicode's Normalization Form C (UAX #15) of UTF-8 text: the NFC normalizer of Hugging Face's
// tokenizer.json (Qwen2's, Qwen2.5's, Qwen3's). Canonical decomposition, canonical ordering of the
// combining marks, then canonical composition, from Unicode 14.0's data (src/data/nfc_tables.inc,
// written by tools/gen_nfc_tables.py; Hangul syllables by the algorithm). Bytes that are not
// UTF-8 pass through as they are, and nothing composes across them.
#pragma once

#include <string>
#include <string_view>

namespace hpctrain {

// False when NFC leaves `utf8` as it is for certain: every character below U+0300 (no byte of
// 0xCC or more), which is all ASCII and Latin-1 text and most of Latin Extended. A byte scan.
bool nfc_may_change(std::string_view utf8);
std::string nfc(std::string_view utf8);

}  // namespace hpctrain
