// Where a reader's raw samples come from. Two stores behind one interface:
//  - NodeCache: the whole split, raw, in one MPI shared-memory window per node
//    (the node's ranks load disjoint shards in parallel, then all read it):
//    used when the split fits in [data] cache_bytes. Exact global shuffling
//    then costs a memcpy per sample.
//  - ChunkCache: decoded HDF5 chunks in a per-rank LRU of cache_bytes / ranks
//    per node: for splits larger than memory (pair it with shuffle = chunk, which
//    touches a window of chunks at a time). Before a batch is assembled, the chunks it
//    needs that are not cached are read raw under the HDF5 lock and inflated outside it
//    on [data] decode_threads threads (data/chunk_decoder.hpp).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/comm/shared_window.hpp"
#include "hpctrain/data/chunk_decoder.hpp"
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
  virtual std::string describe() const { return kind(); }  // kind() and how it decodes
  virtual std::uint64_t bytes_read_from_files() const = 0;
  // A hint: the samples of the next batch (a store may load what they need at once, in parallel).
  virtual void prefetch(const std::vector<std::int64_t>& /*indices*/) {}
  // [parallel] spatial_parallel: `slab` of sample `index` (raw, its channels' planes one after
  // another: split.sample_bytes() / slab.size bytes) and/or its label, or false (nothing done)
  // where the store holds whole samples only: the caller then gets one and copies its slab out.
  virtual bool get_slab(std::int64_t /*index*/, const DepthSlab& /*slab*/, void* /*sample*/, void* /*label*/) {
    return false;
  }
};

// Copies `slab` of the raw sample `whole` into `out` (data/slabs.cpp).
void copy_slab(const SplitIndex& split, const DepthSlab& slab, const unsigned char* whole, unsigned char* out);

// Bytes the whole split takes in a NodeCache (samples + labels; a token split: its stream as stored).
std::uint64_t node_cache_bytes(const SplitIndex& split);
std::size_t label_bytes(const SplitIndex& split);

class NodeCache final : public SampleStore {
 public:
  // Collective over `node` (a host communicator of the ranks sharing memory: Runtime::node()).
  NodeCache(const SplitIndex& split, Communicator& node, bool samples, bool labels);
  void get(std::int64_t index, void* sample, void* label) override;
  bool get_slab(std::int64_t index, const DepthSlab& slab, void* sample, void* label) override;
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
  // `decode_threads`: threads inflating the chunks a batch needs (>= 1); -1: HDF5 decodes every
  // chunk inside H5Dread, under the lock, one at a time (for comparison: reader-bench --hdf5-decode).
  ChunkCache(const SplitIndex& split, std::uint64_t capacity_bytes, bool samples, bool labels, int decode_threads = 1);
  void get(std::int64_t index, void* sample, void* label) override;
  const char* kind() const override { return "HDF5 chunk cache (per rank)"; }
  std::string describe() const override;
  std::uint64_t bytes_read_from_files() const override { return read_; }
  void prefetch(const std::vector<std::int64_t>& indices) override;

 private:
  struct Block {
    std::vector<unsigned char> samples, labels;
    std::list<std::uint64_t>::iterator lru;
  };
  struct OpenShard {
    h5::Id file, samples, labels;
    std::unique_ptr<ChunkDecoder> sample_decoder, label_decoder;
  };
  struct Scratch {  // one decoding thread's buffers
    std::vector<unsigned char> raw, plain;
  };
  std::uint64_t key_of(std::int64_t index, std::size_t* shard, std::int64_t* chunk) const;
  // Thread-safe, no lock of ours held: reads and decodes one chunk into `b`.
  void load(std::size_t shard, std::int64_t chunk, Block& b, Scratch& tmp) const;
  Block& insert(std::uint64_t key, Block&& b);  // with mu_ held: into the LRU, evicting
  Block& block(std::size_t shard, std::int64_t chunk);

  const SplitIndex& split_;
  std::uint64_t capacity_;
  bool want_samples_, want_labels_;
  std::size_t sample_bytes_, label_bytes_;
  std::vector<OpenShard> open_;
  std::unordered_map<std::uint64_t, Block> blocks_;
  std::list<std::uint64_t> lru_;  // most recent first
  Block spare_;                   // the last evicted block's buffers, reused for the next read
  Scratch scratch_;               // get()'s, with mu_ held
  std::uint64_t held_ = 0, read_ = 0;
  int threads_ = 1;
  std::mutex mu_;
};

// [parallel] spatial_parallel, a split larger than the cache: each sample's slab read from its
// shard as an HDF5 hyperslab [row, :, planes, :, :] (and its label), nothing cached; the rank reads
// only its share of every volume (data/slabs.cpp).
class SlabStore final : public SampleStore {
 public:
  SlabStore(const SplitIndex& split, bool samples, bool labels);
  void get(std::int64_t index, void* sample, void* label) override;
  bool get_slab(std::int64_t index, const DepthSlab& slab, void* sample, void* label) override;
  const char* kind() const override { return "HDF5 hyperslabs (this rank's depth slab of each sample)"; }
  std::uint64_t bytes_read_from_files() const override { return read_; }

 private:
  struct OpenShard {
    h5::Id file, samples, labels, holder;
    hid_t raw_type = -1;
  };
  const Shard& locate(std::int64_t index, std::size_t* which) const;
  const SplitIndex& split_;
  std::vector<OpenShard> open_;
  std::uint64_t read_ = 0;
};

// NodeCache when the split fits in cache_bytes, else ChunkCache (collective over `node`); for a
// token split TokenNodeCache or TokenBlockCache (data/token_store.hpp).
// `decode_threads`: ChunkCache's; 0 = automatic (the node's cores over its ranks, 1-8); -1 = HDF5's.
// `slab` on (spatial_parallel): a SlabStore instead of a ChunkCache.
std::unique_ptr<SampleStore> make_store(const SplitIndex& split, Communicator& node, std::uint64_t cache_bytes,
                                        bool samples, bool labels, int decode_threads = 0, DepthSlab slab = {});

}  // namespace hpctrain
