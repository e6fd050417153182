// Reading the rows of one HDF5 chunk with the decompression outside the HDF5 lock. HDF5 decodes
// a chunk's filters inside H5Dread, under the one process-wide lock (io/h5.hpp), so a reader
// that decodes on several threads would still inflate one chunk at a time. For datasets chunked
// along their first dimension whose filters are gzip (deflate) and optionally HDF5's byte
// shuffle, ChunkDecoder reads the stored chunk raw (H5Dread_chunk, under the lock: I/O only)
// and inflates it (libdeflate when built with it, else zlib) and undoes the shuffle on the
// calling thread, without the lock. Any other layout, filter or type conversion goes through
// H5Dread as before (direct() says which, why_not() why).
#pragma once

#include <hdf5.h>

#include "hpctrain/io/h5.hpp"

#include <string>
#include <vector>

namespace hpctrain {

class ChunkDecoder {
 public:
  // `mem_type`: the type the caller wants the rows in (direct only when the file's type is the
  // same; copied). Call with the HDF5 lock held. `dataset` must stay open while this is used.
  // `hdf5_only`: always H5Dread (HDF5 decodes under the lock; reader-bench's comparison).
  ChunkDecoder(hid_t dataset, hid_t mem_type, bool hdf5_only = false);
  bool direct() const { return why_not_.empty(); }
  const std::string& why_not() const { return why_not_; }
  // Rows [first, first + count) of the dataset, all within one chunk (first a multiple of the
  // chunk's rows), into `out` (count x row bytes). Takes the HDF5 lock itself, only for the read
  // (direct) or for the whole H5Dread. `scratch`: the caller's reused buffers. Thread-safe.
  void read(hsize_t first, hsize_t count, void* out, std::vector<unsigned char>& raw,
            std::vector<unsigned char>& scratch) const;
  static const char* inflater();  // "libdeflate 1.14" or "zlib 1.2.13"

 private:
  hid_t dataset_;
  h5::Id mem_type_;
  std::string why_not_;
  hsize_t chunk_rows_ = 0, row_bytes_ = 0;
  std::size_t elem_bytes_ = 1;
  int deflate_at_ = -1, shuffle_at_ = -1;  // filter positions in the pipeline (-1: absent)
};

// Pure: HDF5's shuffle filter undone: `in` holds byte b of every element, then byte b + 1, ...
// (`bytes` in all; a remainder that is not a whole element is copied as it is).
void unshuffle(const unsigned char* in, unsigned char* out, std::size_t bytes, std::size_t elem_bytes);

}  // namespace hpctrain
