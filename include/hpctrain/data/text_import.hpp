// Text to token datasets (hpctrain-data import-text, docs/datasets.md) and the tokenizers that
// turn text into token ids and back (also used by --generate, from the vocabulary a checkpoint
// stores). Three tokenizers:
//   byte: ids are the bytes of the UTF-8 text, vocabulary 256 (any text, nothing stored);
//   char: ids are the distinct code points of the whole input (train and val) sorted by code
//         point, as nanoGPT's shakespeare_char does; the characters are stored in id order;
//   gpt2: GPT-2's byte-level BPE (data/bpe_tokenizer.hpp), vocabulary 50,257; its files
//         (encoder.json, vocab.bpe) are stored as 1-D byte datasets under tokenizer/ in every
//         shard and checkpoint, and the vocabulary attribute names them by their FNV-1a hashes;
//   bpe:  the same from a Hugging Face tokenizer.json of a byte-level BPE (GPT-2's, Llama 3's),
//         stored the same way (tokenizer/tokenizer.json).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hpctrain/data/bpe_tokenizer.hpp"
#include "hpctrain/data/dataset.hpp"

namespace hpctrain {

class Vocabulary {
 public:
  static Vocabulary byte();
  static Vocabulary of_text(const std::string& text, const std::string& source);  // char; bad_input on bad UTF-8
  // GPT-2's BPE from its files (encoder.json and vocab.bpe, in any order); bad_input naming
  // `origin` and the file (as `shown` calls them) when one is missing or malformed.
  static Vocabulary gpt2(TokenizerFiles files, const std::string& origin,
                         const BpeTokenizer::FileNames& shown = {"encoder.json", "vocab.bpe"});
  // DIR/encoder.json and DIR/vocab.bpe; a tokenizer.json file (or a DIR holding only that).
  static Vocabulary gpt2_dir(const std::string& dir);
  // A Hugging Face folder's tokenizer: its tokenizer.json, else GPT-2's vocab.json and merges.txt
  // (GPT2Tokenizer's names for encoder.json and vocab.bpe); nullopt when it has neither.
  static std::optional<Vocabulary> hf_folder(const std::string& dir);
  // The files a tokenizer stores (gpt2: encoder.json, vocab.bpe; bpe: tokenizer.json; else none).
  static std::vector<std::string> file_names(const std::string& tokenizer);
  // As stored with a dataset or checkpoint (the tokenizer, vocabulary attributes and, for gpt2,
  // the files); bad_input for an unknown tokenizer, bad text or files that are not those named.
  static Vocabulary stored(const std::string& tokenizer, const std::string& vocabulary,
                           const TokenizerFiles& files = {});
  const std::string& tokenizer() const { return tokenizer_; }
  // The vocabulary attribute: char: the code points in id order, UTF-8; gpt2: its files' names
  // and hashes; byte: "".
  std::string characters() const;
  const TokenizerFiles& files() const { return files_; }  // gpt2's files; empty otherwise
  std::int64_t size() const;
  std::int32_t end_of_text() const;  // gpt2: <|endoftext|> (50256); -1 for byte and char
  // The bytes one token stands for (bits per byte counts them); bad_input outside the vocabulary.
  std::string token_text(std::uint32_t id) const;
  // bad_input naming `what` and the first character outside the vocabulary.
  std::vector<std::uint32_t> encode(const std::string& text, const std::string& what) const;
  // A prompt's ids as Hugging Face's tokenizer(text) gives them: the special tokens a
  // tokenizer.json's post-processor puts first (Llama 3.1's <|begin_of_text|>;
  // BpeTokenizer::prefix), then the text with its special tokens' texts as those tokens
  // (BpeTokenizer::encode_with_specials: a chat template's <|start_header_id|>).
  std::vector<std::uint32_t> encode_prompt(const std::string& text, const std::string& what) const;
  // encode_prompt without the post-processor's tokens (a chat template writes its own BOS:
  // Hugging Face's apply_chat_template encodes with add_special_tokens=False).
  std::vector<std::uint32_t> encode_specials(const std::string& text, const std::string& what) const;
  std::string decode(const std::vector<std::uint32_t>& ids) const;
  // gpt2 and bpe: `text` in parts that encode_part encodes one by one (in parallel) to
  // encode(text) (BpeTokenizer::parts); the whole text otherwise.
  std::vector<std::string_view> parts(std::string_view text, std::size_t target) const;
  std::vector<std::uint32_t> encode_part(std::string_view part, bool first) const;  // gpt2 and bpe
  // A copy for another thread (gpt2: its own piece cache, the tables shared).
  Vocabulary fork() const;

 private:
  std::string tokenizer_;
  std::vector<char32_t> points_;       // char: sorted
  TokenizerFiles files_;               // gpt2
  std::shared_ptr<BpeTokenizer> bpe_;  // gpt2 (its piece cache makes encode() not thread-safe)
};

// The vocabulary attribute of gpt2 files: "encoder.json fnv1a64:<hex> vocab.bpe fnv1a64:<hex>".
std::string files_fingerprint(const TokenizerFiles& files);

struct TextImportOptions {
  std::vector<std::string> inputs;  // read and concatenated in this order
  std::string tokenizer = "char";
  // gpt2: the folder of GPT-2's encoder.json and vocab.bpe; what a document is (each input
  // file, each line, or the `text_field` string of each JSON-lines record); each document is
  // preceded by <|endoftext|> (as llm.c's data scripts write them). Encoded on `threads`
  // threads (0: one per core).
  std::string vocab, documents = "file", text_field = "text";
  int threads = 0;
  // Called now and then while encoding (bytes done, bytes in all, seconds so far); may be empty.
  std::function<void(std::int64_t, std::int64_t, double)> progress;
  std::string out;
  double val_fraction = 0.1;  // the last fraction of the text is the val split (as nanoGPT)
  int shards = 1;             // train shards (val: one)
  bool force = false;
};
struct TextImportResult {
  std::int64_t train = 0, val = 0, vocab = 0;  // tokens, tokens, vocabulary size
  std::string tokenizer;                       // as stored: byte, char, gpt2, or bpe (a tokenizer.json)
  std::int64_t documents = 0, bytes = 0;       // of text read
  double encode_seconds = 0;                   // wall time of the encoding
};

// Writes <out>/train/tokens-NNNNN.h5 (and <out>/val/tokens-00000.h5 when val_fraction > 0).
TextImportResult import_text(const TextImportOptions& o);

}  // namespace hpctrain
