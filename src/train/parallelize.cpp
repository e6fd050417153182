// The strategy, composed once (train/trainer.hpp): what the step, the evaluation and the
// checkpoints then use without asking how the run is laid out.
#include <algorithm>

#include "hpctrain/core/error.hpp"
#include "hpctrain/parallel/grad_buckets.hpp"
#include "hpctrain/parallel/param_windows.hpp"
#include "hpctrain/parallel/step_executor.hpp"
#include "hpctrain/train/trainer.hpp"

namespace hpctrain {

// The communicators over the mesh, the step executor, the parameters initialized and made
// identical over the replicas, the gradient averager, the optimizer over what this rank updates
// and the update (compose_update). `stages`: the pipeline's.
void Trainer::parallelize(bool gpu, int stages) {
  // Gradients live on the device: NCCL, or MPI (CUDA-aware or staged through host memory).
  comm_ = rt_.make_communicator(MeshDim::dp, gpu ? MemorySpace::device : MemorySpace::host);
  // Small host-side reductions (batch norm statistics, metrics, checks) over the same group.
  if (gpu) host_comm_ = rt_.make_communicator(MeshDim::dp, MemorySpace::host, "/host");
  // Activations between stages go through host buffers (pipeline.cpp stages them): MPI on the host.
  if (stages > 1) pp_comm_ = rt_.make_communicator(MeshDim::pp, MemorySpace::host);
  if (rt_.mesh().size(MeshDim::tp) > 1) {  // the split layers' sums, and the clipping norm's
    tp_comm_ = rt_.make_communicator(MeshDim::tp, gpu ? MemorySpace::device : MemorySpace::host);
    if (gpu) tp_host_comm_ = rt_.make_communicator(MeshDim::tp, MemorySpace::host, "/host");
    tp_host_ = tp_host_comm_ ? tp_host_comm_.get() : tp_comm_.get();
    model_->set_tensor_parallel_comm(tp_comm_.get());
    if (vocab_parallel_)  // (the logits of this rank's block of the vocabulary)
      loss_ = make_vocab_parallel_loss(*tp_comm_, rt_.mesh().coord(MeshDim::tp) * model_->whole_output_shape().back());
    for (const ParamInfo& p : model_->param_info())
      if (tp_sharded(p)) tp_split_.push_back({p.offset, p.offset + numel(p.shape)});
    refuse_tensor_parallel_combinations();
  }
  if (rt_.mesh().size(MeshDim::sp) > 1) {  // the halo exchanges and gathers of the slab layers
    refuse_spatial_combinations();
    sp_comm_ = rt_.make_communicator(MeshDim::sp, gpu ? MemorySpace::device : MemorySpace::host);
    model_->set_spatial_comm(sp_comm_.get());
  }
  executor_ = make_step_executor(cfg_, *model_, *loss_, pp_comm_.get(), staged_, alloc_);
  refuse_sharding_combinations();
  const bool sharded = cfg_.parallel.shard != Sharding::none;
  const auto bucket_elems = static_cast<std::int64_t>(cfg_.parallel.bucket_mb * (1 << 20) / sizeof(float));
  auto buckets = model_->store().buckets(std::max<std::int64_t>(1, bucket_elems));
  // (inference: no backward, so no gradients between layers, and each residual block's inner
  // tensors go once the block has run; bf16/fp16 parameters rounded in place: before set_precision)
  model_->set_forward_only(purpose_ != Purpose::training);
  model_->set_recompute_blocks(cfg_.train.recompute == Recompute::blocks || purpose_ != Purpose::training);
  place_parameters(buckets, gpu);
  model_->set_fusion(cfg_.kernels.fusion);
  const auto& types = model_->all_layer_types();
  if (cfg_.train.recompute == Recompute::blocks && std::find(types.begin(), types.end(), "res") == types.end())
    throw bad_input(
        "[train] recompute = blocks: [model] layers has no residual block (res(...)) to re-run in "
        "backward; set recompute = none");
  if (cfg_.precision.dtype == Precision::fp16) state_.scaler.scale = cfg_.precision.loss_scale;
  // Whole-tensor ownership: the store's policy, the same on every rank of the group.
  std::vector<std::pair<Range, int>> owners;
  if (sharded && cfg_.parallel.shard_by == ShardBy::tensors)
    owners = model_->store().tensor_owners(buckets, comm_->size());
  averager_ = std::make_unique<GradientAverager>(*comm_, model_->gradients(), std::move(buckets), sharded,
                                                 std::move(owners), &model_->store());
  // The all-gather after a sharded update overlaps the next forward where that forward can wait
  // per layer: one stage (a pipeline's stages run forwards of their own), float32 (no rounded copy
  // to refresh), no CUDA graph (a recorded step cannot wait). auto: on GPUs (the collective runs
  // beside the kernels), not on a CPU (it took cores from the forward: 5% slower, docs/parallelism.md).
  const Tristate overlap = cfg_.parallel.gather_overlap;
  overlap_gather_ = averager_->sharded() && !windows_ &&
                    (overlap == Tristate::on || (overlap == Tristate::auto_ && gpu)) && stages == 1 &&
                    cfg_.precision.dtype == Precision::fp32 && !cfg_.kernels.cuda_graphs;
  if (model_->tensor_parallel().sequence > 0 && tp_comm_)  // the replicated tensors' gradients
    partial_gradients_over(tp_comm_.get(), subtract({{0, model_->store().size()}}, tp_split_));
  if (sp_comm_) partial_gradients_over(sp_comm_.get(), model_->slab_parameter_ranges());
  if (cfg_.run.reproducible == Reproducible::layout && purpose_ == Purpose::training) {
    refuse_reproducible_combinations();
    repro_ = std::make_unique<ReproducibleSums>(*comm_, model_->store().size(), alloc_);
  }
  make_optimizer_for_this_rank();
  compose_update();
  // Steps whose loss or gradient is not finite, or whose loss spikes: judged every step, alike everywhere.
  if (cfg_.train.on_nonfinite == OnNonfinite::skip || cfg_.train.spike_factor > 0)
    guard_ = std::make_unique<LossGuard>(cfg_.train, state_.guard);
}

void Trainer::partial_gradients_over(Communicator* group, const Ranges& ranges) {
  std::int64_t at = 0, count = 0;
  for (const Range& r : averager_->owned()) {  // (staged: the owned ranges lie one after another)
    for (const Range& q : intersect({r}, ranges)) {
      partial_grads_.push_back({averager_->staged() ? at + (q.begin - r.begin) : q.begin, q.size()});
      count += q.size();
    }
    at += r.size();
  }
  partial_group_ = group;
  partial_buf_ = Tensor::zeros({std::max<std::int64_t>(count, 1)}, alloc_);
}

void Trainer::refuse_spatial_combinations() const {
  const Mesh& mesh = rt_.mesh();
  const std::string key = "[parallel] spatial_parallel = " + std::to_string(mesh.size(MeshDim::sp));
  const char* why = mesh.size(MeshDim::pp) > 1   ? " does not work with pipeline_parallel > 1 yet"
                    : mesh.size(MeshDim::tp) > 1 ? " does not work with tensor_parallel > 1"
                    : cfg_.run.reproducible == Reproducible::layout
                        ? " does not work with [run] reproducible = layout (its halo sums are not exact)"
                    : cfg_.kernels.cuda_graphs ? " does not work with [kernels] cuda_graphs"
                                               : nullptr;
  if (why) throw bad_input(key + why);
}

void Trainer::refuse_reproducible_combinations() const {
  const std::string key = "[run] reproducible = layout";
  const char* why = cfg_.train.micro_batch == 0
                        ? ": set [train] micro_batch, the chunk whose gradient is computed alone (global_batch must be "
                          "a multiple of it times every data-parallel size you use)"
                    : rt_.mesh().size(MeshDim::tp) > 1
                        ? " does not work with tensor_parallel > 1 (its split GEMMs sum in another order than one "
                          "rank's)"
                    : cfg_.train.sync_batchnorm && !model_->all_buffers().empty()  // (running statistics: batch norm)
                        ? " does not work with [train] sync_batchnorm (batch norm's statistics would span the chunks "
                          "the ranks run at once, which the layout changes); set it to false: each chunk's are used, "
                          "and the running statistics are the same on every rank"
                        : cfg_.kernels.cuda_graphs ? " does not work with [kernels] cuda_graphs"
                          : gpu()                  ? " is checked on the CPU only so far; run it with device = cpu"
                                                   : nullptr;
  if (why) throw bad_input(key + why);
  if (!tie_syncs_.empty())  // (one stage adds both uses' gradients per chunk; two stages after the step's sums)
    throw bad_input(key + ": weights tied across pipeline stages (" +
                    model_->all_layer_names()[model_->ties().front().second] +
                    ") sum in another order than on one stage; set [model] tie_embeddings = false or keep the "
                    "tied layers on one stage ([model] groups)");
}

bool staged_gradients(const Config& cfg, int dp_size) {
  return (cfg.parallel.shard == Sharding::gradients || cfg.parallel.shard == Sharding::full) && dp_size > 1;
}

bool packed_parameters(const Config& cfg, int dp_size) { return cfg.parallel.shard == Sharding::full && dp_size > 1; }

// Where the parameters and gradients live (ZeRO-2: the gradients staged; ZeRO-3: the parameters
// packed too, gathered into windows), and their initial values: made from the seed, then made
// identical over the replicas (broadcast from rank 0 and verified), or each rank's own share.
void Trainer::place_parameters(const std::vector<Bucket>& buckets, bool gpu) {
  const int d = comm_->size();
  if (staged_gradients(cfg_, d)) model_->stage_gradients(buckets, ParamStore::owned(buckets, d, comm_->rank()));
  const bool packed = packed_parameters(cfg_, d);
  if (packed) {
    model_->stage_parameters(buckets);
    const Tristate prefetch = cfg_.parallel.gather_overlap;
    windows_ = std::make_unique<ParameterWindows>(*comm_, model_->store(),
                                                  prefetch == Tristate::on || (prefetch == Tristate::auto_ && gpu),
                                                  cfg_.precision.dtype);
    model_->set_parameter_source(windows_.get());
  }
  if (purpose_ != Purpose::training) {  // (the checkpoint's values replace them: Checkpointer::load)
    model_->set_precision(cfg_.precision.dtype);
    return;
  }
  model_->init_parameters(cfg_.run.seed);
  if (!packed) {
    comm_->broadcast(model_->parameters().data(), static_cast<std::size_t>(model_->parameters().numel()), DType::f32,
                     0);
    // The hash of every parameter, then two allreduces: nothing to compare on one rank.
    if (host_dp().size() > 1) verify_identical(host_dp(), model_->parameters(), "initial parameters");
  }
  model_->set_precision(cfg_.precision.dtype);  // bf16/fp16: the layers compute with a rounded copy
}

void Trainer::refuse_sharding_combinations() const {
  const Sharding shard = cfg_.parallel.shard;
  if (shard == Sharding::none) return;
  const std::string key = std::string("[parallel] shard = ") + name_of(shard);
  if (!tie_syncs_.empty())
    throw bad_input(key + ": weights tied across pipeline stages (" +
                    model_->all_layer_names()[model_->ties().front().second] +
                    ") are not supported with sharding yet; set shard = none or keep the tied layers on one stage "
                    "([model] groups)");
  if (shard == Sharding::optimizer) return;
  if (shard == Sharding::full && cfg_.run.check_replicas_every > 0 && packed_parameters(cfg_, comm_->size()))
    throw bad_input(key +
                    " keeps each parameter on one rank: nothing is replicated for [run] check_replicas_every to "
                    "compare; set shard = gradients (parameters replicated, gradients and state sharded) or "
                    "check_replicas_every = 0");
  if (cfg_.parallel.shard_by == ShardBy::tensors || cfg_.optim.name == OptimizerName::muon)
    throw bad_input(key +
                    " shards gradients by equal blocks of each bucket: shard_by = tensors (and [optim] name = "
                    "muon, which needs it) work with shard = optimizer only");
  if (cfg_.kernels.cuda_graphs)
    throw bad_input(key +
                    ": [kernels] cuda_graphs cannot record a step whose gradients are reduced after every "
                    "micro-batch; set cuda_graphs = false or shard = optimizer");
}

void Trainer::refuse_tensor_parallel_combinations() const {
  const std::string key = "[parallel] tensor_parallel = " + std::to_string(cfg_.parallel.tensor_parallel);
  if (cfg_.optim.name == OptimizerName::muon)
    throw bad_input(key +
                    ": [optim] name = muon orthogonalizes whole matrices, which tensor parallelism splits; "
                    "use adamw or tensor_parallel = 1");
  if (cfg_.kernels.cuda_graphs)
    throw bad_input(key + ": [kernels] cuda_graphs cannot record the tensor-parallel sums yet; set it to false");
  if (tp_split_.empty())
    throw bad_input(key +
                    ": no layer of [model] layers splits (attention, or linear(n, tp=column|row)); every "
                    "rank would compute the same: set tensor_parallel = 1");
}

void Trainer::make_optimizer_for_this_rank() {
  if (purpose_ != Purpose::training) {  // no update: an optimizer of nothing, without state
    OptimConfig none = cfg_.optim;
    none.name = OptimizerName::sgd;  // (Muon's maker wants its matrices)
    opt_ = make_optimizer(none, model_->parameters(), model_->gradients(), model_->store().allocate_state(0, alloc_),
                          {}, 0, {model_->store().staged(), model_->store().packed_parameters()});
    return;
  }
  if (cfg_.optim.name == OptimizerName::muon) return make_muon_for_this_rank();
  std::vector<std::pair<std::int64_t, Shape>> tensors;
  for (const ParamInfo& p : model_->param_info()) tensors.emplace_back(p.offset, p.shape);
  // What this rank updates, with state for just that: its shard, or every bucket; frozen layers
  // ([train] freeze) are in no bucket, so they are neither updated nor given state.
  std::int64_t state_elems = 0;
  std::vector<DecayRun> runs = own_runs(decay_runs(tensors, model_->store().size(), cfg_.optim.weight_decay_1d),
                                        averager_->owned(), state_elems);
  Tensor& state = model_->store().allocate_state(state_blocks(cfg_.optim) * state_elems, alloc_);
  opt_ = make_optimizer(cfg_.optim, model_->parameters(), model_->gradients(), state, std::move(runs), state_elems,
                        {model_->store().staged(), model_->store().packed_parameters()});
}

// Muon: the whole matrices this rank owns (all of them without sharding; with shard = optimizer and
// shard_by = tensors each rank orthogonalizes the whole matrices it owns, and the all-gather brings
// the others), the state laid out like the parameters; frozen layers (in no bucket: not owned)
// neither updated nor given state.
void Trainer::make_muon_for_this_rank() {
  if (averager_->sharded() && cfg_.parallel.shard_by != ShardBy::tensors)
    throw bad_input(
        "[optim] name = muon with [parallel] shard = optimizer needs shard_by = tensors (Newton-Schulz "
        "orthogonalizes whole matrices; shard_by = elements cuts them between ranks)");
  if (cfg_.kernels.cuda_graphs)
    throw bad_input(
        "[optim] name = muon: [kernels] cuda_graphs is not supported with Muon (its update reads each "
        "matrix's norm on the host); set it to false");
  const auto& types = model_->all_layer_types();
  std::vector<ParamTensor> tensors;
  for (const ParamInfo& p : model_->param_info()) tensors.push_back({p.offset, p.shape, types[p.layer], p.name});
  std::vector<MuonMatrix> matrices, kept;
  std::vector<DecayRun> adam, owned_adam;
  muon_split(tensors, cfg_.optim.weight_decay_1d, matrices, adam);
  const Ranges& owned = averager_->owned();
  auto inside = [&](std::int64_t b, std::int64_t e) {
    return std::any_of(owned.begin(), owned.end(), [&](const Range& o) { return o.begin <= b && e <= o.end; });
  };
  for (const MuonMatrix& m : matrices)
    if (inside(m.offset, m.offset + m.rows * m.cols)) kept.push_back(m);
  for (const DecayRun& r : adam)
    for (const Range& o : owned)
      if (std::max(o.begin, r.begin) < std::min(o.end, r.end))
        owned_adam.push_back({{std::max(o.begin, r.begin), std::min(o.end, r.end)}, r.decay});
  Tensor& state = model_->store().allocate_state(2 * model_->parameters().numel(), alloc_);
  opt_ =
      make_muon(cfg_.optim, model_->parameters(), model_->gradients(), state, std::move(owned_adam), std::move(kept));
}

void Trainer::compose_update() {
  const bool sharded = averager_->sharded();
  if (cfg_.kernels.cuda_graphs)
    update_ = [this, sharded](std::int64_t t) {
      opt_->begin_step(scalars_, t);  // host bookkeeping (Adam's step count) outside the recording
      run_recorded(update_graph_, [&] {
        opt_->update(scalars_);
        if (!sharded) model_->refresh_compute_parameters();  // (a sharded update's all-gather runs outside it)
      });
    };
  else
    update_ = [this](std::int64_t t) { opt_->step(scalars_, t); };
  if (!sharded && cfg_.kernels.cuda_graphs)
    after_update_ = [] {};  // (refreshed inside the recording)
  else if (windows_)        // (shard = full: the windows are stale; the next layers gather what they need)
    after_update_ = [this] { model_->refresh_compute_parameters(); };
  else if (!sharded)
    after_update_ = [this] { model_->refresh_compute_parameters(); };
  else if (overlap_gather_)  // the next forward waits for each layer's parameters (float32: no copy to refresh)
    after_update_ = [this] { averager_->start_gather(model_->parameters()); };
  else
    after_update_ = [this] {
      comm_wait_s_ += averager_->gather_parameters(model_->parameters());
      model_->refresh_compute_parameters();
    };
}

}  // namespace hpctrain
