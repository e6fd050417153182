// Chunk reads with the decompression outside the HDF5 lock (data/chunk_decoder.hpp).
#include "hpctrain/data/chunk_decoder.hpp"

#include <zlib.h>

#include <cstring>
#include <memory>
#include <mutex>

#include "hpctrain/core/error.hpp"
#include "hpctrain/io/h5.hpp"

#ifdef HPCTRAIN_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

namespace hpctrain {

void unshuffle(const unsigned char* in, unsigned char* out, std::size_t bytes, std::size_t elem_bytes) {
  const std::size_t n = bytes / elem_bytes;
  for (std::size_t b = 0; b < elem_bytes; ++b) {
    const unsigned char* src = in + b * n;
    for (std::size_t i = 0; i < n; ++i) out[i * elem_bytes + b] = src[i];
  }
  std::memcpy(out + n * elem_bytes, in + n * elem_bytes, bytes - n * elem_bytes);
}

namespace {
// A zlib stream (what HDF5's deflate filter writes) inflated into exactly `out_bytes`.
void inflate_exact(const unsigned char* in, std::size_t in_bytes, unsigned char* out, std::size_t out_bytes) {
#ifdef HPCTRAIN_HAVE_LIBDEFLATE
  struct Free {
    void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
  };
  thread_local std::unique_ptr<libdeflate_decompressor, Free> d(libdeflate_alloc_decompressor());
  HPCT_CHECK(d != nullptr, "libdeflate_alloc_decompressor failed");
  std::size_t got = 0;
  const libdeflate_result r = libdeflate_zlib_decompress(d.get(), in, in_bytes, out, out_bytes, &got);
  HPCT_CHECK(r == LIBDEFLATE_SUCCESS && got == out_bytes,
             "a compressed dataset chunk does not inflate to its size (libdeflate result " + std::to_string(r) + ")");
#else
  uLongf got = static_cast<uLongf>(out_bytes);
  const int r = uncompress(out, &got, in, static_cast<uLong>(in_bytes));
  HPCT_CHECK(r == Z_OK && got == out_bytes,
             "a compressed dataset chunk does not inflate to its size (zlib result " + std::to_string(r) + ")");
#endif
}
}  // namespace

const char* ChunkDecoder::inflater() {
#ifdef HPCTRAIN_HAVE_LIBDEFLATE
  return "libdeflate " LIBDEFLATE_VERSION_STRING;
#else
  static const std::string v = std::string("zlib ") + zlibVersion();
  return v.c_str();
#endif
}

ChunkDecoder::ChunkDecoder(hid_t dataset, hid_t mem_type, bool hdf5_only)
    : dataset_(dataset), mem_type_(CHECK_H5(H5Tcopy(mem_type))) {
  if (hdf5_only) {
    why_not_ = "HDF5 decoding asked for";
    return;
  }
  h5::Id dcpl(CHECK_H5(H5Dget_create_plist(dataset)));
  h5::Id type(CHECK_H5(H5Dget_type(dataset)));
  h5::Id space(CHECK_H5(H5Dget_space(dataset)));
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 1))), chunk(dims.size());
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  if (H5Pget_layout(dcpl.get()) != H5D_CHUNKED) {
    why_not_ = "not chunked";
    return;
  }
  H5Pget_chunk(dcpl.get(), rank, chunk.data());
  if (H5Tequal(type.get(), mem_type) <= 0) why_not_ = "stored type differs from the one read";
  for (int d = 1; d < rank; ++d)
    if (chunk[static_cast<std::size_t>(d)] != dims[static_cast<std::size_t>(d)]) why_not_ = "chunked across a row";
  const int filters = H5Pget_nfilters(dcpl.get());
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, config = 0;
    std::size_t n = 0;
    const H5Z_filter_t f =
        H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &n, nullptr, 0, nullptr, &config);
    if (f == H5Z_FILTER_DEFLATE && deflate_at_ < 0)
      deflate_at_ = i;
    else if (f == H5Z_FILTER_SHUFFLE && shuffle_at_ < 0 && deflate_at_ < 0)
      shuffle_at_ = i;
    else
      why_not_ = "filter " + std::to_string(f) + " is decoded by HDF5";
  }
  if (deflate_at_ < 0 && why_not_.empty()) why_not_ = "not compressed (nothing to decode)";
  elem_bytes_ = H5Tget_size(type.get());
  chunk_rows_ = chunk[0];
  row_bytes_ = elem_bytes_;
  for (int d = 1; d < rank; ++d) row_bytes_ *= dims[static_cast<std::size_t>(d)];
}

void ChunkDecoder::read(hsize_t first, hsize_t count, void* out, std::vector<unsigned char>& raw,
                        std::vector<unsigned char>& scratch) const {
  if (!direct()) {
    std::lock_guard<std::mutex> lock(h5::lock());
    h5::read_rows(dataset_, mem_type_.get(), first, count, out);
    return;
  }
  HPCT_CHECK(first % chunk_rows_ == 0 && count <= chunk_rows_, "ChunkDecoder::read spans chunks");
  const std::size_t chunk_bytes = static_cast<std::size_t>(chunk_rows_ * row_bytes_);
  std::uint32_t mask = 0;
  {
    std::lock_guard<std::mutex> lock(h5::lock());
    std::vector<hsize_t> offset(8, 0);
    offset[0] = first;
    hsize_t stored = 0;
    CHECK_H5(H5Dget_chunk_storage_size(dataset_, offset.data(), &stored));
    raw.resize(static_cast<std::size_t>(stored));
    CHECK_H5(H5Dread_chunk(dataset_, H5P_DEFAULT, offset.data(), &mask, raw.data()));
  }
  const bool inflated = deflate_at_ >= 0 && !(mask & (1u << deflate_at_));
  const bool shuffled = shuffle_at_ >= 0 && !(mask & (1u << shuffle_at_));
  // Rows wanted: all of a whole chunk (decoded straight into `out` when nothing else is needed),
  // or the first `count` of the last one, which is stored full size.
  const std::size_t want = static_cast<std::size_t>(count * row_bytes_);
  const bool straight = want == chunk_bytes && !shuffled;
  unsigned char* plain = straight ? static_cast<unsigned char*>(out) : nullptr;
  if (inflated) {
    if (!plain) {
      scratch.resize(chunk_bytes);
      plain = scratch.data();
    }
    inflate_exact(raw.data(), raw.size(), plain, chunk_bytes);
  } else {
    HPCT_CHECK(raw.size() == chunk_bytes, "a chunk stored without compression has the wrong size");
    plain = raw.data();
  }
  if (shuffled) {
    std::vector<unsigned char>& target = plain == raw.data() ? scratch : raw;  // (the other buffer)
    target.resize(chunk_bytes);
    unshuffle(plain, target.data(), chunk_bytes, elem_bytes_);
    plain = target.data();
  }
  if (plain != out) std::memcpy(out, plain, want);
}

}  // namespace hpctrain
