// Text to token datasets (hpctrain-data import-text, docs/datasets.md) and the tokenizers that
// turn text into token ids and back (also used by --generate, from the vocabulary a checkpoint
// stores). Two tokenizers:
//   byte: ids are the bytes of the UTF-8 text, vocabulary 256 (any text, nothing stored);
//   char: ids are the distinct code points of the whole input (train and val) sorted by code
//         point, as nanoGPT's shakespeare_char does; the characters are stored in id order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hpctrain {

class Vocabulary {
 public:
  static Vocabulary byte();
  static Vocabulary of_text(const std::string& text, const std::string& source);  // char; bad_input on bad UTF-8
  // As stored with a dataset or checkpoint; bad_input for an unknown tokenizer or bad text.
  static Vocabulary stored(const std::string& tokenizer, const std::string& characters);
  const std::string& tokenizer() const { return tokenizer_; }
  std::string characters() const;  // char: the code points in id order, UTF-8; byte: ""
  std::int64_t size() const;
  // bad_input naming `what` and the first character outside the vocabulary.
  std::vector<std::uint32_t> encode(const std::string& text, const std::string& what) const;
  std::string decode(const std::vector<std::uint32_t>& ids) const;

 private:
  std::string tokenizer_;
  std::vector<char32_t> points_;  // char: sorted
};

struct TextImportOptions {
  std::vector<std::string> inputs;  // read and concatenated in this order
  std::string tokenizer = "char";
  std::string out;
  double val_fraction = 0.1;  // the last fraction of the text is the val split (as nanoGPT)
  int shards = 1;             // train shards (val: one)
  bool force = false;
};
struct TextImportResult {
  std::int64_t train = 0, val = 0, vocab = 0;  // tokens, tokens, vocabulary size
};

// Writes <out>/train/tokens-NNNNN.h5 (and <out>/val/tokens-00000.h5 when val_fraction > 0).
TextImportResult import_text(const TextImportOptions& o);

}  // namespace hpctrain
