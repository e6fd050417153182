// Hugging Face's added tokens as its AddedVocabulary finds them in raw text, before the
// normalizer: the leftmost match, and at one place the longest (a trie of their bytes, so a text
// is read once whatever their number: Gemma's tokenizer.json adds 6,415). Internal to src/data.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace hpctrain {

class AddedTokens {
 public:
  struct Match {
    std::size_t at = std::string_view::npos, size = 0;
    std::int32_t id = -1;
  };
  void add(const std::string& text, std::int32_t id);
  bool empty() const { return nodes_.size() == 1; }
  // The first token at or after `from` (at = npos: none).
  Match find(std::string_view text, std::size_t from) const;

 private:
  struct Node {
    std::int32_t id = -1;  // a token ends here
    std::map<unsigned char, std::int32_t> next;
  };
  std::vector<Node> nodes_{Node{}};
  std::array<bool, 256> first_{};  // bytes some token starts with
};

}  // namespace hpctrain
