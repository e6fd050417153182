// GPT-2's byte-level BPE tokenizer (the `gpt2` tokenizer of token datasets), read from GPT-2's
// own vocabulary files: encoder.json (token -> id) and vocab.bpe (merges, ranked by line).
//
// encode() follows GPT-2 / tiktoken: the text is cut into pieces by GPT-2's pre-tokenization
// pattern (letters, numbers, other symbols, each with an optional leading space; contractions;
// white space) with full Unicode letter and number classes (PCRE2 with Unicode properties);
// each piece's bytes are mapped to GPT-2's byte characters and merged by rank. Special tokens
// in the text are ordinary text (`<|endoftext|>` is split like any other characters): callers
// put eot() between documents. Bytes that are not valid UTF-8 are never inside a match; each
// run of them is a piece of its own bytes, so decode(encode(x)) == x holds for any bytes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hpctrain {

class BpeTokenizer {
 public:
  // From the two files' contents; `origin` + `names` name them in messages (Hugging Face's
  // GPT2Tokenizer calls them vocab.json and merges.txt). bad_input (one line naming the file, and
  // the line or token) when they are not GPT-2-style vocabulary files.
  using FileNames = std::pair<std::string, std::string>;
  static BpeTokenizer from_gpt2_text(const std::string& encoder_json, const std::string& vocab_bpe,
                                     const std::string& origin, const FileNames& names = {"encoder.json", "vocab.bpe"});
  // From DIR/encoder.json and DIR/vocab.bpe.
  static BpeTokenizer from_gpt2_dir(const std::string& dir);
  // From a Hugging Face tokenizer.json of a BPE (merges as "a b" or ["a", "b"]; added_tokens
  // join the vocabulary):
  //  - byte-level: no normalizer, pre-tokenizer ByteLevel (GPT-2's pattern) or a Sequence of a
  //    Split regex and ByteLevel (Llama 3);
  //  - SentencePiece-style (model.byte_fallback: Llama 2, TinyLlama, Mistral 7B v0.1): Llama 2's
  //    normalizer (Prepend "▁", Replace " " with "▁") or a Metaspace pre-tokenizer; a space is "▁",
  //    a text starts with one (space_first), a character outside the vocabulary is its bytes'
  //    <0xXX> tokens, <s> separates documents (bpe_metaspace.cpp).
  // Anything else (Unigram models, other normalizers, ...) is one line naming it.
  static BpeTokenizer from_hf_json(const std::string& tokenizer_json, const std::string& origin);

  std::vector<std::int32_t> encode(std::string_view text);  // (caches merged pieces: not const)
  // encode, but a special token's text (tokenizer.json's added_tokens marked special; GPT-2's
  // <|endoftext|>) is that token, as Hugging Face's tokenizer(text) splits them out (a prompt in a
  // chat template); encode keeps them text, as tiktoken's encode_ordinary and import-text do.
  // Both split out the added tokens not marked special (Gemma's runs of newlines, Qwen2.5's
  // <tool_call>), as Hugging Face always does.
  std::vector<std::int32_t> encode_with_specials(std::string_view text);
  // The tokens' bytes, concatenated (SentencePiece-style: the space encode put first stays, as
  // generation streams it; Hugging Face's decode drops it).
  std::string decode(const std::vector<std::int32_t>& ids) const;
  // SentencePiece-style: encode puts a space ("▁") before a text (that does not start with one,
  // for a Metaspace pre-tokenizer), so decode(encode(x)) is " " + x.
  bool space_first() const;
  // The bytes of one token; bad_input for an id outside the vocabulary.
  const std::string& token_bytes(std::int32_t id) const;

  std::int64_t vocab_size() const;
  // The document separator: <|endoftext|> (GPT-2), else <|begin_of_text|> (Llama 3), else <s>
  // (SentencePiece-style), else -1.
  std::int32_t eot() const;
  // The special tokens tokenizer.json's post_processor puts before a text (its TemplateProcessing's
  // leading items: Llama 3.1's <|begin_of_text|>), as Hugging Face's tokenizer(text) adds them;
  // none for GPT-2's files or a post-processor without a template.
  const std::vector<std::int32_t>& prefix() const;

  // The pieces the pre-tokenization pattern cuts `text` into (for tests and tools; the whole text
  // for a SentencePiece-style BPE, which has no pattern).
  std::vector<std::string_view> pieces(std::string_view text) const;
  // `text` in consecutive parts of about `target` bytes or more that encode_part encodes one by
  // one (in parallel) to encode(text): byte-level, cut(); SentencePiece-style, cut before a space
  // that follows a visible ASCII character (a word's start, which merges never cross).
  std::vector<std::string_view> parts(std::string_view text, std::size_t target) const;
  // One of parts(text): `first` for its first part.
  std::vector<std::int32_t> encode_part(std::string_view part, bool first);
  // `text` in consecutive parts of about `target` bytes or more, cut only where the pattern's
  // pieces are the same whether the text is cut there or not (before an ASCII letter that
  // follows a single '\n' after a visible ASCII character), so encoding the parts one by one
  // (in parallel) gives encode(text) for a byte-level BPE. One part when there is no such place.
  static std::vector<std::string_view> cut(std::string_view text, std::size_t target);

  struct Vocabulary;  // the immutable tables, shared by copies (one per thread)

 private:
  explicit BpeTokenizer(std::shared_ptr<const Vocabulary> v);
  void merge_piece(std::string_view piece, std::vector<std::int32_t>& out);
  std::vector<std::int32_t> merged(std::vector<std::int32_t> word) const;  // the merges applied
  // Where a text encode_segment encodes starts: at the start of a text, after a special token,
  // or inside a text (a part of parts() but the first). A SentencePiece-style "▁" goes first at
  // a text's start, after a special token with Llama 2's normalizer, never inside.
  enum class Start { text, after_special, inside };
  void encode_segment(std::string_view text, Start start, std::vector<std::int32_t>& out);
  // encode_segment on the texts between the added tokens `added` finds, and those tokens' ids.
  void encode_split(std::string_view text, const class AddedTokens& added, Start start, std::vector<std::int32_t>& out);

  std::shared_ptr<const Vocabulary> vocab_;
  std::unordered_map<std::string, std::vector<std::int32_t>> cache_;  // piece -> ids
};

}  // namespace hpctrain
