// llm.c's .bin token shards (data/llmc_shards.hpp).
#include "hpctrain/data/llmc_shards.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "hpctrain/core/error.hpp"
#include "hpctrain/data/make_dataset.hpp"
#include "hpctrain/data/text_import.hpp"
#include "hpctrain/data/token_dataset.hpp"

namespace fs = std::filesystem;

namespace hpctrain {

namespace {
std::vector<std::string> matching(const std::string& dir, const std::string& glob) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file() && fnmatch(glob.c_str(), e.path().filename().c_str(), 0) == 0)
      out.push_back(e.path().string());
  if (ec) throw bad_input("[data] path '" + dir + "': cannot be listed: " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

// The header's first three int32 (little-endian on every machine llm.c targets, as here); false
// when the file is shorter than a header.
bool read_header(const std::string& path, std::array<std::int32_t, 3>& h, std::int64_t& size) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw bad_input(path + ": cannot be read");
  size = static_cast<std::int64_t>(in.tellg());
  if (size < kLlmcHeaderBytes) return false;
  in.seekg(0);
  in.read(reinterpret_cast<char*>(h.data()), sizeof(h));
  return static_cast<bool>(in);
}

// One shard's header and size checked; fills the split from the first.
Shard scan_file(const std::string& path, SplitIndex& split, bool first, const std::string& first_path) {
  std::array<std::int32_t, 3> h{};
  std::int64_t size = 0;
  if (!read_header(path, h, size))
    throw bad_input(path + ": " + std::to_string(size) + " bytes, shorter than llm.c's " +
                    std::to_string(kLlmcHeaderBytes) + "-byte header");
  const auto [magic, version, count] = h;
  if (magic != kLlmcGpt2Magic && magic != kLlmcLlama3Magic)
    throw bad_input(path + ": not an llm.c token shard (header magic " + std::to_string(magic) + "; expected " +
                    std::to_string(kLlmcGpt2Magic) + " for GPT-2 or " + std::to_string(kLlmcLlama3Magic) +
                    " for Llama 3)");
  const bool gpt2 = magic == kLlmcGpt2Magic;
  if (version != (gpt2 ? 1 : 7))
    throw bad_input(path + ": header version " + std::to_string(version) + " with magic " + std::to_string(magic) +
                    "; this build reads version " + (gpt2 ? "1" : "7"));
  const int bytes = gpt2 ? 2 : 4;
  if (count < 1 || kLlmcHeaderBytes + std::int64_t{count} * bytes != size)
    throw bad_input(path + ": the header says " + std::to_string(count) + " tokens (" +
                    std::to_string(std::int64_t{count} * bytes) + " bytes) but the file holds " +
                    std::to_string(size - kLlmcHeaderBytes) + " bytes after the header" +
                    (count < 1 ? "" : " (truncated or not written to the end?)"));
  if (first) {
    split.tokens = true;
    split.token_format = DataFormat::llmc;
    split.tokenizer = gpt2 ? "gpt2" : "llama3";  // ids only: the shards carry no tokenizer files
    split.num_classes = gpt2 ? kLlmcGpt2Vocab : kLlmcLlama3Vocab;
    split.token_bits = bytes * 8;
    split.sample_type = SampleType::i32;
    split.classification = true;
    split.scale = {1.f};
    split.offset = {0.f};
  } else if (split.token_bits != bytes * 8) {
    throw bad_input(path + ": magic " + std::to_string(magic) + " differs from " + first_path + "'s");
  }
  Shard s;
  s.path = path;
  s.rows = count;
  s.chunk_rows = count;
  s.compression = "none";
  return s;
}

std::optional<SplitIndex> scan_split(const DataConfig& data, const std::string& name, const std::string& glob,
                                     bool required) {
  const auto files = matching(data.path, glob);
  if (files.empty()) {
    if (required)
      throw bad_input("[data] path '" + data.path + "': no files match " + name + "_glob = " + glob +
                      " ([data] format = llmc)");
    return std::nullopt;
  }
  SplitIndex split;
  split.name = name;
  for (std::size_t i = 0; i < files.size(); ++i) {
    Shard s = scan_file(files[i], split, i == 0, files[0]);
    s.first = split.total;
    split.total += s.rows;
    split.shards.push_back(s);
  }
  return split;
}
}  // namespace

bool looks_like_llmc(const DataConfig& data) {
  std::error_code ec;
  if (data.path.empty() || fs::is_directory(fs::path(data.path) / "train", ec) || !fs::is_directory(data.path, ec))
    return false;
  const auto files = matching(data.path, data.train_glob);
  std::array<std::int32_t, 3> h{};
  std::int64_t size = 0;
  return !files.empty() && read_header(files.front(), h, size) && (h[0] == kLlmcGpt2Magic || h[0] == kLlmcLlama3Magic);
}

DatasetIndex scan_llmc_dataset(const DataConfig& data) {
  std::error_code ec;
  if (!fs::is_directory(data.path, ec)) throw bad_input("[data] path '" + data.path + "': no such directory");
  DatasetIndex index;
  index.root = data.path;
  index.train = *scan_split(data, "train", data.train_glob, true);
  index.val = scan_split(data, "val", data.val_glob, false);
  if (index.val && index.val->token_bits != index.train.token_bits)
    throw bad_input(index.val->shards.front().path + ": magic differs from the train split's (" +
                    index.train.shards.front().path + ")");
  return index;
}

std::vector<std::uint32_t> read_llmc_tokens(const Shard& shard, int token_bits) {
  std::ifstream in(shard.path, std::ios::binary);
  if (!in) throw bad_input(shard.path + ": cannot be read");
  in.seekg(kLlmcHeaderBytes);
  std::vector<std::uint32_t> out(static_cast<std::size_t>(shard.rows));
  if (token_bits == 32) {
    in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size() * 4));
  } else {
    std::vector<std::uint16_t> t(out.size());
    in.read(reinterpret_cast<char*>(t.data()), static_cast<std::streamsize>(t.size() * 2));
    std::copy(t.begin(), t.end(), out.begin());
  }
  if (!in) throw bad_input(shard.path + ": shorter than its header says (changed since start-up?)");
  return out;
}

Vocabulary llmc_vocabulary(const std::string& tokenizer, const std::string& path, const std::string& ids_in) {
  const bool gpt2 = tokenizer == "gpt2";
  const std::int64_t want = gpt2 ? kLlmcGpt2Vocab : kLlmcLlama3Vocab;
  Vocabulary vocab = Vocabulary::gpt2_dir(path);
  if (vocab.size() != want)
    throw bad_input(path + ": a vocabulary of " + std::to_string(vocab.size()) + " tokens, but " + ids_in + " holds " +
                    (gpt2 ? "GPT-2" : "Llama 3") + " ids (" + std::to_string(want) + "): give " +
                    (gpt2 ? "GPT-2's folder" : "Llama 3's tokenizer.json"));
  return vocab;
}

std::pair<std::int64_t, std::int64_t> convert_llmc(const DataConfig& data, const std::string& vocab_dir,
                                                   const std::string& out, bool force) {
  const DatasetIndex index = scan_llmc_dataset(data);
  const Vocabulary vocab = llmc_vocabulary(index.train.tokenizer, vocab_dir, index.train.shards.front().path);
  std::int64_t written[2] = {0, 0};
  for (const SplitIndex* split : {&index.train, index.val ? &*index.val : nullptr}) {
    if (!split) continue;
    prepare_split_dir(out + "/" + split->name, force);
    for (std::size_t i = 0; i < split->shards.size(); ++i) {
      const std::string problem = check_token_values(*split, i, i + 1);
      if (!problem.empty()) throw bad_input(problem);
      char name[64];
      std::snprintf(name, sizeof(name), "/tokens-%05zu.h5", i);
      const auto tokens = read_llmc_tokens(split->shards[i], split->token_bits);
      write_token_shard(out + "/" + split->name + name, tokens, vocab);
      written[split == &index.train ? 0 : 1] += static_cast<std::int64_t>(tokens.size());
    }
  }
  return {written[0], written[1]};
}

}  // namespace hpctrain
