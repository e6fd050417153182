// The nesting of JSON text (core/json_depth.hpp).
#include "hpctrain/core/json_depth.hpp"

#include "hpctrain/core/error.hpp"

namespace hpctrain {

void check_json_depth(std::string_view text, const std::string& where) {
  int depth = 0;
  bool quoted = false, escaped = false;
  for (const char c : text) {
    if (quoted) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        throw bad_input(where + ": JSON nested more than " + std::to_string(kMaxJsonDepth) + " deep");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

}  // namespace hpctrain
