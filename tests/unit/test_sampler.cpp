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
#include "hpctrain/data/reader.hpp"
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

// Augmentation (data/reader.hpp): every output sample is one of the (2p + 1)^2 x 2 crops and
// flips of the zero-padded image (the padding the channel's normalized zero), the draw depends on
// seed, epoch and index alone (not the sample's place in the batch), every crop and both flips
// occur, and off is the identity. Negative control: an unpadded identity is not among another
// image's candidates.
namespace {
std::vector<std::vector<float>> candidates(const std::vector<float>& img, int c, int h, int w, int p,
                                           const std::vector<float>& zero) {
  std::vector<std::vector<float>> out;
  for (int dy = -p; dy <= p; ++dy)
    for (int dx = -p; dx <= p; ++dx)
      for (int flip = 0; flip < 2; ++flip) {
        std::vector<float> o(img.size());
        for (int k = 0; k < c; ++k)
          for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) {  // crop the padded image at (dy + p, dx + p), then flip the crop
              const int cx = flip ? w - 1 - x : x, sy = y + dy, sx = cx + dx;
              o[(k * h + y) * w + x] = sy >= 0 && sy < h && sx >= 0 && sx < w ? img[(k * h + sy) * w + sx] : zero[k];
            }
        out.push_back(o);
      }
  return out;
}
}  // namespace

TEST(Augmentation, RandomCropAndFlipAsTorchvisionAndKeyedBySample) {
  SplitIndex split;
  split.name = "train";
  split.sample_shape = {2, 4, 5};
  split.offset = {0.5f, -0.25f};
  split.scale = {1, 1};
  const int c = 2, h = 4, w = 5, p = 2, n = 64, e = c * h * w;
  Batch b;
  b.size = n;
  b.epoch = 3;
  for (int i = 0; i < n; ++i) b.indices.push_back(1000 + i);
  for (int i = 0; i < n * e; ++i) b.samples.push_back(static_cast<float>(i % 97) + 1);
  const Batch original = b;
  const Augmentation a{p, true, 42};
  augment_batch(split, a, b);
  std::set<std::vector<float>> seen;
  for (int i = 0; i < n; ++i) {
    const std::vector<float> img(original.samples.begin() + i * e, original.samples.begin() + (i + 1) * e);
    const std::vector<float> got(b.samples.begin() + i * e, b.samples.begin() + (i + 1) * e);
    const auto cand = candidates(img, c, h, w, p, split.offset);
    const auto at = std::find(cand.begin(), cand.end(), got);
    ASSERT_NE(at, cand.end()) << "sample " << i << " is no crop and flip of its padded image";
    seen.insert(std::vector<float>{static_cast<float>(at - cand.begin())});
  }
  EXPECT_GT(seen.size(), 30u);  // of 50 (crop, flip) choices, over 64 samples
  // The same sample elsewhere in a batch (another rank count) draws the same; another epoch differs.
  Batch one;
  one.size = 1;
  one.epoch = 3;
  one.indices = {original.indices[7]};
  one.samples.assign(original.samples.begin() + 7 * e, original.samples.begin() + 8 * e);
  augment_batch(split, a, one);
  EXPECT_TRUE(std::equal(one.samples.begin(), one.samples.end(), b.samples.begin() + 7 * e));
  Batch later = original;
  later.epoch = 4;
  augment_batch(split, a, later);
  EXPECT_NE(later.samples, b.samples);
  Batch off = original;
  augment_batch(split, Augmentation{0, false, 42}, off);
  EXPECT_EQ(off.samples, original.samples);
  // Negative control: image 0's candidates do not hold image 1 as it is.
  const auto cand0 =
      candidates(std::vector<float>(original.samples.begin(), original.samples.begin() + e), c, h, w, p, split.offset);
  EXPECT_EQ(std::find(cand0.begin(), cand0.end(),
                      std::vector<float>(original.samples.begin() + e, original.samples.begin() + 2 * e)),
            cand0.end());
  split.sample_shape = {8};
  EXPECT_THROW(check_augmentation(split, a), Error);
}
