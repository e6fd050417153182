// Token datasets: shard scan and checks, window positions, the in-memory token store and the
// shard writer of import-text (data/token_dataset.hpp).
#include "hpctrain/data/token_dataset.hpp"

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "hpctrain/core/error.hpp"
#include "hpctrain/core/hash.hpp"
#include "hpctrain/data/llmc_shards.hpp"
#include "hpctrain/data/sampler.hpp"
#include "hpctrain/data/text_import.hpp"
#include "hpctrain/data/token_store.hpp"
#include "hpctrain/io/h5.hpp"

namespace hpctrain {

namespace {
[[noreturn]] void bad_token_file(const std::string& path, const std::string& what) {
  throw bad_input(path + ": " + what);
}

std::string attr_string(hid_t file, const std::string& path, const char* name) {
  if (!h5::has_attribute(file, name)) bad_token_file(path, std::string("root attribute '") + name + "' missing");
  return h5::read_string_attribute(file, name);
}
// Root attribute max_token_id (optional): the largest id /tokens holds, or -1 without it.
std::int64_t recorded_max_id(hid_t file, const std::string& path, long long vocab) {
  if (!h5::has_attribute(file, "max_token_id")) return -1;
  const long long id = h5::read_int_attribute(file, "max_token_id");
  if (id < 0 || id >= vocab)
    bad_token_file(path, "max_token_id = " + std::to_string(id) +
                             " is outside the vocabulary [0, vocab_size = " + std::to_string(vocab) + ")");
  return id;
}
}  // namespace

Shard scan_token_shard(hid_t file, const std::string& path, SplitIndex& split, bool first,
                       const std::string& first_path) {
  if (!h5::has_attribute(file, "version")) bad_token_file(path, "root attribute 'version' missing");
  const long long version = h5::read_int_attribute(file, "version");
  if (version < 1 || version > kTokenVersion)
    bad_token_file(path, "token format version " + std::to_string(version) +
                             " is not supported (this build reads version " + std::to_string(kTokenVersion) + ")");
  const std::string tokenizer = attr_string(file, path, "tokenizer");
  if (tokenizer != "byte" && tokenizer != "char" && tokenizer != "gpt2" && tokenizer != "bpe")
    bad_token_file(path, "unknown tokenizer '" + tokenizer + "' (known: byte, char, gpt2, bpe)");
  if (!h5::has_attribute(file, "vocab_size")) bad_token_file(path, "root attribute 'vocab_size' missing");
  const long long vocab = h5::read_int_attribute(file, "vocab_size");
  if (vocab < 1 || vocab > (1ll << 31)) bad_token_file(path, "vocab_size = " + std::to_string(vocab) + " must be >= 1");
  const std::string vocabulary = tokenizer == "byte" ? "" : attr_string(file, path, "vocabulary");
  const bool same_tokenizer = !first && split.tokens && tokenizer == split.tokenizer &&
                              vocabulary == split.vocabulary && vocab == split.num_classes;
  if (!first && !same_tokenizer) bad_token_file(path, "tokenizer or vocabulary differs from " + first_path);
  TokenizerFiles files;
  try {
    // gpt2, bpe: the files of the first shard; the others' vocabulary attribute names the same
    for (const std::string& name : Vocabulary::file_names(tokenizer))
      files.emplace_back(name, first ? h5::read_bytes(file, "tokenizer/" + name) : std::string());
    if (first) {
      const std::int64_t implied = Vocabulary::stored(tokenizer, vocabulary, files).size();
      if (implied != vocab)
        bad_token_file(path, "vocab_size = " + std::to_string(vocab) + " but the " + tokenizer + " tokenizer" +
                                 (tokenizer == "char" ? "'s vocabulary attribute holds " : " has ") +
                                 std::to_string(implied) + " tokens");
    }
  } catch (const Error& e) {
    if (std::string(e.what()).rfind(path, 0) == 0) throw;
    bad_token_file(path, std::string(tokenizer == "char" ? "attribute 'vocabulary': " : "tokenizer/: ") + e.what());
  }
  if (!h5::has_link(file, "tokens")) bad_token_file(path, "dataset /tokens missing");
  const hid_t did = H5Dopen2(file, "tokens", H5P_DEFAULT);
  if (did < 0) bad_token_file(path, "/tokens is not a dataset");
  h5::Id tokens(did);
  h5::Id type(CHECK_H5(H5Dget_type(tokens.get())));
  const std::size_t size = H5Tget_size(type.get());
  if (H5Tget_class(type.get()) != H5T_INTEGER || H5Tget_sign(type.get()) != H5T_SGN_NONE ||
      (size != 1 && size != 2 && size != 4))
    bad_token_file(path, "/tokens must be uint8, uint16 or uint32");
  const auto dims = h5::dataset_shape(tokens.get());
  if (dims.size() != 1)
    bad_token_file(path, "/tokens must be one 1-D stream, has " + std::to_string(dims.size()) + " dimensions");
  if (dims[0] == 0) bad_token_file(path, "empty token stream: /tokens has 0 tokens");
  const std::int64_t max_id = recorded_max_id(file, path, vocab);
  if (first) {
    split.tokens = true;
    split.tokenizer = tokenizer;
    split.vocabulary = vocabulary;
    split.tokenizer_files = std::move(files);
    split.num_classes = vocab;
    split.token_bits = static_cast<int>(size * 8);
    split.sample_type = SampleType::i32;  // the store hands out ids as int32
    split.classification = true;
    split.scale = {1.f};
    split.offset = {0.f};
    split.max_id = max_id;
  } else {
    split.max_id = split.max_id < 0 || max_id < 0 ? -1 : std::max(split.max_id, max_id);
  }
  Shard s;
  s.path = path;
  s.rows = static_cast<std::int64_t>(dims[0]);
  s.chunk_rows = s.rows;
  s.compression = "none";
  return s;
}

namespace {
// Calls f(raw, pos, n) for the tokens of shards [first, last) of `split`, 1M tokens at a time.
template <typename F>
void for_each_piece(const SplitIndex& split, std::size_t first, std::size_t last, F f) {
  constexpr std::int64_t kPiece = 1 << 20;
  TokenReader reader(split);
  std::vector<unsigned char> raw(static_cast<std::size_t>(kPiece * reader.width()));
  for (std::size_t i = first; i < last && i < split.shards.size(); ++i)
    for (std::int64_t at = 0; at < split.shards[i].rows; at += kPiece) {
      const std::int64_t pos = split.shards[i].first + at, n = std::min(kPiece, split.shards[i].rows - at);
      reader.read(pos, n, raw.data());
      if (!f(reader, raw.data(), pos, n)) return;
    }
}
}  // namespace

std::string check_token_values(const SplitIndex& split, std::size_t first, std::size_t last) {
  std::string problem;
  for_each_piece(split, first, last,
                 [&](const TokenReader& r, const unsigned char* raw, std::int64_t pos, std::int64_t n) {
                   problem = r.check_ids(raw, pos, n);
                   return problem.empty();
                 });
  return problem;
}

std::int64_t eval_target_bytes(const SplitIndex& split, std::int64_t windows) {
  std::vector<std::int64_t> length;  // bytes of each id
  try {
    const Vocabulary vocab = Vocabulary::stored(split.tokenizer, split.vocabulary, split.tokenizer_files);
    for (std::int64_t id = 0; id < vocab.size(); ++id)
      length.push_back(static_cast<std::int64_t>(vocab.token_text(static_cast<std::uint32_t>(id)).size()));
  } catch (const Error&) {
    return -1;
  }
  const std::int64_t last = windows * split.block_size;  // targets: stream positions 1 to last
  std::int64_t bytes = 0;
  std::vector<std::int32_t> ids;
  for_each_piece(split, 0, split.shards.size(),
                 [&](const TokenReader& r, const unsigned char* raw, std::int64_t pos, std::int64_t n) {
                   ids.resize(static_cast<std::size_t>(n));
                   widen_tokens(raw, r.width(), n, ids.data());
                   for (std::int64_t i = 0; i < n; ++i) {
                     const auto id = static_cast<std::size_t>(ids[static_cast<std::size_t>(i)]);
                     if (pos + i >= 1 && pos + i <= last && id < length.size()) bytes += length[id];
                   }
                   return pos + n <= last;
                 });
  return bytes;
}

void set_block_size(DatasetIndex& index, std::int64_t block) {
  for (SplitIndex* s : {&index.train, index.val ? &*index.val : nullptr, index.test ? &*index.test : nullptr}) {
    if (!s || !s->tokens) continue;
    if (block < 1)
      throw bad_input("[model] block_size is not set: " + index.root +
                      " is a token dataset; give the window length (e.g. block_size = 64)");
    const bool train = s == &index.train;
    s->stream_tokens = s->total;
    s->block_size = block;
    s->sample_shape = {block};
    s->label_width = block;
    s->total = train ? (s->stream_tokens - block) / block : (s->stream_tokens - 1) / block;
    if (s->total < 1)
      throw bad_input(index.root + "/" + s->name + ": " + std::to_string(s->stream_tokens) +
                      " tokens hold no window of [model] block_size + 1 = " + std::to_string(block + 1) + " tokens" +
                      (train ? " at every shift (training needs 2 * block_size)" : ""));
  }
}

std::int64_t window_start(const SplitIndex& split, std::uint64_t seed, std::int64_t epoch, std::int64_t w) {
  const std::int64_t t = split.block_size;
  if (epoch < 0) return w * t;
  if (split.windows == TokenWindows::random)  // any start with a whole window after it
    return static_cast<std::int64_t>(splitmix64(Sampler::epoch_key(seed, epoch) ^ splitmix64(0x72616e64ull + w)) %
                                     static_cast<std::uint64_t>(split.stream_tokens - t));
  const std::uint64_t shift =
      splitmix64(Sampler::epoch_key(seed, epoch) ^ 0x7368696674ull) % static_cast<std::uint64_t>(t);
  return static_cast<std::int64_t>(shift) + w * t;
}

void write_token_shard(const std::string& path, const std::uint32_t* tokens, std::size_t n, const Vocabulary& vocab) {
  const std::string& tokenizer = vocab.tokenizer();
  const std::int64_t vocab_size = vocab.size();
  std::lock_guard<std::mutex> lock(h5::lock());
  const std::string tmp = path + ".tmp";
  {
    h5::Id file = h5::create_file(tmp);
    h5::write_string_attribute(file.get(), "format", kTokenFormat);
    h5::write_int_attribute(file.get(), "version", kTokenVersion);
    h5::write_string_attribute(file.get(), "tokenizer", tokenizer);
    h5::write_int_attribute(file.get(), "vocab_size", vocab_size);
    // The largest id: what a model with fewer embedding rows than the tokenizer has ids needs to
    // know (Gemma 3 1B's 262,144 for its tokenizer's 262,145).
    if (n > 0) h5::write_int_attribute(file.get(), "max_token_id", *std::max_element(tokens, tokens + n));
    if (tokenizer != "byte") h5::write_string_attribute(file.get(), "vocabulary", vocab.characters());
    for (const auto& [name, bytes] : vocab.files()) h5::write_bytes(file.get(), "tokenizer/" + name, bytes);
    const hid_t type = vocab_size <= 256 ? H5T_STD_U8LE : vocab_size <= 65536 ? H5T_STD_U16LE : H5T_STD_U32LE;
    h5::Id d = h5::create_dataset(file.get(), "tokens", type, {static_cast<hsize_t>(n)}, hsize_t{1} << 20, 0);
    h5::write_rows(d.get(), H5T_NATIVE_UINT32, 0, static_cast<hsize_t>(n), tokens);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw Error(ExitCode::internal, Scope::this_rank, "cannot rename " + tmp + " to " + path);
}

}  // namespace hpctrain
