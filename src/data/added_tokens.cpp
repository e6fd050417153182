// Implementation of added_tokens.hpp.
#include "added_tokens.hpp"

namespace hpctrain {

void AddedTokens::add(const std::string& text, std::int32_t id) {
  if (text.empty()) return;
  std::size_t node = 0;
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    const auto it = nodes_[node].next.find(b);
    if (it != nodes_[node].next.end()) {
      node = static_cast<std::size_t>(it->second);
      continue;
    }
    nodes_[node].next.emplace(b, static_cast<std::int32_t>(nodes_.size()));
    node = nodes_.size();
    nodes_.emplace_back();
  }
  if (nodes_[node].id < 0) nodes_[node].id = id;  // (the first of two with one text)
  first_[static_cast<unsigned char>(text[0])] = true;
}

AddedTokens::Match AddedTokens::find(std::string_view text, std::size_t from) const {
  if (empty()) return {};
  for (std::size_t at = from; at < text.size(); ++at) {
    if (!first_[static_cast<unsigned char>(text[at])]) continue;
    Match best;
    std::size_t node = 0;
    for (std::size_t k = at; k < text.size(); ++k) {
      const auto it = nodes_[node].next.find(static_cast<unsigned char>(text[k]));
      if (it == nodes_[node].next.end()) break;
      node = static_cast<std::size_t>(it->second);
      if (nodes_[node].id >= 0) best = {at, k + 1 - at, nodes_[node].id};
    }
    if (best.id >= 0) return best;
  }
  return {};
}

}  // namespace hpctrain
