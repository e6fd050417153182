// Implementation of the training loop (train/trainer.hpp).
#include "hpctrain/train/trainer.hpp"

#include <cblas.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "hpctrain/backend/cpu/onednn_conv.hpp"
#include "hpctrain/backend/cpu/onednn_matmul.hpp"
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/hash.hpp"
#include "hpctrain/core/log.hpp"
#include "hpctrain/core/signals.hpp"
#include "hpctrain/data/sampler.hpp"
#include "hpctrain/model/partition.hpp"
#include "hpctrain/tensor/step_scalars.hpp"
#include "hpctrain/train/checkpointing.hpp"
#include "hpctrain/train/pipeline.hpp"

namespace fs = std::filesystem;

namespace hpctrain {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string duration_text(double s) {
  const long t = static_cast<long>(s + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  return buf;
}

std::uint64_t fnv1a(const void* data, std::size_t bytes) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

std::string resolve(const std::string& dir, const std::string& file) {
  return fs::path(file).is_absolute() ? file : (fs::path(dir) / file).string();
}
}  // namespace

void verify_identical(Communicator& comm, const Tensor& t, const std::string& what) {
  std::vector<float> copy;
  const auto h =
      static_cast<std::int64_t>(fnv1a(host_data(t, copy), static_cast<std::size_t>(t.numel()) * sizeof(float)) >> 1);
  std::int64_t lo = h, hi = h;
  comm.allreduce(&lo, &lo, 1, DType::i64, ReduceOp::min);
  comm.allreduce(&hi, &hi, 1, DType::i64, ReduceOp::max);
  if (lo != hi)
    throw Error(ExitCode::internal, Scope::this_rank,
                what + " differ between the ranks of communicator '" + comm.name() + "' after the broadcast");
}

namespace {
// The step a "RANK:STEP" test hook in environment variable `var` names for `rank`, else -1.
std::int64_t test_hook_step(const char* var, int rank) {
  const char* t = std::getenv(var);
  return t && std::atoi(t) == rank && std::strchr(t, ':') ? std::atoll(std::strchr(t, ':') + 1) : -1;
}

Device device_of(const Runtime& rt) { return rt.device().kind == DeviceKind::cuda ? Device::cuda : Device::cpu; }
}  // namespace

Trainer::Trainer(const Config& cfg, Runtime& rt, const DatasetIndex& index)
    : cfg_(cfg), rt_(rt), index_(index), alloc_(device_of(rt)), staged_(alloc_) {
  if (cfg.model.layers.empty()) throw bad_input("[model] layers is not set");
  const bool gpu = this->gpu();
  if (const std::string why = cuda_graphs_refusal(cfg, rt.device().kind, rt.grid().shape().dp_size); !why.empty())
    throw bad_input(why);
  if (gpu && cfg.run.conv == ConvImpl::onednn)
    throw bad_input("[run] conv = onednn is a CPU convolution; with device = cuda use conv = auto or im2col");
  openblas_set_num_threads(cfg.run.threads);
  cpu::set_onednn_threads(cfg.run.threads);
  // bf16 on the CPU: real bf16 GEMMs where the CPU has them natively, else the float32 emulation.
  cpu::set_bf16_math(!gpu && cfg.run.precision == Precision::bf16 && cpu::bf16_gemm_native());
  if (gpu)  // bf16/fp16: the layers' operands are rounded to the format, so its tensor cores multiply exactly
    cuda::set_gemm_math(cfg.run.precision == Precision::bf16   ? cuda::GemmMath::bf16
                        : cfg.run.precision == Precision::fp16 ? cuda::GemmMath::fp16
                        : cfg.run.tf32                         ? cuda::GemmMath::tf32
                                                               : cuda::GemmMath::fp32);
  alloc_.set_limit(cfg.run.memory_budget);
  LayerRegistry registry;
  register_builtin_layers(registry, LayerOptions{cfg.run.conv});  // on a GPU: auto = cuDNN (layers/conv2d.cpp)
  // Model parallelism: this rank holds its stage's group of layers (all of them when M = 1).
  const int stages = rt.grid().shape().mp_size;
  {
    Allocator scratch;  // not counted against [run] memory_budget
    const Model layout(cfg.model.layers, index.train.sample_shape, registry, scratch, 0, 1);  // shapes, counts
    groups_ = partition_layers(layer_parameter_counts(layout), stages, cfg.model.groups);     // bad_input if wrong
    const Shape& out = layout.whole_output_shape();
    const std::int64_t want = index.train.classification ? index.train.num_classes : index.train.label_width;
    if (out.size() != 1 || out[0] != want)
      throw bad_input("[model] layers: the last layer outputs " + shape_string(out) + " but the data needs [" +
                      std::to_string(want) + "] (" + (index.train.classification ? "classes" : "targets") + ")");
  }
  const LayerGroup& mine = groups_[static_cast<std::size_t>(rt.grid().coords().mp)];
  model_ = std::make_unique<Model>(cfg.model.layers, index.train.sample_shape, registry, alloc_, mine.first, mine.last);
  loss_ = make_loss(index.train.classification, alloc_);
  opt_ = make_optimizer(cfg.optim, model_->parameters(), model_->gradients(), alloc_);
  scalars_ = step_scalars::make(alloc_);
  step_key_ = Tensor::zeros({2}, alloc_);
  eval_scalars_ = step_scalars::make(alloc_);
  // Gradients live on the device: NCCL, or MPI (CUDA-aware or staged through host memory).
  comm_ = rt.make_communicator(rt.grid().dp_comm(), rt.grid().dp_name(), gpu ? MemorySpace::device : MemorySpace::host);
  // Small host-side reductions (batch norm statistics, metrics, checks) over the same group.
  if (gpu) host_comm_ = rt.make_communicator(rt.grid().dp_comm(), rt.grid().dp_name() + "/host", MemorySpace::host);
  if (stages > 1) {
    // Activations between stages go through host buffers (pipeline.cpp stages them): MPI on the host.
    mp_comm_ = rt.make_communicator(rt.grid().mp_comm(), rt.grid().mp_name(), MemorySpace::host);
    pipeline_ = std::make_unique<PipelineStage>(*model_, *loss_, *mp_comm_, cfg.parallel.schedule, alloc_);
  }
  model_->init_parameters(cfg.run.seed);
  comm_->broadcast(model_->parameters().data(), static_cast<std::size_t>(model_->parameters().numel()), DType::f32, 0);
  verify_identical(host_dp(), model_->parameters(), "initial parameters");
  model_->set_precision(cfg.run.precision);  // bf16/fp16: the layers compute with a rounded copy
  if (cfg.run.precision == Precision::fp16) loss_scale_ = cfg.optim.loss_scale;
  CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node_));
  const auto bucket_elems = static_cast<std::int64_t>(cfg.parallel.bucket_mb * (1 << 20) / sizeof(float));
  averager_ = std::make_unique<GradientAverager>(*comm_, model_->gradients(),
                                                 make_buckets(*model_, std::max<std::int64_t>(1, bucket_elems)));
}

Trainer::~Trainer() {
  eval_readers_.clear();  // their node caches are MPI windows: free them before the communicator
  averager_.reset();
  comm_.reset();
  host_comm_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (node_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&node_);
}

void Trainer::train_step(const Batch& batch, float lr) {
  const int k = cfg_.train.micro_batches;
  const std::int64_t rows = batch.size / k, width = numel(index_.train.sample_shape);
  // The mean over this rank's batch; with fp16, times the loss scale (undone before the update).
  const float grad_scale = static_cast<float>(loss_scale_) / static_cast<float>(batch.size);
  model_->set_batch(rows);
  Tensor lr_slot = step_scalars::slot(scalars_, step_scalars::learning_rate);
  fill(lr_slot, lr);  // written into device memory; the optimizer reads it there
  Shape sh{rows};
  sh.insert(sh.end(), index_.train.sample_shape.begin(), index_.train.sample_shape.end());
  staged_.stage(batch);  // on a GPU: one copy of the step's samples, labels and indices
  const std::int64_t step_id = batch.epoch * 1000000007 + batch.step;  // unique per step of the run, same on every rank
  // The step's part of dropout's key, where the layers read it (a recorded step reads it anew).
  const std::uint64_t step_key = splitmix64(static_cast<std::uint64_t>(step_id));
  if (gpu())
    cuda::stage_to_device(step_key_.data(), &step_key, sizeof step_key);
  else
    upload(&step_key, sizeof step_key, step_key_);
  // Micro-batch m: its rows of the batch, and the context its layers draw on (dropout keys).
  auto prepare = [&](int m) {
    MicroBatch mb;
    mb.input = Tensor::wrap(const_cast<float*>(staged_.samples()) + m * rows * width, sh, staged_.device());
    if (staged_.classes()) mb.targets.classes = staged_.classes() + m * rows;
    if (staged_.targets()) mb.targets.values = staged_.targets() + m * rows * index_.train.label_width;
    StepContext& ctx = model_->context();
    ctx.training = true;
    ctx.stats_comm = cfg_.train.sync_batchnorm ? &host_dp() : nullptr;
    ctx.seed = cfg_.run.seed;
    ctx.step = step_id;
    ctx.sample_ids = staged_.indices() + m * rows;
    ctx.step_key = reinterpret_cast<const std::uint64_t*>(step_key_.data());
    return mb;
  };
  // Each bucket's average starts as soon as the last backward has finished its layers.
  const auto layer_done = [&](std::size_t layer) { averager_->layer_done(layer); };
  // Gradient accumulation: the first micro-batch overwrites, later ones add.
  auto micro_batches = [&](const std::function<void(std::size_t)>& last_done) {
    for (int m = 0; m < k; ++m) {
      const MicroBatch mb = prepare(m);
      const Tensor& out = model_->forward(mb.input);
      loss_->forward(out, mb.targets, scalars_);  // adds to the interval's sums on the device
      loss_->backward(out, mb.targets, grad_scale, model_->dout());
      model_->backward(mb.input, model_->dout(), m + 1 == k ? last_done : std::function<void(std::size_t)>(), m > 0);
    }
  };
  if (pipeline_) {
    pipeline_->train_step(k, rows, prepare, grad_scale, scalars_, layer_done);
  } else if (cfg_.run.cuda_graphs) {
    // A recording holds the addresses and arguments it saw: record again when they change.
    const Recorded key{staged_.samples(), staged_.classes(),         staged_.targets(), rows,
                       grad_scale,        cuda::scratch_generation()};
    if (!(key == recorded_for_)) drop_recordings();
    recorded_for_ = key;
    run_recorded(step_graph_, [&] { micro_batches({}); });
    for (std::size_t i = model_->layers(); i-- > 0;) averager_->layer_done(i);  // no overlap: one launch
  } else {
    micro_batches(layer_done);
  }
  finish_step();
}

void Trainer::finish_step() {
  comm_wait_s_ += averager_->finish();
  last_step_skipped_ = false;
  Tensor& grads = model_->gradients();
  const bool fp16 = cfg_.run.precision == Precision::fp16, clip = cfg_.optim.clip_norm > 0;
  // One pass over the gradients serves both the overflow check and the clipping norm.
  double squares = fp16 || clip ? sum_of_squares(grads) : 0;
  if (fp16) {
    // An overflow on any stage or replica skips the update everywhere, so the ranks stay identical.
    int bad = std::isfinite(squares) ? 0 : 1;
    rt_.world().allreduce(&bad, &bad, 1, DType::i32, ReduceOp::max);
    if (bad) {
      ++skipped_steps_;
      loss_scale_ = std::max(1.0, loss_scale_ / 2);
      good_steps_ = 0;
      last_step_skipped_ = true;
      return;
    }
    scale(grads, static_cast<float>(1.0 / loss_scale_));  // a power of two: exact
    squares /= loss_scale_ * loss_scale_;
    if (++good_steps_ >= cfg_.optim.loss_scale_window) {
      loss_scale_ *= 2;
      good_steps_ = 0;
    }
  }
  if (clip) {
    // The global norm covers every stage's gradients (identical over a data-parallel group after averaging).
    if (mp_comm_) mp_comm_->allreduce(&squares, &squares, 1, DType::f64, ReduceOp::sum);
    clip_by_global_norm(grads, cfg_.optim.clip_norm, squares);
  }
  if (cfg_.run.cuda_graphs) {
    opt_->begin_step(scalars_);  // host bookkeeping (Adam's step count) outside the recording
    run_recorded(update_graph_, [&] {
      opt_->update(scalars_);
      model_->refresh_compute_parameters();
    });
    return;
  }
  opt_->step(scalars_);
  model_->refresh_compute_parameters();
}

void Trainer::take_interval_sums(double sums[3]) {
  const auto h = step_scalars::to_host(scalars_);  // the only read of the step scalars: at log intervals
  sums[0] = h[step_scalars::loss_sum];
  sums[1] = h[step_scalars::correct];
  sums[2] = h[step_scalars::samples];
  Tensor interval = scalars_.view(0, {3});
  fill(interval, 0.f);
}

void Trainer::peek_interval_sums(double sums[3]) const {
  const auto h = step_scalars::to_host(scalars_);
  for (int i = 0; i < 3; ++i) sums[i] = h[static_cast<std::size_t>(i)];
}

void Trainer::set_interval_sums(const double sums[3]) {
  for (int i = 0; i < 3; ++i) {
    Tensor v = step_scalars::slot(scalars_, static_cast<step_scalars::Slot>(i));
    fill(v, static_cast<float>(sums[i]));
  }
}

namespace {
const char* signal_name(int sig) { return sig == SIGTERM ? "SIGTERM" : sig == SIGUSR1 ? "SIGUSR1" : "a signal"; }

// Opens the metrics file (rank 0). A resumed run keeps the rows up to the step it
// resumes from (a run killed after its last checkpoint logged steps that are
// trained again) and appends; a fresh run starts the file anew.
std::string open_metrics(std::ofstream& out, const std::string& path, std::int64_t resumed_at) {
  static const char* header =
      "step,epoch,wall_s,loss,accuracy,samples_per_s,data_wait_pct,comm_exposed_pct,lr,eval_loss,eval_accuracy";
  std::vector<std::string> keep;
  if (resumed_at > 0) {
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);)
      if (line != header && !line.empty() && std::stoll(line.substr(0, line.find(','))) <= resumed_at)
        keep.push_back(line);
  }
  out.open(path, std::ios::trunc);
  if (!out) return "cannot write " + path;
  out << header << '\n';
  for (const auto& l : keep) out << l << '\n';
  out << std::flush;
  return "";
}
}  // namespace

// What the progress line and the metrics file need across log intervals.
struct Trainer::LogState {
  Clock::time_point start, interval_start;
  std::int64_t first = 0, total = 0;  // steps: where this run started, where it ends
  double wait_mark = 0, comm_mark = 0, last_loss = 0;
  EvalResult last_eval;
  std::ofstream metrics;
};

void Trainer::log_interval(std::int64_t step, std::int64_t epoch, double lr, bool eval_now, double sums[3],
                           LogState& st, const SplitIndex* eval_split, Reader& reader) {
  sum_over_replicas(sums, 3);
  const double loss = sums[0] / sums[2], acc = sums[1] / sums[2];
  if (!std::isfinite(loss))
    throw Error(ExitCode::internal, Scope::every_rank,
                "the training loss is not finite (" + std::to_string(loss) + ") at step " + std::to_string(step + 1) +
                    ": lower [optim] lr or set clip_norm");
  const double dt = since(st.interval_start), elapsed = since(st.start);
  const double sps = sums[2] / std::max(dt, 1e-9);  // sums[2]: samples over all ranks
  const double wait = 100 * (reader.wait_seconds() - st.wait_mark) / std::max(dt, 1e-9);
  const double exposed = 100 * (comm_wait_s_ - st.comm_mark) / std::max(dt, 1e-9);  // communication not hidden
  if (eval_now) st.last_eval = evaluate(*eval_split);
  const double eta = elapsed / static_cast<double>(step + 1 - st.first) * static_cast<double>(st.total - step - 1);
  char line[320];
  std::snprintf(
      line, sizeof(line),
      "epoch %lld step %lld/%lld | loss %.4f | acc %5.1f%% | %.0f samples/s | ETA %s | data wait %.1f%% | "
      "comm exposed %.1f%% | lr %.4g%s",
      static_cast<long long>(epoch + 1), static_cast<long long>(step + 1), static_cast<long long>(st.total), loss,
      100 * acc, sps, duration_text(eta).c_str(), wait, exposed, lr,
      eval_now ? (" | " + std::string(eval_split->name) + " loss " + std::to_string(st.last_eval.loss).substr(0, 6) +
                  " acc " + std::to_string(100 * st.last_eval.accuracy).substr(0, 5) + "%")
                     .c_str()
               : "");
  log0(line);
  if (st.metrics) {
    st.metrics << step + 1 << ',' << epoch + 1 << ',' << elapsed << ',' << loss << ',' << acc << ',' << sps << ','
               << wait << ',' << exposed << ',' << lr << ',';
    if (eval_now)
      st.metrics << st.last_eval.loss << ',' << st.last_eval.accuracy;
    else
      st.metrics << ',';
    st.metrics << '\n' << std::flush;
  }
  st.last_loss = loss;
  sums[0] = sums[1] = sums[2] = 0;
  st.interval_start = Clock::now();
  st.wait_mark = reader.wait_seconds();
  st.comm_mark = comm_wait_s_;
}

int Trainer::run() {
  const auto& g = rt_.grid();
  const Sampler sampler(sampler_options(cfg_, index_.train));
  const std::int64_t per_epoch = sampler.steps_per_epoch();
  const std::int64_t total = cfg_.train.steps > 0 ? cfg_.train.steps : cfg_.train.epochs * per_epoch;
  const SplitIndex* eval_split = index_.val ? &*index_.val : index_.test ? &*index_.test : nullptr;

  // Resume: [checkpoint] resume selects a checkpoint (or none); its step, sampler
  // position and partial log-interval sums (this rank's) continue here.
  Checkpointer checkpointer(cfg_, rt_, *model_, *opt_, groups_);
  const std::string resume_from = checkpointer.resume_target();
  LogState st;
  std::int64_t first = 0, samples_done = 0;
  SamplerState from{cfg_.run.seed, 0, 0};
  double sums[3] = {0, 0, 0}, before_s = 0;
  if (!resume_from.empty()) {
    const CheckpointInfo info = checkpointer.load(resume_from, sums);
    set_interval_sums(sums);
    model_->refresh_compute_parameters();
    if (cfg_.run.precision == Precision::fp16 && info.loss_scale > 1) {  // the scale goes on where it was
      loss_scale_ = info.loss_scale;
      good_steps_ = info.scale_good_steps;
      skipped_steps_ = info.skipped_steps;
    }
    first = info.step;
    samples_done = info.samples;
    st.last_loss = info.last_loss;
    before_s = info.train_seconds;
    from.epoch = info.epoch;
    from.step = info.epoch_step;
    if (info.global_batch != cfg_.train.global_batch) {  // the same samples consumed in the epoch, new batch size
      from.step = info.epoch_step * info.global_batch / cfg_.train.global_batch;
      log0("warning: [train] global_batch changed from " + std::to_string(info.global_batch) + " to " +
           std::to_string(cfg_.train.global_batch) + ": the sample sequence does not continue exactly");
    }
    if (from.step >= per_epoch) from = {cfg_.run.seed, from.epoch + 1, 0};
    log0("resumed from " + resume_from + ": step " + std::to_string(first) + ", epoch " +
         std::to_string(from.epoch + 1) + " batch " + std::to_string(from.step) + " (written on " +
         std::to_string(info.world) + " rank(s), now " + std::to_string(g.shape().world) + ")");
  }
  if (first >= total) {
    log0("nothing to train: " + resume_from + " is at step " + std::to_string(first) + " of " + std::to_string(total) +
         " (train more with a larger [train] steps or epochs; start anew with --set "
         "checkpoint.resume=none or another [run] out_dir)");
    return 0;
  }

  // Output files (rank 0): fail now, not at the end, when the directory is not writable.
  std::string error;
  if (g.world_rank() == 0) {
    std::error_code ec;
    fs::create_directories(cfg_.run.out_dir, ec);
    const std::string why = open_metrics(st.metrics, resolve(cfg_.run.out_dir, cfg_.train.metrics_file), first);
    if (!why.empty()) error = "[run] out_dir '" + cfg_.run.out_dir + "': " + why;
  }
  raise_if_any(MPI_COMM_WORLD, error);

  log0(model_->summary() + describe_pipeline(cfg_, rt_, *model_));  // (rank 0 holds stage 0's layers)
  const double alone = averager_->time_alone();  // the gradient allreduces with nothing to hide behind
  log0("training " + std::to_string(total - first) + " steps (" + std::to_string(per_epoch) + " per epoch) of " +
       std::to_string(cfg_.train.global_batch) + " samples on " + std::to_string(g.shape().dp_size) +
       " data-parallel rank(s)");

  ReaderOptions ro;
  ro.prefetch = cfg_.data.prefetch;
  ro.cache_bytes = cfg_.data.cache_bytes;
  ro.dp = g.coords().dp;
  ro.dp_size = g.shape().dp_size;
  Reader reader(index_.train, node_, ro);
  reader.start(sampler, from);
  install_preemption_signals();
  // Test hooks ("RANK:STEP", step 1-based): HPCTRAIN_TEST_SIGNAL makes that rank act as if SIGUSR1
  // arrived during that step, so the tests can stop a run at a chosen point; HPCTRAIN_TEST_STALL
  // makes it stop before that step's flag exchange, as a hung rank would (the watchdog must end
  // the job with exit 3).
  const std::int64_t test_signal_step = test_hook_step("HPCTRAIN_TEST_SIGNAL", g.world_rank());
  const std::int64_t test_stall_step = test_hook_step("HPCTRAIN_TEST_STALL", g.world_rank());

  st.start = st.interval_start = Clock::now();
  st.first = first;
  st.total = total;
  auto last_checkpoint = st.start;
  double step_seconds = 0, timed_s = 0;
  // Steady-state throughput as the PyTorch reference defines it: per-step time (batch + forward +
  // backward + gradient averaging + update) summed after the warm-up steps, slowest rank.
  const std::int64_t warmup = first + std::min<std::int64_t>(20, (total - first) / 5);
  int stop_signal = 0;
  std::int64_t step = first;
  for (; step < total && !stop_signal; ++step) {
    // On a GPU the host runs ahead of the device: the timed steps start with the device idle and
    // end with it drained, so steady_samples_per_s counts the device's work, not the launches.
    if (gpu() && step == warmup) cuda::synchronize();
    const auto t_step = Clock::now();
    Batch batch = reader.next();
    const double lr = learning_rate(cfg_.optim, step, total);
    const auto t0 = Clock::now();
    train_step(batch, static_cast<float>(lr));
    step_seconds += since(t0);
    if (last_step_skipped_) {
      char skip[160];
      std::snprintf(skip, sizeof(skip), "step %lld: fp16 gradient overflow: update skipped, loss scale now %g",
                    static_cast<long long>(step + 1), loss_scale_);
      log0(skip);
    }
    if (gpu() && step + 1 == total) cuda::synchronize();
    if (step >= warmup) timed_s += since(t_step);
    const bool epoch_end = batch.step == per_epoch - 1;
    const std::int64_t epoch = batch.epoch, next_step = batch.step + 1;
    reader.recycle(std::move(batch));
    samples_done += cfg_.train.global_batch;

    const bool eval_now = eval_split && ((cfg_.train.eval_every > 0 && (step + 1) % cfg_.train.eval_every == 0) ||
                                         (cfg_.train.eval_every == 0 && epoch_end) || step + 1 == total);
    if ((step + 1) % cfg_.train.log_every == 0 || step + 1 == total || eval_now) {
      take_interval_sums(sums);
      log_interval(step, epoch, lr, eval_now, sums, st, eval_split, reader);
    }

    if (test_signal_step == step + 1) simulate_preemption_signal(SIGUSR1);
    if (test_stall_step == step + 1) std::this_thread::sleep_for(std::chrono::hours(1));
    // Checkpoint when an interval says so, at the end, or when any rank got a preemption
    // signal: one small allreduce per step, so every rank stops after the same step.
    const auto& c = cfg_.checkpoint;
    int flags[2] = {pending_preemption_signal(),
                    c.every_minutes > 0 && since(last_checkpoint) >= 60 * c.every_minutes ? 1 : 0};
    rt_.world().allreduce(flags, flags, 2, DType::i32, ReduceOp::max);
    stop_signal = flags[0];
    if (step + 1 == total || stop_signal || flags[1] || (c.every_steps > 0 && (step + 1) % c.every_steps == 0) ||
        (c.every_epochs > 0 && epoch_end && (epoch + 1) % c.every_epochs == 0)) {
      TrainPosition pos;
      pos.step = step + 1;
      pos.epoch = epoch_end ? epoch + 1 : epoch;
      pos.epoch_step = epoch_end ? 0 : next_step;
      pos.samples = samples_done;
      pos.last_loss = st.last_loss;
      pos.train_seconds = before_s + since(st.start);
      pos.loss_scale = loss_scale_;
      pos.scale_good_steps = good_steps_;
      pos.skipped_steps = skipped_steps_;
      peek_interval_sums(sums);  // this rank's partial sums of the interval the checkpoint cuts
      checkpointer.save(pos, sums);
      last_checkpoint = Clock::now();
    }
  }
  restore_preemption_signals();
  const double wall = since(st.start);
  const std::int64_t ran = step - first;
  if (stop_signal && step < total) {  // (a signal during the last step: the run is complete, finish normally)
    log0(std::string("stopped by ") + signal_name(stop_signal) + " after step " + std::to_string(step) + " of " +
         std::to_string(total) + " (checkpoint written, " +
         std::to_string(checkpointer.seconds_writing()).substr(0, 5) +
         " s writing checkpoints); resume with [checkpoint] resume = auto; exit code 10");
    return static_cast<int>(ExitCode::preempted);
  }

  EvalResult test;
  if (index_.test) test = evaluate(*index_.test);
  // Per-rank facts for the summary: step time (stragglers) and peak memory.
  double facts[2] = {step_seconds, static_cast<double>(alloc_.peak())}, lo[2], hi[2];
  rt_.world().allreduce(facts, lo, 2, DType::f64, ReduceOp::min);
  rt_.world().allreduce(facts, hi, 2, DType::f64, ReduceOp::max);
  const double samples = static_cast<double>(ran * cfg_.train.global_batch);
  const double rank_hours = wall * g.shape().world / 3600.0;
  // Fraction of the gradient communication hidden behind backward: 1 - waited / (time it takes alone).
  // "Waited" is the least any rank waited: the last rank to finish backward is on the critical
  // path, and what it waits is the communication that was not hidden (others also wait for it).
  rt_.world().allreduce(&timed_s, &timed_s, 1, DType::f64, ReduceOp::max);
  const double steady = timed_s > 0 ? static_cast<double>((total - warmup) * cfg_.train.global_batch) / timed_s : 0;
  double waited = comm_wait_s_;
  rt_.world().allreduce(&waited, &waited, 1, DType::f64, ReduceOp::min);
  const double per_step_waited = waited / static_cast<double>(std::max<std::int64_t>(1, ran));
  const double hidden = alone > 0 ? 1.0 - per_step_waited / alone : 1.0;
  log0("gradient averaging: " + std::to_string(averager_->buckets().size()) + " bucket(s), " +
       std::to_string(alone * 1e3).substr(0, 6) + " ms per step alone, " +
       std::to_string(per_step_waited * 1e3).substr(0, 6) + " ms per step waited after backward (least over ranks): " +
       std::to_string(100 * std::max(0.0, hidden)).substr(0, 5) + "% hidden");
  const EvalResult& final_eval = index_.test ? test : st.last_eval;
  if (cfg_.run.precision != Precision::fp32) {
    char pl[320];
    const std::string gemms = alloc_.device() == Device::cuda ? "tensor-core GEMMs"
                              : cpu::bf16_math_enabled()
                                  ? std::string("bf16 GEMMs: oneDNN ") + cpu::bf16_gemm_implementation()
                                  : "emulated: float32 GEMMs on rounded values";
    std::snprintf(pl, sizeof(pl), "precision %s (float32 master parameters; %s)%s", to_string(cfg_.run.precision),
                  gemms.c_str(),
                  cfg_.run.precision == Precision::fp16
                      ? (": " + std::to_string(skipped_steps_) + " update(s) skipped for overflow, loss scale now " +
                         std::to_string(static_cast<long long>(loss_scale_)))
                            .c_str()
                      : "");
    log0(pl);
  }
  // Pipeline idle: the share of the stages' step time spent waiting for a neighbour, over all
  // ranks, beside the ideal of a perfectly balanced pipeline, (M - 1) / (K + M - 1).
  double pipe[3] = {0, 0, 0};
  if (pipeline_) {
    pipe[0] = pipeline_->wait_seconds();
    pipe[1] = pipeline_->step_seconds();
    pipe[2] = pipeline_->peak_stored();
    rt_.world().allreduce(pipe, pipe, 2, DType::f64, ReduceOp::sum);
    rt_.world().allreduce(pipe + 2, pipe + 2, 1, DType::f64, ReduceOp::max);
    const double m = g.shape().mp_size, k = cfg_.train.micro_batches;
    char pl[256];
    std::snprintf(pl, sizeof(pl),
                  "pipeline: %d stages, %d micro-batches, %s: idle %.1f%% of the stages' step time (ideal %.1f%%); "
                  "at most %.0f micro-batch inputs kept per stage",
                  g.shape().mp_size, cfg_.train.micro_batches,
                  cfg_.parallel.schedule == PipelineSchedule::gpipe ? "gpipe" : "1f1b",
                  100 * pipe[0] / std::max(pipe[1], 1e-9), 100 * (m - 1) / (k + m - 1), pipe[2]);
    log0(pl);
  }
  char line[512];
  std::snprintf(line, sizeof(line),
                "done: %lld steps in %.1f s, %.0f samples/s (steady state %.0f) | final loss %.4f | %s accuracy %.2f%% "
                "(%lld samples) | %.4f rank-hours%s | step time per rank %.1f-%.1f s | peak memory per rank %.1f MiB "
                "| %d checkpoint(s), %.2f s writing",
                static_cast<long long>(ran), wall, samples / wall, steady, st.last_loss, index_.test ? "test" : "eval",
                100 * final_eval.accuracy, static_cast<long long>(final_eval.samples), rank_hours,
                cfg_.run.price_per_device_hour > 0
                    ? (", cost " + std::to_string(rank_hours * cfg_.run.price_per_device_hour).substr(0, 8)).c_str()
                    : "",
                lo[0], hi[0], hi[1] / (1 << 20), checkpointer.saved(), checkpointer.seconds_writing());
  log0(line);
  if (g.world_rank() == 0) {
    std::ofstream js(resolve(cfg_.run.out_dir, "summary.json"));
    js << "{\n  \"steps\": " << ran << ",\n  \"first_step\": " << first << ",\n  \"total_steps\": " << total
       << ",\n  \"global_batch\": " << cfg_.train.global_batch << ",\n  \"ranks\": " << g.shape().world
       << ",\n  \"wall_s\": " << wall << ",\n  \"samples_per_s\": " << samples / wall
       << ",\n  \"final_train_loss\": " << st.last_loss
       << ",\n  \"test_accuracy\": " << (index_.test ? test.accuracy : -1)
       << ",\n  \"test_loss\": " << (index_.test ? test.loss : -1) << ",\n  \"rank_hours\": " << rank_hours
       << ",\n  \"cost\": " << (cfg_.run.price_per_device_hour > 0 ? rank_hours * cfg_.run.price_per_device_hour : 0)
       << ",\n  \"step_time_s_min\": " << lo[0] << ",\n  \"step_time_s_max\": " << hi[0]
       << ",\n  \"peak_bytes_per_rank\": " << hi[1] << ",\n  \"comm_alone_s_per_step\": " << alone
       << ",\n  \"comm_wait_s_per_step\": " << per_step_waited
       << ",\n  \"comm_hidden_fraction\": " << std::max(0.0, hidden) << ",\n  \"steady_samples_per_s\": " << steady
       << ",\n  \"steady_warmup_steps\": " << warmup - first << ",\n  \"checkpoints_written\": " << checkpointer.saved()
       << ",\n  \"checkpoint_write_s\": " << checkpointer.seconds_writing() << ",\n  \"precision\": \""
       << to_string(cfg_.run.precision) << "\""
       << ",\n  \"skipped_steps\": " << skipped_steps_ << ",\n  \"loss_scale\": " << loss_scale_
       << ",\n  \"model_parallel\": " << g.shape().mp_size
       << ",\n  \"pipeline_idle_fraction\": " << (pipeline_ ? pipe[0] / std::max(pipe[1], 1e-9) : 0)
       << ",\n  \"pipeline_idle_ideal\": "
       << (pipeline_ ? (g.shape().mp_size - 1.0) / (cfg_.train.micro_batches + g.shape().mp_size - 1.0) : 0)
       << ",\n  \"pipeline_peak_kept_inputs\": " << pipe[2] << "\n}\n";
  }
  return 0;
}

}  // namespace hpctrain
