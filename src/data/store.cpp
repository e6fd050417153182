// Implementation of the sample stores (data/store.hpp).
#include "hpctrain/data/store.hpp"

#include "hpctrain/data/token_dataset.hpp"

#include <cstring>
#include <mutex>

#include "hpctrain/core/error.hpp"

namespace hpctrain {

std::size_t label_bytes(const SplitIndex& split) {
  return (split.classification ? sizeof(std::int32_t) : sizeof(float)) * static_cast<std::size_t>(split.label_width);
}

std::uint64_t node_cache_bytes(const SplitIndex& split) {
  return static_cast<std::uint64_t>(split.total) *
         (static_cast<std::uint64_t>(split.sample_bytes()) + label_bytes(split));
}

namespace {
hid_t label_mem_type(const SplitIndex& s) { return s.classification ? H5T_NATIVE_INT32 : H5T_NATIVE_FLOAT; }
}  // namespace

// ---- NodeCache ----------------------------------------------------------------------------

NodeCache::NodeCache(const SplitIndex& split, Communicator& node, bool samples, bool labels)
    : split_(split),
      window_(node, node_cache_bytes(split)),
      base_(reinterpret_cast<unsigned char*>(window_.data())),
      sample_bytes_(static_cast<std::size_t>(split.sample_bytes())),
      label_bytes_(label_bytes(split)) {
  const int lrank = node.rank(), lsize = node.size();
  // Samples first ([total, sample_bytes]), then labels ([total, label_bytes]).
  unsigned char* sample_base = base_;
  unsigned char* label_base = base_ + static_cast<std::size_t>(split.total) * sample_bytes_;
  std::string error;
  try {
    std::lock_guard<std::mutex> lock(h5::lock());
    for (std::size_t i = static_cast<std::size_t>(lrank); i < split.shards.size();
         i += static_cast<std::size_t>(lsize)) {
      const Shard& s = split.shards[i];
      h5::Id file = h5::open_file(s.path);
      const auto first = static_cast<std::size_t>(s.first);
      if (samples) {
        h5::Id d(CHECK_H5(H5Dopen2(file.get(), "samples", H5P_DEFAULT)));
        h5::Id holder;
        h5::read_rows(d.get(), raw_sample_type(d.get(), split.sample_type, &holder), 0, static_cast<hsize_t>(s.rows),
                      sample_base + first * sample_bytes_);
        loaded_ += static_cast<std::uint64_t>(s.rows) * sample_bytes_;
      }
      if (labels) {
        h5::Id d(CHECK_H5(H5Dopen2(file.get(), "labels", H5P_DEFAULT)));
        h5::read_rows(d.get(), label_mem_type(split), 0, static_cast<hsize_t>(s.rows),
                      label_base + first * label_bytes_);
        loaded_ += static_cast<std::uint64_t>(s.rows) * label_bytes_;
      }
    }
  } catch (const Error& e) {
    error = e.what();
  }
  // Everyone must reach the barrier even if its load failed, then fail together.
  int failed = error.empty() ? 0 : 1, any = 0;
  node.allreduce(&failed, &any, 1, DType::i32, ReduceOp::max);
  if (any)
    throw Error(ExitCode::internal, Scope::this_rank,
                error.empty() ? "another rank on this node failed to load the dataset cache" : error);
  window_.fence();  // makes every rank's stores visible to all
}

void NodeCache::get(std::int64_t index, void* sample, void* label) {
  const auto i = static_cast<std::size_t>(index);
  if (sample) std::memcpy(sample, base_ + i * sample_bytes_, sample_bytes_);
  if (label)
    std::memcpy(label, base_ + static_cast<std::size_t>(split_.total) * sample_bytes_ + i * label_bytes_, label_bytes_);
}

// ---- ChunkCache ------------------------------------------------------------------------------

ChunkCache::ChunkCache(const SplitIndex& split, std::uint64_t capacity_bytes, bool samples, bool labels)
    : split_(split),
      capacity_(capacity_bytes),
      want_samples_(samples),
      want_labels_(labels),
      sample_bytes_(static_cast<std::size_t>(split.sample_bytes())),
      label_bytes_(label_bytes(split)) {
  std::lock_guard<std::mutex> lock(h5::lock());
  open_.resize(split.shards.size());
  for (std::size_t i = 0; i < split.shards.size(); ++i) {
    open_[i].file = h5::open_file(split.shards[i].path);
    if (samples) open_[i].samples = h5::Id(CHECK_H5(H5Dopen2(open_[i].file.get(), "samples", H5P_DEFAULT)));
    if (labels) open_[i].labels = h5::Id(CHECK_H5(H5Dopen2(open_[i].file.get(), "labels", H5P_DEFAULT)));
  }
}

ChunkCache::Block& ChunkCache::block(std::size_t shard, std::int64_t chunk) {
  const std::uint64_t key = (static_cast<std::uint64_t>(shard) << 40) | static_cast<std::uint64_t>(chunk);
  auto it = blocks_.find(key);
  if (it != blocks_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second;
  }
  const Shard& s = split_.shards[shard];
  const std::int64_t first = chunk * s.chunk_rows, rows = std::min(s.chunk_rows, s.rows - first);
  Block b = std::move(spare_);  // reuse an evicted block's buffers: no allocation, no zero-fill
  {
    std::lock_guard<std::mutex> lock(h5::lock());
    if (want_samples_) {
      b.samples.resize(static_cast<std::size_t>(rows) * sample_bytes_);
      h5::Id holder;
      h5::read_rows(open_[shard].samples.get(),
                    raw_sample_type(open_[shard].samples.get(), split_.sample_type, &holder),
                    static_cast<hsize_t>(first), static_cast<hsize_t>(rows), b.samples.data());
    }
    if (want_labels_) {
      b.labels.resize(static_cast<std::size_t>(rows) * label_bytes_);
      h5::read_rows(open_[shard].labels.get(), label_mem_type(split_), static_cast<hsize_t>(first),
                    static_cast<hsize_t>(rows), b.labels.data());
    }
  }
  const std::uint64_t size = b.samples.size() + b.labels.size();
  read_ += size;
  while (!lru_.empty() && held_ + size > capacity_) {  // evict least recently used
    auto victim = blocks_.find(lru_.back());
    held_ -= victim->second.samples.size() + victim->second.labels.size();
    spare_ = std::move(victim->second);
    blocks_.erase(victim);
    lru_.pop_back();
  }
  lru_.push_front(key);
  b.lru = lru_.begin();
  held_ += size;
  return blocks_.emplace(key, std::move(b)).first->second;
}

void ChunkCache::get(std::int64_t index, void* sample, void* label) {
  std::lock_guard<std::mutex> guard(mu_);  // the prefetch thread and evaluation may share this store
  const Shard& s = split_.shard_of(index);
  const std::size_t shard = static_cast<std::size_t>(&s - split_.shards.data());
  const std::int64_t row = index - s.first, chunk = row / s.chunk_rows, in_chunk = row - chunk * s.chunk_rows;
  const Block& b = block(shard, chunk);
  if (sample) std::memcpy(sample, b.samples.data() + static_cast<std::size_t>(in_chunk) * sample_bytes_, sample_bytes_);
  if (label) std::memcpy(label, b.labels.data() + static_cast<std::size_t>(in_chunk) * label_bytes_, label_bytes_);
}

std::unique_ptr<SampleStore> make_store(const SplitIndex& split, Communicator& node, std::uint64_t cache_bytes,
                                        bool samples, bool labels) {
  if (split.tokens) return std::make_unique<TokenStore>(split);
  if (node_cache_bytes(split) <= cache_bytes) return std::make_unique<NodeCache>(split, node, samples, labels);
  return std::make_unique<ChunkCache>(split, cache_bytes / static_cast<std::uint64_t>(node.size()), samples, labels);
}

}  // namespace hpctrain
