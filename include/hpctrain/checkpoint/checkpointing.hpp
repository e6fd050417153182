// The trainer's side of checkpoints: which tensors a checkpoint holds (the
// model's parameters and buffers, the optimizer's state; each tagged with the
// model-parallel stage that owns its layer), when one is due, writing one
// (temporary name, collective write, rename, `latest`, keep K), and resuming
// from one: every rank checks it against its part of the model and reads its own slabs.
// Also the checks --dry-run makes of the directory and the target.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hpctrain/checkpoint/state_writes.hpp"
#include "hpctrain/config/config.hpp"
#include "hpctrain/io/checkpoint_file.hpp"
#include "hpctrain/model/model.hpp"
#include "hpctrain/model/partition.hpp"
#include "hpctrain/optim/optimizer.hpp"
#include "hpctrain/runtime/runtime.hpp"

namespace hpctrain {

class Checkpointer {
 public:
  // Collective: creates [checkpoint] dir on rank 0 (bad_input when it cannot). `dp`: the
  // data-parallel group for host buffers (its ranks share the writing of the optimizer state).
  // `groups`: the layers of each pipeline stage (empty: one stage holds everything).
  Checkpointer(const Config& cfg, Runtime& rt, Communicator& dp, Model& model, Optimizer& opt,
               std::vector<LayerGroup> groups = {});

  ~Checkpointer();  // waits for a write in the background (an exception leaving the run)
  // Collective: writes <dir>/ckpt-<state.step>.h5 (the state, this run's record, the tensors)
  // and makes it the newest; returns its path. With [checkpoint] async, copies what the file
  // holds to host memory and writes it on a thread of its own, over a communicator of its own,
  // while training goes on; at most one write is in flight (the next save waits for it).
  std::string save(const TrainState& state, const IntervalSums& interval_sums);
  // Collective: waits for the write in the background, if any; a failed one stops every rank
  // as a synchronous failure does (exit 4, one line). Called by save(), at the end of the run,
  // before a preemption exit, and when async_failed() says so.
  void finish_async();
  // This rank's background write ended in failure (the ranks OR it into the step's flags).
  int async_failed() const { return writer_failed_.load(); }
  double seconds_writing() const { return seconds_; }
  double seconds_stalled() const { return stall_s_; }  // training's time inside save()
  // What one checkpoint of this run takes on disk (the data, and an allowance for HDF5's metadata).
  std::uint64_t estimated_bytes() const;
  // Bytes free for checkpoints in `dir` (io free_bytes, or the injected Faults::free_bytes).
  std::uint64_t free_space(const std::string& dir) const;
  // Collective, before training: whether [checkpoint] dir has room for keep + 1 checkpoints (the
  // free space plus the complete checkpoints already there, which rotation deletes);
  // [checkpoint] space_check says whether a shortfall is bad_input (one line), a warning, or not checked.
  void check_space() const;
  // A language model's tokenizer and vocabulary, stored with every checkpoint it writes.
  void set_tokenizer(std::string tokenizer, std::string vocabulary, TokenizerFiles files) {
    tokenizer_ = std::move(tokenizer);
    vocabulary_ = std::move(vocabulary);
    tokenizer_files_ = std::move(files);
  }
  int saved() const { return saved_; }

  // Collective: the checkpoint [checkpoint] resume selects ("" = start fresh).
  std::string resume_target() const;
  // Collective: loads `path` into the model and the optimizer. Every rank checks it against its
  // stage (bad_input naming the layer and both shapes when the model differs) and reads what it
  // holds by hyperslab (its stage's parameters and buffers, the state of the elements it updates);
  // rank 0 prints the configuration keys that differ from the checkpoint's as warnings. `interval_sums`: this rank's
  // partial log-interval sums (the same world size), or the total on rank 0. When the checkpoint's optimizer differs,
  // its state starts from zero and so does the returned optimizer_steps.
  // purpose = training with [checkpoint] resume = auto (the run folder's newest): a checkpoint of
  // another experiment, or without resume_changed of another schedule, is bad_input naming the
  // key and the ways on (config/schema.hpp resume_role); an explicit resume = FILE only warns.
  // inference (--eval-only, --generate): its weights alone, no warnings about the configuration.
  enum class LoadFor { training, inference };
  CheckpointInfo load(const std::string& path, IntervalSums& interval_sums, LoadFor purpose = LoadFor::training);
  // Collective, for a run that starts fresh: [checkpoint] init_from into the model's parameters
  // and buffers (each stage its own layers; not the optimizer state, not the step), as
  // plan_initialization decides. Returns what was loaded and what starts fresh (this stage's);
  // warns when layers start fresh because they do not match.
  std::string initialize(const std::string& path);

 private:
  // bad_input naming the file and the first mismatch (and how many more) when `file` does not fit the model.
  void check_fits(const CheckpointFile& file) const;
  // This rank's parameters and buffers from `file` (the stage's), then to the device.
  void read_model(const CheckpointFile& file);
  // The values of `params` (of this stage's, by global offset) into `out`, laid out as
  // model_.parameters() is: whole, or ([parallel] shard = full) the owned elements packed.
  void read_parameters(const CheckpointFile& file, const std::vector<ParamInfo>& params, float* out) const;
  // The optimizer state of the elements this rank updates (opt_.runs()), each by its hyperslabs.
  void read_state(const CheckpointFile& file);
  // Collective, after a write failed on some rank (`local`: this rank's error, "" if none): rank 0
  // removes the partial file; every rank throws checkpoint_failed with one line in words (no space
  // left, or the write error) naming the newest complete checkpoint, which still stands.
  [[noreturn]] void fail(std::int64_t step, const std::string& partial, const std::string& local) const;
  // Collective over the group, at the first checkpoint: the optimizer state this rank writes
  // (checkpoint/state_writes.hpp: its own elements, of all it holds or its shard).
  void plan_state_writes_once();
  // Every tensor of the whole model; this rank's data at `params` (host copy) and `state` (its
  // optimizer state, compact), its buffers' at `buffers` (by name) or the model's own; with
  // shard = full the frozen layers' at `frozen` (ParamStore::frozen_parameters, host copy).
  std::vector<CheckpointTensor> tensors(const float* params, const float* state, const float* frozen,
                                        const std::map<std::string, const float*>* buffers = nullptr) const;
  // One checkpoint on its way to disk: the names, the record, the tensor list and, for a write in
  // the background, host copies of everything it points to (the training goes on changing the
  // model's own buffers).
  struct Job {
    std::int64_t step = 0;
    std::string name, partial, final_path;
    CheckpointInfo info;
    WriterPlace place;
    std::vector<float> params, state;               // host copies of a CPU run's parameters and optimizer
                                                    // state (async only)
    std::vector<float> frozen;                      // shard = full: the frozen layers' (held whole)
    HostBuffer params_download, state_download;     // a GPU run's parameters and optimizer state (pinned)
    std::vector<std::vector<float>> buffer_copies;  // (async only)
    std::vector<CheckpointTensor> list;
    IntervalSums sums;
    double bytes = 0;
  };
  // Collective: the checkpoint of `state`, with host copies of everything when `copy` (async).
  std::unique_ptr<Job> prepare(const TrainState& state, const IntervalSums& interval_sums, bool copy);
  // Collective over `comm`: the file, agreed on, renamed and published; the write's seconds.
  // A failed write: Error checkpoint_failed (this rank's text) on every rank.
  double write(const Job& job, Communicator& comm);
  void report(const Job& job, double seconds, double stall);  // counts it, logs the line
  const Config& cfg_;
  Runtime& rt_;
  Communicator& dp_;
  Model& model_;
  Optimizer& opt_;
  std::vector<LayerGroup> groups_;
  Ranges state_writes_;  // the optimizer state this rank writes (plan_state_writes_once)
  bool planned_ = false;
  FileTuning tuning_;  // [checkpoint] mpiio_hints and alignment (the same on every rank: rank 0's)
  // [checkpoint] async: the writer thread, its communicator (a duplicate of the world), the job in
  // flight and how it ended.
  std::unique_ptr<Communicator> async_comm_;
  std::thread writer_;
  std::unique_ptr<Job> in_flight_, spare_;  // spare_: the last job, its buffers reused
  std::atomic<int> writer_failed_{0};
  std::string writer_error_;
  double in_flight_seconds_ = 0, in_flight_stall_ = 0;
  double stall_s_ = 0;
  double seconds_ = 0;
  int saved_ = 0;
  std::string tokenizer_, vocabulary_;
  TokenizerFiles tokenizer_files_;
  TokenizerFiles hf_files_;  // RunRecord::hf_files of the init_from or resumed checkpoint, passed on
};

// A parameter or buffer of the model, as the checkpoint readers see it.
struct ModelTensor {
  std::string name, legacy, layer;  // ParamInfo's name and legacy name; its layer's name
  Shape shape;
};
// The parameters, then the buffers: of the whole model (`whole`), or those this rank holds.
std::vector<ModelTensor> model_tensors(const Model& model, bool whole);
// Where `file` holds the tensor (under "model/" or "optimizer/<state>/"): by its name in format
// 2, by its positional format-1 name in older files (io/checkpoint_file.hpp).
inline const std::string& stored_name(const CheckpointFile& file, const std::string& name, const std::string& legacy) {
  return file.version() >= 2 ? name : legacy;
}

// What [checkpoint] init_from takes for `tensors` of a model whose layers are `layers`: with
// init_layers empty, every tensor the checkpoint has under the same name and shape (the others
// start fresh and are listed with the reason); with patterns (model/model.hpp layer_matches, on
// a layer's or a tensor's name: "h.0", "h.*.attn"), the tensors they name, where a missing or
// differently shaped tensor is bad_input (one line). bad_input too when a pattern names nothing
// or nothing would load.
struct InitPlan {
  std::vector<std::string> load, fresh;    // tensor names; fresh ones with the reason
  std::vector<std::string> loaded_layers;  // the layers of `load`, once each, in order
  bool mismatched = false;                 // some start fresh for want of a match (a warning)
  std::string describe() const;            // "6 tensor(s) of conv2d.0, conv2d.1; fresh: ..."
};
InitPlan plan_initialization(const CheckpointFile& file, const std::vector<std::string>& layers,
                             const std::vector<ModelTensor>& tensors, const std::string& init_layers);

// Rank 0: the checkpoint [checkpoint] resume selects ("" = none; the newest complete one for
// auto); bad_input for a named file that does not exist.
std::string resume_selection(const Config& cfg);

// Problems of `file` for `model` (missing or extra layers, shapes), one line
// each, empty when it fits. Used by load() and --dry-run.
std::vector<std::string> checkpoint_mismatches(const CheckpointFile& file, const Model& model);
// What to set when the checkpoint's copy of table `name` has more rows than the model's and the
// same width ("" otherwise): [model] vocab_multiple for a vocabulary padded to a round multiple
// (nanoGPT's and llm.c's 50,304 rows for GPT-2's 50,257), [model] vocab_size for an embedding or
// head with rows no token uses (Qwen2's 151,936 for 151,665 tokens).
std::string vocabulary_rows_hint(const std::string& name, const Shape& ours, const Shape& theirs);

// Rank 0, for --dry-run: the directory and the resume target, as lines of text.
std::string describe_checkpointing(const Config& cfg, const Model* model);

}  // namespace hpctrain
