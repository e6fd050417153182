// SentencePiece-style BPE from a Hugging Face tokenizer.json (data/bpe_vocabulary.hpp's
// Metaspace): Llama 2's, TinyLlama's, Mistral 7B v0.1's, Gemma's, as the Rust `tokenizers` library
// runs them. A space is "▁" (U+2581) and a text starts with one (not in Gemma's); the first symbols are characters,
// and a character outside the vocabulary is its UTF-8 bytes' <0xXX> tokens (byte_fallback); the
// merges then run by rank as for GPT-2's byte-level BPE.
#include <algorithm>
#include <cctype>
#include <cstdio>

#include "bpe_vocabulary.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain {

namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // "▁"

std::string type_of(const nlohmann::json& j) { return j.is_object() ? j.value("type", "") : std::string(); }

// Llama 2's normalizer: a Sequence of Prepend "▁" and Replace " " -> "▁".
bool llama2_normalizer(const nlohmann::json& n) {
  if (type_of(n) != "Sequence" || !n.contains("normalizers") || n["normalizers"].size() != 2) return false;
  const auto& prepend = n["normalizers"][0];
  const auto& replace = n["normalizers"][1];
  return type_of(prepend) == "Prepend" && prepend.value("prepend", "") == kSpaceMark && type_of(replace) == "Replace" &&
         replace.contains("pattern") && replace["pattern"].is_object() &&
         replace["pattern"].value("String", "") == " " && replace.value("content", "") == kSpaceMark;
}

// Gemma's normalizer: Replace " " -> "▁" alone (no "▁" first); with a pre-tokenizer that is null
// or a Split on " ", which the replaced text no longer holds (the pre-tokenizer runs on it).
bool gemma_layout(const nlohmann::json& n, const nlohmann::json& pre) {
  const auto space_pattern = [](const nlohmann::json& x) {
    return x.contains("pattern") && x["pattern"].is_object() && x["pattern"].value("String", "") == " ";
  };
  if (type_of(n) != "Replace" || !space_pattern(n) || n.value("content", "") != kSpaceMark) return false;
  return pre.is_null() || (type_of(pre) == "Split" && space_pattern(pre) && !pre.value("invert", false));
}

// The UTF-8 character of `s` that ends before `at` (> 0).
std::string_view char_before(std::string_view s, std::size_t at) {
  std::size_t begin = at - 1;
  while (begin > 0 && (static_cast<unsigned char>(s[begin]) >> 6) == 0x2) --begin;
  return s.substr(begin, at - begin);
}

// The length of the UTF-8 character starting at s[0] (1 for a byte that starts none).
std::size_t char_length(std::string_view s) {
  const auto c = static_cast<unsigned char>(s[0]);
  const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
  if (n > s.size()) return 1;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[k]) >> 6) != 0x2) return 1;
  return n;
}

// The byte of a byte_fallback token "<0xXX>", else -1.
int fallback_byte(const std::string& token) {
  unsigned b = 0;
  char end = 0;
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || !std::isxdigit(static_cast<unsigned char>(token[3])) ||
      !std::isxdigit(static_cast<unsigned char>(token[4])) || std::sscanf(token.c_str() + 3, "%2x%c", &b, &end) != 2 ||
      end != '>')
    return -1;
  return static_cast<int>(b);
}

}  // namespace

bool BpeTokenizer::Vocabulary::joined_before(std::string_view text, std::size_t at) const {
  return !metaspace.joined_before_space.empty() && at > 0 && metaspace.joins(char_before(text, at));
}

void BpeTokenizer::Vocabulary::read_metaspace(const nlohmann::json& j, const std::string& origin) {
  const nlohmann::json norm = j.value("normalizer", nlohmann::json()), pre = j.value("pre_tokenizer", nlohmann::json());
  metaspace.on = true;
  if (llama2_normalizer(norm) && pre.is_null()) return;  // every segment gets its "▁"
  if (gemma_layout(norm, pre)) {                         // no segment gets one
    metaspace.prepend = Metaspace::Prepend::never;
    return;
  }
  if (norm.is_null() && type_of(pre) == "Metaspace" && pre.value("replacement", "") == kSpaceMark) {
    // prepend_scheme always | first | never; files older than it say add_prefix_space (true: always).
    const std::string scheme = pre.value("prepend_scheme", pre.value("add_prefix_space", true) ? "always" : "never");
    if (scheme != "always" && scheme != "first" && scheme != "never")
      throw bad_input(origin + ": pre_tokenizer Metaspace: prepend_scheme '" + scheme +
                      "' is not always, first or never");
    metaspace.prepend = scheme == "always"  ? Metaspace::Prepend::every_segment
                        : scheme == "first" ? Metaspace::Prepend::first_segment
                                            : Metaspace::Prepend::never;
    metaspace.only_if_missing = true;
    metaspace.split_each = pre.value("split", true);
    return;
  }
  throw bad_input(
      origin + ": a byte_fallback BPE with normalizer " + (norm.is_null() ? "null" : type_of(norm)) +
      " and pre_tokenizer " + (pre.is_null() ? "null" : type_of(pre)) +
      " is not supported (Llama 2's Prepend and Replace normalizer, Gemma's Replace, or a Metaspace pre-tokenizer, " +
      "is)");
}

std::string BpeTokenizer::Vocabulary::metaspace_bytes(const std::string& token) {
  const int b = fallback_byte(token);
  if (b >= 0) return std::string(1, static_cast<char>(b));
  std::string out;
  for (std::size_t at = 0; at < token.size();) {
    const std::size_t mark = token.find(kSpaceMark, at);
    out.append(token, at, std::min(mark, token.size()) - at);
    if (mark == std::string::npos) break;
    out += ' ';
    at = mark + kSpaceMark.size();
  }
  return out;
}

void BpeTokenizer::Vocabulary::index_metaspace(const std::unordered_map<std::string, std::int32_t>& id_of,
                                               const std::string& origin) {
  byte_id.fill(-1);
  for (const auto& [token, id] : id_of) {
    const int b = fallback_byte(token);
    if (b >= 0)
      byte_id[static_cast<std::size_t>(b)] = id;
    else if (!token.empty() && char_length(token) == token.size())
      char_id.emplace(token, id);
    // Words are cut before a "▁" that follows another character (words()), but not after a
    // character some token holds there: merges can cross only such places.
    for (std::size_t at = token.find(kSpaceMark, 1); !metaspace.split_each && at != std::string::npos;
         at = token.find(kSpaceMark, at + 1)) {
      const std::string_view before = char_before(token, at);
      if (before != kSpaceMark && !metaspace.joins(before)) metaspace.joined_before_space.emplace_back(before);
    }
  }
  for (int b = 0; b < 256; ++b)
    if (byte_id[static_cast<std::size_t>(b)] < 0) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      throw bad_input(origin + ": model.byte_fallback needs the 256 tokens <0x00> to <0xFF>; " + name +
                      " is not in model.vocab");
    }
  if (eot < 0)  // the document separator: SentencePiece's begin of sequence (Gemma's <bos>)
    for (const auto& [text, id] : specials)
      if (text == "<s>" || (text == "<bos>" && eot < 0)) eot = id;
}

bool Metaspace::joins(std::string_view before) const {
  return std::find(joined_before_space.begin(), joined_before_space.end(), before) != joined_before_space.end();
}

std::vector<std::int32_t> BpeTokenizer::Vocabulary::symbols(std::string_view piece) const {
  std::vector<std::int32_t> out;
  if (!metaspace.on) {
    for (unsigned char b : piece) out.push_back(byte_id[b]);
    return out;
  }
  std::string one;
  for (std::size_t at = 0; at < piece.size();) {
    const std::size_t n = char_length(piece.substr(at));
    one.assign(piece.data() + at, n);
    const auto hit = char_id.find(one);
    if (hit != char_id.end())
      out.push_back(hit->second);
    else
      for (unsigned char b : one) out.push_back(byte_id[b]);
    at += n;
  }
  return out;
}

std::vector<std::string_view> BpeTokenizer::Vocabulary::words(std::string_view text, BpeTokenizer::Start start,
                                                              std::string& normal) const {
  normal.clear();
  if (text.empty()) return {};
  const bool prepend =
      start != Start::inside && (metaspace.prepend == Metaspace::Prepend::every_segment ||
                                 (metaspace.prepend == Metaspace::Prepend::first_segment && start == Start::text));
  if (prepend && !(metaspace.only_if_missing && (text[0] == ' ' || text.substr(0, 3) == kSpaceMark)))
    normal = kSpaceMark;
  for (char c : text)
    if (c == ' ')
      normal += kSpaceMark;
    else
      normal += c;
  std::vector<std::string_view> out;
  const std::string_view all = normal;
  std::size_t begin = 0;
  for (std::size_t at = all.find(kSpaceMark, 1); at != std::string_view::npos; at = all.find(kSpaceMark, at + 1)) {
    const bool after_mark = at >= 3 && all.substr(at - 3, 3) == kSpaceMark;
    if (at == begin || (!metaspace.split_each && (after_mark || joined_before(all, at)))) continue;
    out.push_back(all.substr(begin, at - begin));
    begin = at;
  }
  out.push_back(all.substr(begin));
  return out;
}

}  // namespace hpctrain
