// HDF5 files made elsewhere: the metadata hpctrain reads from a dataset shard (scan_dataset, then
// check_values), a token shard and a checkpoint (CheckpointFile's root attributes, then every
// tensor's shape, values and attributes, and init_from's plan). The input is not HDF5 bytes
// (that would fuzz the HDF5 library): it is a recipe the harness follows to write a real file
// with HDF5 (which attributes, with which types and values, which datasets, of which type, shape
// and contents, chunked or not), so every input is a well-formed file whose contents are
// arbitrary. Recipe (every read past the end gives 0):
//   byte 0: mode % 3 (0 dataset shard, 1 token shard, 2 checkpoint); byte 1: flags (bit 0: no
//   default format/version attributes; bit 1: the shard written twice, as two shards)
//   then items, each: kind % 4 (0 string attribute, 1 integer, 2 float or float array, 3 dataset),
//   a name (a byte: < 224 picks from the mode's known names, else a string: a length byte % 65, then its bytes)
//   and the value: string (a byte: < 224 picks a known value, else a string), int64 (8 bytes),
//   float (a byte n % 5: 0 a scalar, else n doubles of 8 bytes), dataset (type % 8: u8 u16 i16
//   i32 i64 f16 f32 f64; rank % 5; each dimension % 5; a byte: bit 0 chunked + deflate; then its
//   elements' bytes, repeated from the start of the input when short).
#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <vector>

#include "fuzz_target.hpp"
#include "hpctrain/checkpoint/checkpointing.hpp"
#include "hpctrain/data/dataset.hpp"
#include "hpctrain/data/token_dataset.hpp"
#include "hpctrain/io/checkpoint_file.hpp"
#include "hpctrain/io/h5.hpp"

namespace {

namespace fs = std::filesystem;
using hpctrain::fuzz::expect_refusal_only;

class Recipe {
 public:
  Recipe(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool done() const { return at_ >= size_; }
  std::uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
  template <typename T>
  T value() {
    unsigned char raw[sizeof(T)] = {0};
    for (auto& b : raw) b = byte();
    T v;
    std::memcpy(&v, raw, sizeof(T));
    return v;
  }
  std::string text(std::size_t max) {
    const std::size_t n = byte() % (max + 1);
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += static_cast<char>(byte());
    return s;
  }
  // `n` bytes for a dataset: the next ones, then the input again from its start.
  std::vector<unsigned char> bytes(std::size_t n) {
    std::vector<unsigned char> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = size_ ? data_[(at_ + i) % size_] : 0;
    at_ = std::min(size_, at_ + n);
    return out;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_, at_ = 0;
};

const std::vector<std::string>& attribute_names(int mode) {
  static const std::vector<std::string> names[3] = {
      {"format", "version", "num_classes", "scale", "offset", "mean", "std", "target_names", "transform"},
      {"format", "version", "tokenizer", "vocab_size", "vocabulary"},
      {"format",         "format_version",
       "step",           "epoch",
       "epoch_step",     "samples",
       "global_batch",   "seed",
       "world_size",     "data_parallel",
       "model_parallel", "tensor_parallel",
       "last_loss",      "train_seconds",
       "optimizer",      "optimizer_steps",
       "loss_scale",     "loss_scale_good_steps",
       "skipped_steps",  "ini",
       "ini_file",       "model_summary",
       "written_at",     "software",
       "hdf5_version",   "mpi_version",
       "blas",           "tokenizer",
       "vocabulary"}};
  return names[mode];
}

const std::vector<std::string>& dataset_names(int mode) {
  static const std::vector<std::string> names[3] = {
      {"samples", "labels"},
      {"tokens", "tokenizer/vocab.json", "tokenizer/merges.txt"},
      {"model/dense.0.weight", "model/dense.0.bias", "model/dense.1.weight", "optimizer/momentum/dense.0.weight",
       "state/interval_sums", "tokenizer_files/vocab.json", "model/0/weight"}};
  return names[mode];
}

std::string pick(Recipe& r, const std::vector<std::string>& known) {
  const std::uint8_t b = r.byte();
  return b < 224 ? known[b % known.size()] : r.text(64);
}

// Attribute `name` replaced through `write` (one of io/h5.hpp's writers); one HDF5 refuses (an
// odd name) is left out.
template <typename Write>
void attribute(hid_t at, const std::string& name, Write&& write) {
  if (H5Aexists(at, name.c_str()) > 0) H5Adelete(at, name.c_str());
  try {
    write();
  } catch (const hpctrain::Error&) {
  }
}

// A float16 type (HDF5 1.10 has none predefined): IEEE half precision, little-endian.
hid_t half_type() {
  const hid_t t = H5Tcopy(H5T_IEEE_F32LE);
  H5Tset_fields(t, 15, 10, 5, 0, 10);
  H5Tset_size(t, 2);
  H5Tset_ebias(t, 15);
  return t;
}

void write_dataset(hid_t file, Recipe& r, const std::string& name) {
  static const hid_t native[] = {H5T_NATIVE_UINT8, H5T_NATIVE_UINT16, H5T_NATIVE_INT16,
                                 H5T_NATIVE_INT32, H5T_NATIVE_INT64,  -1,
                                 H5T_NATIVE_FLOAT, H5T_NATIVE_DOUBLE};
  const int kind = r.byte() % 8;
  const hid_t type = kind == 5 ? half_type() : H5Tcopy(native[kind]);
  const int rank = r.byte() % 5;
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  hsize_t count = 1;
  for (auto& d : dims) count *= (d = r.byte() % 5);
  const bool chunked = r.byte() & 1;
  const std::vector<unsigned char> data = r.bytes(count * H5Tget_size(type));
  const hid_t space = rank ? H5Screate_simple(rank, dims.data(), nullptr) : H5Screate(H5S_SCALAR);
  const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  if (chunked && rank && count) H5Pset_chunk(dcpl, rank, dims.data()), H5Pset_deflate(dcpl, 1);
  if (H5Lexists(file, name.c_str(), H5P_DEFAULT) > 0) H5Ldelete(file, name.c_str(), H5P_DEFAULT);
  const hid_t d = H5Dcreate2(file, name.c_str(), type, space, lcpl, dcpl, H5P_DEFAULT);
  if (d >= 0) {
    if (count) H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data());
    H5Dclose(d);
  }
  H5Pclose(dcpl);
  H5Pclose(lcpl);
  H5Sclose(space);
  H5Tclose(type);
}

void write_file(const std::string& path, int mode, Recipe& r, bool defaults) {
  static const char* formats[] = {hpctrain::kDatasetFormat, hpctrain::kTokenFormat, hpctrain::kCheckpointFormat};
  static const std::vector<std::string> strings = {"hpctrain-dataset",
                                                   "hpctrain-tokens",
                                                   "hpctrain-checkpoint",
                                                   "byte",
                                                   "char",
                                                   "gpt2",
                                                   "bpe",
                                                   "log1p",
                                                   "sgd",
                                                   "adam",
                                                   ""};
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (file < 0) return;
  if (defaults) {
    const std::string version = mode == 2 ? "format_version" : "version";
    attribute(file, "format", [&] { hpctrain::h5::write_string_attribute(file, "format", formats[mode]); });
    attribute(file, version, [&] { hpctrain::h5::write_int_attribute(file, version, 1); });
  }
  for (int item = 0; item < 32 && !r.done(); ++item) {
    const int kind = r.byte() % 4;
    const std::string name = pick(r, kind == 3 ? dataset_names(mode) : attribute_names(mode));
    if (kind == 0) {
      const std::string v = pick(r, strings);
      attribute(file, name, [&] { hpctrain::h5::write_string_attribute(file, name, v); });
    } else if (kind == 1) {
      const auto v = r.value<long long>();
      attribute(file, name, [&] { hpctrain::h5::write_int_attribute(file, name, v); });
    } else if (kind == 2) {
      std::vector<double> v(std::max(1, r.byte() % 5));  // (one value: a scalar attribute)
      for (auto& x : v) x = r.value<double>();
      attribute(file, name, [&] { hpctrain::h5::write_double_attribute(file, name, v); });
    } else {
      write_dataset(file, r, name);
    }
  }
  H5Fclose(file);
}

// What the trainer reads of a checkpoint: the root attributes (the constructor), each tensor's
// shape, values and type attribute, the interval sums, and init_from's plan for a small model.
void read_checkpoint(const std::string& path) {
  const hpctrain::CheckpointFile file(path);
  std::vector<std::string> tensors;
  for (const auto& group : {"model", "optimizer/momentum", "tokenizer_files"})
    for (const auto& child : file.children(group)) tensors.push_back(std::string(group) + "/" + child);
  for (const auto& t : tensors) {
    (void)file.string_attribute(t, "type");
    const hpctrain::Shape shape = file.shape(t);
    std::int64_t n = 1;
    for (const auto d : shape) n *= d;
    if (n <= 0 || n > 4096) continue;
    std::vector<float> values(static_cast<std::size_t>(n));
    file.read(t, values.data());
    file.read_elements(t, n / 2, n - n / 2, values.data());
  }
  if (file.has("state/interval_sums")) (void)file.read_f64("state/interval_sums");
  const std::vector<hpctrain::ModelTensor> model = {{"dense.0.weight", "0/weight", "dense.0", {4, 3}},
                                                    {"dense.0.bias", "0/bias", "dense.0", {4}}};
  for (const char* layers : {"", "dense.0"}) {
    try {
      (void)hpctrain::plan_initialization(file, {"dense.0"}, model, layers);
    } catch (const hpctrain::Error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace hpctrain;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // (the harness's own failed writes are not findings)
  const std::string& dir = fuzz::scratch_dir("h5");
  Recipe r(data, size);
  const int mode = r.byte() % 3;
  const std::uint8_t flags = r.byte();
  std::error_code ec;
  fs::remove_all(dir + "/train", ec);
  fs::create_directories(dir + "/train");
  const std::string path = dir + (mode == 2 ? "/ckpt.h5" : "/train/shard-0.h5");
  write_file(path, mode, r, !(flags & 1));
  if (mode == 2) {
    expect_refusal_only("h5 checkpoint", [&] { read_checkpoint(path); });
    return 0;
  }
  if (flags & 2) fs::copy_file(path, dir + "/train/shard-1.h5", ec);
  expect_refusal_only("h5 shard", [&] {
    const DatasetIndex index = scan_dataset(dir);
    (void)check_values(index.train, 0, index.train.shards.size());
  });
  return 0;
}
