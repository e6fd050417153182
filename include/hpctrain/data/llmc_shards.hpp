// llm.c's and modded-nanogpt's token shards, read as they are ([data] format = llmc,
// docs/language-models.md): each .bin file is a header of 256 little-endian int32 (magic,
// version, token count, the rest unused) and then the tokens, as llm.c's
// dev/data/data_common.py write_datafile writes them:
//   magic 20240520, version 1: uint16 GPT-2 ids (vocabulary 50,257);
//   magic 20240801, version 7: uint32 Llama 3 ids (vocabulary 128,256).
// [data] path is the folder; the files matching train_glob (default *train*.bin) are the train
// split and val_glob (*val*.bin) the val split, each in file-name order, one stream. The header
// and size of every file are checked at start-up (one line naming the file per problem); the ids
// as they are loaded (file and token position).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hpctrain/config/config.hpp"
#include "hpctrain/data/dataset.hpp"
#include "hpctrain/data/text_import.hpp"

namespace hpctrain {

inline constexpr std::int32_t kLlmcGpt2Magic = 20240520, kLlmcLlama3Magic = 20240801;
inline constexpr std::int64_t kLlmcHeaderBytes = 256 * 4;
inline constexpr std::int64_t kLlmcGpt2Vocab = 50257, kLlmcLlama3Vocab = 128256;  // (their ids' vocabularies)

// format = auto: true when `data.path` has no train/ folder and its first file matching
// train_glob begins with an llm.c magic.
bool looks_like_llmc(const DataConfig& data);
// Serial: the train (required) and val (optional) splits of llm.c shards; bad_input naming the
// file and what is wrong.
DatasetIndex scan_llmc_dataset(const DataConfig& data);
// The tokens of one shard of a split scanned above, widened to uint32.
std::vector<std::uint32_t> read_llmc_tokens(const Shard& shard, int token_bits);

// The tokenizer for llm.c's ids of `tokenizer` ("gpt2" or "llama3", as a scanned split or a
// checkpoint trained on one records it) from `path`: GPT-2's folder or a tokenizer.json
// (Vocabulary::gpt2_dir), whose size must be the ids' vocabulary: bad_input naming `path`, what
// holds the ids (`ids_in`) and the tokenizer to give otherwise.
Vocabulary llmc_vocabulary(const std::string& tokenizer, const std::string& path, const std::string& ids_in);

// hpctrain-data import-llmc: each .bin shard of `data` (format llmc) as an hpctrain token shard
// (ROOT/train/tokens-NNNNN.h5, ROOT/val/...) carrying the tokenizer of `vocab_dir` (GPT-2's
// folder, or a tokenizer.json such as Llama 3's), whose vocabulary size must be the shards'
// (bad_input otherwise); ids checked against it. Returns the tokens written (train, val).
std::pair<std::int64_t, std::int64_t> convert_llmc(const DataConfig& data, const std::string& vocab_dir,
                                                   const std::string& out, bool force);

}  // namespace hpctrain
