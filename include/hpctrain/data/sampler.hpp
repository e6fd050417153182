// The sample order: which samples form global batch `step` of epoch `epoch`,
// and which contiguous slice of it each data-parallel rank takes. A pure
// function of (seed, epoch, step) and the dataset layout, independent of the
// number of ranks, so a run can resume on a different rank count.
//
//   order_e(p), p in [0, n):   the p-th sample of epoch e
//     none:   p
//     global: Permutation(n, key_e)(p)
//     chunk:  chunks (HDF5 chunk rows of each shard) are permuted with
//             Permutation(C, splitmix64(key_e ^ 0x6368756E6B)); consecutive
//             groups of `window` permuted chunks form windows; inside window w
//             the samples are permuted with Permutation(size_w,
//             splitmix64(key_e ^ (0x77696E646F77 + w))).
//   key_e = splitmix64(splitmix64(seed) ^ e)
//   global batch s = order_e(s*B) .. order_e(s*B + B - 1), positions taken
//     modulo n (only the wrapped last batch of last_batch = wrap exceeds n);
//   data-parallel rank dp of D takes positions [s*B + dp*B/D, s*B + (dp+1)*B/D).
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "hpctrain/config/config.hpp"
#include "hpctrain/data/permutation.hpp"

namespace hpctrain {

struct SamplerOptions {
  std::uint64_t seed = 0;
  std::int64_t global_batch = 1;
  Shuffle shuffle = Shuffle::global;
  LastBatch last_batch = LastBatch::drop;
  int chunk_window = 16;                   // chunks per window (chunk mode)
  std::vector<std::int64_t> chunk_bounds;  // {0, end of chunk 0, ..., n}: defines n and the chunks
};

// Where a reader is in the sample stream: all a checkpoint must store.
struct SamplerState {
  std::uint64_t seed = 0;
  std::int64_t epoch = 0;
  std::int64_t step = 0;  // next global batch within the epoch
};

// The options [run] seed, [train] global_batch and [data] shuffle, last_batch
// and chunk_window give for the train split `train`.
struct SplitIndex;
SamplerOptions sampler_options(const Config& cfg, const SplitIndex& train);

class Sampler {
 public:
  explicit Sampler(SamplerOptions options);  // bad_input when n < global_batch
  std::int64_t size() const { return n_; }
  std::int64_t steps_per_epoch() const { return steps_; }
  const SamplerOptions& options() const { return options_; }

  // The sample at position p (0 <= p < n) of epoch `epoch`'s order.
  std::int64_t at(std::int64_t epoch, std::int64_t p) const;
  // The dp-th slice (of D) of global batch `step` of `epoch`.
  std::vector<std::int64_t> batch(std::int64_t epoch, std::int64_t step, int dp, int dp_size) const;

  static std::uint64_t epoch_key(std::uint64_t seed, std::int64_t epoch);

 private:
  struct EpochLayout {  // chunk mode: the permuted chunks and their windows for one epoch
    std::int64_t epoch = -1;
    std::vector<std::int64_t> chunk_order;
    std::vector<std::int64_t> window_start;  // position of each window's first sample, plus n at the end
  };
  const EpochLayout& layout(std::int64_t epoch) const;

  SamplerOptions options_;
  std::int64_t n_ = 0;
  std::int64_t steps_ = 0;
  mutable std::mutex mu_;
  mutable EpochLayout layout_;
};

}  // namespace hpctrain
