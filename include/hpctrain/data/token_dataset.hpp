// Token datasets for language models (docs/datasets.md, "Token datasets"): each shard holds one
// 1-D stream /tokens (uint8, uint16 or uint32: the smallest that fits the vocabulary) and root
// attributes format = "hpctrain-tokens", version = 1, tokenizer ("byte" | "char" | "gpt2"),
// vocab_size and, for "char", vocabulary (the characters in id order, UTF-8); for "gpt2",
// vocabulary names the tokenizer's files by hash and the 1-D uint8 datasets
// tokenizer/encoder.json and tokenizer/vocab.bpe hold them (read from the first shard of a split). A split is its
// shards' streams one after the other. With [model] block_size = T its samples are windows of T + 1 tokens: the first T
// are the input, the last T the targets (every position predicts the next token).
//
// Window positions. Training, epoch e: the windows of a grid with stride T shifted by
//   shift_e = splitmix64(Sampler::epoch_key(seed, e) ^ 0x7368696674) mod T,
// window w starting at token shift_e + w*T, w < W = (L - T) / T for a stream of L tokens (so every
// shift leaves W whole windows); the sampler then permutes the W windows as it permutes samples.
// The order is a pure function of (seed, epoch), whatever the rank count: exact and elastic
// resume work as for images. nanoGPT draws B independent random offsets per step instead
// (windows may overlap or repeat within an epoch); the grid sees every token once per epoch,
// and the per-epoch shift lets a window start at every offset over the epochs.
// [data] windows = random: window w of epoch e starts at
//   splitmix64(Sampler::epoch_key(seed, e) ^ splitmix64(0x72616e64 + w)) mod (L - T),
// any offset with a whole window after it, as nanoGPT and llm.c draw them (windows may overlap or
// repeat); still W windows an epoch, a pure function of (seed, epoch, window): resume stays exact.
// Evaluation: the non-overlapping windows from token 0, w < (L - 1) / T, each exactly once.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "hpctrain/data/dataset.hpp"
#include "hpctrain/data/store.hpp"

namespace hpctrain {

constexpr const char* kTokenFormat = "hpctrain-tokens";
constexpr long long kTokenVersion = 1;

// Reads one token shard's structure (the file is open, its format attribute read) into `split`
// (first shard) or checks it matches the first; bad_input naming the file and what is wrong.
Shard scan_token_shard(hid_t file, const std::string& path, SplitIndex& split, bool first,
                       const std::string& first_path);
// Token ids of shards [first, last) outside [0, vocab_size): "" when fine, else the message.
std::string check_token_values(const SplitIndex& split, std::size_t first, std::size_t last);
// Makes the token splits' samples windows of block + 1 tokens (see above); bad_input when a
// token dataset has no block size or a split holds too few tokens for one window.
void set_block_size(DatasetIndex& index, std::int64_t block);
// The first token of window w: training windows of epoch e (epoch >= 0), or evaluation windows
// (epoch < 0).
std::int64_t window_start(const SplitIndex& split, std::uint64_t seed, std::int64_t epoch, std::int64_t w);

class Vocabulary;
// The bytes of text the targets of the first `windows` evaluation windows stand for (tokens 1 to
// windows * block_size of the stream), for bits per byte; -1 when the split's tokenizer cannot
// decode (llm.c shards carry no tokenizer files).
std::int64_t eval_target_bytes(const SplitIndex& split, std::int64_t windows);
// Shard writer of import-text: one stream per file (with `vocab`'s attributes and files), written
// to <path>.tmp and renamed.
void write_token_shard(const std::string& path, const std::uint32_t* tokens, std::size_t n, const Vocabulary& vocab);
inline void write_token_shard(const std::string& path, const std::vector<std::uint32_t>& tokens,
                              const Vocabulary& vocab) {
  write_token_shard(path, tokens.data(), tokens.size(), vocab);
}

}  // namespace hpctrain
