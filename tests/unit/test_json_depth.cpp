// JSON from elsewhere is refused past 100 levels before it is parsed (core/json_depth.hpp): the
// check on its own (brackets inside strings, escaped quotes), then the readers that use it, each
// with a file 100,000 deep, which wrote back or walked recursively into the end of the stack before.
#include <gtest/gtest.h>

#include "hpctrain/core/error.hpp"
#include "hpctrain/core/json_depth.hpp"
#include "hpctrain/data/bpe_tokenizer.hpp"
#include "hpctrain/io/safetensors.hpp"
#include "unit_test_util.hpp"

using namespace hpctrain;

namespace {
std::string nested(int n, const std::string& inner = "1") {
  std::string s;
  for (int k = 0; k < n; ++k) s += k % 2 ? "{\"k\": " : "[";
  s += inner;
  for (int k = n - 1; k >= 0; --k) s += k % 2 ? "}" : "]";
  return s;
}
}  // namespace

TEST(JsonDepth, BracketsOutsideStringsUpTo100) {
  EXPECT_EQ(unittest::one_line_refusal([] { check_json_depth(nested(100), "f.json"); }), "");
  EXPECT_EQ(unittest::one_line_refusal([] { check_json_depth(nested(101), "f.json"); }),
            "f.json: JSON nested more than 100 deep");
  EXPECT_EQ(unittest::one_line_refusal([] { check_json_depth(nested(100000), "f.json"); }),
            "f.json: JSON nested more than 100 deep");
  // Brackets in strings are text, an escaped quote does not end one, an escaped backslash does not
  // escape the quote after it.
  const std::string text = "\"" + std::string(200, '[') + "\\\"" + std::string(200, '{') + "\"";
  EXPECT_EQ(unittest::one_line_refusal([&] { check_json_depth(nested(100, text), "f.json"); }), "");
  EXPECT_EQ(unittest::one_line_refusal([] { check_json_depth(nested(100, "\"a\\\\\", [1]"), "f.json"); }),
            "f.json: JSON nested more than 100 deep");
  // Siblings are not deeper: a thousand lists side by side, each 100 deep.
  std::string wide = "[";
  for (int k = 0; k < 1000; ++k) wide += (k ? ", " : "") + nested(99);
  EXPECT_EQ(unittest::one_line_refusal([&] { check_json_depth(wide + "]", "f.json"); }), "");
}

TEST(JsonDepth, ReadersOfFilesFromElsewhereRefuseDeepJson) {
  const std::string deep = nested(100000);
  // A safetensors header: 8 bytes of its length, then the JSON.
  const std::string header = "{\"t\": " + deep + "}";
  std::string file(8, '\0');
  for (int b = 0; b < 8; ++b) file[static_cast<std::size_t>(b)] = static_cast<char>((header.size() >> (8 * b)) & 0xFF);
  EXPECT_EQ(unittest::one_line_refusal([&] { (void)parse_safetensors(file + header, "m.safetensors"); }),
            "m.safetensors: the safetensors header: JSON nested more than 100 deep");
  EXPECT_EQ(unittest::one_line_refusal(
                [&] { (void)BpeTokenizer::from_hf_json("{\"model\": " + deep + "}", "tokenizer.json"); }),
            "tokenizer.json: JSON nested more than 100 deep");
}
