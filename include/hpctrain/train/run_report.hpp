// What a run tells its user: the progress line and the metrics CSV row of each log interval,
// and at the end the summary lines and summary.json. Each is made from one struct of figures
// (IntervalFigures, RunSummary) through one table of named columns, so the progress line, the
// CSV, TensorBoard's event file and summary.json cannot drift apart. Rank 0 writes; the other ranks build the figures
// too (they take part in the reductions) but write nothing.
#pragma once

#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "hpctrain/io/event_file.hpp"

namespace hpctrain {

// A per-rank figure over the ranks that have it: the least, the mean and the most.
struct Spread {
  double min = 0, mean = 0, max = 0;
};

// One log interval (steps and epochs 1-based, as printed).
struct IntervalFigures {
  std::int64_t step = 0, epoch = 0, total = 0;
  double wall_s = 0;  // since this run started
  double loss = 0, accuracy = 0, samples_per_s = 0, data_wait_pct = 0, lr = 0;
  std::optional<double> comm_exposed_pct;  // communication not hidden; none on one rank (nothing is sent)
  double eta_s = 0;
  std::string eval_split;  // when an evaluation ran with this interval: its split and results
  std::optional<double> eval_loss, eval_accuracy;
  double grad_norm = 0;            // global L2 norm of the last step's gradients (after averaging and clipping)
  double loss_scale = 1;           // precision = fp16: the dynamic loss scale (1 otherwise) ...
  std::int64_t skipped_steps = 0;  // ... and the updates skipped for overflow so far
  double cpu_busy_pct = 0;         // process CPU time / wall time over the interval, mean over ranks (100 = one core)
  double rss_mib = 0;              // resident memory, the largest over ranks
  std::optional<double> cpu_energy_j;  // CPU packages' energy over the interval, all nodes (RAPL; none without it)
  // Language models (token windows): tokens trained per second, and perplexity = exp(loss).
  std::optional<double> tokens_per_s, perplexity, eval_perplexity;
  // GPU telemetry (NVML) over the ranks with a GPU; none where no rank has it. Energy: each GPU's
  // since this run started.
  std::optional<Spread> gpu_util_pct, gpu_mem_used_mib, gpu_power_w, gpu_temp_c, gpu_energy_j;
  std::optional<double> gpu_mem_total_mib;  // the smallest GPU's memory
  // Language models: model FLOP/s (tokens/s x training FLOPs per token, RunSummary) over all
  // ranks, and model FLOPs utilization = that / (ranks x the GPU's peak) where the peak is known.
  std::optional<double> model_flops_per_s, mfu_pct;
  // Regression: the evaluation's mean absolute error (over the targets) and, for the progress
  // line, per target ("mae 0.021 (Omega_m 0.020, ...)", EvalResult::mae_text).
  std::optional<double> eval_mae;
  std::string eval_mae_text;
  // Language models whose tokenizer can count the text's bytes: the evaluation's bits per byte.
  std::optional<double> eval_bits_per_byte;
  bool regression = false;  // float targets: no accuracy on the progress line
};

// The metrics columns, in file order, with their TensorBoard tags (empty for the step, which
// is the x axis there), as v(name, tag, value): the CSV header, every row and the event file's scalars come from this
// list. New columns go at the end (readers of older files index by position).
template <class Visit>
void visit_columns(const IntervalFigures& f, Visit&& v) {
  v("step", "", f.step);
  v("epoch", "train/epoch", f.epoch);
  v("wall_s", "system/wall_s", f.wall_s);
  v("loss", "train/loss", f.loss);
  v("accuracy", "train/accuracy", f.accuracy);
  v("samples_per_s", "system/samples_per_s", f.samples_per_s);
  v("data_wait_pct", "system/data_wait_pct", f.data_wait_pct);
  v("comm_exposed_pct", "system/comm_exposed_pct", f.comm_exposed_pct);
  v("lr", "train/lr", f.lr);
  v("eval_loss", "eval/loss", f.eval_loss);
  v("eval_accuracy", "eval/accuracy", f.eval_accuracy);
  v("grad_norm", "train/grad_norm", f.grad_norm);
  v("loss_scale", "train/loss_scale", f.loss_scale);
  v("skipped_steps", "train/skipped_steps", f.skipped_steps);
  v("cpu_busy_pct", "system/cpu_busy_pct", f.cpu_busy_pct);
  v("rss_mib", "system/rss_mib", f.rss_mib);
  v("cpu_energy_j", "system/cpu_energy_j", f.cpu_energy_j);
  v("tokens_per_s", "system/tokens_per_s", f.tokens_per_s);
  v("perplexity", "train/perplexity", f.perplexity);
  v("eval_perplexity", "eval/perplexity", f.eval_perplexity);
  // A figure over the ranks: three columns, NAME_min, NAME_mean, NAME_max.
  auto spread = [&](const std::string& name, const std::optional<Spread>& x) {
    using Part = std::optional<double>;
    v(name + "_min", "system/" + name + "_min", x ? Part(x->min) : std::nullopt);
    v(name + "_mean", "system/" + name + "_mean", x ? Part(x->mean) : std::nullopt);
    v(name + "_max", "system/" + name + "_max", x ? Part(x->max) : std::nullopt);
  };
  spread("gpu_util_pct", f.gpu_util_pct);
  spread("gpu_mem_used_mib", f.gpu_mem_used_mib);
  v("gpu_mem_total_mib", "system/gpu_mem_total_mib", f.gpu_mem_total_mib);
  spread("gpu_power_w", f.gpu_power_w);
  spread("gpu_temp_c", f.gpu_temp_c);
  spread("gpu_energy_j", f.gpu_energy_j);
  v("model_flops_per_s", "system/model_flops_per_s", f.model_flops_per_s);
  v("mfu_pct", "system/mfu_pct", f.mfu_pct);
  v("eval_mae", "eval/mae", f.eval_mae);
  v("eval_bits_per_byte", "eval/bits_per_byte", f.eval_bits_per_byte);
}

// The end of a run (over all ranks).
struct RunSummary {
  std::string run_id, started_at, deck;  // this invocation's id and start (UTC), the configuration file
  std::int64_t steps = 0, first_step = 0, total_steps = 0, global_batch = 0;
  int ranks = 1, pipeline_parallel = 1, tensor_parallel = 1, micro_batches = 1;
  bool sequence_parallel = false;  // ([parallel] sequence_parallel in effect: tensor_parallel > 1)
  // tensor_parallel > 1: what the group's operations moved per training step on rank 0 (its
  // buffers' bytes by kind; the bytes a ring sends per rank; the operations)
  double tp_allreduce_bytes_per_step = 0, tp_allgather_bytes_per_step = 0, tp_reduce_scatter_bytes_per_step = 0;
  double tp_link_bytes_per_step = 0, tp_collectives_per_step = 0;
  double wall_s = 0, samples_per_s = 0, final_train_loss = 0;
  std::string final_split = "test";  // the split of the final evaluation: "test", else "eval"
  bool has_test = false;
  double final_accuracy = 0, final_loss = 0;
  std::optional<double> final_mae;            // regression: the final evaluation's mean absolute error over the targets
  std::optional<double> final_bits_per_byte;  // language models: the final evaluation's (EvalResult)
  double staging_s = 0;                       // [data] stage_dir: the copy to node-local storage before the run
  std::string final_mae_text;                 // ... and per target (EvalResult::mae_text)
  std::int64_t final_samples = 0;             // 0: nothing evaluated (the dataset has no val or test split)
  bool evaluated() const { return final_samples > 0; }
  double rank_hours = 0, price_per_device_hour = 0;
  double step_time_s_min = 0, step_time_s_max = 0, peak_bytes_per_rank = 0;
  double optimizer_state_bytes_per_rank = 0;  // the most any rank holds ([parallel] shard: ~1/D)
  // The most any rank's gradient buffers hold (shard = gradients: its 1/D, packed, and the staging buffers).
  double gradient_bytes_per_rank = 0;
  // The most any rank's parameter buffers hold (float32; shard = full: its 1/D, packed, and the windows).
  double parameter_bytes_per_rank = 0;
  // What the model's saved sets hold at the end (what backward reads besides the activations:
  // 16 bits per value in bf16/fp16 runs, one block's with [train] recompute = blocks).
  double saved_bytes_per_rank = 0;
  // The layers' outputs the sets hold plus the saved tensors: the activation memory (16 bits per
  // value in bf16/fp16 runs, but the last layer's output, which the loss reads).
  double activation_bytes_per_rank = 0;
  double host_peak_rss_bytes_per_rank = 0;  // the process's resident high-water mark (data stores, buffers, libraries)
  double scratch_bytes_per_rank = 0;        // the step arena's high-water mark: the deepest layer call's scratch
  // The start-up memory estimate per rank (train/memory_estimate.hpp, --dry-run's "in all"): the
  // most any rank's, beside peak_bytes_per_rank measured by the allocator.
  double memory_estimate_bytes_per_rank = 0;
  std::int64_t parameters = 0;   // of the whole model (gradient bytes: 4 x this)
  bool shard_optimizer = false;  // the optimizer state sharded (shard = optimizer or gradients, on more than one rank)
  std::string shard = "none";    // what was sharded in effect: none, optimizer, gradients, full
  std::size_t buckets = 0;
  double comm_alone_s_per_step = 0, comm_wait_s_per_step = 0, comm_hidden_fraction = 0;
  double steady_samples_per_s = 0;
  std::int64_t tokens_per_sample = 0;  // language models: the window length T (0 otherwise)
  // Language models: training FLOPs per token (arch = gpt: 6 N + 12 n_layer n_embd T; a layers
  // string: 6 N), and the steady state's model FLOP/s and MFU (null without a known peak).
  double flops_per_token = 0;
  std::optional<double> peak_flops_per_rank;
  std::optional<double> steady_model_flops_per_s() const {
    if (flops_per_token <= 0) return std::nullopt;
    return steady_samples_per_s * static_cast<double>(tokens_per_sample) * flops_per_token;
  }
  std::optional<double> steady_mfu_pct() const {
    const auto f = steady_model_flops_per_s();
    if (!f || !peak_flops_per_rank) return std::nullopt;
    return 100 * *f / (*peak_flops_per_rank * ranks);
  }
  std::int64_t steady_warmup_steps = 0;
  int checkpoints_written = 0;
  double checkpoint_write_s = 0;
  double checkpoint_stall_s = 0;          // training's time in checkpointing (= the writes unless [checkpoint] async)
  std::string precision = "fp32", gemms;  // gemms: how reduced-precision GEMMs ran
  std::int64_t skipped_steps = 0;
  double loss_scale = 1;
  std::optional<double> cpu_energy_kwh;  // RAPL over the run, all nodes; null without it
  // GPUs (each counted once, however many ranks share it): device-hours (null on the CPU) and
  // energy over the run (NVML; null unless every GPU reported it).
  std::optional<double> gpu_hours, gpu_energy_kwh;
  bool pipeline = false, gpipe = false;
  double pipeline_wait_s = 0, pipeline_step_s = 0, pipeline_peak_kept_inputs = 0;
  // Device-hours: the GPUs' on GPUs (ranks sharing one count it once), else the ranks'.
  double device_hours() const { return gpu_hours.value_or(rank_hours); }
  double cost() const { return price_per_device_hour > 0 ? device_hours() * price_per_device_hour : 0; }
  double pipeline_idle_fraction() const {
    return pipeline ? pipeline_wait_s / (pipeline_step_s > 1e-9 ? pipeline_step_s : 1e-9) : 0;
  }
  double pipeline_idle_ideal() const {
    return pipeline ? (pipeline_parallel - 1.0) / (micro_batches + pipeline_parallel - 1.0) : 0;
  }
};

// summary.json's fields, in file order.
template <class Visit>
void visit_summary(const RunSummary& s, Visit&& v) {
  v("run_id", s.run_id);
  v("started_at", s.started_at);
  v("deck", s.deck);
  v("steps", s.steps);
  v("first_step", s.first_step);
  v("total_steps", s.total_steps);
  v("global_batch", s.global_batch);
  v("ranks", s.ranks);
  v("wall_s", s.wall_s);
  v("samples_per_s", s.samples_per_s);
  v("final_train_loss", s.final_train_loss);
  v("test_accuracy", s.has_test ? s.final_accuracy : -1);
  v("test_loss", s.has_test ? s.final_loss : -1);
  v("rank_hours", s.rank_hours);
  v("cost", s.cost());
  v("step_time_s_min", s.step_time_s_min);
  v("step_time_s_max", s.step_time_s_max);
  v("peak_bytes_per_rank", s.peak_bytes_per_rank);
  v("memory_estimate_bytes_per_rank", s.memory_estimate_bytes_per_rank);
  v("optimizer_state_bytes_per_rank", s.optimizer_state_bytes_per_rank);
  v("saved_bytes_per_rank", s.saved_bytes_per_rank);
  v("activation_bytes_per_rank", s.activation_bytes_per_rank);
  v("scratch_bytes_per_rank", s.scratch_bytes_per_rank);
  v("host_peak_rss_bytes_per_rank", s.host_peak_rss_bytes_per_rank);
  v("parameters", s.parameters);
  v("shard_optimizer", s.shard_optimizer);
  v("shard", s.shard);
  v("gradient_bytes_per_rank", s.gradient_bytes_per_rank);
  v("parameter_bytes_per_rank", s.parameter_bytes_per_rank);
  v("comm_alone_s_per_step", s.comm_alone_s_per_step);
  v("comm_wait_s_per_step", s.comm_wait_s_per_step);
  v("comm_hidden_fraction", s.comm_hidden_fraction);
  v("steady_samples_per_s", s.steady_samples_per_s);
  v("steady_warmup_steps", s.steady_warmup_steps);
  v("flops_per_token", s.flops_per_token);
  v("steady_model_flops_per_s", s.steady_model_flops_per_s());
  v("steady_mfu_pct", s.steady_mfu_pct());
  v("checkpoints_written", s.checkpoints_written);
  v("checkpoint_write_s", s.checkpoint_write_s);
  v("checkpoint_stall_s", s.checkpoint_stall_s);
  v("precision", s.precision);
  v("skipped_steps", s.skipped_steps);
  v("loss_scale", s.loss_scale);
  v("pipeline_parallel", s.pipeline_parallel);
  v("tensor_parallel", s.tensor_parallel);
  v("sequence_parallel", s.sequence_parallel);
  v("tp_collectives_per_step", s.tp_collectives_per_step);
  v("tp_allreduce_bytes_per_step", s.tp_allreduce_bytes_per_step);
  v("tp_allgather_bytes_per_step", s.tp_allgather_bytes_per_step);
  v("tp_reduce_scatter_bytes_per_step", s.tp_reduce_scatter_bytes_per_step);
  v("tp_link_bytes_per_step", s.tp_link_bytes_per_step);
  v("model_parallel", s.pipeline_parallel);  // (its old name, for readers of older summaries)
  v("pipeline_idle_fraction", s.pipeline_idle_fraction());
  v("pipeline_idle_ideal", s.pipeline_idle_ideal());
  v("pipeline_peak_kept_inputs", s.pipeline_peak_kept_inputs);
  v("cpu_energy_kwh", s.cpu_energy_kwh);
  v("steady_tokens_per_s",
    s.tokens_per_sample ? std::optional<double>(s.steady_samples_per_s * static_cast<double>(s.tokens_per_sample))
                        : std::nullopt);
  v("gpu_hours", s.gpu_hours);
  v("gpu_energy_kwh", s.gpu_energy_kwh);
  // The final evaluation (the test split, else the validation split): on every run, also
  // without a test split (test_* above are -1 then); null without either split.
  const auto if_evaluated = [&](double x) { return s.evaluated() ? std::optional<double>(x) : std::nullopt; };
  v("final_eval_split", s.evaluated() ? std::optional<std::string>(s.final_split) : std::nullopt);
  v("final_eval_loss", if_evaluated(s.final_loss));
  v("final_eval_accuracy", if_evaluated(s.final_accuracy));
  v("final_eval_samples", s.final_samples);  // (language models: tokens)
  v("final_eval_perplexity", s.tokens_per_sample ? if_evaluated(std::exp(s.final_loss)) : std::nullopt);
  v("final_eval_mae", s.final_mae);
  v("final_eval_bits_per_byte", s.final_bits_per_byte);
  v("staging_s", s.staging_s);  // (not in wall_s: MLPerf HPC reports it apart)
}

class RunReport {
 public:
  // `writer`: this rank writes the files (rank 0). Paths relative to `out_dir` are under it.
  // `tensorboard`: also an event file under <out_dir>/tensorboard.
  RunReport(const std::string& out_dir, const std::string& metrics_file, bool writer, bool tensorboard = false);

  // Opens the metrics file: a resumed run keeps the rows up to the step it resumes from (a run
  // killed after its last checkpoint logged steps that are trained again) and appends; a fresh
  // run starts it anew. The event file is always a new one, starting with a SessionLog START at
  // the resume step + 1 (a fresh run's at 0). Returns what went wrong ("" when fine).
  std::string open(std::int64_t resumed_at);
  // Text summaries at `step` (the event file's Text tab): the configuration, the model; and the
  // configuration as <out_dir>/config.ini.
  void describe(std::int64_t step, const std::string& ini, const std::string& model_summary);
  // The progress line (log0), the metrics row and the event file's scalars (flushed).
  void interval(const IntervalFigures& f);
  // The summary lines (log0) and summary.json.
  void finish(const RunSummary& s);
  void flush();  // the event file (also done by interval, finish and the destructor)
  std::string event_file() const { return events_ ? events_->path() : ""; }

  static std::string csv_header();
  static std::string csv_row(const IntervalFigures& f);
  static std::string progress_line(const IntervalFigures& f);
  static std::string summary_json(const RunSummary& s);
  static std::string done_line(const RunSummary& s);
  static std::string energy_line(const RunSummary& s);  // GPU energy and hours, CPU package energy

 private:
  std::string out_dir_, metrics_path_;
  bool writer_, tensorboard_;
  std::ofstream metrics_;
  std::unique_ptr<EventFileWriter> events_;
};

}  // namespace hpctrain
