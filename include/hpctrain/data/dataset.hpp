// The dataset layout (docs/datasets.md) and its index: which shard files a
// split has, how many samples each holds, the sample shape and type, the
// labels and the normalization. Scanned once (rank 0), validated, and
// broadcast; the values (NaN/Inf, label range) are checked by all ranks in
// parallel, each taking a share of the shards.
//
//   <root>/train/*.h5   <root>/val/*.h5 (optional)   <root>/test/*.h5 (optional)
//   each shard: /samples [N, d1, ...]  uint8 | float16 | float32
//               /labels  [N] integer class  or  [N, k] float32 targets
//               root attributes: format = "hpctrain-dataset", version = 1,
//               num_classes (0 for regression), and either scale + offset
//               (x = raw * scale + offset) or mean + std per channel
//               (x = (raw - mean[c]) / std[c], c = the first sample dimension).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/config/config.hpp"
#include "hpctrain/io/h5.hpp"

namespace hpctrain {

constexpr const char* kDatasetFormat = "hpctrain-dataset";
constexpr long long kDatasetVersion = 1;

// i32: token ids as the token store hands them out (layers/embedding reads them as integers);
// not a /samples type of a dataset file.
enum class SampleType { u8, f16, f32, i32, u16 };
const char* to_string(SampleType t);
std::size_t sample_type_size(SampleType t);

// The memory type that reads /samples of `dataset` raw: native uint8 or
// float for those types, the file's own 16-bit type for float16 (raw bits).
hid_t raw_sample_type(hid_t dataset, SampleType t, h5::Id* holder);

struct Shard {
  std::string path;
  std::int64_t rows = 0;
  std::int64_t first = 0;       // index of its first sample within the split
  std::int64_t chunk_rows = 0;  // rows per HDF5 chunk of /samples (rows when contiguous)
  std::string compression;      // "none", "gzip(4)+shuffle", ...
};

struct SplitIndex {
  std::string name;  // "train", "val", "test"
  std::vector<Shard> shards;
  std::int64_t total = 0;
  std::vector<std::int64_t> sample_shape;  // without the leading N
  SampleType sample_type = SampleType::u8;
  bool classification = true;  // labels [N] integer; else [N, k] float targets
  std::int64_t label_width = 1;
  std::int64_t num_classes = 0;
  std::string target_names;  // regression: the targets' names, comma-separated (root attribute target_names), or ""
  bool log1p = false;        // root attribute transform = "log1p" (uint16 counts): log(1 + x) before scale/offset
  // The targets' names: target_names split, or "target0", "target1", ...
  std::vector<std::string> target_labels() const;
  std::vector<float> scale, offset;  // per channel (size 1 or sample_shape[0]): x = raw*scale + offset
  // Token datasets (data/token_dataset.hpp): samples are windows of block_size + 1 tokens of one
  // stream of stream_tokens tokens (shards' rows are their tokens, first their stream offset);
  // sample_shape = [block_size] (ids: SampleType::i32), label_width = block_size next-token classes.
  bool tokens = false;
  std::int64_t stream_tokens = 0, block_size = 0;
  int token_bits = 0;                              // as stored: 8, 16 or 32
  TokenWindows windows = TokenWindows::grid;       // training windows ([data] windows)
  DataFormat token_format = DataFormat::hpctrain;  // hpctrain's HDF5 shards, or llm.c's .bin (llmc_shards.hpp)
  std::string tokenizer, vocabulary;
  TokenizerFiles tokenizer_files;  // gpt2: read from the first shard (the others' hashes must match)
  // The largest id the split's shards hold, as each records it (root attribute max_token_id, which
  // import-text writes), or -1 where a shard records none (older shards, llm.c's .bin).
  std::int64_t max_id = -1;
  // Ids the split's values may hold: [0, max_id] where recorded (their checks hold the shards to
  // it), else the vocabulary [0, num_classes).
  std::int64_t id_limit() const { return max_id >= 0 ? max_id + 1 : num_classes; }

  std::int64_t sample_elems() const;
  // What the model must output per sample: [classes], [T, classes] for token windows, [targets].
  std::vector<std::int64_t> output_shape() const;
  // Loss terms per sample: the positions of a token window, else 1.
  std::int64_t loss_rows() const { return tokens ? block_size : 1; }
  std::int64_t sample_bytes() const {
    return sample_elems() * static_cast<std::int64_t>(sample_type_size(sample_type));
  }
  // {0, end of chunk 0, ..., total}: the HDF5 chunks of all shards, in order.
  std::vector<std::int64_t> chunk_bounds() const;
  // The shard holding sample `index`.
  const Shard& shard_of(std::int64_t index) const;
};

// [parallel] spatial_parallel: this rank's depth slab of every volume sample [C, D, H, W] (planes
// [rank x D/size, (rank + 1) x D/size) of each channel), read from the shards as a hyperslab.
struct DepthSlab {
  int rank = 0, size = 1;
  bool on() const { return size > 1; }
};
// bad_input naming the data path when `split`'s samples are not volumes whose depth `size` divides.
void check_depth_slabs(const SplitIndex& split, const std::string& path, int size);
// The per-sample shape of a slab: [C, D / size, H, W] (the sample shape itself when size is 1).
std::vector<std::int64_t> slab_shape(const std::vector<std::int64_t>& sample, int size);

struct DatasetIndex {
  std::string root;
  SplitIndex train;
  std::optional<SplitIndex> val, test;
};

// Serial: scans `root` and checks every shard's structure; throws bad_input
// with one line naming the file and dataset. Does not read sample values.
DatasetIndex scan_dataset(const std::string& root);

// Serial: checks the values of shards [first, last) of `split` (NaN/Inf in
// float samples, labels outside [0, num_classes)); "" when fine, else the message.
std::string check_values(const SplitIndex& split, std::size_t first, std::size_t last);

// Collective over `comm`: rank 0 scans, the index is broadcast, every rank
// checks the values of its share of the shards; any problem is a bad_input
// error raised identically on every rank.
// block_size: [model] block_size, the window length of a token dataset (0: none given).
DatasetIndex load_dataset_index(Communicator& comm, const std::string& root, std::int64_t block_size = 0);
// The same for the [data] section: its format (hpctrain, llm.c's shards, or found out) and globs.
DatasetIndex load_dataset_index(Communicator& comm, const DataConfig& data, std::int64_t block_size);
DatasetIndex scan_dataset(const DataConfig& data);  // serial, as scan_dataset(root)

// A table of the splits (shards, samples, shape, dtype, labels, normalization).
std::string describe_splits(const DatasetIndex& index);

std::string serialize(const DatasetIndex& index);
DatasetIndex deserialize_dataset_index(const std::string& text);

}  // namespace hpctrain
