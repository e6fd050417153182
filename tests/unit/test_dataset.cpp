// Dataset layout: shards written by ShardWriter round-trip through the scan,
// the chunk cache and batch assembly (uint8, float16, float32; mean/std and
// per-channel normalization); the IDX importer keeps the bytes; and every
// kind of bad input is refused with one line naming the file and the problem.
#include <gtest/gtest.h>

#include <unistd.h>
#include <zlib.h>
#include <cstdlib>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>

#include "hpctrain/core/error.hpp"
#include "hpctrain/core/half.hpp"
#include "hpctrain/data/dataset.hpp"
#include "hpctrain/data/idx.hpp"
#include "hpctrain/data/make_dataset.hpp"
#include "hpctrain/data/reader.hpp"
#include "hpctrain/data/shard_writer.hpp"
#include "hpctrain/data/synthetic.hpp"

namespace fs = std::filesystem;
using namespace hpctrain;

namespace {

class DatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    root = fs::temp_directory_path() / ("hpct_ds_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root);
    fs::create_directories(root / "train");
  }
  void TearDown() override { fs::remove_all(root); }

  // Writes a synthetic shard of `n` samples (sample indices first..first+n).
  void write_synthetic(const fs::path& file, const SyntheticSpec& syn, std::int64_t first, std::int64_t n,
                       ShardSpec spec = {}) {
    spec.sample_shape = syn.sample_shape;
    spec.type = syn.type;
    spec.num_classes = syn.num_classes;
    spec.chunk_rows = 16;
    std::int64_t bytes = static_cast<std::int64_t>(sample_type_size(syn.type));
    for (auto d : syn.sample_shape) bytes *= d;
    std::vector<unsigned char> samples(static_cast<std::size_t>(n * bytes));
    std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      synthetic_sample(syn, first + i, samples.data() + i * bytes);
      labels[static_cast<std::size_t>(i)] = synthetic_label(syn, first + i);
    }
    ShardWriter w(file.string(), spec, n);
    w.append(n, samples.data(), labels.data());
    w.close();
  }

  // The bad_input message scanning (and value-checking) the root gives.
  std::string error_of() {
    try {
      const DatasetIndex index = scan_dataset(root.string());
      const std::string p = check_values(index.train, 0, index.train.shards.size());
      return p.empty() ? "" : p;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input) << e.what();
      const std::string m = e.what();
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
      return m;
    }
  }

  // Raw HDF5 helpers to craft broken shards.
  h5::Id new_file(const std::string& name) {
    h5::Id f = h5::create_file((root / "train" / name).string());
    return f;
  }
  static void attrs(hid_t f, long long classes = 10) {
    h5::write_string_attribute(f, "format", kDatasetFormat);
    h5::write_int_attribute(f, "version", 1);
    h5::write_int_attribute(f, "num_classes", classes);
    h5::write_double_attribute(f, "scale", {1.0});
    h5::write_double_attribute(f, "offset", {0.0});
  }
  static void dataset(hid_t f, const char* name, hid_t type, std::vector<hsize_t> shape, const void* data = nullptr,
                      hid_t mem = -1) {
    h5::Id d = h5::create_dataset(f, name, type, shape, 4, 0);
    if (data) CHECK_H5(H5Dwrite(d.get(), mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
  }
  // A well-formed uint8 shard of n samples of shape [4] with labels 0..n-1 mod classes.
  void good_shard(const std::string& name, hsize_t n, long long classes = 10, hsize_t width = 4) {
    h5::Id f = new_file(name);
    attrs(f.get(), classes);
    std::vector<std::uint8_t> s(n * width, 7);
    std::vector<std::int32_t> l(n);
    for (hsize_t i = 0; i < n; ++i) l[i] = static_cast<std::int32_t>(i % static_cast<hsize_t>(classes));
    dataset(f.get(), "samples", H5T_STD_U8LE, {n, width}, s.data(), H5T_NATIVE_UINT8);
    dataset(f.get(), "labels", H5T_STD_I32LE, {n}, l.data(), H5T_NATIVE_INT32);
  }

  fs::path root;
};

}  // namespace

TEST_F(DatasetTest, RoundTripEveryDtypeThroughScanAndBatches) {
  for (SampleType t : {SampleType::u8, SampleType::f16, SampleType::f32}) {
    fs::remove_all(root / "train");
    fs::create_directories(root / "train");
    SyntheticSpec syn;
    syn.sample_shape = {3, 5, 4};  // 3 channels
    syn.type = t;
    ShardSpec spec;
    spec.standardize = true;  // per-channel mean/std
    spec.norm_a = {0.5, 10.0, -2.0};
    spec.norm_b = {2.0, 4.0, 0.25};
    write_synthetic(root / "train" / "a.h5", syn, 0, 40, spec);
    write_synthetic(root / "train" / "b.h5", syn, 40, 25, spec);
    const DatasetIndex index = scan_dataset(root.string());
    const SplitIndex& s = index.train;
    ASSERT_EQ(s.total, 65);
    ASSERT_EQ(s.shards.size(), 2u);
    EXPECT_EQ(s.shards[1].first, 40);
    EXPECT_EQ(s.shards[0].chunk_rows, 16);
    EXPECT_EQ(s.sample_type, t);
    EXPECT_EQ(s.sample_shape, (std::vector<std::int64_t>{3, 5, 4}));
    EXPECT_EQ(check_values(s, 0, 2), "");
    EXPECT_EQ(s.chunk_bounds(), (std::vector<std::int64_t>{0, 16, 32, 40, 56, 65}));

    ChunkCache store(s, 1 << 20, true, true);
    Batch b;
    const std::vector<std::int64_t> idx{64, 0, 39, 40, 17};
    assemble_batch(s, store, idx, true, true, b);
    ASSERT_EQ(b.samples.size(), idx.size() * 60);
    std::vector<unsigned char> raw(static_cast<std::size_t>(s.sample_bytes()));
    for (std::size_t i = 0; i < idx.size(); ++i) {
      EXPECT_EQ(b.classes[i], synthetic_label(syn, idx[i]));
      synthetic_sample(syn, idx[i], raw.data());
      for (std::size_t k = 0; k < 60; ++k) {
        const std::size_t c = k / 20;
        double v = t == SampleType::u8    ? raw[k]
                   : t == SampleType::f16 ? half_value(reinterpret_cast<const std::uint16_t*>(raw.data())[k])
                                          : reinterpret_cast<const float*>(raw.data())[k];
        const double expected = (v - spec.norm_a[c]) / spec.norm_b[c];
        ASSERT_NEAR(b.samples[i * 60 + k], expected, 1e-5 * (1 + std::fabs(expected))) << "sample " << idx[i];
      }
    }
  }
}

TEST_F(DatasetTest, HalfConversionRoundTrips) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.33325195f})
    EXPECT_EQ(half_value(half_bits(f)), f) << f;
  EXPECT_TRUE(std::isinf(half_value(half_bits(1e6f))));
  EXPECT_TRUE(std::isnan(half_value(half_bits(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_F(DatasetTest, IdxImportKeepsTheBytes) {
  // A small IDX pair, one gzipped and one plain, read back exactly.
  const std::vector<unsigned char> header{0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 2};
  const std::vector<unsigned char> pixels{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 255};
  gzFile g = gzopen((root / "img.gz").c_str(), "wb");
  gzwrite(g, header.data(), static_cast<unsigned>(header.size()));
  gzwrite(g, pixels.data(), static_cast<unsigned>(pixels.size()));
  gzclose(g);
  std::ofstream((root / "lab"), std::ios::binary).write("\0\0\x08\x01\0\0\0\x03\x02\x00\x09", 11);
  const IdxArray img = read_idx((root / "img.gz").string());
  EXPECT_EQ(img.dims, (std::vector<std::int64_t>{3, 2, 2}));
  EXPECT_EQ(img.data, pixels);
  const IdxArray lab = read_idx((root / "lab").string());
  EXPECT_EQ(lab.data, (std::vector<std::uint8_t>{2, 0, 9}));
  std::ofstream((root / "short"), std::ios::binary).write("\0\0\x08\x01\0\0\0\x09\x01", 9);
  EXPECT_THROW(read_idx((root / "short").string()), Error);
  EXPECT_THROW(read_idx((root / "missing").string()), Error);
  // A header claiming 2^35 bytes (32 GiB) before 3 bytes: refused at the end of the bytes, having
  // held 64 MiB at most (it allocated the 32 GiB first).
  std::ofstream((root / "claims"), std::ios::binary).write("\0\0\x08\x02\0\x08\0\0\0\x01\0\0\x01\x02\x03", 15);
  try {
    read_idx((root / "claims").string());
    ADD_FAILURE() << "a truncated IDX file was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated IDX data (3 of 34359738368 bytes)"), std::string::npos) << e.what();
  }
}

// ---- bad input: one test per case of the list -----------------------------------------

TEST_F(DatasetTest, MissingDirectoryOrSplit) {
  fs::remove_all(root);
  EXPECT_NE(error_of().find("no such directory"), std::string::npos);
  fs::create_directories(root);
  EXPECT_NE(error_of().find("no train/ directory of shards"), std::string::npos);
  fs::create_directories(root / "train");
  EXPECT_NE(error_of().find("train: no shard files (*.h5)"), std::string::npos);
}

TEST_F(DatasetTest, NotHdf5AndTruncated) {
  std::ofstream(root / "train" / "a.h5") << "this is not HDF5";
  EXPECT_NE(error_of().find("a.h5: not an HDF5 file"), std::string::npos) << error_of();
  fs::remove(root / "train" / "a.h5");
  good_shard("b.h5", 5000, 10, 64);
  const auto size = fs::file_size(root / "train" / "b.h5");
  fs::resize_file(root / "train" / "b.h5", size / 2);
  const std::string m = error_of();
  EXPECT_NE(m.find("b.h5: "), std::string::npos) << m;
  EXPECT_TRUE(m.find("truncated") != std::string::npos || m.find("cannot be opened") != std::string::npos) << m;
}

TEST_F(DatasetTest, MissingDatasetOrAttributes) {
  {
    h5::Id f = new_file("a.h5");
    attrs(f.get());
    std::vector<std::uint8_t> s(8);
    dataset(f.get(), "samples", H5T_STD_U8LE, {2, 4}, s.data(), H5T_NATIVE_UINT8);
  }
  EXPECT_NE(error_of().find("a.h5: dataset /labels missing"), std::string::npos) << error_of();
  fs::remove(root / "train" / "a.h5");
  {
    h5::Id f = new_file("a.h5");
    h5::write_string_attribute(f.get(), "format", "something-else");
  }
  EXPECT_NE(error_of().find("format = \"something-else\", expected \"hpctrain-dataset\""), std::string::npos)
      << error_of();
  fs::remove(root / "train" / "a.h5");
  {
    h5::Id f = new_file("a.h5");
    attrs(f.get());
    h5::write_int_attribute(f.get(), "version2", 1);
  }
  // attrs() wrote version 1; rewrite a file with version 9.
  fs::remove(root / "train" / "a.h5");
  {
    h5::Id f = new_file("a.h5");
    h5::write_string_attribute(f.get(), "format", kDatasetFormat);
    h5::write_int_attribute(f.get(), "version", 9);
  }
  EXPECT_NE(error_of().find("format version 9 is not supported"), std::string::npos) << error_of();
  // An attribute of the wrong type names the file too (fuzz_h5 found it did not).
  fs::remove(root / "train" / "a.h5");
  {
    h5::Id f = new_file("a.h5");
    h5::write_string_attribute(f.get(), "format", kDatasetFormat);
    h5::write_int_attribute(f.get(), "version", 1);
    h5::write_string_attribute(f.get(), "num_classes", "ten");
    std::vector<std::uint8_t> s(8);
    std::vector<std::int32_t> l(2);
    dataset(f.get(), "samples", H5T_STD_U8LE, {2, 4}, s.data(), H5T_NATIVE_UINT8);
    dataset(f.get(), "labels", H5T_STD_I32LE, {2}, l.data(), H5T_NATIVE_INT32);
  }
  EXPECT_NE(error_of().find("a.h5: attribute 'num_classes' is not an integer"), std::string::npos) << error_of();
}

TEST_F(DatasetTest, WrongRankAndCountMismatch) {
  {
    h5::Id f = new_file("a.h5");
    attrs(f.get());
    dataset(f.get(), "samples", H5T_STD_U8LE, {6});
    dataset(f.get(), "labels", H5T_STD_I32LE, {6});
  }
  EXPECT_NE(error_of().find("a.h5: /samples has shape [6]; expected [N, d1, ...]"), std::string::npos) << error_of();
  fs::remove(root / "train" / "a.h5");
  {
    h5::Id f = new_file("a.h5");
    attrs(f.get());
    dataset(f.get(), "samples", H5T_STD_U8LE, {6, 2});
    dataset(f.get(), "labels", H5T_STD_I32LE, {5});
  }
  EXPECT_NE(error_of().find("a.h5: /samples has 6 rows but /labels has 5"), std::string::npos) << error_of();
}

TEST_F(DatasetTest, UnsupportedDtypeAndEmptyShard) {
  {
    h5::Id f = new_file("a.h5");
    attrs(f.get());
    dataset(f.get(), "samples", H5T_STD_I16LE, {6, 2});
    dataset(f.get(), "labels", H5T_STD_I32LE, {6});
  }
  EXPECT_NE(error_of().find("/samples has type int16; supported: uint8, uint16, float16, float32"), std::string::npos)
      << error_of();
  fs::remove(root / "train" / "a.h5");
  {
    h5::Id f = new_file("a.h5");
    attrs(f.get());
    dataset(f.get(), "samples", H5T_STD_U8LE, {0, 2});
    dataset(f.get(), "labels", H5T_STD_I32LE, {0});
  }
  EXPECT_NE(error_of().find("a.h5: empty shard: /samples has 0 rows"), std::string::npos) << error_of();
}

TEST_F(DatasetTest, ShardsWithDifferentShapes) {
  good_shard("a.h5", 8, 10, 4);
  good_shard("b.h5", 8, 10, 5);
  const std::string m = error_of();
  EXPECT_NE(m.find("b.h5: /samples shape [N, 5] differs from"), std::string::npos) << m;
  EXPECT_NE(m.find("a.h5: [N, 4]"), std::string::npos) << m;
}

TEST_F(DatasetTest, HugeDimensionsAreRefusedWithoutAllocating) {
  {
    h5::Id f = new_file("a.h5");
    attrs(f.get());
    // 2^21 x 2^21 bytes per sample: 4 TiB, written nowhere (chunks are allocated lazily).
    h5::Id space(CHECK_H5(H5Screate_simple(3, std::vector<hsize_t>{1, 1ull << 21, 1ull << 21}.data(), nullptr)));
    h5::Id dcpl(CHECK_H5(H5Pcreate(H5P_DATASET_CREATE)));
    const hsize_t chunk[3] = {1, 64, 64};
    CHECK_H5(H5Pset_chunk(dcpl.get(), 3, chunk));
    h5::Id d(CHECK_H5(H5Dcreate2(f.get(), "samples", H5T_STD_U8LE, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT)));
    dataset(f.get(), "labels", H5T_STD_I32LE, {1});
  }
  const std::string m = error_of();
  EXPECT_NE(m.find("one sample is 4398046511104 bytes, more than an eighth of this machine's memory"),
            std::string::npos)
      << m;
}

TEST_F(DatasetTest, NanInFloatSamples) {
  {
    h5::Id f = new_file("a.h5");
    attrs(f.get());
    std::vector<float> s(12, 0.5f);
    s[9] = std::numeric_limits<float>::quiet_NaN();  // row 4 (3 values per row)
    dataset(f.get(), "samples", H5T_IEEE_F32LE, {4, 3}, s.data(), H5T_NATIVE_FLOAT);
    std::vector<std::int32_t> l{0, 1, 2, 3};
    dataset(f.get(), "labels", H5T_STD_I32LE, {4}, l.data(), H5T_NATIVE_INT32);
  }
  EXPECT_NE(error_of().find("a.h5: /samples row 3 holds NaN or Inf"), std::string::npos) << error_of();
}

TEST_F(DatasetTest, LabelsOutOfRangeAndNumClasses) {
  good_shard("a.h5", 12, 10);
  {
    h5::Id f = h5::Id(CHECK_H5(H5Fopen((root / "train" / "a.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT)));
    h5::Id d(CHECK_H5(H5Dopen2(f.get(), "labels", H5P_DEFAULT)));
    const std::int32_t ten = 10;
    h5::write_rows(d.get(), H5T_NATIVE_INT32, 11, 1, &ten);  // == num_classes: not above the largest label
  }
  EXPECT_NE(error_of().find("a.h5: /labels row 11 has class 10, outside [0, num_classes = 10)"), std::string::npos)
      << error_of();
  fs::remove(root / "train" / "a.h5");
  good_shard("a.h5", 12, 10);
  {
    h5::Id f = h5::Id(CHECK_H5(H5Fopen((root / "train" / "a.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT)));
    h5::Id d(CHECK_H5(H5Dopen2(f.get(), "labels", H5P_DEFAULT)));
    const std::int32_t neg = -1;
    h5::write_rows(d.get(), H5T_NATIVE_INT32, 2, 1, &neg);
  }
  EXPECT_NE(error_of().find("/labels row 2 has class -1"), std::string::npos) << error_of();
}

TEST_F(DatasetTest, ZeroStandardDeviation) {
  {
    h5::Id f = new_file("a.h5");
    h5::write_string_attribute(f.get(), "format", kDatasetFormat);
    h5::write_int_attribute(f.get(), "version", 1);
    h5::write_int_attribute(f.get(), "num_classes", 10);
    h5::write_double_attribute(f.get(), "mean", {0.5, 0.5});
    h5::write_double_attribute(f.get(), "std", {0.2, 0.0});
    dataset(f.get(), "samples", H5T_STD_U8LE, {4, 2, 3, 3});  // [C = 2, H, W]
    dataset(f.get(), "labels", H5T_STD_I32LE, {4});
  }
  EXPECT_NE(error_of().find("a.h5: attribute 'std' is 0 for channel 1"), std::string::npos) << error_of();
}

// Normalization per feature of [F] samples (tabular data: import-csv, import-npy); a [H, W]
// image is one channel, so one value per row is refused there.
TEST_F(DatasetTest, NormalizationPerFeatureOfTabularSamples) {
  auto make = [&](std::vector<hsize_t> shape) {
    h5::Id f = new_file("a.h5");
    h5::write_string_attribute(f.get(), "format", kDatasetFormat);
    h5::write_int_attribute(f.get(), "version", 1);
    h5::write_int_attribute(f.get(), "num_classes", 10);
    h5::write_double_attribute(f.get(), "mean", {0.5, 1.5, 2.5});
    h5::write_double_attribute(f.get(), "std", {0.2, 2.0, 4.0});
    dataset(f.get(), "samples", H5T_IEEE_F32LE, shape);
    dataset(f.get(), "labels", H5T_STD_I32LE, {4});
  };
  make({4, 3});
  EXPECT_EQ(error_of(), "");
  make({4, 3, 5});
  EXPECT_NE(error_of().find("attribute 'mean' has 3 values; expected 1 or one per channel or feature (1)"),
            std::string::npos)
      << error_of();
}

TEST_F(DatasetTest, UnavailableCompressionFilter) {
  {
    h5::Id f = new_file("a.h5");
    attrs(f.get());
    h5::Id space(CHECK_H5(H5Screate_simple(2, std::vector<hsize_t>{4, 2}.data(), nullptr)));
    h5::Id dcpl(CHECK_H5(H5Pcreate(H5P_DATASET_CREATE)));
    const hsize_t chunk[2] = {2, 2};
    CHECK_H5(H5Pset_chunk(dcpl.get(), 2, chunk));
    CHECK_H5(H5Pset_filter(dcpl.get(), 32004, H5Z_FLAG_OPTIONAL, 0, nullptr));  // LZ4: not in this HDF5
    h5::Id d(CHECK_H5(H5Dcreate2(f.get(), "samples", H5T_STD_U8LE, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT)));
    dataset(f.get(), "labels", H5T_STD_I32LE, {4});
  }
  const std::string m = error_of();
  EXPECT_NE(m.find("a.h5: dataset /samples uses compression filter"), std::string::npos) << m;
  EXPECT_NE(m.find("(id 32004), which this HDF5 library does not have"), std::string::npos) << m;
}

TEST_F(DatasetTest, ValidShardsScanClean) {
  good_shard("a.h5", 8);
  good_shard("b.h5", 9);
  EXPECT_EQ(error_of(), "");
}

TEST_F(DatasetTest, ImporterShardsEqualTheIdxSource) {
  // Real MNIST when a copy is there ($MNIST_DIR, else the team's ../shared/data/mnist); otherwise a
  // generated IDX pair.
  const char* dir = std::getenv("MNIST_DIR");
  const std::string base = dir && *dir ? std::string(dir) + "/" : "../shared/data/mnist/";
  std::string images = base + "train-images-idx3-ubyte.gz";
  std::string labels = base + "train-labels-idx1-ubyte.gz";
  for (const char* up : {"", "../", "../../", "../../../"}) {
    if (dir && *dir) break;
    if (fs::exists(std::string(up) + images)) {
      images = std::string(up) + images;
      labels = std::string(up) + labels;
      break;
    }
  }
  if (!fs::exists(images)) {
    images = (root / "img.gz").string();
    labels = (root / "lab.gz").string();
    std::vector<unsigned char> h{0, 0, 8, 3, 0, 0, 0x01, 0xF4, 0, 0, 0, 28, 0, 0, 0, 28},
        l{0, 0, 8, 1, 0, 0, 0x01, 0xF4};
    gzFile gi = gzopen(images.c_str(), "wb"), gl = gzopen(labels.c_str(), "wb");
    gzwrite(gi, h.data(), 16);
    gzwrite(gl, l.data(), 8);
    for (int i = 0; i < 500; ++i) {
      std::vector<unsigned char> px(784);
      for (int k = 0; k < 784; ++k)
        px[static_cast<std::size_t>(k)] = static_cast<unsigned char>((i * 31 + k * 7) % 256);
      gzwrite(gi, px.data(), 784);
      const unsigned char c = static_cast<unsigned char>(i % 10);
      gzwrite(gl, &c, 1);
    }
    gzclose(gi);
    gzclose(gl);
  }
  ImportOptions o;
  o.images = images;
  o.labels = labels;
  o.out = root.string();
  o.limit = 300;
  o.val_count = 50;
  o.shards = 3;
  o.chunk_rows = 32;
  o.force = true;
  const auto [train, val] = import_idx(o);
  EXPECT_EQ(train, 250);
  EXPECT_EQ(val, 50);
  const DatasetIndex index = scan_dataset(root.string());
  ASSERT_TRUE(index.val.has_value());
  EXPECT_EQ(index.train.shards.size(), 3u);
  EXPECT_EQ(index.train.sample_shape, (std::vector<std::int64_t>{28, 28}));
  const IdxArray img = read_idx(images), lab = read_idx(labels);
  for (const SplitIndex* s : {&index.train, &*index.val}) {
    ChunkCache store(*s, 1 << 20, true, true);
    const std::int64_t offset = s->name == "val" ? 250 : 0;
    std::vector<unsigned char> raw(784);
    std::int32_t label = -1;
    for (std::int64_t i = 0; i < s->total; ++i) {
      store.get(i, raw.data(), &label);
      ASSERT_EQ(std::memcmp(raw.data(), img.data.data() + (offset + i) * 784, 784), 0) << s->name << " sample " << i;
      ASSERT_EQ(label, lab.data[static_cast<std::size_t>(offset + i)]) << s->name << " sample " << i;
    }
  }
  // A second import into the same split is refused unless forced.
  o.force = false;
  EXPECT_THROW(import_idx(o), Error);
}

TEST_F(DatasetTest, DimensionsWhoseProductOverflowsAreRefused) {
  {
    h5::Id f = new_file("a.h5");
    attrs(f.get());
    // 2^31 x 2^31 x 8 elements per sample: 2^65, more than 64 bits can count.
    h5::Id space(CHECK_H5(H5Screate_simple(4, std::vector<hsize_t>{1, 1ull << 31, 1ull << 31, 8}.data(), nullptr)));
    h5::Id dcpl(CHECK_H5(H5Pcreate(H5P_DATASET_CREATE)));
    const hsize_t chunk[4] = {1, 16, 16, 8};
    CHECK_H5(H5Pset_chunk(dcpl.get(), 4, chunk));
    const hid_t d = H5Dcreate2(f.get(), "samples", H5T_STD_U8LE, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT);
    if (d < 0) GTEST_SKIP() << "this HDF5 refuses to create such a dataset: " << hdf5_error_text();
    H5Dclose(d);
    dataset(f.get(), "labels", H5T_STD_I32LE, {1});
  }
  const std::string m = error_of();
  EXPECT_NE(m.find("a.h5: /samples shape [1, 2147483648, 2147483648, 8]: the sample size overflows 64 bits"),
            std::string::npos)
      << m;
}
