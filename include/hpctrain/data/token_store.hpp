// Where a token split's windows come from (docs/language-models.md, "Datasets larger than memory").
// Two stores behind SampleStore, chosen by make_store:
//  - TokenNodeCache: the whole stream at its stored width (1, 2 or 4 bytes a token) in one MPI
//    shared-memory window per node, when it fits in [data] cache_bytes. The node's ranks load
//    disjoint shards, then all read it; the ids were checked at start-up.
//  - TokenBlockCache: otherwise. Blocks of B tokens of the stream (B the power of two >= 4096
//    and >= T + 1, so a window touches at most two) are read on demand, by HDF5 hyperslab or by
//    pread of a .bin shard, into a per-rank LRU that holds at most cache_bytes / (ranks on the
//    node) bytes (and at least two blocks). Each block's ids are checked as it is read: an id
//    outside the vocabulary is one line naming the file and the token's position in it.
// get(start, ...) copies the window at stream position `start`: T ids as int32 samples and the
// T next ids as int32 labels.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/comm/shared_window.hpp"
#include "hpctrain/data/dataset.hpp"
#include "hpctrain/data/store.hpp"

namespace hpctrain {

// Raw tokens of a token split's shards by stream position, at the stored width. Not thread-safe.
class TokenReader {
 public:
  explicit TokenReader(const SplitIndex& split);
  ~TokenReader();
  TokenReader(const TokenReader&) = delete;
  TokenReader& operator=(const TokenReader&) = delete;
  // Copies tokens [pos, pos + n) of the stream (they may span shards) to `out`.
  void read(std::int64_t pos, std::int64_t n, unsigned char* out);
  int width() const { return width_; }  // bytes a token
  // "" when the n tokens at `raw` (stream positions [pos, pos + n)) are all < vocab_size, else
  // the message naming the shard file and the token's position in it.
  std::string check_ids(const unsigned char* raw, std::int64_t pos, std::int64_t n) const;

 private:
  struct Open;
  void read_shard(std::size_t shard, std::int64_t first, std::int64_t n, unsigned char* out);
  std::size_t shard_at(std::int64_t pos) const;

  const SplitIndex& split_;
  int width_;
  std::vector<std::unique_ptr<Open>> open_;  // opened on first use
};

// n ids at the stored width -> int32.
void widen_tokens(const unsigned char* raw, int width, std::int64_t n, std::int32_t* out);

class TokenNodeCache final : public SampleStore {
 public:
  // Collective over `node` (Runtime::node()).
  TokenNodeCache(const SplitIndex& split, Communicator& node);
  void get(std::int64_t start, void* sample, void* label) override;
  const char* kind() const override { return "token stream (node shared memory)"; }
  std::uint64_t bytes_read_from_files() const override { return loaded_; }

 private:
  const SplitIndex& split_;
  SharedWindow window_;
  int width_;
  std::uint64_t loaded_ = 0;
};

class TokenBlockCache final : public SampleStore {
 public:
  TokenBlockCache(const SplitIndex& split, std::uint64_t capacity_bytes);
  void get(std::int64_t start, void* sample, void* label) override;
  const char* kind() const override { return "token blocks (per rank, streamed)"; }
  std::string describe() const override;
  std::uint64_t bytes_read_from_files() const override { return read_; }
  std::int64_t block_tokens() const { return block_; }
  std::uint64_t held_bytes() const { return held_; }       // now
  std::uint64_t peak_held_bytes() const { return peak_; }  // since construction

 private:
  struct Block {
    std::vector<unsigned char> raw;
    std::list<std::int64_t>::iterator lru;
  };
  const Block& block(std::int64_t number);  // with mu_ held: from the LRU or read, evicting

  const SplitIndex& split_;
  TokenReader reader_;
  std::int64_t block_;
  std::uint64_t capacity_;
  std::unordered_map<std::int64_t, Block> blocks_;
  std::list<std::int64_t> lru_;  // most recent first
  std::vector<unsigned char> spare_, window_;
  std::uint64_t held_ = 0, peak_ = 0, read_ = 0;
  std::mutex mu_;  // the prefetch thread and evaluation may share this store
};

}  // namespace hpctrain
