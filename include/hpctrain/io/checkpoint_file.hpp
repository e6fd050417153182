// Checkpoint files: the file format (docs/checkpoints.md; when and what to checkpoint is
// checkpoint/checkpointing.hpp). One HDF5 file per checkpoint, written collectively through the MPI-IO driver (every
// rank writes a disjoint set of chunks, nothing funnels through rank 0), under a temporary name that is renamed once
// every rank has closed it; read back by every rank with the serial driver, each rank its own slabs. Every dataset
// carries HDF5's Fletcher32 checksum, so a flipped byte is an error on load, not a silently different model.
//
// Also here: the checkpoint directory (names, the `latest` pointer, keeping the
// newest K, finding the newest complete checkpoint).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/core/range.hpp"
#include "hpctrain/core/train_state.hpp"
#include "hpctrain/io/h5.hpp"
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

inline constexpr const char* kCheckpointFormat = "hpctrain-checkpoint";
// Format 2: tensors named for what they are, flat under model/ ("model/h.3.attn.qkv.weight",
// "optimizer/m/h.3.attn.qkv.weight"), each with its layer's type as the attribute layer_type.
// Format 1 named them by position in groups ("model/07_res/01_attention/qkv_weight"); it still
// loads, by those names (ParamInfo::legacy, checkpoint/checkpointing.hpp stored_name).
inline constexpr int kCheckpointVersion = 2;

// Which run wrote a checkpoint, and how: root attributes beside the TrainState.
struct RunRecord {
  std::int64_t global_batch = 0;  // of the run that wrote it
  std::uint64_t seed = 0;
  int world = 1, dp = 1, pp = 1,
      tp = 1;             // mesh sizes (pp: the root attribute "model_parallel", its name since format 1)
  std::string optimizer;  // "sgd", "adam", "adamw"
  std::string ini;        // every key as used (after --set and ${VAR}), as an INI file
  std::string ini_file;   // the INI file as given
  std::string model_summary;
  // Language models: the tokenizer and its vocabulary (data/text_import.hpp), so text can be
  // generated from the checkpoint alone; "" for other models.
  std::string tokenizer, vocabulary;
  TokenizerFiles tokenizer_files;  // gpt2: its files, the group tokenizer_files/ of 1-D uint8 datasets
  // --import-hf: the folder's tokenizer_config.json, special_tokens_map.json and
  // generation_config.json (the special tokens, chat template, sampling defaults), kept through
  // init_from and resume and written back by --export-hf; the group hf_files/.
  TokenizerFiles hf_files;
  // Set by the writer (whatever the caller gave): wall-clock time, versions.
  std::string written_at, software, hdf5, mpi, blas;
};

// The root attributes of a checkpoint: the same on every rank.
struct CheckpointInfo {
  TrainState state;
  RunRecord run;
};

// The one table of a checkpoint's root attributes: its name in the file and the field it holds,
// in file order. Writing, reading, the rank-0-to-all broadcast and the tests all walk it, so a
// new field is one line here (the field-table tests in tests/mpi/test_checkpoint_io.cpp fail
// when a TrainState field is missing). `visit(name, field, optional)`: `optional` fields may be absent from older
// files of format 1 (they keep their defaults), the others are required. Fields are root
// attributes, except TokenizerFiles (a group of that name holding one byte dataset per file) and
// vectors of doubles (a float64 dataset of that path, absent when empty).
template <class Info, class Visit>
void visit_fields(Info& i, Visit&& visit) {
  auto& s = i.state;
  auto& r = i.run;
  visit("step", s.step, false);
  visit("epoch", s.epoch, false);
  visit("epoch_step", s.epoch_step, false);
  visit("samples", s.samples, false);
  visit("global_batch", r.global_batch, false);
  visit("seed", r.seed, false);
  visit("world_size", r.world, false);
  visit("data_parallel", r.dp, false);
  visit("model_parallel", r.pp, false);
  visit("tensor_parallel", r.tp, true);  // (absent before tensor parallelism: 1)
  visit("last_loss", s.last_loss, false);
  visit("train_seconds", s.train_seconds, false);
  visit("optimizer", r.optimizer, false);
  visit("optimizer_steps", s.optimizer_steps, false);
  visit("loss_scale", s.scaler.scale, true);  // (absent from the first checkpoints of format 1)
  visit("loss_scale_good_steps", s.scaler.good_steps, true);
  visit("skipped_steps", s.scaler.skipped_steps, true);
  visit("dropped_in_a_row", s.guard.in_a_row, true);  // ([train] on_nonfinite, spike_factor; absent before: 0)
  visit("dropped_nonfinite", s.guard.nonfinite, true);
  visit("dropped_spikes", s.guard.spikes, true);
  visit("state/loss_window", s.guard.window, true);  // (the spike rule's window: a dataset)
  visit("ini", r.ini, false);
  visit("ini_file", r.ini_file, false);
  visit("model_summary", r.model_summary, false);
  visit("written_at", r.written_at, false);
  visit("software", r.software, false);
  visit("hdf5_version", r.hdf5, true);
  visit("mpi_version", r.mpi, true);
  visit("blas", r.blas, true);
  visit("tokenizer", r.tokenizer, true);  // (absent before language models)
  visit("vocabulary", r.vocabulary, true);
  visit("tokenizer_files", r.tokenizer_files, true);  // (a group of byte datasets; since gpt2)
  visit("hf_files", r.hf_files, true);                // (likewise; since --import-hf kept them)
}

// One float32 dataset, e.g. "model/dense.1.weight".
struct CheckpointTensor {
  std::string path;
  Shape shape;
  const float* data = nullptr;  // this rank's copy; nullptr on ranks of other model-parallel stages
  int stage = 0;                // model-parallel stage holding it: its data-parallel ranks write it
  // By default this rank writes its writer rows (writer_elements) from `data`, all of the tensor.
  // With `by_elements` (the optimizer state), it writes `elements` instead (sorted, disjoint,
  // row-major indices of the tensor; possibly none), their values one after another at `data`.
  bool by_elements = false;
  Ranges elements{};
  std::string layer_type{};  // written as the dataset's attribute layer_type when not empty
  // With `data` null: rows [first, first + count) of the row-major values (rows: the first
  // dimension; a scalar is one row) to `out`, asked for piece by piece as the dataset is written
  // (--import-hf holds a piece of one tensor in memory at a time, not the tensor).
  std::function<void(std::int64_t first, std::int64_t count, float* out)> rows{};
};

// Where this rank sits, for dividing the writing.
struct WriterPlace {
  int dp = 0, dp_size = 1, pp = 0, pp_size = 1;  // the mesh coordinates and sizes
};

// The elements of a float32 tensor of `shape`, in row-major order, that data-parallel writer
// `index` of `writers` writes (whole chunks of rows; empty for some writers of small tensors;
// index < 0: none).
Range writer_elements(const Shape& shape, int index, int writers);

// How the file is laid out and handed to MPI-IO ([checkpoint] mpiio_hints, alignment).
struct FileTuning {
  std::vector<std::pair<std::string, std::string>> hints;  // MPI_Info keys for HDF5's MPI-IO driver
  std::uint64_t alignment = 0;  // objects of at least this size start at a multiple of it (0: HDF5's packing)
  // A rank's rows of a dataset are written in pieces of whole chunks of at most this size: HDF5
  // holds a checksummed copy of what one write covers.
  std::uint64_t piece_bytes = std::uint64_t{64} << 20;
};
// The alignment [checkpoint] alignment = auto gives `dir`: the file system's preferred I/O size
// (st_blksize: the block size, or the stripe size on Lustre), at least 4 KiB.
std::uint64_t preferred_alignment(const std::string& dir);

// A log interval's partial sums on one rank, what its metrics line averages: the loss summed over
// its terms, the correct predictions, the loss terms. A checkpoint keeps every rank's as
// /state/interval_sums [world, 3], so the first line after a resume is the uninterrupted run's.
struct IntervalSums {
  double loss = 0, correct = 0, samples = 0;
};
static_assert(sizeof(IntervalSums) == 3 * sizeof(double), "written as three doubles");

// Collective over `comm` (every rank of the job): writes `path` (through
// "<dir>/.<name>.partial", renamed when complete and closed everywhere).
// `groups`: (group path, layer type) pairs, written as the group's `type`
// attribute. `rank_sums`: this rank's partial log-interval sums, stored as a row of
// /state/interval_sums [world, 3]. Returns the seconds spent.
double write_checkpoint(Communicator& comm, const std::string& path, const CheckpointInfo& info,
                        const std::vector<CheckpointTensor>& tensors,
                        const std::vector<std::pair<std::string, std::string>>& groups, const WriterPlace& place,
                        const IntervalSums& rank_sums, const FileTuning& tuning = {});

// A checkpoint opened for reading by one rank (serial driver; every rank may open it). Every error is
// bad_input naming the file and the dataset: missing, not HDF5, not a
// checkpoint, a newer format version, a failed checksum.
class CheckpointFile {
 public:
  explicit CheckpointFile(const std::string& path);
  const std::string& path() const { return path_; }
  const CheckpointInfo& info() const { return info_; }
  bool has(const std::string& dataset) const;
  Shape shape(const std::string& dataset) const;
  int version() const { return version_; }                 // format_version
  std::string group_type(const std::string& group) const;  // "" when the group or attribute is missing
  // A string attribute of a group or dataset; "" when either is missing.
  std::string string_attribute(const std::string& object, const std::string& name) const;
  std::vector<std::string> children(const std::string& group) const;  // link names, sorted; {} when missing
  void read(const std::string& dataset, float* out) const;            // the whole dataset, float32
  // Elements [first, first + count) of a float32 dataset in row-major order: the whole rows
  // (first dimension) that hold them are read as one hyperslab, nothing else.
  void read_elements(const std::string& dataset, std::int64_t first, std::int64_t count, float* out) const;
  std::vector<double> read_f64(const std::string& dataset) const;

 private:
  std::string path_;
  h5::Id file_;
  CheckpointInfo info_;
  int version_ = 0;
};

// ---- The checkpoint directory ----
std::string checkpoint_file_name(std::int64_t step);  // "ckpt-00000100.h5"
// Rank 0, after a checkpoint is complete: points `<dir>/latest` at it (written
// to a temporary file and renamed), then deletes all but the newest `keep`
// complete checkpoints (partial files are left alone: remove_partial_checkpoints at start-up).
void publish_checkpoint(const std::string& dir, const std::string& name, int keep);
// The newest complete checkpoint in `dir` ("" when there is none): the one
// `latest` names when that file exists, else the highest step found.
// A `latest` that is damaged (not a checkpoint's name, whatever its bytes) or dangling (names a
// missing file) is not trusted: the newest complete checkpoint by step is used, and `warning`
// (when given) says so, naming the pointer and the fallback.
std::string find_latest_checkpoint(const std::string& dir, std::string* warning = nullptr);
// Complete checkpoints in `dir`, oldest first.
std::vector<std::string> list_checkpoints(const std::string& dir);
// Bytes an unprivileged writer may still use on `dir`'s file system (statvfs). (Tests pretend
// another figure through Faults::free_bytes, where no small tmpfs can be mounted: docs/testing.md.)
std::uint64_t free_bytes(const std::string& dir);

// Serialization of CheckpointInfo to a string and back (for broadcasting).
std::string encode_info(const CheckpointInfo& info);
CheckpointInfo decode_info(const std::string& text);

}  // namespace hpctrain
