// Implementation of the rank-count-independent sample order (data/sampler.hpp).
#include "hpctrain/data/sampler.hpp"

#include <algorithm>

#include "hpctrain/core/error.hpp"
#include "hpctrain/data/dataset.hpp"

namespace hpctrain {

SamplerOptions sampler_options(const Config& cfg, const SplitIndex& train) {
  SamplerOptions so;
  so.seed = cfg.run.seed;
  so.global_batch = cfg.train.global_batch;
  so.shuffle = cfg.data.shuffle;
  so.last_batch = cfg.data.last_batch;
  so.chunk_window = cfg.data.chunk_window;
  so.chunk_bounds = train.chunk_bounds();
  return so;
}

Sampler::Sampler(SamplerOptions options) : options_(std::move(options)) {
  HPCT_CHECK(options_.chunk_bounds.size() >= 2 && options_.chunk_bounds.front() == 0, "sampler needs chunk bounds");
  HPCT_CHECK(options_.global_batch > 0 && options_.chunk_window > 0, "sampler batch and window must be positive");
  n_ = options_.chunk_bounds.back();
  if (n_ < options_.global_batch)
    throw bad_input("the training split has " + std::to_string(n_) + " samples, fewer than one global batch of " +
                    std::to_string(options_.global_batch) + " ([train] global_batch)");
  steps_ = options_.last_batch == LastBatch::drop ? n_ / options_.global_batch
                                                  : (n_ + options_.global_batch - 1) / options_.global_batch;
}

std::uint64_t Sampler::epoch_key(std::uint64_t seed, std::int64_t epoch) {
  return splitmix64(splitmix64(seed) ^ static_cast<std::uint64_t>(epoch));
}

const Sampler::EpochLayout& Sampler::layout(std::int64_t epoch) const {
  if (layout_.epoch == epoch) return layout_;
  const auto& b = options_.chunk_bounds;
  const std::int64_t chunks = static_cast<std::int64_t>(b.size()) - 1;
  const Permutation order(static_cast<std::uint64_t>(chunks),
                          splitmix64(epoch_key(options_.seed, epoch) ^ 0x6368756E6Bull));
  layout_.chunk_order.resize(static_cast<std::size_t>(chunks));
  for (std::int64_t j = 0; j < chunks; ++j)
    layout_.chunk_order[static_cast<std::size_t>(j)] = static_cast<std::int64_t>(order(static_cast<std::uint64_t>(j)));
  layout_.window_start.clear();
  std::int64_t pos = 0;
  for (std::int64_t j = 0; j < chunks; ++j) {
    if (j % options_.chunk_window == 0) layout_.window_start.push_back(pos);
    const auto c = static_cast<std::size_t>(layout_.chunk_order[static_cast<std::size_t>(j)]);
    pos += b[c + 1] - b[c];
  }
  layout_.window_start.push_back(pos);
  layout_.epoch = epoch;
  return layout_;
}

std::int64_t Sampler::at(std::int64_t epoch, std::int64_t p) const {
  switch (options_.shuffle) {
    case Shuffle::none: return p;
    case Shuffle::global:
      return static_cast<std::int64_t>(
          Permutation(static_cast<std::uint64_t>(n_), epoch_key(options_.seed, epoch))(static_cast<std::uint64_t>(p)));
    case Shuffle::chunk: {
      std::lock_guard<std::mutex> lock(mu_);
      const EpochLayout& l = layout(epoch);
      const auto it = std::upper_bound(l.window_start.begin(), l.window_start.end(), p) - 1;
      const std::int64_t w = it - l.window_start.begin();
      const std::int64_t size = *(it + 1) - *it;
      const Permutation inside(
          static_cast<std::uint64_t>(size),
          splitmix64(epoch_key(options_.seed, epoch) ^ (0x77696E646F77ull + static_cast<std::uint64_t>(w))));
      std::int64_t off = static_cast<std::int64_t>(inside(static_cast<std::uint64_t>(p - *it)));
      const auto& b = options_.chunk_bounds;
      for (std::int64_t j = w * options_.chunk_window;; ++j) {
        const auto c = static_cast<std::size_t>(l.chunk_order[static_cast<std::size_t>(j)]);
        const std::int64_t len = b[c + 1] - b[c];
        if (off < len) return b[c] + off;
        off -= len;
      }
    }
  }
  return p;
}

std::vector<std::int64_t> Sampler::batch(std::int64_t epoch, std::int64_t step, int dp, int dp_size) const {
  HPCT_CHECK(options_.global_batch % dp_size == 0, "global batch not divisible by the data-parallel size");
  HPCT_CHECK(step >= 0 && step < steps_, "step " + std::to_string(step) + " outside the epoch");
  const std::int64_t per_rank = options_.global_batch / dp_size;
  const std::int64_t first = step * options_.global_batch + dp * per_rank;
  std::vector<std::int64_t> out(static_cast<std::size_t>(per_rank));
  for (std::int64_t i = 0; i < per_rank; ++i) out[static_cast<std::size_t>(i)] = at(epoch, (first + i) % n_);
  return out;
}

}  // namespace hpctrain
