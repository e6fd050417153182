// The reader that feeds training: batches of normalized float32 samples and
// labels for this data-parallel rank, in the sampler's order, prepared ahead
// by a prefetch thread into a bounded queue; the time training waits for
// data is measured. Also reads evaluation splits in order, each rank a
// contiguous range, with no sample read twice or lost.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "hpctrain/data/dataset.hpp"
#include "hpctrain/data/sampler.hpp"
#include "hpctrain/data/store.hpp"

namespace hpctrain {

struct Batch {
  std::int64_t epoch = 0, step = 0;   // training position (eval: step = batch number)
  std::int64_t size = 0;              // samples on this rank
  std::vector<std::int64_t> indices;  // sample indices within the split (token windows: their first token)
  std::vector<float> samples;         // size x sample_elems, normalized (empty for token ids)
  std::vector<std::int32_t> ids;      // token datasets: size x block_size token ids, instead of samples
  std::vector<std::int32_t> classes;  // classification labels (size x label_width: a token window's T targets)
  std::vector<float> targets;         // regression targets (size x label_width)
};

// Reads raw samples from `store` and fills `batch` (normalizing samples); with `slab` on, each
// sample's depth slab only (batch.samples: size x sample_elems / slab.size).
void assemble_batch(const SplitIndex& split, SampleStore& store, const std::vector<std::int64_t>& indices, bool samples,
                    bool labels, Batch& batch, const DepthSlab& slab = {});

// Training-time augmentation of image samples ([C, H, W] or [H, W]), as torchvision's
// RandomCrop(size, padding=crop_pad) then RandomHorizontalFlip(): the padding is the raw value 0
// (normalized: the channel's offset); each sample's draws are a pure function of seed, epoch and
// the sample's index in the split, so neither the rank count nor a resume changes them.
struct Augmentation {
  int crop_pad = 0;  // 0: no crop
  bool flip = false;
  std::uint64_t seed = 0;
  bool on() const { return crop_pad > 0 || flip; }
};
// bad_input when `split`'s samples are not images.
void check_augmentation(const SplitIndex& split, const Augmentation& a);
void augment_batch(const SplitIndex& split, const Augmentation& a, Batch& batch);

// This rank's share [begin, end) of an evaluation split of n samples over D ranks:
// contiguous, in order, sizes differing by at most one, together exactly [0, n).
std::pair<std::int64_t, std::int64_t> eval_range(std::int64_t n, int dp, int dp_size);

struct ReaderOptions {
  bool samples = true;  // pipeline stages may need only one of the two
  bool labels = true;
  int prefetch = 2;  // batches prepared ahead; 0 = read when asked
  std::uint64_t cache_bytes = 2ull << 30;
  int decode_threads = 0;  // a chunk cache's inflating threads; 0 = automatic
  int dp = 0, dp_size = 1;
  DepthSlab slab;        // [parallel] spatial_parallel: this rank's depth slab of every sample
  Augmentation augment;  // training batches only
};

class Reader {
 public:
  // Collective over `node` (the ranks sharing this node's memory). `split`
  // must outlive the reader.
  Reader(const SplitIndex& split, Communicator& node, ReaderOptions options);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  // Training stream: batches of global-batch slices from `sampler`, starting at `from`.
  void start(const Sampler& sampler, SamplerState from);
  Batch next();  // blocks until the next batch is ready
  // Hands a used batch back so its buffers are reused (no allocation or
  // zero-filling of a new batch per step). Optional.
  void recycle(Batch&& batch);
  SamplerState state() const;                      // position of the batch next() returns next
  double wait_seconds() const { return wait_s_; }  // total time next() waited

  // Evaluation: this rank's batches of at most `batch` samples, in order.
  std::int64_t eval_batches(std::int64_t batch) const;
  Batch eval_batch(std::int64_t batch_size, std::int64_t number);

  const SplitIndex& split() const { return split_; }
  const SampleStore& store() const { return *store_; }

 private:
  void produce();
  void stop();
  // What the store is asked for: the samples themselves, or for a token split the first token of
  // each window (data/token_dataset.hpp; epoch < 0: evaluation windows).
  std::vector<std::int64_t> positions(std::int64_t epoch, std::vector<std::int64_t> samples) const;

  const SplitIndex& split_;
  ReaderOptions options_;
  std::unique_ptr<SampleStore> store_;
  const Sampler* sampler_ = nullptr;
  SamplerState next_;      // next position to hand out
  SamplerState produced_;  // next position the producer prepares

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Batch> queue_;
  std::vector<Batch> spare_;  // recycled batches whose buffers produce() reuses
  std::string error_;
  bool stop_ = false;
  std::thread thread_;
  double wait_s_ = 0;
};

}  // namespace hpctrain
