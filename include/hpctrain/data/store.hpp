// Where a reader's raw samples come from. Two stores behind one interface:
//  - NodeCache: the whole split, raw, in one MPI shared-memory window per node
//    (the node's ranks load disjoint shards in parallel, then all read it):
//    used when the split fits in [data] cache_bytes. Exact global shuffling
//    then costs a memcpy per sample.
//  - ChunkCache: decoded HDF5 chunks in a per-rank LRU of cache_bytes / ranks
//    per node, read under the HDF5 lock: for splits larger than memory
//    (pair it with shuffle = chunk, which touches a window of chunks at a time).
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
#include "hpctrain/io/h5.hpp"

namespace hpctrain {

class SampleStore {
 public:
  virtual ~SampleStore() = default;
  // Copies sample `index` (raw bytes, split.sample_bytes()) and/or its label
  // (classification: one int32; regression: label_width floats). Either pointer may be null.
  virtual void get(std::int64_t index, void* sample, void* label) = 0;
  virtual const char* kind() const = 0;
  virtual std::uint64_t bytes_read_from_files() const = 0;
};

// Bytes the whole split takes in a NodeCache (samples + labels).
std::uint64_t node_cache_bytes(const SplitIndex& split);
std::size_t label_bytes(const SplitIndex& split);

class NodeCache final : public SampleStore {
 public:
  // Collective over `node` (a host communicator of the ranks sharing memory: Runtime::node()).
  NodeCache(const SplitIndex& split, Communicator& node, bool samples, bool labels);
  void get(std::int64_t index, void* sample, void* label) override;
  const char* kind() const override { return "node cache (shared memory)"; }
  std::uint64_t bytes_read_from_files() const override { return loaded_; }

 private:
  const SplitIndex& split_;
  SharedWindow window_;
  unsigned char* base_;
  std::size_t sample_bytes_, label_bytes_;
  std::uint64_t loaded_ = 0;
};

class ChunkCache final : public SampleStore {
 public:
  ChunkCache(const SplitIndex& split, std::uint64_t capacity_bytes, bool samples, bool labels);
  void get(std::int64_t index, void* sample, void* label) override;
  const char* kind() const override { return "HDF5 chunk cache (per rank)"; }
  std::uint64_t bytes_read_from_files() const override { return read_; }

 private:
  struct Block {
    std::vector<unsigned char> samples, labels;
    std::list<std::uint64_t>::iterator lru;
  };
  struct OpenShard {
    h5::Id file, samples, labels;
  };
  Block& block(std::size_t shard, std::int64_t chunk);

  const SplitIndex& split_;
  std::uint64_t capacity_;
  bool want_samples_, want_labels_;
  std::size_t sample_bytes_, label_bytes_;
  std::vector<OpenShard> open_;
  std::unordered_map<std::uint64_t, Block> blocks_;
  std::list<std::uint64_t> lru_;  // most recent first
  Block spare_;                   // the last evicted block's buffers, reused for the next read
  std::uint64_t held_ = 0, read_ = 0;
  std::mutex mu_;
};

// NodeCache when the split fits in cache_bytes, else ChunkCache (collective over `node`).
std::unique_ptr<SampleStore> make_store(const SplitIndex& split, Communicator& node, std::uint64_t cache_bytes,
                                        bool samples, bool labels);

}  // namespace hpctrain
