// The reader at 1-4 ranks: over an epoch the ranks' batches are exactly the
// sampler's global batches (so independent of the rank count) and together
// cover the dataset (each sample once, or the documented wrap-around), with
// the right contents, through both stores; a restored state reproduces the
// stream; evaluation ranges cover a split exactly once; a bad value found by
// any rank fails every rank alike.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <limits>

#include "hpctrain/comm/mpi_handles.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/data/dataset.hpp"
#include "hpctrain/data/reader.hpp"
#include "hpctrain/data/shard_writer.hpp"
#include "hpctrain/data/synthetic.hpp"
#include "hpctrain/runtime/runtime.hpp"
#include "mpi_test_util.hpp"

namespace fs = std::filesystem;
using namespace hpctrain;

namespace {

SyntheticSpec spec() {
  SyntheticSpec s;
  s.sample_shape = {2, 3, 3};
  s.num_classes = 7;
  s.seed = 77;
  return s;
}

// Rank 0 writes a dataset (train: shards of the given sizes; val: 57 samples); all ranks get the root.
std::string make_dataset(const std::vector<std::int64_t>& train_shards, bool nan_in_last = false) {
  std::string root = (fs::temp_directory_path() / ("hpct_reader_" + std::to_string(getpid()))).string();
  broadcast_string(MPI_COMM_WORLD, root, 0);
  if (world_rank() == 0) {
    fs::remove_all(root);
    const SyntheticSpec syn = spec();
    ShardSpec sh;
    sh.sample_shape = syn.sample_shape;
    sh.num_classes = syn.num_classes;
    sh.chunk_rows = 16;
    sh.type = nan_in_last ? SampleType::f32 : SampleType::u8;
    if (nan_in_last) sh.norm_a = {1.0};
    const std::int64_t elems = 18;
    std::int64_t first = 0;
    auto write = [&](const fs::path& dir, int i, std::int64_t n, bool poison) {
      fs::create_directories(dir);
      ShardWriter w((dir / ("s" + std::to_string(i) + ".h5")).string(), sh, n);
      SyntheticSpec s2 = syn;
      s2.type = sh.type;
      std::vector<unsigned char> buf(static_cast<std::size_t>(n * elems) * sample_type_size(sh.type));
      std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
      for (std::int64_t k = 0; k < n; ++k) {
        synthetic_sample(s2, first + k, buf.data() + static_cast<std::size_t>(k * elems) * sample_type_size(sh.type));
        labels[static_cast<std::size_t>(k)] = synthetic_label(s2, first + k);
      }
      if (poison) reinterpret_cast<float*>(buf.data())[5] = std::numeric_limits<float>::infinity();
      w.append(n, buf.data(), labels.data());
      w.close();
      first += n;
    };
    for (std::size_t i = 0; i < train_shards.size(); ++i)
      write(fs::path(root) / "train", static_cast<int>(i), train_shards[i],
            nan_in_last && i + 1 == train_shards.size());
    first = 100000;  // val samples are different samples
    write(fs::path(root) / "val", 0, 57, false);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return root;
}

void remove_dataset(const std::string& root) {
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(root);
}

std::vector<std::int64_t> gather_all(const std::vector<std::int64_t>& mine) {
  const int n = world_size();
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(n)), displs(static_cast<std::size_t>(n));
  MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int i = 0; i < n; ++i) displs[static_cast<std::size_t>(i)] = total, total += counts[static_cast<std::size_t>(i)];
  std::vector<std::int64_t> all(static_cast<std::size_t>(total));
  MPI_Allgatherv(mine.data(), count, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T,
                 MPI_COMM_WORLD);
  return all;
}

// Checks every sample of a batch against the generator (uint8, scale 1/255).
void expect_contents(const Batch& b, std::int64_t index_offset = 0) {
  const SyntheticSpec syn = spec();
  std::vector<std::uint8_t> raw(18);
  for (std::size_t i = 0; i < b.indices.size(); ++i) {
    const std::int64_t global = b.indices[i] + index_offset;
    synthetic_sample(syn, global, raw.data());
    ASSERT_EQ(b.classes[i], synthetic_label(syn, global)) << "sample " << global;
    for (std::size_t k = 0; k < 18; ++k)
      ASSERT_FLOAT_EQ(b.samples[i * 18 + k], static_cast<float>(raw[k]) * static_cast<float>(1.0 / 255)) << global;
  }
}

}  // namespace

TEST(Reader, EpochCoversTheDatasetAndMatchesTheGlobalBatches) {
  const std::string root = make_dataset({150, 101, 60});  // 311 samples
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  ASSERT_EQ(index.train.total, 311);
  ASSERT_TRUE(index.val.has_value());
  auto node = node_host_communicator();
  const int r = world_rank(), n = world_size();
  const std::int64_t B = 24;  // divisible by 1, 2, 3, 4
  // Node cache; chunk caches of 2000 and 6000 bytes (the split: 6842; several chunks of a batch decoded together on 3
  // threads).
  for (const std::uint64_t cache : {std::uint64_t{1} << 30, std::uint64_t{2000}, std::uint64_t{6000}}) {
    for (Shuffle mode : {Shuffle::global, Shuffle::chunk, Shuffle::none}) {
      for (LastBatch last : {LastBatch::drop, LastBatch::wrap}) {
        SamplerOptions so;
        so.seed = 5;
        so.global_batch = B;
        so.shuffle = mode;
        so.last_batch = last;
        so.chunk_window = 2;
        so.chunk_bounds = index.train.chunk_bounds();
        const Sampler sampler(so);
        ReaderOptions ro;
        ro.cache_bytes = cache;
        ro.decode_threads = 3;
        ro.dp = r;
        ro.dp_size = n;
        Reader reader(index.train, *node, ro);
        EXPECT_STREQ(reader.store().kind(),
                     cache > 1000000 ? "node cache (shared memory)" : "HDF5 chunk cache (per rank)");
        reader.start(sampler, {5, 1, 0});
        std::vector<std::int64_t> mine;
        for (std::int64_t s = 0; s < sampler.steps_per_epoch(); ++s) {
          const Batch b = reader.next();
          ASSERT_EQ(b.epoch, 1);
          ASSERT_EQ(b.step, s);
          ASSERT_EQ(b.size, B / n);
          expect_contents(b);
          // The ranks' slices, joined in rank order, are the serial global batch.
          const auto joined = gather_all(b.indices);
          ASSERT_EQ(joined, sampler.batch(1, s, 0, 1)) << "step " << s;
          mine.insert(mine.end(), b.indices.begin(), b.indices.end());
        }
        auto all = gather_all(mine);
        std::sort(all.begin(), all.end());
        const auto distinct = static_cast<std::size_t>(std::unique(all.begin(), all.end()) - all.begin());
        if (last == LastBatch::drop) {
          EXPECT_EQ(all.size(), static_cast<std::size_t>((311 / B) * B));
          EXPECT_EQ(distinct, all.size());  // no sample twice
        } else {
          EXPECT_EQ(all.size(), static_cast<std::size_t>(((311 + B - 1) / B) * B));
          EXPECT_EQ(distinct, 311u);  // every sample, the first few of the epoch twice
        }
        EXPECT_GE(reader.wait_seconds(), 0.0);
      }
    }
  }
  remove_dataset(root);
}

TEST(Reader, RestoredStateReproducesTheStream) {
  const std::string root = make_dataset({100, 45});
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  auto node = node_host_communicator();
  SamplerOptions so;
  so.seed = 9;
  so.global_batch = 12;
  so.chunk_bounds = index.train.chunk_bounds();
  const Sampler sampler(so);  // 12 steps per epoch
  ReaderOptions ro;
  ro.dp = world_rank();
  ro.dp_size = world_size();
  ro.prefetch = 3;
  std::vector<Batch> run;
  SamplerState resume_at;
  {
    Reader reader(index.train, *node, ro);
    reader.start(sampler, {9, 0, 9});
    for (int i = 0; i < 6; ++i) {  // crosses into epoch 1
      if (i == 2) resume_at = reader.state();
      run.push_back(reader.next());
    }
  }
  EXPECT_EQ(resume_at.epoch, 0);
  EXPECT_EQ(resume_at.step, 11);
  EXPECT_EQ(run[4].epoch, 1);
  ro.prefetch = 0;  // also without the prefetch thread
  Reader again(index.train, *node, ro);
  again.start(sampler, resume_at);
  for (int i = 2; i < 6; ++i) {
    const Batch b = again.next();
    EXPECT_EQ(b.epoch, run[static_cast<std::size_t>(i)].epoch);
    EXPECT_EQ(b.step, run[static_cast<std::size_t>(i)].step);
    EXPECT_EQ(b.indices, run[static_cast<std::size_t>(i)].indices);
    EXPECT_EQ(b.samples, run[static_cast<std::size_t>(i)].samples);
  }
  remove_dataset(root);
}

TEST(Reader, EvaluationCoversTheSplitOnceInOrder) {
  const std::string root = make_dataset({40});
  const DatasetIndex index = load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
  auto node = node_host_communicator();
  ReaderOptions ro;
  ro.dp = world_rank();
  ro.dp_size = world_size();
  Reader reader(*index.val, *node, ro);
  std::vector<std::int64_t> mine;
  for (std::int64_t k = 0; k < reader.eval_batches(5); ++k) {
    const Batch b = reader.eval_batch(5, k);
    EXPECT_LE(b.size, 5);
    expect_contents(b, 100000);
    mine.insert(mine.end(), b.indices.begin(), b.indices.end());
  }
  EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
  const auto all = gather_all(mine);
  ASSERT_EQ(all.size(), 57u);
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], static_cast<std::int64_t>(i));
  remove_dataset(root);
}

TEST(Reader, EvalRangesPartitionExactly) {
  for (std::int64_t n : {0, 1, 5, 57, 1000})
    for (int d = 1; d <= 5; ++d) {
      std::int64_t expect = 0;
      for (int r = 0; r < d; ++r) {
        const auto [lo, hi] = eval_range(n, r, d);
        EXPECT_EQ(lo, expect);
        EXPECT_LE(hi - lo, n / d + 1);
        expect = hi;
      }
      EXPECT_EQ(expect, n);
    }
}

TEST(Reader, BadValueFoundByAnyRankFailsAllRanks) {
  // 5 shards; the Inf is in the last one, which rank 4 % size checks.
  const std::string root = make_dataset({10, 10, 10, 10, 10}, true);
  try {
    load_dataset_index(*host_communicator(MPI_COMM_WORLD, "world"), root);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_EQ(e.scope(), Scope::every_rank);
    EXPECT_NE(std::string(e.what()).find("s4.h5: /samples row 0 holds NaN or Inf"), std::string::npos) << e.what();
  }
  remove_dataset(root);
}
