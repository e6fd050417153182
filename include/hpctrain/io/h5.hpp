// Thin RAII layer over the HDF5 C API: an owning id, the process-wide HDF5
// lock (Debian's parallel HDF5 is not thread-safe, so every HDF5 call made
// while another thread may use HDF5 holds it), and the few typed helpers the
// dataset and checkpoint code share (attributes, dataset shapes, creation).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace hpctrain::h5 {

// The lock every thread takes around HDF5 calls. One per process because the
// HDF5 library's own state is per process.
std::mutex& lock();

// Owns an HDF5 identifier (file, group, dataset, dataspace, type, plist,
// attribute) and releases it with H5Idec_ref.
class Id {
 public:
  Id() = default;
  explicit Id(hid_t id) : id_(id) {}
  ~Id() { reset(); }
  Id(Id&& o) noexcept : id_(o.id_) { o.id_ = -1; }
  Id& operator=(Id&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      o.id_ = -1;
    }
    return *this;
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset();

 private:
  hid_t id_ = -1;
};

// Opening (read-only, serial driver) and creating files; throw Error naming the path.
Id open_file(const std::string& path);
Id create_file(const std::string& path);  // truncates

bool has_link(hid_t loc, const std::string& name);
bool has_path(hid_t loc, const std::string& name);  // every group on the way and the link itself exist
bool has_attribute(hid_t obj, const std::string& name);
std::vector<hsize_t> dataset_shape(hid_t dataset);

// Attributes. Readers throw when the attribute is missing or of the wrong class.
std::string read_string_attribute(hid_t obj, const std::string& name);
long long read_int_attribute(hid_t obj, const std::string& name);
std::vector<double> read_double_attribute(hid_t obj, const std::string& name);  // scalar or 1-D
void write_string_attribute(hid_t obj, const std::string& name, const std::string& value);
void write_int_attribute(hid_t obj, const std::string& name, long long value);
void write_double_attribute(hid_t obj, const std::string& name, const std::vector<double>& values);

// A chunked dataset of `type` and `shape`, chunked along the first dimension by
// `chunk_rows`, gzip level `gzip` (0 = none).
Id create_dataset(hid_t loc, const std::string& name, hid_t type, const std::vector<hsize_t>& shape, hsize_t chunk_rows,
                  int gzip);

}  // namespace hpctrain::h5

namespace hpctrain {
// A tokenizer's own files (name, bytes), stored as 1-D uint8 datasets with token datasets and
// checkpoints so text can be encoded and decoded without the originals (data/text_import.hpp:
// gpt2's encoder.json and vocab.bpe).
using TokenizerFiles = std::vector<std::pair<std::string, std::string>>;
}  // namespace hpctrain

namespace hpctrain::h5 {

// A 1-D uint8 dataset holding `bytes` (contiguous; intermediate groups created). In a file open
// with the MPI-IO driver every rank calls it (creation is collective) and only the rank with
// `writer` writes the bytes.
void write_bytes(hid_t loc, const std::string& name, const std::string& bytes, bool writer = true);
// The bytes of a 1-D 8-bit integer dataset; throws when it is missing or not one.
std::string read_bytes(hid_t loc, const std::string& name);
// The same for a 1-D float64 dataset (written contiguous; read from any floating-point type).
void write_doubles(hid_t loc, const std::string& name, const std::vector<double>& values, bool writer = true);
std::vector<double> read_doubles(hid_t loc, const std::string& name);

// Reads/writes rows [first, first+count) of a dataset (all other dimensions whole).
void read_rows(hid_t dataset, hid_t mem_type, hsize_t first, hsize_t count, void* out);
// The hyperslab [start, start + count) of `dataset` (one entry per dimension), packed into `out`.
void read_box(hid_t dataset, hid_t mem_type, const std::vector<hsize_t>& start, const std::vector<hsize_t>& count,
              void* out);
void write_rows(hid_t dataset, hid_t mem_type, hsize_t first, hsize_t count, const void* in);

}  // namespace hpctrain::h5
