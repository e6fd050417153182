// Trainer::run(): the whole training run, top to bottom (train/trainer.hpp), with the steps it
// is made of: resuming, one step of the loop, a log interval, and the end-of-run summary.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <thread>

#include "hpctrain/backend/configure.hpp"
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/checkpoint/checkpointing.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/log.hpp"
#include "hpctrain/core/process_stats.hpp"
#include "hpctrain/core/signals.hpp"
#include "hpctrain/core/table.hpp"
#include "hpctrain/data/sampler.hpp"
#include "hpctrain/io/run_lock.hpp"
#include "hpctrain/model/arch.hpp"
#include "hpctrain/train/trainer.hpp"

namespace hpctrain {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

const char* signal_name(int sig) {
  return sig == SIGTERM ? "SIGTERM" : sig == SIGUSR1 ? "SIGUSR1" : sig == SIGINT ? "SIGINT" : "a signal";
}

// Now in UTC as `format` (strftime) writes it.
std::string utc_now(const char* format) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char out[40];
  std::strftime(out, sizeof out, format, &tm);
  return out;
}

// The step an injected fault names for `rank` (Faults::At), else -1.
std::int64_t fault_step(const Faults::At& at, int rank) { return at.rank == rank ? at.step : -1; }
}  // namespace

// The run's clocks, marks and report: what the log intervals and the summary measure against.
struct Trainer::Progress {
  explicit Progress(RunReport r) : report(std::move(r)) {}
  RunReport report;
  Clock::time_point start, interval_start, last_checkpoint;
  std::int64_t first = 0, total = 0;  // steps: where this run started, where it ends
  std::int64_t warmup = 0;            // the first step timed for steady_samples_per_s
  double before_s = 0;                // training seconds of the runs before this one (resumed)
  double wait_mark = 0, comm_mark = 0;
  double step_seconds = 0, timed_s = 0, comm_alone = 0;
  std::unique_ptr<SystemMonitor> monitor;             // CPU, memory, energy and GPU figures
  std::vector<std::unique_ptr<DirectoryLock>> locks;  // rank 0: out_dir and the checkpoint dir, held to the end
  EvalResult last_eval;
  // Injected faults (Config::faults, 1-based steps): this rank acts as if SIGUSR1 arrived during
  // step test_signal_step, so the tests can stop a run at a chosen point, and stops before the
  // flag exchange of step test_stall_step, as a hung rank would (the watchdog must end the job
  // with exit 3).
  std::int64_t test_signal_step = -1, test_stall_step = -1;
  std::int64_t test_flip_step = -1;  // and flips a bit of its first parameter after that step's update
  double flops_per_token = 0;        // language models (RunSummary::flops_per_token)
  std::optional<double> peak_flops;  // per rank, where the GPU's peak is known
  // This invocation: its start (ISO 8601, UTC) and id, the start to the second and 24 random bits
  // ("20261204T073512Z-3fa2c1"; summary.json; rank 0's are the ones written).
  std::string started_at = utc_now("%Y-%m-%dT%H:%M:%SZ");
  std::string run_id = utc_now("%Y%m%dT%H%M%SZ-") + [] {
    char hex[8];
    std::snprintf(hex, sizeof hex, "%06x", static_cast<unsigned>(std::random_device{}() & 0xffffff));
    return std::string(hex);
  }();
};

int Trainer::run() {
  HPCT_CHECK(purpose_ == Purpose::training,
             "Trainer::run: this trainer was made for inference (no gradients, no state)");
  const Mesh& g = rt_.mesh();
  auto locks = lock_directories();  // one run per directory: refused (exit 2) when another holds them
  const Sampler sampler(sampler_options(cfg_, index_.train));
  const std::int64_t per_epoch = sampler.steps_per_epoch();
  const Schedule schedule(cfg_, cfg_.train.steps > 0 ? cfg_.train.steps : cfg_.train.epochs * per_epoch,
                          eval_split() != nullptr);
  const std::int64_t total = schedule.total();

  // Resume: [checkpoint] resume selects a checkpoint (or none); its state, sampler position and
  // partial log-interval sums (this rank's) continue here.
  Checkpointer checkpointer(cfg_, rt_, host_dp(), *model_, *opt_, groups_);
  checkpointer.set_tokenizer(index_.train.tokenizer, index_.train.vocabulary, index_.train.tokenizer_files);
  checkpointer.check_space();  // room for keep + 1 checkpoints, or refused (exit 2) per [checkpoint] space_check
  const std::string resume_from = checkpointer.resume_target();
  IntervalSums sums;
  const SamplerState from = resume(checkpointer, resume_from, per_epoch, sums);
  const std::int64_t first = state_.step;
  if (first >= total) {
    log0("nothing to train: " + resume_from + " is at step " + std::to_string(first) + " of " + std::to_string(total) +
         " (train more with a larger [train] steps or epochs; start anew with --set "
         "checkpoint.resume=none or another [run] out_dir)");
    return 0;
  }

  // Output files (rank 0): fail now, not at the end, when the directory is not writable.
  Progress p(RunReport(cfg_.run.out_dir, cfg_.log.metrics_file, g.world_rank() == 0, cfg_.log.tensorboard));
  p.locks = std::move(locks);
  const std::string why = p.report.open(first);
  raise_if_any(rt_.world(), why);  // (names the key and the file)
  p.report.describe(first, effective_ini(cfg_), model_->summary());

  log0(model_->summary() + describe_pipeline(cfg_, rt_, *model_));  // (rank 0 holds stage 0's layers)
  p.comm_alone = averager_->time_alone();  // the gradient allreduces with nothing to hide behind
  // One start line: the deck, the data, the folder, the layout and the work.
  const bool tokens = index_.train.tokens;
  log0("training " + cfg_.origin + ": data " + cfg_.data.path + ", out_dir " + cfg_.run.out_dir + ", " +
       std::to_string(rt_.world().size()) + " rank(s) (" + std::to_string(g.size(MeshDim::dp)) + " data-parallel x " +
       std::to_string(g.size(MeshDim::pp)) + " stage(s)" +
       (g.size(MeshDim::sp) > 1 ? " x " + std::to_string(g.size(MeshDim::sp)) + " spatial" : std::string()) + ") on " +
       (alloc_.device() == Device::cuda ? "GPUs" : "CPUs") + "; " + std::to_string(total - first) + " steps (" +
       std::to_string(per_epoch) + " per epoch) of " + std::to_string(cfg_.train.global_batch) +
       (tokens ? " windows" : " samples"));

  ReaderOptions ro;
  ro.prefetch = cfg_.data.prefetch;
  ro.cache_bytes = cfg_.data.cache_bytes;
  ro.decode_threads = cfg_.data.decode_threads;
  ro.augment = Augmentation{cfg_.data.random_crop_pad, cfg_.data.random_flip, cfg_.run.seed};
  ro.dp = g.coord(MeshDim::dp);
  ro.dp_size = g.size(MeshDim::dp);
  ro.slab = DepthSlab{g.coord(MeshDim::sp), g.size(MeshDim::sp)};
  Reader reader(index_.train, rt_.node(), ro);
  log0("train data: " + reader.store().describe() +
       (index_.train.tokens ? std::string(", windows = ") + name_of(index_.train.windows) : std::string()));
  reader.start(sampler, from);
  install_preemption_signals();
  p.test_signal_step = fault_step(cfg_.faults.signal, g.world_rank());
  p.test_stall_step = fault_step(cfg_.faults.stall, g.world_rank());
  p.test_flip_step = fault_step(cfg_.faults.flip_bit, g.world_rank());
  p.start = p.interval_start = p.last_checkpoint = Clock::now();
  p.monitor = make_monitor();
  p.first = first;
  p.total = total;
  if (index_.train.tokens) {
    std::int64_t n = 0;
    for (const ParamInfo& info : model_->all_param_info()) n += numel(info.global_shape);
    p.flops_per_token = cfg_.model.arch != Arch::layers
                            ? gpt_flops_per_token(n, cfg_.model.n_layer, cfg_.model.attention_width(),
                                                  cfg_.model.attention_span(index_.train.block_size))
                            : 6.0 * static_cast<double>(n);
    p.peak_flops = peak_flops(rt_.device(), cfg_.precision.dtype, cfg_.precision.tf32);
  }
  p.before_s = state_.train_seconds;
  // Steady-state throughput as the PyTorch reference defines it: per-step time (batch + forward +
  // backward + gradient averaging + update) summed after the warm-up steps, slowest rank.
  p.warmup = first + std::min<std::int64_t>(20, (total - first) / 5);
  int stop_signal = 0;
  while (state_.step < total && !stop_signal)
    stop_signal = run_step(reader, schedule, per_epoch, p, checkpointer, sums);
  checkpointer.finish_async();  // the last checkpoint is on disk before the run ends or stops
  restore_preemption_signals();
  if (stop_signal && state_.step < total) {  // (a signal during the last step: the run is complete, finish normally)
    log0(std::string("stopped by ") + signal_name(stop_signal) + " after step " + std::to_string(state_.step) + " of " +
         std::to_string(total) + " (checkpoint written, " + fixed_text(checkpointer.seconds_writing(), 2) +
         " s writing checkpoints); resume with [checkpoint] resume = auto; exit code 10");
    p.report.flush();
    return static_cast<int>(ExitCode::preempted);
  }
  if (guard_ && guard_->nonfinite() + guard_->spikes() > 0)
    log0("skipped steps: " + std::to_string(guard_->nonfinite()) + " non-finite, " + std::to_string(guard_->spikes()) +
         " loss spikes ([train] on_nonfinite, spike_factor)");
  if (replica_checks_ > 0) {
    char line[160];
    std::snprintf(line, sizeof line,
                  "replica checks: %lld passed, %.2f ms each (a hash of every parameter, compared "
                  "over the data-parallel group)",
                  static_cast<long long>(replica_checks_),
                  1000 * replica_check_s_ / static_cast<double>(replica_checks_));
    log0(line);
  }
  p.report.finish(summarize(p, checkpointer));
  return 0;
}

const SplitIndex* Trainer::eval_split() const {
  return index_.val ? &*index_.val : index_.test ? &*index_.test : nullptr;
}

SamplerState Trainer::resume(Checkpointer& checkpointer, const std::string& path, std::int64_t per_epoch,
                             IntervalSums& sums) {
  SamplerState from{cfg_.run.seed, 0, 0};
  if (path.empty()) {  // a fresh run; fine-tuning takes its parameters from [checkpoint] init_from
    if (!cfg_.checkpoint.init_from.empty()) {
      log0("initialized from " + cfg_.checkpoint.init_from + ": " + checkpointer.initialize(cfg_.checkpoint.init_from));
      model_->refresh_compute_parameters();
    }
    return from;
  }
  const CheckpointInfo info = checkpointer.load(path, sums);
  set_interval_sums(sums);
  model_->refresh_compute_parameters();
  const LossScaler configured = state_.scaler;
  state_ = info.state;
  // The loss scale goes on where it was (fp16 runs); otherwise it stays as configured.
  if (!(cfg_.precision.dtype == Precision::fp16 && info.state.scaler.scale > 1)) state_.scaler = configured;
  if (!guard_) state_.guard = GuardRecord{};  // (a run without the guard keeps no record of one)
  from.epoch = info.state.epoch;
  from.step = info.state.epoch_step;
  const std::int64_t batch = cfg_.train.global_batch;
  if (info.run.global_batch != batch) {  // the same samples consumed in the epoch, new batch size
    from.step = info.state.epoch_step * info.run.global_batch / batch;
    log0("warning: [train] global_batch changed from " + std::to_string(info.run.global_batch) + " to " +
         std::to_string(batch) + ": the sample sequence does not continue exactly");
  }
  if (from.step >= per_epoch) from = {cfg_.run.seed, from.epoch + 1, 0};
  state_.epoch = from.epoch;
  state_.epoch_step = from.step;
  log0("resumed from " + path + ": step " + std::to_string(state_.step) + ", epoch " + std::to_string(from.epoch + 1) +
       " batch " + std::to_string(from.step) + " (written on " + std::to_string(info.run.world) + " rank(s), now " +
       std::to_string(rt_.mesh().shape().world()) + ")");
  return from;
}

std::map<std::string, OpTraffic> Trainer::tp_traffic_now() const {
  std::map<std::string, OpTraffic> out;
  for (const Communicator* c : {tp_comm_.get(), tp_host_comm_.get()})
    if (c)
      for (const auto& [op, t] : c->log().traffic()) {
        out[op].calls += t.calls;
        out[op].bytes += t.bytes;
      }
  return out;
}

int Trainer::run_step(Reader& reader, const Schedule& schedule, std::int64_t per_epoch, Progress& p,
                      Checkpointer& checkpointer, IntervalSums& sums) {
  const std::int64_t step = state_.step, total = schedule.total();
  // On a GPU the host runs ahead of the device: the timed steps start with the device idle and
  // end with it drained, so steady_samples_per_s counts the device's work, not the launches.
  if (gpu() && step == p.warmup) cuda::synchronize();
  const auto t_step = Clock::now();
  Batch batch = reader.next();
  const double lr = learning_rate(cfg_.optim, step, total);
  const auto tp0 = tp_comm_ ? tp_traffic_now() : std::map<std::string, OpTraffic>{};
  const auto t0 = Clock::now();
  train_step(batch, static_cast<float>(lr));
  p.step_seconds += since(t0);
  if (tp_comm_) {  // (what this step's tensor-parallel operations moved)
    for (const auto& [op, now] : tp_traffic_now()) {
      const OpTraffic was = tp0.count(op) ? tp0.at(op) : OpTraffic{};
      tp_step_traffic_[op].calls += now.calls - was.calls;
      tp_step_traffic_[op].bytes += now.bytes - was.bytes;
    }
    ++tp_steps_;
  }
  if (last_step_skipped_) {
    char skip[160];
    std::snprintf(skip, sizeof(skip), "step %lld: fp16 gradient overflow: update skipped, loss scale now %g",
                  static_cast<long long>(step + 1), state_.scaler.scale);
    log0(skip);
  }
  if (gpu() && step + 1 == total) cuda::synchronize();
  if (step >= p.warmup) p.timed_s += since(t_step);
  StepEnd end;
  end.step = step;
  end.epoch = batch.epoch;
  end.epoch_end = batch.step == per_epoch - 1;
  state_.step = step + 1;
  state_.epoch = end.epoch_end ? batch.epoch + 1 : batch.epoch;
  state_.epoch_step = end.epoch_end ? 0 : batch.step + 1;
  state_.samples += cfg_.train.global_batch;
  reader.recycle(std::move(batch));

  if (p.test_flip_step == step + 1) flip_parameter_bit();
  const long every = cfg_.run.check_replicas_every;
  const bool checked = every > 0 && (step + 1) % every == 0;
  if (checked) check_replicas(step + 1, "at");
  if (p.test_signal_step == step + 1) simulate_preemption_signal(SIGUSR1);
  if (p.test_stall_step == step + 1) std::this_thread::sleep_for(std::chrono::hours(1));
  // A preemption signal on any rank, or the checkpoint minutes passed: one small allreduce per
  // step, so every rank logs, checkpoints and stops after the same step.
  const double minutes = cfg_.checkpoint.every_minutes;
  // (And whether a checkpoint written in the background failed anywhere: reported at this step.)
  int flags[3] = {pending_preemption_signal(), minutes > 0 && since(p.last_checkpoint) >= 60 * minutes ? 1 : 0,
                  checkpointer.async_failed()};
  rt_.world().allreduce(flags, flags, 3, DType::i32, ReduceOp::max);
  if (flags[2]) checkpointer.finish_async();  // stops every rank with the failure's one line (exit 4)
  end.stop_signal = flags[0] != 0;
  end.minutes_due = flags[1] != 0;
  const Due due = schedule.after(end);
  if (due.log) {
    sums = take_interval_sums();
    log_interval(end, lr, due.eval, sums, p, reader);
  }
  if (due.checkpoint) {
    if (every > 0 && !checked) check_replicas(step + 1, "before the checkpoint write of");
    state_.train_seconds = p.before_s + since(p.start);
    sums = peek_interval_sums();  // this rank's partial sums of the interval the checkpoint cuts
    settle_parameters();
    checkpointer.save(state_, sums);
    p.last_checkpoint = Clock::now();
  }
  return flags[0];
}

void Trainer::log_interval(const StepEnd& end, double lr, bool eval_now, IntervalSums& sums, Progress& p,
                           Reader& reader) {
  if (!repro_) sum_over_replicas(sums);  // (reproducible: take_interval_sums summed them exactly)
  IntervalFigures f;
  f.step = end.step + 1;
  f.epoch = end.epoch + 1;
  f.total = p.total;
  f.loss = sums.loss / sums.samples;
  f.accuracy = sums.correct / sums.samples;
  if (!std::isfinite(f.loss) && sums.samples > 0)  // (no samples: every step of the interval was dropped, logged nan)
    throw Error(ExitCode::internal, Scope::every_rank,
                "the training loss is not finite (" + std::to_string(f.loss) + ") at step " + std::to_string(f.step) +
                    ": lower [optim] lr or set clip_norm");
  const double dt = std::max(since(p.interval_start), 1e-9);
  f.wall_s = since(p.start);
  const auto positions = static_cast<double>(index_.train.loss_rows());  // loss terms per sample
  f.samples_per_s = sums.samples / positions / dt;                       // sums.samples: loss terms over all ranks
  if (index_.train.tokens) {
    f.tokens_per_s = sums.samples / dt;
    f.perplexity = std::exp(f.loss);
    if (p.flops_per_token > 0) f.model_flops_per_s = *f.tokens_per_s * p.flops_per_token;
    if (f.model_flops_per_s && p.peak_flops)
      f.mfu_pct = 100 * *f.model_flops_per_s / (*p.peak_flops * rt_.mesh().shape().world());
  }
  f.data_wait_pct = 100 * (reader.wait_seconds() - p.wait_mark) / dt;
  if (rt_.world().size() > 1) f.comm_exposed_pct = 100 * (comm_wait_s_ - p.comm_mark) / dt;  // not hidden
  f.lr = lr;
  f.regression = !index_.train.classification && !index_.train.tokens;
  if (eval_now) {
    p.last_eval = evaluate(*eval_split());
    f.eval_split = eval_split()->name;
    f.eval_loss = p.last_eval.loss;
    f.eval_accuracy = p.last_eval.accuracy;
    if (index_.train.tokens) f.eval_perplexity = std::exp(p.last_eval.loss);
    f.eval_bits_per_byte = p.last_eval.bits_per_byte();
    if (!p.last_eval.mae.empty()) {
      f.eval_mae = p.last_eval.mean_mae();
      f.eval_mae_text = p.last_eval.mae_text();
    }
  }
  f.eta_s = f.wall_s / static_cast<double>(f.step - p.first) * static_cast<double>(p.total - f.step);
  system_figures(f, dt, p);
  p.report.interval(f);
  for (auto& lock : p.locks) lock->heartbeat();  // (what a file system without flock goes by)
  state_.last_loss = f.loss;
  sums = IntervalSums{};
  p.interval_start = Clock::now();
  p.wait_mark = reader.wait_seconds();
  p.comm_mark = comm_wait_s_;
}

void Trainer::system_figures(IntervalFigures& f, double dt, Progress& p) {
  // The gradients of the last step as the update used them (averaged, unscaled, clipped), over
  // every stage (identical over a data-parallel group).
  double squares = owned_sum_of_squares();  // (sharded: each rank's part, summed over the group)
  if (pp_comm_) pp_comm_->allreduce(&squares, &squares, 1, DType::f64, ReduceOp::sum);
  f.grad_norm = std::sqrt(squares);
  f.loss_scale = state_.scaler.scale;
  f.skipped_steps = state_.scaler.skipped_steps;
  p.monitor->interval(f, dt);
}

std::vector<std::unique_ptr<DirectoryLock>> Trainer::lock_directories() {
  std::vector<std::unique_ptr<DirectoryLock>> locks;
  std::string why;
  if (rt_.mesh().world_rank() == 0) {
    try {
      const bool flock = !cfg_.faults.no_flock;
      locks.push_back(std::make_unique<DirectoryLock>(cfg_.run.out_dir, "[run] out_dir", cfg_.run.lock_stale_s, flock));
      std::error_code ec;
      if (!std::filesystem::equivalent(cfg_.run.out_dir, cfg_.checkpoint.dir, ec))  // (false too when it is missing)
        locks.push_back(
            std::make_unique<DirectoryLock>(cfg_.checkpoint.dir, "[checkpoint] dir", cfg_.run.lock_stale_s, flock));
      std::vector<std::string> notes;  // (out_dir's and the checkpoint dir's locks: one line for both)
      for (const auto& l : locks)
        if (!l->note().empty() && std::find(notes.begin(), notes.end(), l->note()) == notes.end())
          notes.push_back(l->note());
      for (const auto& n : notes) warn(n);
      if (const int n = remove_partial_checkpoints(cfg_.checkpoint.dir))
        log0("removed " + std::to_string(n) + " partial checkpoint file(s) of a run that died while writing");
    } catch (const Error& e) {
      if (e.code() != ExitCode::bad_input) throw;
      why = e.what();
    }
  }
  raise_if_any(rt_.world(), why);
  return locks;
}

std::unique_ptr<SystemMonitor> Trainer::make_monitor() {
  SystemMonitorOptions o;
  const DeviceAssignment& d = rt_.device();
  if (d.kind == DeviceKind::cuda) o.gpu_pci_bus_id = d.pci_bus_id;
  o.first_on_gpu = d.first_on_gpu;
  o.reads_packages = rt_.rank_info().local_rank == 0;  // one rank per node reads its CPU packages
  auto monitor = std::make_unique<SystemMonitor>(rt_.world(), o);
  if (const std::string line = monitor->describe(); !line.empty()) log0(line);
  return monitor;
}

RunSummary Trainer::summarize(const Progress& p, const Checkpointer& checkpointer) {
  const Mesh& g = rt_.mesh();
  RunSummary s;
  s.wall_s = since(p.start);
  s.first_step = p.first;
  s.total_steps = p.total;
  s.steps = state_.step - p.first;
  s.global_batch = cfg_.train.global_batch;
  s.ranks = g.shape().world();
  s.pipeline_parallel = g.size(MeshDim::pp);
  s.tensor_parallel = g.size(MeshDim::tp);
  s.sequence_parallel = cfg_.parallel.sequence_parallel && s.tensor_parallel > 1;
  if (tp_steps_ > 0 && s.tensor_parallel > 1) {  // (this rank's: rank 0, the first stage's)
    const double steps = static_cast<double>(tp_steps_), t = s.tensor_parallel;
    for (const auto& [op, sum] : tp_step_traffic_) {
      const double bytes = static_cast<double>(sum.bytes) / steps;
      s.tp_collectives_per_step += static_cast<double>(sum.calls) / steps;
      // a ring's bytes sent per rank: an allreduce 2 (T-1)/T of its buffer, a gather or scatter (T-1)/T
      s.tp_link_bytes_per_step += bytes * (t - 1) / t * (op == "allreduce" ? 2 : 1);
      if (op == "allreduce") s.tp_allreduce_bytes_per_step = bytes;
      if (op == "allgather") s.tp_allgather_bytes_per_step = bytes;
      if (op == "reduce_scatter") s.tp_reduce_scatter_bytes_per_step = bytes;
    }
  }
  s.micro_batches = cfg_.train.micro_batches;
  s.samples_per_s = static_cast<double>(s.steps * s.global_batch) / s.wall_s;
  s.tokens_per_sample = index_.train.tokens ? index_.train.block_size : 0;
  s.flops_per_token = p.flops_per_token;
  s.peak_flops_per_rank = p.peak_flops;
  s.final_train_loss = state_.last_loss;
  s.has_test = index_.test.has_value();
  const EvalResult final_eval = s.has_test ? evaluate(*index_.test) : p.last_eval;
  s.final_split = s.has_test ? "test" : "eval";
  s.final_accuracy = final_eval.accuracy;
  s.final_loss = final_eval.loss;
  s.final_samples = final_eval.samples;
  s.final_bits_per_byte = final_eval.bits_per_byte();
  s.staging_s = staging_s_;
  if (!final_eval.mae.empty()) {
    s.final_mae = final_eval.mean_mae();
    s.final_mae_text = final_eval.mae_text();
  }
  s.run_id = p.run_id;
  s.started_at = p.started_at;
  s.deck = cfg_.origin;
  s.rank_hours = s.wall_s * s.ranks / 3600.0;
  s.price_per_device_hour = cfg_.run.price_per_device_hour;
  // Per-rank facts: step time (stragglers) and peak memory.
  double facts[10] = {p.step_seconds,
                      static_cast<double>(alloc_.peak()),
                      static_cast<double>(opt_->state().numel()) * sizeof(float),
                      static_cast<double>(model_->saved_bytes()),
                      static_cast<double>(model_->activation_bytes()),
                      static_cast<double>(model_->arena_high_water()) * sizeof(float),
                      peak_resident_bytes(),
                      static_cast<double>(model_->store().gradient_bytes()),
                      static_cast<double>(model_->store().parameter_bytes()),
                      memory_.total()},
         lo[10], hi[10];
  rt_.world().allreduce(facts, lo, 10, DType::f64, ReduceOp::min);
  rt_.world().allreduce(facts, hi, 10, DType::f64, ReduceOp::max);
  s.step_time_s_min = lo[0];
  s.step_time_s_max = hi[0];
  s.peak_bytes_per_rank = hi[1];
  s.optimizer_state_bytes_per_rank = hi[2];
  s.saved_bytes_per_rank = hi[3];
  s.activation_bytes_per_rank = hi[4];
  s.scratch_bytes_per_rank = hi[5];
  s.host_peak_rss_bytes_per_rank = hi[6];
  s.gradient_bytes_per_rank = hi[7];
  s.parameter_bytes_per_rank = hi[8];
  s.memory_estimate_bytes_per_rank = hi[9];
  s.shard_optimizer = averager_->sharded();
  s.shard = !averager_->sharded()                 ? "none"
            : model_->store().packed_parameters() ? "full"
            : averager_->staged()                 ? "gradients"
                                                  : "optimizer";
  for (const ParamInfo& info : model_->all_param_info()) s.parameters += numel(info.global_shape);
  double timed_s = p.timed_s;
  rt_.world().allreduce(&timed_s, &timed_s, 1, DType::f64, ReduceOp::max);
  s.steady_warmup_steps = p.warmup - p.first;
  s.steady_samples_per_s = timed_s > 0 ? static_cast<double>((p.total - p.warmup) * s.global_batch) / timed_s : 0;
  // Fraction of the gradient communication hidden behind backward: 1 - waited / (time it takes alone).
  // "Waited" is the least any rank waited: the last rank to finish backward is on the critical
  // path, and what it waits is the communication that was not hidden (others also wait for it).
  double waited = comm_wait_s_;
  rt_.world().allreduce(&waited, &waited, 1, DType::f64, ReduceOp::min);
  s.buckets = averager_->buckets().size();
  s.comm_alone_s_per_step = p.comm_alone;
  s.comm_wait_s_per_step = waited / static_cast<double>(std::max<std::int64_t>(1, s.steps));
  s.comm_hidden_fraction = std::max(0.0, p.comm_alone > 0 ? 1.0 - s.comm_wait_s_per_step / p.comm_alone : 1.0);
  s.checkpoints_written = checkpointer.saved();
  s.checkpoint_write_s = checkpointer.seconds_writing();
  s.checkpoint_stall_s = checkpointer.seconds_stalled();
  s.precision = to_string(cfg_.precision.dtype);
  s.gemms = gemm_description(alloc_.device());
  s.skipped_steps = state_.scaler.skipped_steps;
  p.monitor->finish(s, s.wall_s);
  s.loss_scale = state_.scaler.scale;
  if (const PipelineStage* stage = executor_->pipeline()) {
    double pipe[3] = {stage->wait_seconds(), stage->step_seconds(), static_cast<double>(stage->peak_stored())};
    rt_.world().allreduce(pipe, pipe, 2, DType::f64, ReduceOp::sum);
    rt_.world().allreduce(pipe + 2, pipe + 2, 1, DType::f64, ReduceOp::max);
    s.pipeline = true;
    s.gpipe = cfg_.parallel.pipeline_schedule == PipelineSchedule::gpipe;
    s.pipeline_wait_s = pipe[0];
    s.pipeline_step_s = pipe[1];
    s.pipeline_peak_kept_inputs = pipe[2];
  }
  return s;
}

}  // namespace hpctrain
