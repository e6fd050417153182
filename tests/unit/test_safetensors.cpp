// trainer --export's safetensors bytes (io/safetensors.hpp): the header size, the JSON header
// (names, F32, shapes, packed data_offsets, metadata with its strings escaped), 8-byte aligned
// data, the values little-endian in header order. (Read back by tools/safetensors_numpy.py and
// PyTorch in tests/e2e/exchange.sh.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "hpctrain/core/error.hpp"
#include "hpctrain/core/half.hpp"
#include "hpctrain/io/output_file.hpp"
#include "hpctrain/io/safetensors.hpp"
#include "hpctrain/io/staged_folder.hpp"
#include "unit_test_util.hpp"

using namespace hpctrain;

namespace {
float bf16_round(float x) { return bf16_value(bf16_bits(x)); }
}  // namespace

TEST(Safetensors, HeaderOffsetsAlignmentAndData) {
  const std::vector<NamedTensor> tensors{{"00_dense.weight", {2, 3}, {1, 2, 3, 4, 5, 6}},
                                         {"00_dense.bias", {2}, {-1, 0.5f}}};
  const std::string bytes = safetensors_bytes(tensors, {{"hpctrain_deck", "[model]\nlayers = \"x\""}});
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  ASSERT_EQ(n % 8, 0u);  // the data start aligned
  ASSERT_EQ(bytes.size(), 8 + n + 8 * sizeof(float));
  const std::string header = bytes.substr(8, n);
  EXPECT_NE(header.find(R"("00_dense.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})"), std::string::npos)
      << header;
  EXPECT_NE(header.find(R"("00_dense.bias":{"dtype":"F32","shape":[2],"data_offsets":[24,32]})"), std::string::npos);
  EXPECT_NE(header.find(R"("__metadata__":{"hpctrain_deck":"[model]\nlayers = \"x\""})"), std::string::npos)
      << header;  // newlines and quotes escaped
  EXPECT_EQ(header.front(), '{');
  EXPECT_EQ(header[header.find_last_not_of(' ')], '}');  // the JSON, then only padding
  float values[8];
  std::memcpy(values, bytes.data() + 8 + n, sizeof(values));
  EXPECT_EQ(values[0], 1.f);
  EXPECT_EQ(values[5], 6.f);
  EXPECT_EQ(values[6], -1.f);
  EXPECT_EQ(values[7], 0.5f);
}

namespace {
// A safetensors file of one tensor with raw little-endian bytes of `dtype`.
std::string one_tensor_file(const std::string& dtype, const std::vector<std::uint16_t>& halves) {
  std::string header = R"({"t":{"dtype":")" + dtype + R"(","shape":[)" + std::to_string(halves.size()) +
                       R"(],"data_offsets":[0,)" + std::to_string(2 * halves.size()) + "]}}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  out += header;
  out.append(reinterpret_cast<const char*>(halves.data()), 2 * halves.size());
  return out;
}
std::vector<float> read_back(const std::string& bytes) {
  const std::string path = unittest::temp_path("halves.safetensors");
  const unittest::RemovedAtExit gone{path};
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  return read_safetensors(path).at(0).data;
}
}  // namespace

// F16 and BF16 (Hugging Face's usual dtypes) read as float32 exactly: normal, subnormal, zero, signs,
// infinity; a dtype not read and offsets past the file are one error naming the tensor.
TEST(Safetensors, ReadsHalfAndBfloat16Exactly) {
  const std::vector<float> f16 =
      read_back(one_tensor_file("F16", {0x3c00, 0xc000, 0x0001, 0x0200, 0x8000, 0x7c00, 0x7bff, 0x3555}));
  const std::vector<float> want{1.f,      -2.f,    5.9604644775390625e-8f, 3.0517578125e-5f, -0.f,
                                INFINITY, 65504.f, 0.333251953125f};
  ASSERT_EQ(f16.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(f16[i], want[i]) << i;
  EXPECT_TRUE(std::signbit(f16[4]));
  const std::vector<float> bf16 = read_back(one_tensor_file("BF16", {0x3f80, 0xc0a0, 0x0001, 0x7f80}));
  EXPECT_EQ(bf16, (std::vector<float>{1.f, -5.f, 9.18354961579912e-41f, INFINITY}));
  try {
    read_back(one_tensor_file("I64", {0, 0, 0, 0}));
    FAIL() << "no error for I64";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor t has dtype I64; F32, F16 and BF16 are read"), std::string::npos);
  }
  std::string cut = one_tensor_file("BF16", {1, 2, 3});
  cut.resize(cut.size() - 2);
  EXPECT_THROW(read_back(cut), Error);
}

// read_safetensors reads tensor by tensor through a buffer of 16 MiB: a tensor over several
// buffers (4 Mi + 3 float32 values: one full buffer and a part), then a BF16 one, give the values
// that parse_safetensors gives from the whole file's bytes; a file cut inside the large tensor's
// data is refused naming that tensor; a folder is one line, not a crash.
TEST(Safetensors, ReadsATensorLargerThanItsBuffer) {
  std::vector<float> big((std::size_t{1} << 22) + 3);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 100003) - 0.5f;
  const std::vector<NamedTensor> tensors{{"big", {static_cast<std::int64_t>(big.size())}, big},
                                         {"small", {3}, {1.f, -2.f, 0.25f}}};
  const std::string path = unittest::temp_path("big.safetensors");
  const unittest::RemovedAtExit gone{path};
  write_safetensors(path, tensors, {}, DType::f32);
  const std::vector<NamedTensor> read = read_safetensors(path);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].name, "big");
  EXPECT_TRUE(read[0].data == big) << "the large tensor differs";
  EXPECT_EQ(read[1].data, (std::vector<float>{1.f, -2.f, 0.25f}));
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(parse_safetensors(bytes, path).at(0).data == big);
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  try {
    read_safetensors(path);
    FAIL() << "no error for a cut file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor big [4194307] F32 has data offsets"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_safetensors(testing::TempDir()), Error);
  std::remove(path.c_str());
}

// [checkpoint] export_dtype: BF16 and F16 files hold the values rounded to nearest even (ties to
// even, as PyTorch's .to(torch.bfloat16) and .to(torch.float16); tests/e2e/hf_weights.sh compares
// with PyTorch itself), and read back as those values; F16 refuses a value beyond 65504 before
// anything is written.
TEST(Safetensors, WritesBfloat16AndHalfRoundedToNearestEven) {
  const float tie_down = 1.f + std::ldexp(1.f, -8), tie_up = 1.f + 3 * std::ldexp(1.f, -8);  // bf16 ulp at 1: 2^-7
  const std::vector<NamedTensor> tensors{{"w", {5}, {tie_down, tie_up, -2.5f, 1e-30f, 65504.f}}};
  const std::string path = unittest::temp_path("rounded.safetensors");
  const unittest::RemovedAtExit gone{path};
  write_safetensors(path, tensors, {}, DType::bf16);
  EXPECT_EQ(read_safetensors(path).at(0).data,
            (std::vector<float>{1.f, 1.f + std::ldexp(1.f, -6), -2.5f, bf16_round(1e-30f), 65536.f}));
  const std::string bytes = safetensors_bytes(tensors, {}, DType::f16);
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_NE(bytes.find(R"("w":{"dtype":"F16","shape":[5],"data_offsets":[0,10]})"), std::string::npos);
  ASSERT_EQ(bytes.size(), 8 + n + 10);
  write_safetensors(path, tensors, {}, DType::f16);
  // fp16's ulp at 1 is 2^-10: both ties are exact there; 1e-30 underflows to zero.
  EXPECT_EQ(read_safetensors(path).at(0).data, (std::vector<float>{tie_down, tie_up, -2.5f, 0.f, 65504.f}));
  std::remove(path.c_str());
  const std::vector<NamedTensor> big{{"h.0.mlp.c_fc.weight", {2}, {1.f, -70000.f}}};
  try {
    write_safetensors(path, big, {}, DType::f16);
    FAIL() << "wrote -70000 as float16";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": tensor h.0.mlp.c_fc.weight holds -70000, beyond float16's"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::ifstream(path).good());
  EXPECT_FALSE(std::ifstream(path + ".partial").good());
}

// safetensors_tensors: the header now, each tensor's rows read from the file when asked, F32 and
// BF16 alike (a row range inside the tensor gives those rows' values, not the first rows').
TEST(Safetensors, LazyTensorsReadTheRowsAskedFor) {
  std::vector<float> m(4 * 3);
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>(i) + 0.5f;
  const std::string path = unittest::temp_path("lazy.safetensors");
  const unittest::RemovedAtExit gone{path};
  for (DType stored : {DType::f32, DType::bf16}) {
    write_safetensors(path, std::vector<NamedTensor>{{"s", {}, {7.f}}, {"m", {4, 3}, m}}, {}, stored);
    const std::vector<LazyTensor> lazy = safetensors_tensors(path);
    ASSERT_EQ(lazy.size(), 2u);
    EXPECT_EQ(lazy[1].name, "m");
    EXPECT_EQ(lazy[1].shape, (Shape{4, 3}));
    EXPECT_EQ(lazy[0].values(), std::vector<float>{7.f});
    std::vector<float> rows(6);
    lazy[1].rows(2, 2, rows.data());
    EXPECT_EQ(rows, (std::vector<float>{6.5f, 7.5f, 8.5f, 9.5f, 10.5f, 11.5f})) << dtype_name(stored);
    EXPECT_EQ(lazy[1].values(), m);
  }
  std::remove(path.c_str());
}

// The writer asks a lazy tensor for pieces of rows (at most 16 MiB of float32, whole rows), not
// the tensor at once: --export-hf's memory is a piece. 6000 rows of 1000: two pieces, each row
// asked for once, the file's values the rows'.
TEST(Safetensors, WriterAsksForPiecesOfRows) {
  const std::int64_t n = 6000, w = 1000;
  std::vector<std::int64_t> asked(static_cast<std::size_t>(n), 0);
  std::int64_t most = 0;
  LazyTensor t{"big", {n, w}, {}};
  t.rows = [&](std::int64_t first, std::int64_t count, float* out) {
    for (std::int64_t r = first; r < first + count; ++r) ++asked[static_cast<std::size_t>(r)];
    most = std::max(most, count);
    for (std::int64_t i = 0; i < count * w; ++i) out[i] = static_cast<float>((first * w + i) % 251);  // exact in bf16
  };
  const std::string path = unittest::temp_path("pieces.safetensors");
  const unittest::RemovedAtExit gone{path};
  write_safetensors(path, std::vector<LazyTensor>{t}, {}, DType::bf16);
  EXPECT_TRUE(std::all_of(asked.begin(), asked.end(), [](std::int64_t k) { return k == 1; }));
  EXPECT_LE(most * w * 4, std::int64_t{16} << 20);
  EXPECT_LT(most, n);
  const std::vector<NamedTensor> back = read_safetensors(path);
  ASSERT_EQ(back.size(), 1u);
  bool same = back[0].data.size() == static_cast<std::size_t>(n * w);
  for (std::size_t i = 0; same && i < back[0].data.size(); ++i) same = back[0].data[i] == static_cast<float>(i % 251);
  EXPECT_TRUE(same) << "the file's values are not the rows'";
  std::remove(path.c_str());
}

namespace {
std::string text_of(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
}  // namespace

// write_safetensors_folder: Hugging Face's shards. Three tensors of 24, 24 and 40 bytes under a
// 50-byte limit are two shards (a and b; c) listed by the index with total_size 88; a tensor over
// the limit goes alone; written again under a large limit (through replace_folder, as --export-hf
// writes), the folder holds model.safetensors and the shards and index of the first write are gone, a
// file of another name kept.
TEST(Safetensors, FolderInShardsListedByTheIndex) {
  namespace fs = std::filesystem;
  const std::string dir = unittest::temp_path("shards");
  const unittest::RemovedAtExit gone{dir};
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir + "/tokenizer.json") << "{}";
  std::vector<NamedTensor> held;
  for (const auto& [name, n] : std::vector<std::pair<std::string, int>>{{"a", 6}, {"b", 6}, {"c", 10}})
    held.push_back({name, {n}, std::vector<float>(static_cast<std::size_t>(n), static_cast<float>(n))});
  const std::vector<LazyTensor> t = lazy_views(held);
  const auto files = write_safetensors_folder(dir, t, {{"format", "pt"}}, DType::f32, 50);
  EXPECT_EQ(files, (std::vector<std::string>{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                             "model.safetensors.index.json"}));
  const std::string index = text_of(dir + "/model.safetensors.index.json");
  EXPECT_NE(index.find("\"total_size\": 88"), std::string::npos) << index;
  EXPECT_NE(index.find("\"b\": \"model-00001-of-00002.safetensors\""), std::string::npos) << index;
  EXPECT_NE(index.find("\"c\": \"model-00002-of-00002.safetensors\""), std::string::npos) << index;
  const auto first = read_safetensors(dir + "/model-00001-of-00002.safetensors");
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[1].data, std::vector<float>(6, 6.f));
  EXPECT_EQ(read_safetensors(dir + "/model-00002-of-00002.safetensors").at(0).data, std::vector<float>(10, 10.f));
  // Written again as an export writes it (a new folder replacing this one, the layout's files dropped).
  const auto again = [&](DType stored, std::uint64_t limit) {
    std::vector<std::string> written;
    replace_folder(
        dir, "test",
        [&](const std::string& staging) { written = write_safetensors_folder(staging, t, {}, stored, limit); },
        safetensors_layout_file);
    return written;
  };
  EXPECT_EQ(again(DType::f32, 30).size(), 4u) << "c (40 bytes) alone in the third";
  EXPECT_EQ(again(DType::bf16, 1000), std::vector<std::string>{"model.safetensors"});
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"model.safetensors", "tokenizer.json"}));
  EXPECT_EQ(read_safetensors(dir + "/model.safetensors").size(), 3u);
  fs::remove_all(dir);
}

// The file named for --export (and --import-hf --out) is checked before anything is written: a
// folder, a file in a folder that does not exist, no name: one line each, and no "<path>.partial"
// left (a folder once left "/tmp.partial" beside it).
TEST(Safetensors, OutputThatIsNoFileIsRefusedBeforeWriting) {
  namespace fs = std::filesystem;
  const std::string dir = unittest::temp_path("refused_output");
  const unittest::RemovedAtExit gone{dir, dir + ".partial"};
  fs::remove_all(dir);
  fs::remove(dir + ".partial");
  fs::create_directories(dir);
  const std::vector<NamedTensor> t{{"w", {2}, {1.f, 2.f}}};
  const auto refusal = [&](const std::string& path) {
    try {
      write_safetensors(path, t, {});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(written)");
  };
  EXPECT_EQ(refusal(dir), "--export " + dir + ": " + dir + " is a folder; name the file to write");
  EXPECT_FALSE(fs::exists(dir + ".partial"));
  EXPECT_EQ(refusal(dir + "/no/w.safetensors"),
            "--export " + dir + "/no/w.safetensors: the folder " + dir + "/no does not exist");
  EXPECT_FALSE(fs::exists(dir + "/no"));
  EXPECT_THROW(check_output_file("", "--import-hf hf --out"), Error);
  EXPECT_EQ(refusal(dir + "/w.safetensors"), "(written)");
  fs::remove_all(dir);
}
