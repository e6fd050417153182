// The training loop, readable top to bottom in Trainer::run() (train/run.cpp): resume ->
// open the outputs -> for each step: next batch -> forward -> loss -> backward -> average
// gradients over the data-parallel group -> optimizer step -> what the schedule says is due
// (log, evaluate, checkpoint); then the final evaluation and the run report. The run's progress
// is one TrainState (core/train_state.hpp), the part of what the loop changes that checkpoints
// keep; the loop also changes the model's parameters and buffers, the optimizer state, the
// reader's position, the timing and the report's figures (train/run.cpp's Trainer::Progress).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hpctrain/comm/collective_log.hpp"
#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/config/config.hpp"
#include "hpctrain/core/train_state.hpp"
#include "hpctrain/data/dataset.hpp"
#include "hpctrain/data/reader.hpp"
#include "hpctrain/data/staged_batch.hpp"
#include "hpctrain/io/checkpoint_file.hpp"  // IntervalSums
#include "hpctrain/io/run_lock.hpp"
#include "hpctrain/layers/loss.hpp"
#include "hpctrain/model/model.hpp"
#include "hpctrain/model/partition.hpp"
#include "hpctrain/optim/optimizer.hpp"
#include "hpctrain/parallel/grad_buckets.hpp"
#include "hpctrain/parallel/param_windows.hpp"
#include "hpctrain/parallel/pipeline.hpp"
#include "hpctrain/parallel/reproducible_sums.hpp"
#include "hpctrain/parallel/step_executor.hpp"
#include "hpctrain/runtime/runtime.hpp"
#include "hpctrain/train/loss_guard.hpp"
#include "hpctrain/train/memory_estimate.hpp"
#include "hpctrain/train/run_report.hpp"
#include "hpctrain/train/schedule.hpp"
#include "hpctrain/train/system_monitor.hpp"
#include "hpctrain/train/token_draw.hpp"

namespace hpctrain {

class Checkpointer;
class Vocabulary;
struct SamplerState;

// A weight tied across pipeline stages: its gradient is summed over the stages of a replica.
struct TieSync {
  std::int64_t count = 0;              // its elements
  Range here;                          // where this stage holds it (the weight or its copy)
  std::unique_ptr<Communicator> comm;  // the two stages holding it; null on the others
  std::vector<float> host;             // its gradient's host copy for the sum (MPI), kept between steps
};

struct EvalResult {  // exact over all ranks
  double loss = 0, accuracy = 0;
  std::int64_t samples = 0;
  // Language models: the bytes of text the evaluated targets stand for (-1 when the split's
  // tokenizer cannot decode: llm.c shards carry no tokenizer files), and bits per byte = loss x
  // targets / (ln 2 x bytes), comparable across tokenizers (none without bytes).
  std::int64_t bytes = -1;
  std::optional<double> bits_per_byte() const;
  // Regression: the mean absolute error per target, and the targets' names (SplitIndex::target_labels).
  std::vector<double> mae;
  std::vector<std::string> target_names;
  double mean_mae() const;  // over the targets (0 without)
  // "mae 0.0213 (Omega_m 0.0201, sigma_8 0.0225)": "" without targets.
  std::string mae_text() const;
};

// What a Trainer is made for: training (every buffer an update needs), or using a checkpoint's
// weights (--eval-only, --generate): then it holds no gradient buffer (the sharded layouts' share
// stays), no optimizer state, and makes no random initial values (the checkpoint replaces them),
// 12 of a float32 model's 16 bytes per parameter with AdamW. Generation is inference whose model
// outputs the context's last position alone (Model::set_one_output_position).
enum class Purpose { training, inference, generation };

class Trainer {
 public:
  // Collective: builds the model, broadcasts the parameters from rank 0 of the
  // data-parallel group and verifies every rank holds the same bits (training).
  Trainer(const Config& cfg, Runtime& rt, const DatasetIndex& index, Purpose purpose = Purpose::training);
  ~Trainer();

  // One optimizer step on this rank's slice of a global batch. Its loss, correct and sample
  // counts are added to the step scalars on the device (read at log intervals).
  void train_step(const Batch& batch, float lr);
  EvalResult evaluate(const SplitIndex& split);
  int run();        // the whole training run (resuming per [checkpoint] resume); returns the exit code
  int eval_only();  // loads the checkpoint [checkpoint] resume selects and evaluates it on the test split
  // [data] stage_dir: the staging's time before this trainer (reported apart: summary.json staging_s).
  void set_staging_seconds(double s) { staging_s_ = s; }
  // Loads the checkpoint [checkpoint] resume selects and prints the prompt and `o.tokens` sampled
  // tokens (rank 0), seeded by [run] seed: the same text on any layout. Collective.
  int generate(const SamplingOptions& given);

  Model& model() {  // (its parameters complete: a gather in flight is waited for)
    settle_parameters();
    return *model_;
  }
  // Waits for a sharded optimizer's all-gather still in flight ([parallel] gather_overlap).
  void settle_parameters();
  Optimizer& optimizer() { return *opt_; }
  // This rank's memory estimate (checked at start-up) and its allocator's peak so far, in bytes.
  const MemoryEstimate& memory_estimate() const { return memory_; }
  std::size_t allocator_peak() const { return alloc_.peak(); }
  PipelineStage* pipeline() { return executor_->pipeline(); }        // null when pipeline_parallel = 1
  const std::vector<LayerGroup>& groups() const { return groups_; }  // the layers of each pipeline stage
  GradientAverager& averager() { return *averager_; }
  double comm_wait_seconds() const { return comm_wait_s_; }
  const TrainState& state() const { return state_; }
  double loss_scale() const { return state_.scaler.scale; }
  std::int64_t skipped_steps() const { return state_.scaler.skipped_steps; }
  bool last_step_skipped() const { return last_step_skipped_; }
  Communicator& dp_comm() { return *comm_; }
  bool replaying() const { return executor_->replaying(); }  // [kernels] cuda_graphs: recorded

 private:
  struct Progress;  // the run's clocks, marks and report (train/run.cpp)
  // The strategy composed once, at the end of the constructor (train/parallelize.cpp): the
  // communicators, the step executor, the averager, the optimizer and the update.
  void parallelize(bool gpu, int stages);
  // After the backward: finish the gradients, clip, the optimizer step, the parameters whole again.
  void finish_step();
  // The averaged gradients of the step, unscaled (fp16; false: an overflow skips the update on
  // every rank), tied weights' summed; `squares`: their squared norm over the stages when clipping.
  bool finish_gradients(double& squares);
  // [train] on_nonfinite = skip, spike_factor (train/loss_guard.cpp): the step's loss sums start
  // (begin_guarded_step, before its forward); after its gradients, collective over the world:
  // whether to keep the step (false: dropped on every rank, logged; exit 1 past max_skipped in a
  // row, or at a non-finite step with on_nonfinite = stop). `squares`: the gradients' squared
  // norm when finish_gradients computed it.
  void begin_guarded_step();
  bool keep_step(double squares, bool have_squares);
  bool inject_nan();  // Faults::nan: this rank's loss sums and first gradient made NaN at this step
  // The update and what follows it, chosen once: eager or recorded ([kernels] cuda_graphs); then
  // the compute copies refreshed, or a sharded optimizer's all-gather (waited for, or overlapped
  // with the next forward).
  void compose_update();
  // bad_input for what [parallel] shard cannot be combined with (tied weights across stages;
  // gradients: shard_by = tensors, Muon, CUDA graphs).
  void refuse_sharding_combinations() const;
  void refuse_tensor_parallel_combinations() const;  // what [parallel] tensor_parallel > 1 cannot do yet
  void refuse_reproducible_combinations() const;     // what [run] reproducible = layout cannot do yet
  void refuse_spatial_combinations() const;          // what [parallel] spatial_parallel > 1 cannot do yet
  void place_parameters(const std::vector<Bucket>& buckets, bool gpu);  // (parallelize: see there)
  // The optimizer over what this rank updates: every parameter, or its shard ([parallel] shard).
  void make_optimizer_for_this_rank();
  void make_muon_for_this_rank();
  // Collective with a sharded optimizer: the squared norm of the averaged gradients.
  double owned_sum_of_squares();
  // Pipelines: sums the gradients of weights tied across stages (Model::tie_syncs); with `squares`,
  // recomputes this stage's squared gradient norm with those gradients counted on one stage.
  void sum_tied_gradients(double* squares);
  // Gradients that are each rank's share of its group's: with [parallel] sequence_parallel the
  // replicated tensors' (each rank's positions, over tp), with spatial_parallel the slab layers'
  // (each rank's depth slab, over sp). partial_gradients_over: where those of `ranges` that this
  // rank updates lie; sum_partial_gradients: one allreduce of them packed together.
  void partial_gradients_over(Communicator* group, const Ranges& ranges);
  void sum_partial_gradients();
  // [run] check_replicas_every (train/replicas.cpp): collective over the world; throws exit code 5
  // naming the ranks and tensors when the data-parallel replicas' parameters differ. `when`: "at"
  // or "before the checkpoint write of".
  void check_replicas(std::int64_t step, const char* when);
  void flip_parameter_bit();  // Faults::flip_bit: a bit of this rank's first parameter, flipped
  void drop_recordings();     // what [kernels] cuda_graphs recorded is recorded again at the next step
  bool gpu() const {
    return alloc_.device() == Device::cuda;
  }  // after anything that may move buffers (evaluation, a new batch shape)
  void sum_over_replicas(double* v, std::size_t n);  // over the world: every replica's last stage
  void sum_over_replicas(IntervalSums& s) { sum_over_replicas(&s.loss, 3); }
  void count_bytes(const SplitIndex& split, EvalResult& r);  // r.bytes (collective)
  IntervalSums take_interval_sums();                         // reads and resets this rank's interval sums
  IntervalSums peek_interval_sums() const;
  void set_interval_sums(const IntervalSums& sums);
  const SplitIndex* eval_split() const;  // val, else test, else none
  // Loads `path` ("" = start fresh) into the model, the optimizer and state_; returns where the
  // sampler goes on.
  SamplerState resume(Checkpointer& checkpointer, const std::string& path, std::int64_t per_epoch, IntervalSums& sums);
  // One step of run(): trains it, then logs, evaluates and checkpoints as `schedule` says.
  // Returns the preemption signal the ranks agreed on (0: none).
  int run_step(Reader& reader, const Schedule& schedule, std::int64_t per_epoch, Progress& p,
               Checkpointer& checkpointer, IntervalSums& sums);
  void log_interval(const StepEnd& end, double lr, bool eval_now, IntervalSums& sums, Progress& p, Reader& reader);
  RunSummary summarize(const Progress& p, const Checkpointer& checkpointer);
  // Collective: the interval's gradient norm, loss scale, CPU and memory figures.
  void system_figures(IntervalFigures& f, double dt, Progress& p);
  std::unique_ptr<SystemMonitor> make_monitor();  // (logs where the GPU figures come from)
  // Rank 0: the locks of [run] out_dir and [checkpoint] dir (io/run_lock.hpp), and the partial
  // checkpoint files of dead runs removed; collective: bad_input on every rank when refused.
  std::vector<std::unique_ptr<DirectoryLock>> lock_directories();
  const Config& cfg_;
  Runtime& rt_;
  Purpose purpose_;
  const DatasetIndex& index_;
  Allocator alloc_;                            // on the rank's device: parameters, gradients, state, activations
  std::unique_ptr<cuda::Graph> update_graph_;  // [kernels] cuda_graphs: the recorded update
  StagedBatch staged_;                         // the current batch on that device
  std::unique_ptr<Model> model_;
  MemoryEstimate memory_;  // this rank's, checked at start-up ([run] check_memory)
  std::unique_ptr<Loss> loss_;
  std::unique_ptr<Optimizer> opt_;
  std::unique_ptr<Communicator> comm_;       // data-parallel group, on the device's memory (gradients)
  std::unique_ptr<Communicator> host_comm_;  // the same group for host buffers, when comm_ is on a GPU
  Communicator& host_dp() { return host_comm_ ? *host_comm_ : *comm_; }
  std::unique_ptr<GradientAverager> averager_;
  std::unique_ptr<ParameterWindows> windows_;  // [parallel] shard = full: gathers each bucket's parameters
  bool overlap_gather_ = false;                // [parallel] gather_overlap in effect (see the constructor)
  std::vector<LayerGroup> groups_;             // the layers of each pipeline stage
  // [parallel] tensor_parallel > 1: the group (on the device's memory: activations), the same
  // group for host scalars, and the store ranges of the tensors split over it.
  std::unique_ptr<Communicator> tp_comm_, tp_host_comm_;
  Communicator* tp_host_ = nullptr;
  Ranges tp_split_;
  // [parallel] spatial_parallel > 1: the group that splits each volume's depth (layers/spatial.hpp)
  std::unique_ptr<Communicator> sp_comm_;
  // sequence_parallel or spatial_parallel: the group the partial gradients are summed over, where
  // those this rank updates lie in the gradient (offset, count), and a buffer that packs them
  Communicator* partial_group_ = nullptr;
  std::vector<std::pair<std::int64_t, std::int64_t>> partial_grads_;
  Tensor partial_buf_;
  // The tensor-parallel group's operations (both its communicators) so far, and the part of them
  // that training steps issued (not evaluation's), summed over tp_steps_ steps (summary.json).
  std::map<std::string, OpTraffic> tp_traffic_now() const;
  std::map<std::string, OpTraffic> tp_step_traffic_;
  // [run] reproducible = layout: the exact sums of the chunks' gradients and loss sums; null: off
  std::unique_ptr<ReproducibleSums> repro_;
  Tensor repro_whole_;
  double staging_s_ =
      0;  // set_staging_seconds  // the step's whole gradient (a view: the model's, or repro_'s when staged)
  std::int64_t tp_steps_ = 0;
  std::int64_t replica_checks_ = 0;  // check_replicas calls that passed, and their seconds
  double replica_check_s_ = 0;
  std::vector<float> replica_host_;   // the parameters the check hashes (a host copy on a GPU run)
  std::unique_ptr<LossGuard> guard_;  // on_nonfinite = skip or spike_factor > 0; null: off
  IntervalSums guard_base_;           // the loss sums before this step's
  bool vocab_parallel_ = false;       // lm_head's logits split over the group: the vocabulary-parallel loss
  // Σ g² over store `ranges` of `grads` (`packed`: they lie one after another there), the
  // tensors every tensor-parallel rank holds whole weighted 1/T, so a sum over the group counts
  // each element once.
  double squares_in(const Tensor& grads, const Ranges& ranges, bool packed) const;
  // (reproducible) Σ g² of the whole gradient `grads`, per layer, added in layer order over the stages
  double layerwise_sum_of_squares(const Tensor& grads);
  void finish_reproducible_gradients();
  std::unique_ptr<Communicator> pp_comm_;  // the pipeline stages of this replica (pp > 1)
  std::unique_ptr<StepExecutor>
      executor_;  // how this rank runs a step's passes (one stage, recorded, a pipeline stage)
  std::function<void(std::int64_t)> update_;  // the optimizer step (compose_update)
  std::function<void()> after_update_;
  std::vector<TieSync> tie_syncs_;  // weights tied across stages (sum_tied_gradients)
  // The bytes each evaluated token split's targets stand for, counted once (rank 0 reads the
  // tokens; eval_target_bytes), by split name; -1: not countable.
  std::map<std::string, std::int64_t> eval_bytes_;
  Tensor eval_errors_;             // regression: the evaluation's absolute error sums per target
  Tensor scalars_, eval_scalars_;  // step scalars (tensor/step_scalars.hpp) of training and evaluation
  Tensor step_key_;                // splitmix64(step) on the device, for dropout (StepContext::step_key)
  double comm_wait_s_ = 0;         // time waiting for gradient buckets after backward (all steps)
  TrainState state_;               // where the run stands (checkpointed); its scaler: precision = fp16's loss scale
  bool last_step_skipped_ = false;
  // [model] attention_mask = document (train/documents.cpp): the dataset's document separator (-1:
  // causal attention), and the document numbers of the batch being run (StepContext::doc_ids).
  std::int32_t doc_separator_ = -1;
  Tensor doc_ids_;
  std::int32_t document_separator() const;
  void mark_documents(const Tensor& input);
  // The forward of `run`, positions from..len-1 of the contexts `context` ([rows, len]; from = -1:
  // the whole windows [rows, T] padded after len, `run` = `context`, without the cache), its output
  // the logits of position len - 1 (returned: its row in the run).
  std::int64_t forward_context(const Tensor& context, std::int64_t len, const Tensor& run, std::int64_t from);
  // --generate's next token of each of `run`'s rows (samples first_sample, ...; token number n):
  // forward_context, and the
  // draws from each row's position len - 1's logits (those of the tokens in its sequence `seqs`
  // penalized by o.repetition_penalty; the tokens that would repeat an o.no_repeat_ngram-gram banned).
  std::vector<std::uint32_t> next_tokens(const Tensor& context, std::int64_t len, const Tensor& run, std::int64_t from,
                                         const SamplingOptions& o, std::int64_t first_sample, std::int64_t n,
                                         const std::vector<std::vector<std::uint32_t>>& seqs);
  // The positions a generation pass continuing `ids` by o.tokens reaches, at most block_size
  // (Model::set_positions: what its key/value caches hold).
  std::int64_t cache_positions(const std::vector<std::uint32_t>& ids, const SamplingOptions& o) const {
    return std::min<std::int64_t>(index_.train.block_size, static_cast<std::int64_t>(ids.size()) + o.tokens);
  }
  // The most positions one of its forwards runs (Model::set_positions: what its activations and
  // scratch hold): with the cache, while the context fits block_size, the prompt's after the
  // `kept` the caches hold already, at most o.prefill_chunk (then one token at a time); else every
  // position the pass reaches (each token runs the whole window).
  std::int64_t forward_positions(const std::vector<std::uint32_t>& ids, const SamplingOptions& o,
                                 std::int64_t kept) const {
    const auto prompt = static_cast<std::int64_t>(ids.size());
    if (!o.kv_cache || prompt + o.tokens > index_.train.block_size) return cache_positions(ids, o);
    const std::int64_t rest = std::max<std::int64_t>(prompt - kept, 1);
    return o.prefill_chunk > 0 ? std::min(rest, o.prefill_chunk) : rest;
  }
  // --interactive with the cache: how many positions of `ids` the last pass's caches hold (the
  // prefix it shares with kv_tokens_, not all of ids), which the next pass does not run again; the
  // model set for the pass (Model::set_positions) with its forwards sized for the rest. A prefix
  // whose rows a sliding-window layer no longer holds (Model::cache_serves, every rank asked): 0.
  std::int64_t positions_for_pass(const std::vector<std::uint32_t>& ids, const SamplingOptions& o);
  // --generate's samples first .. first + count - 1, side by side: o.tokens drawn after the
  // prompt's `ids` for each (fewer when one of o.stop_ids comes; that sequence runs on unseen
  // while others draw), streamed to stdout when one and `prints`, else printed at the end. Returns
  // the tokens printed; sample 0's are added to `reply` (--interactive's conversation).
  // --interactive (one sample): the first `cached` positions of `ids`, which the caches hold, are
  // not run again (0 otherwise).
  std::int64_t continue_prompt(const std::vector<std::uint32_t>& ids, const SamplingOptions& o, std::int64_t first,
                               std::int64_t count, const Vocabulary& vocab, bool prints,
                               std::vector<std::uint32_t>& reply, std::int64_t cached);
  std::map<std::string, std::unique_ptr<Reader>> eval_readers_;  // per split, made on first use (collective)
  // --interactive: the tokens of the last pass whose keys and values attention's caches hold
  // (positions 0 ..): the next pass's prompt, the conversation so far, begins with most of them.
  std::vector<std::uint32_t> kv_tokens_;
  std::int64_t kv_reused_ = 0;  // the positions the passes did not run again (reported)
};

// `cfg` with [model] layers built from [model] arch (model/arch.hpp) against the dataset:
// vocab_size = auto is the training split's vocabulary; a number may exceed it, or fall short of
// it where every split records its largest id (max_token_id) below the number. cfg itself for
// arch = layers. bad_input when the split is not a token dataset or an id would have no row.
Config with_architecture(const Config& cfg, const DatasetIndex& index);

// What [train] sets on a model once it is built, the same for the trainer's model and --dry-run's
// models (the whole, and each pipeline stage's): the frozen layers ([train] freeze; bad_input when
// it names no layer) and [train] loss_chunk (bad_input when the last layer cannot run the loss).
void apply_train_options(Model& model, const TrainConfig& train);

// Collective, for --generate without the dataset: the token "dataset" the checkpoint
// [checkpoint] resume selects implies (its tokenizer and vocabulary, [model] block_size windows).
// A checkpoint trained on llm.c's shards records their ids' tokenizer without its files:
// `vocab_path` gives them (--vocab; llmc_vocabulary checks its size). bad_input when there is no
// checkpoint, it holds no tokenizer, its tokenizer's files are neither stored nor given, or they
// are given for a checkpoint that stores its own.
DatasetIndex generation_index(const Config& cfg, Runtime& rt, const std::string& vocab_path = "");

// Why [kernels] cuda_graphs cannot be used with this configuration on `device` with `dp_size`
// data-parallel ranks ("" when it can): a recorded step replays fixed kernel arguments and
// addresses without host round trips, so synchronized batch norm over several ranks (its
// statistics go through the host) and pipelines (activations go through the host) are
// refused. Dropout reads its per-step key and batch norm on one rank its statistics on the
// device, so both replay.
std::string cuda_graphs_refusal(const Config& cfg, DeviceKind device, int dp_size);

// Whether backward writes into staging buffers and each rank keeps only its gradient ([parallel]
// shard = gradients on more than one data-parallel rank; on one it is the whole gradient anyway).
// This rank's place in the tensor-parallel group, with [parallel] sequence_parallel's sequence
// length (bad_input when the data holds no token sequences).
TensorParallel tensor_parallel_place(const Mesh& mesh, const Config& cfg, const SplitIndex& data);
// This rank's depth slab with [parallel] spatial_parallel (split from the first layer on), and the
// per-sample shape the model takes: the slab's (bad_input when the data holds no such volumes).
SpatialSplit spatial_place(const Mesh& mesh);
Shape model_input_shape(const Mesh& mesh, const Config& cfg, const SplitIndex& data);
bool staged_gradients(const Config& cfg, int dp_size);
// Whether each rank keeps only its parameters too (shard = full on more than one rank).
bool packed_parameters(const Config& cfg, int dp_size);

// The replicas' per-tensor hashes ([ranks x tensors], rank-major), compared: "" when they agree,
// else which world ranks disagree with the largest group of equal ones, on which tensors.
std::string replica_report(const std::vector<std::int64_t>& hashes, std::size_t tensors, int ranks,
                           const std::vector<std::string>& names, const std::vector<int>& world_ranks);

// Collective: verifies every rank of `comm` holds bit-identical `t`; internal error otherwise.
void verify_identical(Communicator& comm, const Tensor& t, const std::string& what);

}  // namespace hpctrain
