// The tables behind BpeTokenizer (data/bpe_tokenizer.hpp), shared by bpe_tokenizer.cpp (GPT-2's
// byte-level files and tokenizer.json) and bpe_metaspace.cpp (SentencePiece-style tokenizer.json:
// Llama 2's). Internal to src/data.
#pragma once

#include <pcre2.h>

#include <array>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "added_tokens.hpp"
#include "hpctrain/data/bpe_tokenizer.hpp"

namespace hpctrain {

struct BpeMerge {
  std::int32_t rank, id;
};

inline std::uint64_t bpe_pair_key(std::int32_t a, std::int32_t b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
}

// How a SentencePiece-style BPE (model.byte_fallback) turns text into its symbols: spaces become
// "▁" and a "▁" goes first (Llama 2's normalizer Prepend + Replace, or a Metaspace pre-tokenizer);
// the first symbols are the characters, a character outside the vocabulary its bytes' <0xXX>
// tokens.
struct Metaspace {
  // The "▁" first: before each text between special tokens (Llama 2's normalizer, Metaspace's
  // prepend_scheme always), before the text's start only (first), or never.
  enum class Prepend { every_segment, first_segment, never };
  bool on = false;
  Prepend prepend = Prepend::every_segment;
  bool only_if_missing = false;  // Metaspace: not before a text that starts with a space already
  bool split_each = false;       // Metaspace's split: a word starts at every "▁"
  // The characters some token holds just before a "▁" (Gemma's ">▁</"): a word is not cut there
  // (words()), nor a text (parts()); any other "▁" after another character starts a word, as no
  // merge can then cross it.
  std::vector<std::string> joined_before_space;
  bool joins(std::string_view before) const;
};

struct BpeTokenizer::Vocabulary {
  std::vector<std::string> bytes_of;                   // id -> bytes
  std::array<std::int32_t, 256> byte_id{};             // one byte -> its id (metaspace: its <0xXX> token)
  std::unordered_map<std::uint64_t, BpeMerge> merges;  // (left id, right id) -> rank, merged id
  std::int32_t eot = -1;
  std::vector<std::int32_t> prefix;                            // the post-processor's special tokens before a sequence
  std::vector<std::pair<std::string, std::int32_t>> specials;  // special tokens' texts and ids (<s>, <bos>: eot)
  // Added tokens found in raw text as Hugging Face's tokenizers find them: `ordinary` those not
  // marked special (always, as Hugging Face splits them: Gemma's "\n\n", Qwen2.5's <tool_call>),
  // `with_specials` every one (encode_with_specials).
  AddedTokens ordinary, with_specials;
  std::shared_ptr<pcre2_code> pattern;  // byte-level: the pre-tokenization pattern
  Metaspace metaspace;
  bool nfc = false;  // byte-level: the text is put in Unicode's NFC first (tokenizer.json's NFC normalizer: Qwen2's)
  std::unordered_map<std::string, std::int32_t> char_id;  // metaspace: one character (as the file spells it) -> id

  // From a JSON object token -> id (plus `added`, Hugging Face's added_tokens, when given):
  // returns token (as the files spell it) -> id.
  std::unordered_map<std::string, std::int32_t> read_tokens(const nlohmann::json& vocab, const nlohmann::json* added,
                                                            const std::string& origin);
  void read_merges(const std::string& bpe_text, const std::string& origin,
                   const std::unordered_map<std::string, std::int32_t>& id_of);
  void add_merge(const std::string& left, const std::string& right, std::int32_t rank, const std::string& where,
                 const std::unordered_map<std::string, std::int32_t>& id_of);
  void compile_pattern(const std::string& pattern, const std::string& origin);

  // bpe_metaspace.cpp. The normalizer and pre-tokenizer of a byte_fallback tokenizer.json;
  // bad_input naming the part for anything but Llama 2's and Metaspace's layouts.
  void read_metaspace(const nlohmann::json& j, const std::string& origin);
  // A token's bytes: "▁" a space, <0xXX> that byte (byte_fallback's tokens), else its text.
  static std::string metaspace_bytes(const std::string& token);
  // After read_tokens: the single characters, the 256 byte tokens (all needed) and <s> as the
  // document separator; bad_input for a token that would join words (see words()).
  void index_metaspace(const std::unordered_map<std::string, std::int32_t>& id_of, const std::string& origin);
  // The first symbols of a piece: its bytes (byte-level), or its characters (metaspace).
  std::vector<std::int32_t> symbols(std::string_view piece) const;
  // A text between special tokens normalized into `normal` ("▁" for spaces, one first where
  // `start` and the prepend scheme put it), as the words merges never cross: views into `normal`.
  std::vector<std::string_view> words(std::string_view text, BpeTokenizer::Start start, std::string& normal) const;
  // Whether the character before `at` (a "▁" or a space) is one a token holds before a "▁".
  bool joined_before(std::string_view text, std::size_t at) const;
};

}  // namespace hpctrain
