// ChunkDecoder (data/chunk_decoder.hpp): chunks read raw and inflated outside the HDF5 lock equal
// what H5Dread returns, for uint8 with gzip, float32 and float16 with gzip and byte shuffle,
// whole chunks and the short last chunk; datasets it does not handle (no compression, Fletcher32,
// chunks across a row, a type conversion) go through H5Dread and say why. Unshuffle against
// a shuffle written out by hand.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <vector>

#include "hpctrain/core/error.hpp"
#include "hpctrain/data/chunk_decoder.hpp"
#include "hpctrain/io/h5.hpp"

namespace fs = std::filesystem;
using namespace hpctrain;

namespace {

struct Layout {
  hid_t file_type;
  hid_t mem_type;
  std::size_t elem;
  hsize_t rows, width, chunk_rows;
  bool gzip, shuffle, fletcher32;
  bool direct;  // what the decoder should say
};

// Writes a [rows, width] dataset with random bytes and reads every chunk both ways.
void check(const Layout& l, const std::string& what) {
  const std::string path = (fs::temp_directory_path() / ("hpct_chunk_" + std::to_string(getpid()) + ".h5")).string();
  std::vector<unsigned char> data(l.rows * l.width * l.elem);
  std::mt19937 rng(7);
  for (std::size_t i = 0; i < data.size(); ++i)  // compressible, not constant; float16/32 bits stay finite
    data[i] = static_cast<unsigned char>((rng() % 7) + (i % 13) * (l.elem > 1 && i % l.elem == l.elem - 1 ? 0 : 1));
  {
    h5::Id f = h5::create_file(path);
    const hsize_t dims[2] = {l.rows, l.width}, chunk[2] = {l.chunk_rows, l.width};
    h5::Id space(CHECK_H5(H5Screate_simple(2, dims, nullptr)));
    h5::Id dcpl(CHECK_H5(H5Pcreate(H5P_DATASET_CREATE)));
    CHECK_H5(H5Pset_chunk(dcpl.get(), 2, chunk));
    if (l.shuffle) CHECK_H5(H5Pset_shuffle(dcpl.get()));
    if (l.gzip) CHECK_H5(H5Pset_deflate(dcpl.get(), 1));
    if (l.fletcher32) CHECK_H5(H5Pset_fletcher32(dcpl.get()));
    h5::Id d(CHECK_H5(H5Dcreate2(f.get(), "x", l.file_type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT)));
    CHECK_H5(H5Dwrite(d.get(), l.file_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()));  // (the file's own bytes)
  }
  h5::Id f = h5::open_file(path);
  h5::Id d(CHECK_H5(H5Dopen2(f.get(), "x", H5P_DEFAULT)));
  const ChunkDecoder dec(d.get(), l.mem_type);
  EXPECT_EQ(dec.direct(), l.direct) << what << ": " << dec.why_not();
  std::vector<unsigned char> raw, scratch, got, want;
  for (hsize_t first = 0; first < l.rows; first += l.chunk_rows) {
    const hsize_t n = std::min(l.chunk_rows, l.rows - first);
    got.assign(n * l.width * l.elem, 0xee);
    dec.read(first, n, got.data(), raw, scratch);
    want.assign(got.size(), 0);
    h5::read_rows(d.get(), l.mem_type, first, n, want.data());
    ASSERT_EQ(got, want) << what << ", rows " << first << "+" << n;
    if (H5Tequal(l.file_type, l.mem_type) > 0) {  // and the bytes written
      ASSERT_TRUE(
          std::equal(got.begin(), got.end(), data.begin() + static_cast<std::ptrdiff_t>(first * l.width * l.elem)))
          << what;
    }
  }
  fs::remove(path);
}

}  // namespace

TEST(ChunkDecoder, InflatesOutsideHdf5AsH5DreadDoes) {
  //     file type       memory type        elem rows width chunk gzip  shuf  f32   direct
  check({H5T_STD_U8LE, H5T_NATIVE_UINT8, 1, 70, 48, 16, true, false, false, true}, "uint8 gzip");
  check({H5T_STD_U8LE, H5T_NATIVE_UINT8, 1, 64, 48, 16, true, false, false, true}, "uint8 gzip, whole chunks");
  check({H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 4, 37, 10, 8, true, true, false, true}, "float32 gzip + shuffle");
  check({H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 4, 32, 10, 8, true, true, false, true}, "float32, whole chunks");
  check({H5T_STD_U8LE, H5T_NATIVE_UINT8, 1, 70, 48, 16, false, false, false, false}, "uint8 uncompressed");
  check({H5T_STD_U8LE, H5T_NATIVE_UINT8, 1, 70, 48, 16, true, false, true, false}, "uint8 gzip + Fletcher32");
  check({H5T_STD_U8LE, H5T_NATIVE_UINT8, 1, 70, 48, 64, true, false, false, true}, "one chunk larger than the data");
  check({H5T_STD_U8LE, H5T_NATIVE_INT16, 2, 70, 48, 16, true, false, false, false}, "a type conversion");
}

TEST(ChunkDecoder, Float16SamplesInTheirOwnType) {
  h5::Id half(CHECK_H5(H5Tcopy(H5T_IEEE_F32LE)));  // float16 as the shard writer defines it
  CHECK_H5(H5Tset_fields(half.get(), 15, 10, 5, 0, 10));
  CHECK_H5(H5Tset_size(half.get(), 2));
  CHECK_H5(H5Tset_ebias(half.get(), 15));
  check({half.get(), half.get(), 2, 45, 12, 8, true, true, false, true}, "float16 gzip + shuffle");
}

TEST(ChunkDecoder, UnshuffleInvertsHdf5Shuffle) {
  const std::size_t elem = 4, n = 5, extra = 3;  // 5 elements and 3 trailing bytes
  std::vector<unsigned char> plain(elem * n + extra), shuffled(plain.size()), back(plain.size());
  for (std::size_t i = 0; i < plain.size(); ++i) plain[i] = static_cast<unsigned char>(i * 11 + 1);
  for (std::size_t b = 0; b < elem; ++b)
    for (std::size_t i = 0; i < n; ++i) shuffled[b * n + i] = plain[i * elem + b];
  for (std::size_t i = elem * n; i < plain.size(); ++i) shuffled[i] = plain[i];
  unshuffle(shuffled.data(), back.data(), back.size(), elem);
  EXPECT_EQ(back, plain);
}

TEST(ChunkDecoder, NamesItsInflater) {
  const std::string name = ChunkDecoder::inflater();
  EXPECT_TRUE(name.rfind("libdeflate ", 0) == 0 || name.rfind("zlib ", 0) == 0) << name;
}
