// Token stores (data/token_store.hpp) and window positions (data/token_dataset.hpp): the streamed
// block cache hands out the windows of the stream written (across shard and block boundaries,
// HDF5 uint8 shards and llm.c uint16 .bin shards) while never holding more than its capacity; an id
// outside the vocabulary is one line naming the file and position; random windows are a pure
// function of (seed, epoch, window) inside the stream and not on the grid.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "hpctrain/core/error.hpp"
#include "hpctrain/data/llmc_shards.hpp"
#include "hpctrain/data/text_import.hpp"
#include "hpctrain/data/token_dataset.hpp"
#include "hpctrain/data/token_store.hpp"
#include "hpctrain/io/h5.hpp"

namespace fs = std::filesystem;
using namespace hpctrain;

namespace {

class TokenStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    root = fs::temp_directory_path() / ("hpct_ts_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
    fs::create_directories(root / "train");
  }
  void TearDown() override { fs::remove_all(root); }

  // llm.c's write_datafile: 256 int32 (magic 20240520, version 1, count), then uint16 ids.
  void write_bin(const fs::path& file, const std::vector<std::uint32_t>& ids) {
    std::vector<std::int32_t> header(256, 0);
    header[0] = kLlmcGpt2Magic, header[1] = 1, header[2] = static_cast<std::int32_t>(ids.size());
    std::vector<std::uint16_t> t(ids.begin(), ids.end());
    std::ofstream out(file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(header.data()), 1024);
    out.write(reinterpret_cast<const char*>(t.data()), static_cast<std::streamsize>(t.size() * 2));
  }
  // Every window [start, start + T] of `want` equals what the store hands out.
  static void expect_windows(TokenBlockCache& store, const std::vector<std::uint32_t>& want, std::int64_t t,
                             std::int64_t stride) {
    std::vector<std::int32_t> sample(static_cast<std::size_t>(t)), label(static_cast<std::size_t>(t));
    for (std::int64_t start = 0; start + t + 1 <= static_cast<std::int64_t>(want.size()); start += stride) {
      store.get(start, sample.data(), label.data());
      for (std::int64_t i = 0; i < t; ++i) {
        ASSERT_EQ(sample[i], static_cast<std::int32_t>(want[start + i])) << "window at " << start << ", token " << i;
        ASSERT_EQ(label[i], static_cast<std::int32_t>(want[start + i + 1])) << "window at " << start;
      }
    }
  }
  fs::path root;
};

TEST_F(TokenStoreTest, BlockCacheReadsHdf5ShardsAcrossBoundariesWithinItsCapacity) {
  std::vector<std::uint32_t> all;
  const std::int64_t rows[] = {5000, 3001, 7000};
  for (int s = 0; s < 3; ++s) {
    std::vector<std::uint32_t> ids(static_cast<std::size_t>(rows[s]));
    for (auto& v : ids) v = static_cast<std::uint32_t>((all.size() + (&v - ids.data())) * 31 % 251);
    all.insert(all.end(), ids.begin(), ids.end());
    write_token_shard((root / "train" / ("t" + std::to_string(s) + ".h5")).string(), ids, Vocabulary::byte());
  }
  DatasetIndex index = scan_dataset(root.string());
  set_block_size(index, 100);
  ASSERT_EQ(index.train.stream_tokens, 15001);
  TokenBlockCache store(index.train, 3 * 4096);  // uint8: three 4096-token blocks
  EXPECT_EQ(store.block_tokens(), 4096);
  expect_windows(store, all, 100, 7);  // every 7th start: windows across both shard ends and every block end
  EXPECT_LE(store.peak_held_bytes(), 3u * 4096);
  EXPECT_EQ(store.bytes_read_from_files(), 15001u);  // in order: each of the 4 blocks read once
  expect_windows(store, all, 100, 1000);
  EXPECT_GT(store.bytes_read_from_files(), 15001u);  // block 0 was evicted and read again
}

TEST_F(TokenStoreTest, BlockCacheReadsLlmcShardsAndNamesABadId) {
  std::vector<std::uint32_t> a(9000), b(6000);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<std::uint32_t>(i * 7919 % 50257);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint32_t>((i + 9000) * 7919 % 50257);
  write_bin(root / "x_train_0.bin", a);
  write_bin(root / "x_train_1.bin", b);
  fs::remove_all(root / "train");
  DataConfig data;
  data.path = root.string();
  DatasetIndex index = scan_llmc_dataset(data);
  set_block_size(index, 5000);  // blocks of 8192 tokens (the power of two >= T + 1)
  std::vector<std::uint32_t> all(a);
  all.insert(all.end(), b.begin(), b.end());
  TokenBlockCache store(index.train, 1);  // below two blocks: holds two
  EXPECT_EQ(store.block_tokens(), 8192);
  expect_windows(store, all, 5000, 997);
  EXPECT_LE(store.peak_held_bytes(), 2u * 8192 * 2);

  b[1234] = 60000;  // outside GPT-2's 50,257 ids
  write_bin(root / "x_train_1.bin", b);
  TokenBlockCache fresh(index.train, 1 << 20);
  std::vector<std::int32_t> sample(5000), label(5000);
  fresh.get(0, sample.data(), label.data());  // (the first block holds no bad id)
  try {
    fresh.get(9000, sample.data(), label.data());
    FAIL() << "an id outside the vocabulary was handed out";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), (root / "x_train_1.bin").string() +
                                         ": token 1234 holds token id 60000, outside the vocabulary [0, "
                                         "vocab_size = 50257)");
  }
}

// Shards record their largest id (max_token_id), the split the largest of them, and the value checks
// and the block cache hold the shards to it: a model may then have fewer embedding rows than the
// vocabulary has ids (Gemma 3 1B's). A shard without the attribute leaves the split's unknown; one
// outside the vocabulary is refused.
TEST_F(TokenStoreTest, ShardsRecordTheirLargestIdAndAreHeldToIt) {
  std::vector<std::uint32_t> a(3000, 7), b(3000, 9);
  a[100] = 120, b[2000] = 97;
  const std::string pa = (root / "train" / "t0.h5").string(), pb = (root / "train" / "t1.h5").string();
  write_token_shard(pa, a, Vocabulary::byte());
  write_token_shard(pb, b, Vocabulary::byte());
  DatasetIndex index = scan_dataset(root.string());
  EXPECT_EQ(index.train.num_classes, 256);
  EXPECT_EQ(index.train.max_id, 120);
  EXPECT_EQ(index.train.id_limit(), 121);
  EXPECT_EQ(check_token_values(index.train, 0, 2), "");

  // A shard whose values exceed the largest id recorded: named with the position, checked or streamed.
  {
    h5::Id file(H5Fopen(pb.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    H5Adelete(file.get(), "max_token_id");
    h5::write_int_attribute(file.get(), "max_token_id", 90);
  }
  index = scan_dataset(root.string());
  EXPECT_EQ(index.train.max_id, 120);  // (the largest over the shards)
  b[2000] = 121;
  write_token_shard(pb, b, Vocabulary::byte());
  {
    h5::Id file(H5Fopen(pb.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    H5Adelete(file.get(), "max_token_id");
    h5::write_int_attribute(file.get(), "max_token_id", 100);
  }
  index = scan_dataset(root.string());
  ASSERT_EQ(index.train.max_id, 120);
  const std::string want = pb +
                           ": /tokens position 2000 holds token id 121, above the largest id its split's "
                           "shards record (max_token_id = 120)";
  EXPECT_EQ(check_token_values(index.train, 0, 2), want);
  {  // (the store's files closed at the end)
    set_block_size(index, 100);
    TokenBlockCache store(index.train, 1);
    std::vector<std::int32_t> sample(100), label(100);
    try {
      store.get(2950, sample.data(), label.data());  // (window 2950..3050 holds no bad id)
      store.get(4950, sample.data(), label.data());
      FAIL() << "an id above max_token_id was handed out";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), want);
    }
  }

  {  // without the attribute in one shard: the split's largest id is unknown and the vocabulary bounds
    h5::Id file(H5Fopen(pb.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    H5Adelete(file.get(), "max_token_id");
  }
  index = scan_dataset(root.string());
  EXPECT_EQ(index.train.max_id, -1);
  EXPECT_EQ(index.train.id_limit(), 256);
  EXPECT_EQ(check_token_values(index.train, 0, 2), "");
  {
    h5::Id file(H5Fopen(pb.c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    h5::write_int_attribute(file.get(), "max_token_id", 256);
  }
  try {
    scan_dataset(root.string());
    FAIL() << "max_token_id outside the vocabulary accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), pb + ": max_token_id = 256 is outside the vocabulary [0, vocab_size = 256)");
  }
}

TEST_F(TokenStoreTest, RandomWindowsArePureAndInsideTheStream) {
  SplitIndex split;
  split.tokens = true;
  split.block_size = 64;
  split.stream_tokens = 100000;
  split.windows = TokenWindows::random;
  std::set<std::int64_t> phases, epoch0;
  for (std::int64_t w = 0; w < 2000; ++w) {
    const std::int64_t s = window_start(split, 7, 0, w);
    ASSERT_GE(s, 0);
    ASSERT_LE(s + 64 + 1, 100000);
    EXPECT_EQ(s, window_start(split, 7, 0, w));  // a pure function
    phases.insert(s % 64);
    epoch0.insert(s);
  }
  EXPECT_GT(phases.size(), 60u);  // starts off the grid (a grid window's phase is its epoch's shift)
  EXPECT_GT(epoch0.size(), 1900u);
  int same = 0;
  for (std::int64_t w = 0; w < 2000; ++w) same += window_start(split, 7, 1, w) == window_start(split, 7, 0, w);
  EXPECT_LT(same, 10);  // a new draw each epoch
  EXPECT_NE(window_start(split, 8, 0, 0), window_start(split, 7, 0, 0));
  split.windows = TokenWindows::grid;  // negative control: the grid keeps one phase per epoch
  phases.clear();
  for (std::int64_t w = 0; w < 2000; ++w) phases.insert(window_start(split, 7, 0, w) % 64);
  EXPECT_EQ(phases.size(), 1u);
  EXPECT_EQ(window_start(split, 7, -1, 3), 3 * 64);  // evaluation: the grid from token 0
}

}  // namespace
