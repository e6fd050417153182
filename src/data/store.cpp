// Implementation of the sample stores (data/store.hpp).
#include "hpctrain/data/store.hpp"

#include "hpctrain/data/token_store.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>

#include "hpctrain/core/error.hpp"

namespace hpctrain {

std::size_t label_bytes(const SplitIndex& split) {
  return (split.classification ? sizeof(std::int32_t) : sizeof(float)) * static_cast<std::size_t>(split.label_width);
}

std::uint64_t node_cache_bytes(const SplitIndex& split) {
  if (split.tokens)
    return static_cast<std::uint64_t>(split.stream_tokens ? split.stream_tokens : split.total) *
           static_cast<std::uint64_t>(split.token_bits / 8);
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

ChunkCache::ChunkCache(const SplitIndex& split, std::uint64_t capacity_bytes, bool samples, bool labels,
                       int decode_threads)
    : split_(split),
      capacity_(capacity_bytes),
      want_samples_(samples),
      want_labels_(labels),
      sample_bytes_(static_cast<std::size_t>(split.sample_bytes())),
      label_bytes_(label_bytes(split)),
      threads_(std::max(1, decode_threads)) {
  const bool hdf5_only = decode_threads < 0;
  std::lock_guard<std::mutex> lock(h5::lock());
  open_.resize(split.shards.size());
  for (std::size_t i = 0; i < split.shards.size(); ++i) {
    OpenShard& o = open_[i];
    o.file = h5::open_file(split.shards[i].path);
    if (samples) {
      o.samples = h5::Id(CHECK_H5(H5Dopen2(o.file.get(), "samples", H5P_DEFAULT)));
      h5::Id holder;
      o.sample_decoder = std::make_unique<ChunkDecoder>(
          o.samples.get(), raw_sample_type(o.samples.get(), split.sample_type, &holder), hdf5_only);
    }
    if (labels) {
      o.labels = h5::Id(CHECK_H5(H5Dopen2(o.file.get(), "labels", H5P_DEFAULT)));
      o.label_decoder = std::make_unique<ChunkDecoder>(o.labels.get(), label_mem_type(split));
    }
  }
}

std::string ChunkCache::describe() const {
  const bool direct = !open_.empty() && open_[0].sample_decoder && open_[0].sample_decoder->direct();
  std::string d = kind();
  if (direct)
    d += "; gzip chunks inflated by " + std::string(ChunkDecoder::inflater()) + " on " + std::to_string(threads_) +
         " thread(s)";
  else if (!open_.empty() && open_[0].sample_decoder)
    d += "; chunks decoded by HDF5 (" + open_[0].sample_decoder->why_not() + ")";
  return d;
}

void ChunkCache::load(std::size_t shard, std::int64_t chunk, Block& b, Scratch& tmp) const {
  const Shard& s = split_.shards[shard];
  const std::int64_t first = chunk * s.chunk_rows, rows = std::min(s.chunk_rows, s.rows - first);
  const OpenShard& o = open_[shard];
  if (want_samples_) {
    b.samples.resize(static_cast<std::size_t>(rows) * sample_bytes_);
    o.sample_decoder->read(static_cast<hsize_t>(first), static_cast<hsize_t>(rows), b.samples.data(), tmp.raw,
                           tmp.plain);
  }
  if (want_labels_) {  // (label chunks may be larger than sample chunks: read by rows through HDF5)
    b.labels.resize(static_cast<std::size_t>(rows) * label_bytes_);
    std::lock_guard<std::mutex> lock(h5::lock());
    h5::read_rows(o.labels.get(), label_mem_type(split_), static_cast<hsize_t>(first), static_cast<hsize_t>(rows),
                  b.labels.data());
  }
}

ChunkCache::Block& ChunkCache::insert(std::uint64_t key, Block&& b) {
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

ChunkCache::Block& ChunkCache::block(std::size_t shard, std::int64_t chunk) {
  const std::uint64_t key = (static_cast<std::uint64_t>(shard) << 40) | static_cast<std::uint64_t>(chunk);
  auto it = blocks_.find(key);
  if (it != blocks_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second;
  }
  Block b = std::move(spare_);  // reuse an evicted block's buffers: no allocation, no zero-fill
  load(shard, chunk, b, scratch_);
  return insert(key, std::move(b));
}

std::uint64_t ChunkCache::key_of(std::int64_t index, std::size_t* shard, std::int64_t* chunk) const {
  const Shard& s = split_.shard_of(index);
  *shard = static_cast<std::size_t>(&s - split_.shards.data());
  *chunk = (index - s.first) / s.chunk_rows;
  return (static_cast<std::uint64_t>(*shard) << 40) | static_cast<std::uint64_t>(*chunk);
}

void ChunkCache::prefetch(const std::vector<std::int64_t>& indices) {
  struct Want {
    std::uint64_t key;
    std::size_t shard;
    std::int64_t chunk;
  };
  std::vector<Want> missing;
  {
    std::lock_guard<std::mutex> guard(mu_);
    std::uint64_t bytes = 0;
    for (std::int64_t i : indices) {
      Want w{};
      w.key = key_of(i, &w.shard, &w.chunk);
      if (blocks_.count(w.key) ||
          std::any_of(missing.begin(), missing.end(), [&](const Want& m) { return m.key == w.key; }))
        continue;
      bytes += static_cast<std::uint64_t>(split_.shards[w.shard].chunk_rows) * (sample_bytes_ + label_bytes_);
      if (bytes > capacity_ / 2) break;  // what fits without evicting the batch's own chunks
      missing.push_back(w);
    }
  }
  if (missing.size() < 2 || threads_ < 2 || !open_[0].sample_decoder || !open_[0].sample_decoder->direct())
    return;  // get() loads them one by one as before
  std::vector<Block> loaded(missing.size());
  std::atomic<std::size_t> next{0};
  std::string error;
  std::mutex error_mu;
  auto work = [&] {
    Scratch tmp;
    for (std::size_t j; (j = next++) < missing.size();) try {
        load(missing[j].shard, missing[j].chunk, loaded[j], tmp);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(error_mu);
        error = e.what();
      }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::min<int>(threads_, static_cast<int>(missing.size())); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (!error.empty()) throw Error(ExitCode::internal, Scope::this_rank, error);
  std::lock_guard<std::mutex> guard(mu_);
  for (std::size_t j = 0; j < missing.size(); ++j)
    if (!blocks_.count(missing[j].key)) insert(missing[j].key, std::move(loaded[j]));
}

void ChunkCache::get(std::int64_t index, void* sample, void* label) {
  std::lock_guard<std::mutex> guard(mu_);  // the prefetch thread and evaluation may share this store
  std::size_t shard = 0;
  std::int64_t chunk = 0;
  key_of(index, &shard, &chunk);
  const Shard& s = split_.shards[shard];
  const std::int64_t in_chunk = index - s.first - chunk * s.chunk_rows;
  const Block& b = block(shard, chunk);
  if (sample) std::memcpy(sample, b.samples.data() + static_cast<std::size_t>(in_chunk) * sample_bytes_, sample_bytes_);
  if (label) std::memcpy(label, b.labels.data() + static_cast<std::size_t>(in_chunk) * label_bytes_, label_bytes_);
}

std::unique_ptr<SampleStore> make_store(const SplitIndex& split, Communicator& node, std::uint64_t cache_bytes,
                                        bool samples, bool labels, int decode_threads, DepthSlab slab) {
  const bool fits = node_cache_bytes(split) <= cache_bytes;
  if (slab.on() && !fits) return std::make_unique<SlabStore>(split, samples, labels);
  if (split.tokens && fits) return std::make_unique<TokenNodeCache>(split, node);
  if (split.tokens)
    return std::make_unique<TokenBlockCache>(split, cache_bytes / static_cast<std::uint64_t>(node.size()));
  if (fits) return std::make_unique<NodeCache>(split, node, samples, labels);
  if (decode_threads == 0)
    decode_threads = std::clamp(static_cast<int>(std::thread::hardware_concurrency()) / node.size(), 1, 8);
  return std::make_unique<ChunkCache>(split, cache_bytes / static_cast<std::uint64_t>(node.size()), samples, labels,
                                      decode_threads);
}

}  // namespace hpctrain
