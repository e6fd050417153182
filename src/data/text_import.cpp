// Tokenizers and the text importer (data/text_import.hpp).
#include "hpctrain/data/text_import.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "hpctrain/core/error.hpp"
#include "hpctrain/data/make_dataset.hpp"
#include "hpctrain/data/token_dataset.hpp"

namespace hpctrain {

namespace {
// The code points of UTF-8 `text`; bad_input naming `source` and the byte offset of bad input.
std::vector<char32_t> utf8_decode(const std::string& text, const std::string& source) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const int extra = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : -1;
    if (extra < 0 || i + static_cast<std::size_t>(extra) >= text.size() + (extra == 0 ? 1 : 0))
      throw bad_input(source + ": not UTF-8 text at byte " + std::to_string(i) +
                      " (use --tokenizer byte for arbitrary bytes)");
    char32_t cp = extra == 0 ? c : c & (0x3F >> extra);
    for (int k = 1; k <= extra; ++k) {
      const auto n = static_cast<unsigned char>(text[i + static_cast<std::size_t>(k)]);
      if ((n >> 6) != 0x2)
        throw bad_input(source + ": not UTF-8 text at byte " + std::to_string(i) +
                        " (use --tokenizer byte for arbitrary bytes)");
      cp = (cp << 6) | (n & 0x3F);
    }
    out.push_back(cp);
    i += static_cast<std::size_t>(extra) + 1;
  }
  return out;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string printable(char32_t cp) {
  std::string s;
  if (cp == '\n') return "'\\n'";
  if (cp < 0x20) return "U+" + std::to_string(static_cast<unsigned>(cp));
  utf8_append(s, cp);
  return "'" + s + "'";
}
}  // namespace

Vocabulary Vocabulary::byte() {
  Vocabulary v;
  v.tokenizer_ = "byte";
  return v;
}

Vocabulary Vocabulary::of_text(const std::string& text, const std::string& source) {
  Vocabulary v;
  v.tokenizer_ = "char";
  v.points_ = utf8_decode(text, source);
  std::sort(v.points_.begin(), v.points_.end());
  v.points_.erase(std::unique(v.points_.begin(), v.points_.end()), v.points_.end());
  return v;
}

Vocabulary Vocabulary::stored(const std::string& tokenizer, const std::string& characters) {
  if (tokenizer == "byte") return byte();
  if (tokenizer != "char") throw bad_input("unknown tokenizer '" + tokenizer + "' (known: byte, char)");
  Vocabulary v = of_text(characters, "the stored vocabulary");
  if (static_cast<std::size_t>(v.size()) != utf8_decode(characters, "the stored vocabulary").size())
    throw bad_input("the stored vocabulary repeats a character");
  return v;
}

std::string Vocabulary::characters() const {
  std::string out;
  for (char32_t cp : points_) utf8_append(out, cp);
  return out;
}

std::int64_t Vocabulary::size() const { return tokenizer_ == "byte" ? 256 : static_cast<std::int64_t>(points_.size()); }

std::vector<std::uint32_t> Vocabulary::encode(const std::string& text, const std::string& what) const {
  std::vector<std::uint32_t> ids;
  if (tokenizer_ == "byte") {
    for (char c : text) ids.push_back(static_cast<unsigned char>(c));
    return ids;
  }
  for (char32_t cp : utf8_decode(text, what)) {
    const auto it = std::lower_bound(points_.begin(), points_.end(), cp);
    if (it == points_.end() || *it != cp)
      throw bad_input(what + ": character " + printable(cp) + " is not in the model's vocabulary of " +
                      std::to_string(points_.size()) + " characters");
    ids.push_back(static_cast<std::uint32_t>(it - points_.begin()));
  }
  return ids;
}

std::string Vocabulary::decode(const std::vector<std::uint32_t>& ids) const {
  std::string out;
  for (std::uint32_t id : ids) {
    if (tokenizer_ == "byte")
      out += static_cast<char>(id);
    else if (id < points_.size())
      utf8_append(out, points_[id]);
  }
  return out;
}

TextImportResult import_text(const TextImportOptions& o) {
  if (o.inputs.empty()) throw bad_input("import-text: give at least one --input FILE");
  if (!(o.val_fraction >= 0 && o.val_fraction < 1)) throw bad_input("--val-fraction must be in [0, 1)");
  if (o.shards < 1) throw bad_input("--shards must be >= 1");
  std::string text;
  for (const auto& path : o.inputs) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw bad_input(path + ": cannot be read");
    text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (text.empty()) throw bad_input(o.inputs.front() + ": empty text (nothing to tokenize)");
  Vocabulary vocab = o.tokenizer == "byte"   ? Vocabulary::byte()
                     : o.tokenizer == "char" ? Vocabulary::of_text(text, o.inputs.front())
                                             : throw bad_input("--tokenizer '" + o.tokenizer + "': use byte or char");
  const auto ids = vocab.encode(text, o.inputs.front());
  const auto n = static_cast<std::int64_t>(ids.size());
  // The val split is the last fraction of the tokens (nanoGPT splits characters the same way).
  const auto train = static_cast<std::int64_t>(static_cast<double>(n) * (1.0 - o.val_fraction));
  if (train < 1 || (o.val_fraction > 0 && train >= n))
    throw bad_input("import-text: " + std::to_string(n) + " tokens are too few for --val-fraction " +
                    std::to_string(o.val_fraction));
  prepare_split_dir(o.out + "/train", o.force);
  if (o.val_fraction > 0) prepare_split_dir(o.out + "/val", o.force);
  const std::int64_t per = (train + o.shards - 1) / o.shards;
  for (int s = 0; s < o.shards && s * per < train; ++s) {
    char name[64];
    std::snprintf(name, sizeof(name), "/train/tokens-%05d.h5", s);
    const auto first = ids.begin() + s * per, last = ids.begin() + std::min(train, (s + 1) * per);
    write_token_shard(o.out + name, {first, last}, vocab.tokenizer(), vocab.characters(), vocab.size());
  }
  if (o.val_fraction > 0)
    write_token_shard(o.out + "/val/tokens-00000.h5", {ids.begin() + train, ids.end()}, vocab.tokenizer(),
                      vocab.characters(), vocab.size());
  return {train, n - train, vocab.size()};
}

}  // namespace hpctrain
