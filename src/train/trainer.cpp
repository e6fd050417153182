// Implementation of the training loop (train/trainer.hpp).
#include "hpctrain/train/trainer.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "hpctrain/backend/configure.hpp"
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/comm/agreement.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/hash.hpp"
#include "hpctrain/core/log.hpp"
#include "hpctrain/model/partition.hpp"
#include "hpctrain/parallel/pipeline.hpp"
#include "hpctrain/tensor/step_scalars.hpp"

namespace hpctrain {

namespace {
std::uint64_t fnv1a(const void* data, std::size_t bytes) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
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
Device device_of(const Runtime& rt) { return rt.device().kind == DeviceKind::cuda ? Device::cuda : Device::cpu; }

// [train] loss, checked against the data: classes take cross-entropy, regression targets the others.
std::unique_ptr<Loss> training_loss(const TrainConfig& t, bool classification) {
  const LossKind k = t.loss;
  if (classification && k != LossKind::auto_ && k != LossKind::cross_entropy)
    throw bad_input(std::string("[train] loss = ") + name_of(k) +
                    " is for regression targets; this dataset has classes (use auto or cross_entropy)");
  if (!classification && k == LossKind::cross_entropy)
    throw bad_input(
        "[train] loss = cross_entropy needs classes; this dataset has regression targets (use auto, mse, "
        "mae or huber)");
  const RegressionLoss kind = k == LossKind::mae     ? RegressionLoss::mae
                              : k == LossKind::huber ? RegressionLoss::huber
                                                     : RegressionLoss::mse;
  return make_loss(classification, kind, static_cast<float>(t.huber_delta));
}
}  // namespace

// This rank's block of the tensor-parallel group, and with [parallel] sequence_parallel the
// sequence length whose positions the layers between the split pairs divide.
TensorParallel tensor_parallel_place(const Mesh& mesh, const Config& cfg, const SplitIndex& data) {
  TensorParallel tp{mesh.coord(MeshDim::tp), mesh.size(MeshDim::tp)};
  if (cfg.parallel.sequence_parallel && tp.size > 1) {
    if (!data.tokens)
      throw bad_input("[parallel] sequence_parallel splits a language model's positions; " + cfg.data.path +
                      " holds no token sequences: set it to false");
    tp.sequence = data.sample_shape[0];
  }
  return tp;
}

SpatialSplit spatial_place(const Mesh& mesh) {
  const int size = mesh.size(MeshDim::sp);
  return size > 1 ? SpatialSplit{mesh.coord(MeshDim::sp), size, true} : SpatialSplit{};
}

Shape model_input_shape(const Mesh& mesh, const Config& cfg, const SplitIndex& data) {
  const int size = mesh.size(MeshDim::sp);
  check_depth_slabs(data, cfg.data.path, size);
  return slab_shape(data.sample_shape, size);
}

Trainer::Trainer(const Config& cfg, Runtime& rt, const DatasetIndex& index, Purpose purpose)
    : cfg_(cfg), rt_(rt), purpose_(purpose), index_(index), alloc_(device_of(rt)), staged_(alloc_) {
  if (cfg.model.layers.empty()) throw bad_input("[model] layers is not set");
  const bool gpu = this->gpu();
  if (const std::string why = cuda_graphs_refusal(cfg, rt.device().kind, rt.mesh().size(MeshDim::dp)); !why.empty())
    throw bad_input(why);
  if (gpu && cfg.kernels.conv == ConvImpl::onednn)
    throw bad_input("[kernels] conv = onednn is a CPU convolution; with device = cuda use conv = auto or im2col");
  const cpu::CpuGemm gemm_lib = cfg.kernels.cpu_gemm == CpuGemmLib::openblas ? cpu::CpuGemm::openblas
                                : cfg.kernels.cpu_gemm == CpuGemmLib::onednn ? cpu::CpuGemm::onednn
                                                                             : cpu::CpuGemm::automatic;
  configure_backend({alloc_.device(), cfg.kernels.threads, cfg.precision.dtype, cfg.precision.tf32, gemm_lib});
  alloc_.set_limit(cfg.run.memory_budget);
  LayerRegistry registry;
  register_builtin_layers(
      registry,
      LayerOptions{cfg.kernels.conv, cfg.model.vocab_multiple});  // on a GPU: auto = cuDNN (layers/conv2d.cpp)
  // Model parallelism: this rank holds its stage's group of layers (all of them when M = 1).
  const int stages = rt.mesh().size(MeshDim::pp);
  {
    Allocator scratch;  // not counted against [run] memory_budget
    const Model layout(cfg.model.layers, model_input_shape(rt.mesh(), cfg, index.train), registry, scratch, 0, 1, true,
                       true, tensor_parallel_place(rt.mesh(), cfg, index.train), spatial_place(rt.mesh()));
    groups_ = partition_layers(layer_parameter_counts(layout), stages, cfg.model.groups);  // bad_input if wrong
    const Shape& out = layout.whole_output_shape();
    Shape want = index.train.output_shape();
    // (lm_head with tensor_parallel = T: this rank's block of the vocabulary, layers/lm_head.cpp)
    vocab_parallel_ =
        index.train.tokens && rt.mesh().size(MeshDim::tp) > 1 && layout.all_layer_types().back() == "lm_head";
    const std::int64_t blocks = vocab_parallel_ ? rt.mesh().size(MeshDim::tp) : 1;
    if (index.train.tokens && !want.empty()) {  // a language model's logits: padded to [model] vocab_multiple,
      want.back() = padded_vocab(want.back(), cfg.model.vocab_multiple) / blocks;
      // or more: a model's rows no token uses (Qwen2's 151,936 for 151,665 tokens); fewer only for
      // arch = llama or gpt, whose vocab_size with_architecture checked against the ids the data holds
      const std::int64_t least = cfg.model.arch == Arch::layers ? index.train.num_classes : index.train.id_limit();
      if (out.size() == want.size() && out.back() * blocks >= least) want.back() = out.back();
    }
    if (out != want)
      throw bad_input("[model] layers: the last layer outputs " + shape_string(out) + " but the data needs " +
                      shape_string(want) + " (" +
                      (index.train.tokens           ? "positions x vocabulary"
                       : index.train.classification ? "classes"
                                                    : "targets") +
                      ")");
  }
  const LayerGroup& mine = groups_[static_cast<std::size_t>(rt.mesh().coord(MeshDim::pp))];
  const int dp = rt.mesh().size(MeshDim::dp);
  model_ = std::make_unique<Model>(cfg.model.layers, model_input_shape(rt.mesh(), cfg, index.train), registry, alloc_,
                                   mine.first, mine.last, purpose == Purpose::training && !staged_gradients(cfg, dp),
                                   !packed_parameters(cfg, dp), tensor_parallel_place(rt.mesh(), cfg, index.train),
                                   spatial_place(rt.mesh()));
  // Weights tied across stages: the two stages holding them sum their gradients over a communicator
  // of their own (the stages between them take no part).
  for (const auto& [layer, target] : model_->ties()) {
    const int a = stage_of_layer(groups_, layer), b = stage_of_layer(groups_, target);
    if (a == b) continue;
    const ParamInfo& weight = model_->tied_weight(target);
    TieSync sync;
    sync.comm = rt.make_communicator(MeshDim::pp, {a, b}, MemorySpace::host, ".tie:" + weight.name);
    sync.count = numel(weight.shape);
    for (const ParamInfo& p : model_->param_info())
      if (p.name == weight.name) sync.here = {p.offset, p.offset + sync.count};  // the embedding, or the head's copy
    if (sync.comm) sync.host.resize(static_cast<std::size_t>(sync.count));
    tie_syncs_.push_back(std::move(sync));
  }
  loss_ = training_loss(cfg.train, index.train.classification);
  apply_train_options(*model_, cfg.train);
  if (purpose == Purpose::generation) model_->set_one_output_position();  // (lm_head: the last position's logits)
  scalars_ = step_scalars::make(alloc_);
  step_key_ = Tensor::zeros({2}, alloc_);
  eval_scalars_ = step_scalars::make(alloc_);
  doc_separator_ = document_separator();
  parallelize(gpu, stages);
  if (purpose == Purpose::training) {
    memory_ = estimate_memory(cfg, rt, *model_, false);
  } else {  // (what this rank holds: Purpose; its blocks keep nothing, as with recompute = blocks)
    Config held = cfg;
    held.train.recompute = Recompute::blocks;
    memory_ = estimate_memory(held, rt, *model_, false);
    memory_.state = 0;
    memory_.copy16 = 0;  // (forward-only: the parameters are rounded in place, Model::set_precision)
    memory_.act.gradients = 0;
    memory_.act.cache = 0;  // (generation: generate() checks the rows and caches it runs side by side)
    memory_.inference = true;
    if (!model_->store().staged()) memory_.gradients = 0;
  }
  if (purpose != Purpose::generation)  // (generate() checks for the rows it runs: --samples)
    raise_if_any(rt.world(), memory_refusal(memory_, static_cast<double>(alloc_.in_use()), cfg, rt));
}

void apply_train_options(Model& model, const TrainConfig& train) {
  model.set_frozen(frozen_layers(train.freeze, model));
  model.set_loss_chunk(train.loss_chunk);
}

Trainer::~Trainer() {
  if (std::uncaught_exceptions() == 0) settle_parameters();  // (leaving on an error: the communicator drops it)
  eval_readers_.clear();  // their node caches are MPI windows: free them before the communicator
  if (model_) model_->set_parameter_source(nullptr);
  windows_.reset();
  averager_.reset();
  comm_.reset();
  host_comm_.reset();
}

void Trainer::train_step(const Batch& batch, float lr) {
  const int k = cfg_.train.micro_batches;
  const std::int64_t rows = batch.size / k;
  // The mean over this rank's batch; with fp16, times the loss scale (undone before the update).
  // (Token windows: the mean over every position of the batch.)
  const std::int64_t per_sample = index_.train.loss_rows();
  // (reproducible: every chunk's share of the global batch, whichever rank holds it; summed, not averaged)
  const std::int64_t divisor = repro_ ? cfg_.train.global_batch : batch.size;
  const float grad_scale = static_cast<float>(state_.scaler.scale) / static_cast<float>(divisor * per_sample);
  model_->set_batch(rows);
  begin_guarded_step();
  Tensor lr_slot = step_scalars::slot(scalars_, step_scalars::learning_rate);
  fill(lr_slot, lr);  // written into device memory; the optimizer reads it there
  Shape sh{rows};     // (with spatial_parallel: this rank's depth slab of each)
  const Shape sample = slab_shape(index_.train.sample_shape, rt_.mesh().size(MeshDim::sp));
  sh.insert(sh.end(), sample.begin(), sample.end());
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
    mb.input = staged_.input(m * rows, sh);
    if (staged_.classes()) mb.targets.classes = staged_.classes() + m * rows * per_sample;
    if (staged_.targets()) mb.targets.values = staged_.targets() + m * rows * index_.train.label_width;
    StepContext& ctx = model_->context();
    ctx.training = true;
    ctx.stats_comm = cfg_.train.sync_batchnorm ? &host_dp() : nullptr;
    ctx.chunk_statistics = repro_ != nullptr;
    ctx.seed = cfg_.run.seed;
    ctx.step = step_id;
    ctx.sample_ids = staged_.indices() + m * rows;
    ctx.step_key = reinterpret_cast<const std::uint64_t*>(step_key_.data());
    mark_documents(mb.input);
    return mb;
  };
  StepHooks hooks;
  hooks.prepare = prepare;
  // A sharded optimizer's all-gather of the last update, overlapped: each layer waits for its parameters.
  hooks.acquire = [&](std::size_t layer) {
    if (averager_->gathering()) comm_wait_s_ += averager_->wait_gathered(model_->store().layer(layer).end);
  };
  hooks.forward_done = [&] { settle_parameters(); };  // (every bucket is below some layer's parameters)
  // Each bucket's average starts as soon as the last backward has finished its layers.
  hooks.layer_done = [&](std::size_t layer) { averager_->layer_done(layer); };
  hooks.every_backward = averager_->staged();                 // (ZeRO-2 reduces each micro-batch's gradients)
  hooks.dropped_recordings = [&] { update_graph_.reset(); };  // (it may use the scratch area that moved)
  if (repro_) {  // (no bucket averages: the chunks' sums are exact, taken at the step's end)
    const ParamStore& store = model_->store();
    hooks.every_backward = store.staged();  // (staged: each bucket's gradient as its backward finishes it)
    hooks.layer_done = {};
    if (store.staged())
      hooks.layer_done = [&](std::size_t layer) {
        for (std::size_t b = 0; b < store.staged_buckets().size(); ++b) {
          const Bucket& bucket = store.staged_buckets()[b];
          if (bucket.ready_after == layer)
            repro_->add_gradient(store.bucket_buffer(b).view(0, {bucket.size()}), bucket.begin);
        }
      };
    hooks.chunk_done = [&](int) {
      if (!store.staged()) repro_->add_gradient(model_->gradients());
      repro_->add_chunk(scalars_);
    };
  }
  executor_->train(k, rows, grad_scale, scalars_, hooks);
  if (repro_) model_->finish_statistics(host_dp());  // (batch norm's running statistics, from every chunk's)
  finish_step();
}

void Trainer::finish_step() {
  double squares = 0;
  if (!finish_gradients(squares)) return;  // an fp16 overflow: the update is skipped on every rank
  const bool injected = inject_nan();      // (tests: Faults::nan)
  const bool have_squares = (cfg_.precision.dtype == Precision::fp16 || cfg_.optim.clip_norm > 0) && !injected;
  if (guard_ && !keep_step(squares, have_squares)) return;  // (a non-finite or spiking step: dropped everywhere)
  if (cfg_.optim.clip_norm > 0) clip_by_global_norm(model_->gradients(), cfg_.optim.clip_norm, squares);
  update_(++state_.optimizer_steps);
  after_update_();
}

bool Trainer::finish_gradients(double& squares) {
  if (repro_) {  // (its sums wait at the step's end: all of that time is exposed)
    const auto t0 = std::chrono::steady_clock::now();
    finish_reproducible_gradients();
    comm_wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } else
    comm_wait_s_ += averager_->finish();
  if (windows_) comm_wait_s_ += windows_->take_wait_seconds();  // (shard = full: the step's parameter gathers)
  if (!partial_grads_.empty()) sum_partial_gradients();
  last_step_skipped_ = false;
  Tensor& grads = model_->gradients();
  const bool fp16 = cfg_.precision.dtype == Precision::fp16, clip = cfg_.optim.clip_norm > 0;
  // One pass over the gradients serves both the overflow check and the clipping norm.
  squares = !(fp16 || clip) ? 0 : repro_ ? layerwise_sum_of_squares(repro_whole_) : owned_sum_of_squares();
  if (fp16) {
    // An overflow on any stage or replica skips the update everywhere, so the ranks stay identical.
    int bad = std::isfinite(squares) ? 0 : 1;
    rt_.world().allreduce(&bad, &bad, 1, DType::i32, ReduceOp::max);
    if (bad) {
      state_.scaler.overflow();
      last_step_skipped_ = true;
      return false;
    }
    const double s = state_.scaler.scale;
    scale(grads, static_cast<float>(1.0 / s));  // a power of two: exact
    squares /= s * s;
    state_.scaler.good_step(cfg_.precision.loss_scale_window);
  }
  if (!tie_syncs_.empty()) sum_tied_gradients(clip ? &squares : nullptr);
  // Over the tensor-parallel group: its split tensors' blocks, and its replicated ones once (squares_in).
  if (clip && tp_host_) tp_host_->allreduce(&squares, &squares, 1, DType::f64, ReduceOp::sum);
  // The global norm covers every stage's gradients (identical over a data-parallel group after averaging).
  if (clip && !repro_) executor_->sum_over_stages(&squares, 1);
  return true;
}

void Trainer::settle_parameters() {
  if (averager_ && averager_->gathering()) comm_wait_s_ += averager_->wait_gathered();
}

double Trainer::owned_sum_of_squares() {
  Tensor& grads = model_->gradients();
  // (reproducible: every rank holds the whole summed gradient, summed in one order, but for staged
  // gradients' packed share: the logged norm's sum over the group is the default's)
  if (!averager_->sharded() || (repro_ && !averager_->staged()))
    return squares_in(grads, {{0, model_->store().size()}}, false);
  // The averaged gradients this rank owns, summed over the group: the whole (staged: the gradient
  // holds just those, packed).
  double s = squares_in(grads, averager_->owned(), averager_->staged());
  host_dp().allreduce(&s, &s, 1, DType::f64, ReduceOp::sum);
  return s;
}

// (reproducible) The step's gradient into the model's (staged: its owned ranges, packed), and
// the whole gradient kept in repro_whole_ for the norm.
void Trainer::finish_reproducible_gradients() {
  Tensor& grads = model_->gradients();
  if (!model_->store().staged()) {
    repro_->finish_step(grads);
    repro_whole_ = grads;
    return;
  }
  repro_whole_ = repro_->finish_step_gathered();
  std::int64_t at = 0;
  for (const Range& r : averager_->owned()) {
    Tensor packed = grads.view(at, {r.size()});
    copy(repro_whole_.view(r.begin, {r.size()}), packed);
    at += r.size();
  }
}

// (reproducible) Every layer's sum of squares, summed over the stages (each layer's slot is
// non-zero on one stage only: exact), then added in the model's layer order: the same bits
// however the layers are split into stages.
double Trainer::layerwise_sum_of_squares(const Tensor& grads) {
  std::vector<double> layers(model_->all_layer_names().size(), 0.0);
  for (std::size_t i = 0; i < model_->layers(); ++i) {
    const Range r = model_->store().layer(i);
    if (r.size() > 0) layers[model_->first_layer() + i] = sum_of_squares(grads.view(r.begin, {r.size()}));
  }
  executor_->sum_over_stages(layers.data(), layers.size());
  double s = 0;
  for (double v : layers) s += v;
  return s;
}

double Trainer::squares_in(const Tensor& grads, const Ranges& ranges, bool packed) const {
  const Ranges& split = tp_split_;
  const double t = static_cast<double>(model_->tensor_parallel().size);
  double s = 0;
  std::int64_t at = 0;
  for (const Range& r : ranges) {
    const std::int64_t base = packed ? at - r.begin : 0;  // where store offset o is in `grads`: o + base
    auto add = [&](const Ranges& parts, double weight) {
      for (const Range& q : parts) s += sum_of_squares(grads.view(q.begin + base, {q.size()})) * weight;
    };
    add(intersect({r}, split), 1.0);
    add(subtract({r}, split), 1.0 / t);  // (each tensor-parallel rank holds them whole; all of r when t = 1)
    at += r.size();
  }
  return s;
}

void Trainer::sum_partial_gradients() {
  Tensor& grads = model_->gradients();
  std::int64_t at = 0;
  for (const auto& [offset, count] : partial_grads_) {
    Tensor part = partial_buf_.view(at, {count});
    copy(grads.view(offset, {count}), part);
    at += count;
  }
  partial_group_->allreduce(partial_buf_.data(), partial_buf_.data(), static_cast<std::size_t>(at), DType::f32,
                            ReduceOp::sum);
  at = 0;
  for (const auto& [offset, count] : partial_grads_) {
    Tensor part = grads.view(offset, {count});
    copy(partial_buf_.view(at, {count}), part);
    at += count;
  }
}

void Trainer::sum_tied_gradients(double* squares) {
  Tensor& grads = model_->gradients();
  for (TieSync& t : tie_syncs_) {
    if (!t.comm) continue;  // (a stage holding neither use)
    std::vector<float>& host = t.host;
    download(grads.view(t.here.begin, {t.count}), host.data(), host.size() * sizeof(float));
    t.comm->allreduce(host.data(), host.data(), host.size(), DType::f32, ReduceOp::sum);
    Tensor part = grads.view(t.here.begin, {t.count});
    upload(host.data(), host.size() * sizeof(float), part);
  }
  if (!squares) return;
  // The summed tied gradients, counted once over the stages:
  *squares = squares_in(grads, subtract({{0, model_->store().size()}}, model_->store().copies()), false);
}

IntervalSums Trainer::take_interval_sums() {
  if (repro_) {  // (the group's, exactly; with pipeline stages the last one's, the others adding zeros)
    IntervalSums sums = repro_->take_interval();
    double v[3] = {sums.loss, sums.correct, sums.samples};
    executor_->sum_over_stages(v, 3);
    return {v[0], v[1], v[2]};
  }
  const IntervalSums sums = peek_interval_sums();  // the only read of the step scalars: at log intervals
  Tensor interval = scalars_.view(0, {3});
  fill(interval, 0.f);
  return sums;
}

IntervalSums Trainer::peek_interval_sums() const {
  if (repro_) return repro_->interval(false);
  const auto h = step_scalars::to_host(scalars_);
  return {h[step_scalars::loss_sum], h[step_scalars::correct], h[step_scalars::samples]};
}

void Trainer::set_interval_sums(const IntervalSums& sums) {
  if (repro_) return repro_->set_interval(sums);
  for (const auto& [slot, v] :
       {std::pair{step_scalars::loss_sum, sums.loss}, std::pair{step_scalars::correct, sums.correct},
        std::pair{step_scalars::samples, sums.samples}}) {
    Tensor t = step_scalars::slot(scalars_, slot);
    fill(t, static_cast<float>(v));
  }
}

}  // namespace hpctrain
