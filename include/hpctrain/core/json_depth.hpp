// How deep JSON from elsewhere (config.json, tokenizer.json, a safetensors header, a --chat-file, a
// JSONL record, generation_config.json) may nest before it is parsed. nlohmann's parser keeps its
// own stack, but writing a value back (dump(), in a message that quotes it) and the readers that
// walk values recurse once per level: 100,000 nested brackets would end the process's stack.
#pragma once

#include <string>
#include <string_view>

namespace hpctrain {

constexpr int kMaxJsonDepth = 100;  // (every file hpctrain reads stays within a dozen)

// bad_input "`where`: JSON nested more than 100 deep" when `text`'s brackets ([ and {, outside
// strings) nest deeper than kMaxJsonDepth. One pass over the bytes; says nothing of other errors
// (the parser's).
void check_json_depth(std::string_view text, const std::string& where);

}  // namespace hpctrain
