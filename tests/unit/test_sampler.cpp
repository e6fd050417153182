// The sample order: the keyed permutation is a bijection; every shuffle mode
// visits each sample once per epoch, differs between epochs, is reproducible,
// splits global batches into contiguous per-rank slices, and does not depend
// on the number of data-parallel ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "hpctrain/core/error.hpp"
#include "hpctrain/data/permutation.hpp"
#include "hpctrain/data/sampler.hpp"

using namespace hpctrain;

namespace {
SamplerOptions options(std::int64_t n, std::int64_t batch, Shuffle shuffle, LastBatch last = LastBatch::drop,
                       std::int64_t chunk = 10) {
  SamplerOptions o;
  o.seed = 1234;
  o.global_batch = batch;
  o.shuffle = shuffle;
  o.last_batch = last;
  o.chunk_window = 3;
  for (std::int64_t b = 0; b < n; b += chunk) o.chunk_bounds.push_back(b);
  o.chunk_bounds.push_back(n);
  return o;
}

std::vector<std::int64_t> epoch_order(const Sampler& s, std::int64_t epoch) {
  std::vector<std::int64_t> out;
  for (std::int64_t p = 0; p < s.size(); ++p) out.push_back(s.at(epoch, p));
  return out;
}
}  // namespace

TEST(Permutation, IsABijectionForManySizes) {
  for (std::uint64_t n : {1ull, 2ull, 3ull, 5ull, 17ull, 64ull, 1000ull, 65537ull}) {
    const Permutation p(n, 99);
    std::vector<bool> seen(n, false);
    for (std::uint64_t i = 0; i < n; ++i) {
      const auto v = p(i);
      ASSERT_LT(v, n);
      ASSERT_FALSE(seen[v]) << "n=" << n << " value " << v << " twice";
      seen[v] = true;
    }
  }
}

TEST(Permutation, DependsOnTheKeyAndShuffles) {
  const Permutation a(1000, 1), b(1000, 2);
  int same = 0, fixed = 0;
  for (std::uint64_t i = 0; i < 1000; ++i) {
    same += a(i) == b(i);
    fixed += a(i) == i;
  }
  EXPECT_LT(same, 20);
  EXPECT_LT(fixed, 20);
}

TEST(Sampler, EveryModeVisitsEachSampleOncePerEpoch) {
  for (Shuffle mode : {Shuffle::none, Shuffle::global, Shuffle::chunk}) {
    const Sampler s(options(257, 16, mode));
    for (std::int64_t e : {0, 1, 7}) {
      auto order = epoch_order(s, e);
      std::sort(order.begin(), order.end());
      std::vector<std::int64_t> all(257);
      std::iota(all.begin(), all.end(), 0);
      EXPECT_EQ(order, all) << "mode " << static_cast<int>(mode) << " epoch " << e;
    }
  }
}

TEST(Sampler, OrderDiffersBetweenEpochsAndIsReproducible) {
  for (Shuffle mode : {Shuffle::global, Shuffle::chunk}) {
    const Sampler a(options(500, 10, mode)), b(options(500, 10, mode));
    EXPECT_EQ(epoch_order(a, 3), epoch_order(b, 3));
    EXPECT_NE(epoch_order(a, 0), epoch_order(a, 1));
    auto other = options(500, 10, mode);
    other.seed = 4321;
    EXPECT_NE(epoch_order(a, 0), epoch_order(Sampler(other), 0));
  }
  EXPECT_EQ(epoch_order(Sampler(options(50, 10, Shuffle::none)), 5)[7], 7);
}

TEST(Sampler, ChunkModeStaysInsideAWindowOfChunks) {
  // 10-sample chunks, 3 chunks per window: each run of window samples spans at most 3 chunks.
  const Sampler s(options(300, 10, Shuffle::chunk));
  const auto order = epoch_order(s, 2);
  for (std::size_t w = 0; w < 300; w += 30) {
    std::set<std::int64_t> chunks;
    for (std::size_t i = w; i < w + 30; ++i) chunks.insert(order[i] / 10);
    EXPECT_EQ(chunks.size(), 3u) << "window at " << w;
  }
}

TEST(Sampler, DropAndWrap) {
  const Sampler drop(options(103, 10, Shuffle::global, LastBatch::drop));
  EXPECT_EQ(drop.steps_per_epoch(), 10);
  const Sampler wrap(options(103, 10, Shuffle::global, LastBatch::wrap));
  EXPECT_EQ(wrap.steps_per_epoch(), 11);
  // The wrapped last batch = the epoch's last 3 samples, then its first 7.
  const auto last = wrap.batch(4, 10, 0, 1);
  ASSERT_EQ(last.size(), 10u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(last[static_cast<std::size_t>(i)], wrap.at(4, 100 + i));
  for (int i = 3; i < 10; ++i) EXPECT_EQ(last[static_cast<std::size_t>(i)], wrap.at(4, i - 3));
}

TEST(Sampler, RankSlicesAreContiguousAndIndependentOfRankCount) {
  const Sampler s(options(1000, 24, Shuffle::chunk));
  for (std::int64_t step : {0, 5, 40}) {
    const auto global = s.batch(1, step, 0, 1);
    for (int d : {1, 2, 3, 4, 6}) {
      std::vector<std::int64_t> joined;
      for (int r = 0; r < d; ++r) {
        const auto part = s.batch(1, step, r, d);
        EXPECT_EQ(part.size(), static_cast<std::size_t>(24 / d));
        joined.insert(joined.end(), part.begin(), part.end());
      }
      EXPECT_EQ(joined, global) << "D=" << d << " step " << step;
    }
  }
}

TEST(Sampler, FewerSamplesThanOneGlobalBatchIsBadInput) {
  try {
    Sampler s(options(100, 128, Shuffle::global));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("100 samples, fewer than one global batch of 128"), std::string::npos);
  }
}
