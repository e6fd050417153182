// Tokenizers and the text importer (data/text_import.hpp).
#include "hpctrain/data/text_import.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "hpctrain/config/config.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/json_depth.hpp"
#include "hpctrain/data/bpe_tokenizer.hpp"
#include "hpctrain/data/make_dataset.hpp"
#include "hpctrain/data/token_dataset.hpp"
#include "hpctrain/data/utf8.hpp"

namespace hpctrain {

namespace {
// The code points of UTF-8 `text`; bad_input naming `source` and the byte offset of bad input.
std::vector<char32_t> utf8_decode(const std::string& text, const std::string& source) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto [cp, len] = utf8_next(text, i);
    if (len == 0)
      throw bad_input(source + ": not UTF-8 text at byte " + std::to_string(i) +
                      " (use --tokenizer byte for arbitrary bytes)");
    out.push_back(cp);
    i += len;
  }
  return out;
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

namespace {
std::uint64_t fnv1a64(const std::string& bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

const std::string& file_named(const TokenizerFiles& files, const std::string& name, const std::string& origin) {
  for (const auto& [n, bytes] : files)
    if (n == name) return bytes;
  throw bad_input(origin + ": GPT-2's tokenizer needs the file " + name);
}
}  // namespace

std::string files_fingerprint(const TokenizerFiles& files) {
  std::string out;
  for (const auto& [name, bytes] : files) {
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(fnv1a64(bytes)));
    out += (out.empty() ? "" : " ") + name + " fnv1a64:" + hex;
  }
  return out;
}

Vocabulary Vocabulary::gpt2(TokenizerFiles files, const std::string& origin, const BpeTokenizer::FileNames& shown) {
  std::sort(files.begin(), files.end());  // encoder.json, vocab.bpe: one order for the fingerprint
  Vocabulary v;
  const bool hf = files.size() == 1 && files[0].first == "tokenizer.json";
  v.tokenizer_ = hf ? "bpe" : "gpt2";
  v.bpe_ = std::make_shared<BpeTokenizer>(hf ? BpeTokenizer::from_hf_json(files[0].second, origin + "tokenizer.json")
                                             : BpeTokenizer::from_gpt2_text(file_named(files, "encoder.json", origin),
                                                                            file_named(files, "vocab.bpe", origin),
                                                                            origin, shown));
  v.files_ = std::move(files);
  return v;
}

Vocabulary Vocabulary::gpt2_dir(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(dir, ec))  // a Hugging Face tokenizer.json
    return gpt2({{"tokenizer.json", read_text_file(dir, "tokenizer file")}}, dir + ": ");
  const std::string d = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  if (std::filesystem::is_regular_file(d + "tokenizer.json", ec) && !std::filesystem::exists(d + "vocab.bpe", ec))
    return gpt2({{"tokenizer.json", read_text_file(d + "tokenizer.json", "tokenizer file")}}, d);
  return gpt2({{"encoder.json", read_text_file(d + "encoder.json", "GPT-2 vocabulary file")},
               {"vocab.bpe", read_text_file(d + "vocab.bpe", "GPT-2 merges file")}},
              d);
}

std::optional<Vocabulary> Vocabulary::hf_folder(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(dir + "/tokenizer.json", ec)) return gpt2_dir(dir + "/tokenizer.json");
  if (!std::filesystem::is_regular_file(dir + "/vocab.json", ec) ||
      !std::filesystem::is_regular_file(dir + "/merges.txt", ec))
    return std::nullopt;
  return gpt2({{"encoder.json", read_text_file(dir + "/vocab.json", "GPT-2 vocabulary file")},
               {"vocab.bpe", read_text_file(dir + "/merges.txt", "GPT-2 merges file")}},
              dir + "/", {"vocab.json", "merges.txt"});
}

std::vector<std::string> Vocabulary::file_names(const std::string& tokenizer) {
  if (tokenizer == "gpt2") return {"encoder.json", "vocab.bpe"};
  if (tokenizer == "bpe") return {"tokenizer.json"};
  return {};
}

Vocabulary Vocabulary::stored(const std::string& tokenizer, const std::string& characters,
                              const TokenizerFiles& files) {
  if (tokenizer == "byte") return byte();
  if (tokenizer == "gpt2" || tokenizer == "bpe") {
    Vocabulary v = gpt2(files, "the stored tokenizer/");
    if (v.characters() != characters)
      throw bad_input("the stored tokenizer files are not those its vocabulary attribute names ('" + characters +
                      "', the files hash to '" + v.characters() + "')");
    return v;
  }
  if (tokenizer != "char") throw bad_input("unknown tokenizer '" + tokenizer + "' (known: byte, char, gpt2, bpe)");
  Vocabulary v = of_text(characters, "the stored vocabulary");
  if (static_cast<std::size_t>(v.size()) != utf8_decode(characters, "the stored vocabulary").size())
    throw bad_input("the stored vocabulary repeats a character");
  return v;
}

std::string Vocabulary::characters() const {
  if (bpe_) return files_fingerprint(files_);
  std::string out;
  for (char32_t cp : points_) utf8_append(out, cp);
  return out;
}

std::int64_t Vocabulary::size() const {
  return bpe_ ? bpe_->vocab_size() : tokenizer_ == "byte" ? 256 : static_cast<std::int64_t>(points_.size());
}

std::int32_t Vocabulary::end_of_text() const { return bpe_ ? bpe_->eot() : -1; }

std::string Vocabulary::token_text(std::uint32_t id) const {
  if (static_cast<std::int64_t>(id) >= size())
    throw bad_input("token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(size()));
  return decode({id});
}

std::vector<std::uint32_t> Vocabulary::encode_prompt(const std::string& text, const std::string& what) const {
  std::vector<std::uint32_t> ids;
  if (bpe_)
    for (const std::int32_t id : bpe_->prefix()) ids.push_back(static_cast<std::uint32_t>(id));
  const std::vector<std::uint32_t> text_ids = encode_specials(text, what);
  ids.insert(ids.end(), text_ids.begin(), text_ids.end());
  return ids;
}

std::vector<std::uint32_t> Vocabulary::encode_specials(const std::string& text, const std::string& what) const {
  if (!bpe_) return encode(text, what);
  std::vector<std::uint32_t> ids;
  for (const std::int32_t id : bpe_->encode_with_specials(text)) ids.push_back(static_cast<std::uint32_t>(id));
  return ids;
}

std::vector<std::uint32_t> Vocabulary::encode(const std::string& text, const std::string& what) const {
  std::vector<std::uint32_t> ids;
  if (bpe_) {
    for (std::int32_t id : bpe_->encode(text)) ids.push_back(static_cast<std::uint32_t>(id));
    return ids;
  }
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
    if (static_cast<std::int64_t>(id) >= size())  // (never dropped or wrapped: a model's extra rows are no tokens)
      throw bad_input("token id " + std::to_string(id) + " is outside the " + tokenizer_ + " vocabulary of " +
                      std::to_string(size()) + " tokens");
    if (bpe_)
      out += bpe_->token_bytes(static_cast<std::int32_t>(id));
    else if (tokenizer_ == "byte")
      out += static_cast<char>(id);
    else
      utf8_append(out, points_[id]);
  }
  return out;
}

std::vector<std::string_view> Vocabulary::parts(std::string_view text, std::size_t target) const {
  if (bpe_) return bpe_->parts(text, target);
  return {text};
}

std::vector<std::uint32_t> Vocabulary::encode_part(std::string_view part, bool first) const {
  std::vector<std::uint32_t> ids;
  for (std::int32_t id : bpe_ ? bpe_->encode_part(part, first) : std::vector<std::int32_t>{})
    ids.push_back(static_cast<std::uint32_t>(id));
  return ids;
}

Vocabulary Vocabulary::fork() const {
  Vocabulary v = *this;
  if (bpe_) v.bpe_ = std::make_shared<BpeTokenizer>(*bpe_);
  return v;
}

namespace {
std::string read_input(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad_input(path + ": cannot be read");
  if (std::filesystem::is_directory(path)) throw bad_input(path + ": a folder, not a text file");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The documents of one input file, as views into `text` or into strings kept in `owned`: the whole
// file, each non-empty line, or the `text_field` string of each JSON-lines record.
void add_documents(const std::string& path, const std::string& text, const TextImportOptions& o,
                   std::deque<std::string>& owned, std::vector<std::string_view>& docs) {
  if (o.documents == "file") {
    if (!text.empty()) docs.emplace_back(text);
    return;
  }
  std::size_t line_no = 0;
  for (std::size_t at = 0; at < text.size();) {
    const auto end = std::min(text.find('\n', at), text.size());
    const std::string_view line = std::string_view(text).substr(at, end - at);
    at = end + 1;
    ++line_no;
    if (line.empty() || (o.documents == "jsonl" && line.find_first_not_of(" \t\r") == std::string_view::npos)) continue;
    if (o.documents == "lines") {
      docs.push_back(line);
      continue;
    }
    nlohmann::json record;
    check_json_depth(line, path + ":" + std::to_string(line_no));
    try {
      record = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw bad_input(path + ":" + std::to_string(line_no) + ": not a JSON record: " + e.what());
    }
    if (!record.is_object() || !record.contains(o.text_field) || !record[o.text_field].is_string())
      throw bad_input(path + ":" + std::to_string(line_no) + ": the record has no string field '" + o.text_field +
                      "' (--text-field)");
    docs.emplace_back(owned.emplace_back(record[o.text_field].get<std::string>()));
  }
}

// gpt2: each document preceded by <|endoftext|>, its parts (Vocabulary::parts) encoded on
// `threads` threads, each with its own copy of the tokenizer.
std::vector<std::uint32_t> encode_documents(const Vocabulary& vocab, const std::vector<std::string_view>& docs,
                                            const TextImportOptions& o, double& seconds) {
  struct Part {
    std::size_t doc;
    std::string_view text;
    std::vector<std::uint32_t> ids;
  };
  std::vector<Part> parts;
  std::int64_t total = 0;
  for (std::size_t d = 0; d < docs.size(); ++d)
    for (std::string_view p : vocab.parts(docs[d], std::size_t{1} << 20)) {
      parts.push_back({d, p, {}});
      total += static_cast<std::int64_t>(p.size());
    }
  const auto t0 = std::chrono::steady_clock::now();
  const auto since = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  std::atomic<std::size_t> next{0};
  std::atomic<std::int64_t> done{0};
  std::mutex report;
  double reported = 0;
  auto work = [&](Vocabulary mine) {
    for (std::size_t i; (i = next++) < parts.size();) {
      parts[i].ids = mine.encode_part(parts[i].text, i == 0 || parts[i].doc != parts[i - 1].doc);
      done += static_cast<std::int64_t>(parts[i].text.size());
      std::lock_guard<std::mutex> lock(report);
      if (o.progress && since() > reported + 5) o.progress(done, total, reported = since());
    }
  };
  const unsigned n =
      o.threads > 0 ? static_cast<unsigned>(o.threads) : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::min<std::size_t>(n, parts.size()); ++t) pool.emplace_back(work, vocab.fork());
  work(vocab.fork());
  for (auto& t : pool) t.join();
  seconds = since();
  std::vector<std::uint32_t> ids;
  std::size_t count = docs.size();
  for (const Part& p : parts) count += p.ids.size();
  ids.reserve(count);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i == 0 || parts[i].doc != parts[i - 1].doc) ids.push_back(static_cast<std::uint32_t>(vocab.end_of_text()));
    ids.insert(ids.end(), parts[i].ids.begin(), parts[i].ids.end());
    std::vector<std::uint32_t>().swap(parts[i].ids);  // freed as it goes: the ids are not held twice
  }
  return ids;
}

// byte and char: the inputs concatenated, one stream; gpt2: documents (see TextImportOptions).
std::vector<std::uint32_t> tokenize_inputs(const TextImportOptions& o, Vocabulary& vocab, TextImportResult& r) {
  if (o.tokenizer != "gpt2") {
    if (o.documents != "file") throw bad_input("--documents " + o.documents + ": documents are for --tokenizer gpt2");
    std::string text;
    for (const auto& path : o.inputs) text += read_input(path);
    if (text.empty()) throw bad_input(o.inputs.front() + ": empty text (nothing to tokenize)");
    vocab = o.tokenizer == "byte"   ? Vocabulary::byte()
            : o.tokenizer == "char" ? Vocabulary::of_text(text, o.inputs.front())
                                    : throw bad_input("--tokenizer '" + o.tokenizer + "': use byte, char or gpt2");
    r.documents = 1;
    r.bytes = static_cast<std::int64_t>(text.size());
    const auto t0 = std::chrono::steady_clock::now();
    auto ids = vocab.encode(text, o.inputs.front());
    r.encode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return ids;
  }
  if (o.vocab.empty())
    throw bad_input(
        "--tokenizer gpt2 needs --vocab DIR (GPT-2's encoder.json and vocab.bpe) or --vocab tokenizer.json");
  if (o.documents != "file" && o.documents != "lines" && o.documents != "jsonl")
    throw bad_input("--documents '" + o.documents + "': expected file, lines or jsonl");
  vocab = Vocabulary::gpt2_dir(o.vocab);
  std::deque<std::string> texts, owned;
  std::vector<std::string_view> docs;
  for (const auto& path : o.inputs) {
    add_documents(path, texts.emplace_back(read_input(path)), o, owned, docs);
    r.bytes += static_cast<std::int64_t>(texts.back().size());
  }
  if (docs.empty()) throw bad_input(o.inputs.front() + ": no documents (nothing to tokenize)");
  r.documents = static_cast<std::int64_t>(docs.size());
  return encode_documents(vocab, docs, o, r.encode_seconds);
}
}  // namespace

TextImportResult import_text(const TextImportOptions& o) {
  if (o.inputs.empty()) throw bad_input("import-text: give at least one --input FILE");
  if (!(o.val_fraction >= 0 && o.val_fraction < 1)) throw bad_input("--val-fraction must be in [0, 1)");
  if (o.shards < 1 || o.shards > 99999)  // (tokens-00000.h5 .. tokens-99999.h5: the reader takes them in name order)
    throw bad_input("--shards must be 1 to 99999");
  TextImportResult r;
  Vocabulary vocab = Vocabulary::byte();
  const auto ids = tokenize_inputs(o, vocab, r);
  const auto n = static_cast<std::int64_t>(ids.size());
  // The val split is the last fraction of the tokens (nanoGPT splits characters the same way).
  const auto train = static_cast<std::int64_t>(static_cast<double>(n) * (1.0 - o.val_fraction));
  if (train < 1 || (o.val_fraction > 0 && train >= n))
    throw bad_input("import-text: " + std::to_string(n) + " tokens are too few for --val-fraction " +
                    std::to_string(o.val_fraction));
  // The fewest tokens a shard of several holds (a file per window or two helps no one).
  constexpr std::int64_t kShardTokens = 1024;
  if (o.shards > 1 && train / o.shards < kShardTokens)
    throw bad_input("--shards " + std::to_string(o.shards) + ": " + std::to_string(train) +
                    " train tokens make shards of " + std::to_string(train / o.shards) + " tokens; at most " +
                    std::to_string(std::max<std::int64_t>(1, train / kShardTokens)) + " shards of " +
                    std::to_string(kShardTokens) + " tokens or more");
  prepare_split_dir(o.out + "/train", o.force);
  if (o.val_fraction > 0) prepare_split_dir(o.out + "/val", o.force);
  const std::int64_t per = (train + o.shards - 1) / o.shards;
  for (int s = 0; s < o.shards && s * per < train; ++s) {
    char name[64];
    std::snprintf(name, sizeof(name), "/train/tokens-%05d.h5", s);
    const std::int64_t first = s * per, last = std::min(train, (s + 1) * per);  // (written in place: no copy)
    write_token_shard(o.out + name, ids.data() + first, static_cast<std::size_t>(last - first), vocab);
  }
  if (o.val_fraction > 0)
    write_token_shard(o.out + "/val/tokens-00000.h5", ids.data() + train, static_cast<std::size_t>(n - train), vocab);
  r.train = train;
  r.val = n - train;
  r.vocab = vocab.size();
  r.tokenizer = vocab.tokenizer();
  return r;
}

}  // namespace hpctrain
