// Optimizers over the flat parameter and gradient buffers, and the learning
// rate schedule (linear warm-up, then constant, step or cosine decay).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hpctrain/config/config.hpp"
#include "hpctrain/core/range.hpp"
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

// A stretch [begin, end) of the flat buffers and whether weight decay applies to it.
// (Frozen layers, [train] freeze, are in no run: the runs a rank updates are cut to the gradient
// buckets it owns, and frozen layers are in no bucket: own_runs.)
// `state_offset`: where the run's optimizer state starts in each state block (-1: at `begin`, the
// state laid out like the parameters; a sharded optimizer packs the runs it owns one after another).
struct DecayRun : Range {
  bool decay = true;
  std::int64_t state_offset = -1;
  std::int64_t state_at() const { return state_offset < 0 ? begin : state_offset; }
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Update number `t` (1-based: TrainState::optimizer_steps after counting it) with the learning
  // rate in the step scalars (tensor/step_scalars.hpp); uses and keeps the gradients. = begin_step
  // (host-side bookkeeping: Adam writes `t` into the scalars for its bias correction) + update
  // (device work only, so a CUDA graph can capture it and replay it). The count lives in the
  // training state, not here: a checkpoint stores it with the rest of the run's progress.
  void step(Tensor& scalars, std::int64_t t) {
    begin_step(scalars, t);
    update(scalars);
  }
  virtual void begin_step(Tensor& /*scalars*/, std::int64_t /*t*/) {}
  virtual void update(Tensor& scalars) = 0;
  // Momentum or Adam's moments: state_names().size() flat blocks of state_elems() each, one after
  // the other; run r's part of block k starts at k * state_elems() + r.state_offset (checkpoints
  // store the whole model's as /optimizer/<name>/...: expand_state / compact_state).
  virtual Tensor& state() = 0;
  virtual std::int64_t state_elems() const = 0;
  virtual const std::vector<DecayRun>& runs() const = 0;
  virtual std::vector<std::string> state_names() const = 0;
  virtual const char* name() const = 0;
};

// The runs of parameters given as (offset, shape) in buffer order, `total` elements in all: with
// decay_1d = false ([optim] weight_decay_1d), tensors of fewer than 2 dimensions (biases, norm
// weights) get none, as nanoGPT does; adjacent tensors of one kind are merged into one run.
std::vector<DecayRun> decay_runs(const std::vector<std::pair<std::int64_t, Shape>>& params, std::int64_t total,
                                 bool decay_1d);

// `runs` cut to the element ranges in `owned` (sorted, disjoint [begin, end)), their state packed
// in that order (state_offset): the runs a rank of a sharded optimizer updates ([parallel]
// shard_optimizer). Returns the runs; `state_elems` gets the packed size.
std::vector<DecayRun> own_runs(const std::vector<DecayRun>& runs, const Ranges& owned, std::int64_t& state_elems);

// How many state blocks the optimizer `cfg` names keeps: 1 (SGD's momentum) or 2 (Adam's moments).
int state_blocks(const OptimConfig& cfg);

// SGD (momentum, Nesterov, weight decay), Adam (L2 decay) or AdamW (decoupled decay) over
// `params` and `grads`, keeping its state in `state` (zeros, from the parameter store: its
// allocate_state), which holds state_blocks(cfg) blocks of `state_elems` each. `runs`: where
// weight decay applies (empty with state_elems = -1: everywhere); each run is updated by one
// operation; only the runs given are updated. `state_elems`: the size of each state block (-1:
// the parameters'; >= 0: the runs' state is packed, and no runs means nothing to update).
// `packed`: which of `grads` and `params` hold only the runs' elements, packed as their state is
// ([parallel] shard = gradients: the gradients, ParamStore::stage_gradients; full: both).
struct Packed {
  bool grads = false, params = false;
};
std::unique_ptr<Optimizer> make_optimizer(const OptimConfig& cfg, Tensor params, Tensor grads, Tensor state,
                                          std::vector<DecayRun> runs = {}, std::int64_t state_elems = -1,
                                          Packed packed = {});

// The optimizer state of the runs `opt` updates, `compact` (its state() on the host), written into
// `full`: state blocks of `n` elements laid out like the parameters (what checkpoints store);
// elements of no run are left alone. compact_state is the reverse.
void expand_state(const Optimizer& opt, const float* compact, float* full, std::int64_t n);
void compact_state(const Optimizer& opt, const float* full, std::int64_t n, float* compact);

// ---- Muon ([optim] name = muon) ----

// A tensor of the model as Muon sorts them: where it is, its shape, its top-level layer's type, its name.
struct ParamTensor {
  std::int64_t offset = 0;
  Shape shape;
  std::string layer_type, name;
};
// A matrix Muon orthogonalizes: rows x cols floats at offset of the flat buffers.
struct MuonMatrix {
  std::int64_t offset = 0, rows = 0, cols = 0;
};
// Muon's matrices: every 2-D weight but the embedding's and the output head's (layer types
// embedding, position_embedding, lm_head), attention's fused q|k|v as its three matrices (the
// queries' C rows, then the keys' and the values' halves of the rest: modded-nanogpt orthogonalizes
// them apart); `adam_runs`: every other tensor, with weight decay as decay_runs gives it.
void muon_split(const std::vector<ParamTensor>& tensors, bool decay_1d, std::vector<MuonMatrix>& matrices,
                std::vector<DecayRun>& adam_runs);
// Muon (Keller Jordan's, as modded-nanogpt: momentum buffer b = mu b + g, the Nesterov step
// u = g + mu b, X = u / ||u||, `ns_steps` quintic Newton-Schulz iterations X = a X + (b A + c A^2) X
// with A = X X^T, (a, b, c) = (3.4445, -4.7750, 2.0315), on the short side of X; then
// w -= muon_lr * (lr now / lr) * sqrt(max(1, rows / cols)) * X) for `matrices`, and AdamW for
// `adam_runs`, in float32 on the parameters' device through the backend's gemm. State: two blocks
// laid out like the parameters (exp_avg holds Muon's momentum on the matrices). Every rank
// updates every matrix (no sharding: [parallel] shard_optimizer is refused).
std::unique_ptr<Optimizer> make_muon(const OptimConfig& cfg, Tensor params, Tensor grads, Tensor state,
                                     std::vector<DecayRun> adam_runs, std::vector<MuonMatrix> matrices);

// Learning rate for optimizer step `step` (0-based) of `total`: linear warm-up over warmup_steps,
// then the schedule (wsd: lr until the last round(decay_fraction x total) steps, which fall
// linearly to min_lr at step total - 1).
double learning_rate(const OptimConfig& cfg, std::int64_t step, std::int64_t total);

// Scales the gradients so their global L2 norm is at most `max_norm`; returns the norm before.
// `squared_norm`: the squared norm when the caller has it (summed over pipeline stages, or
// already computed); negative: computed here from `grads`.
double clip_by_global_norm(Tensor& grads, double max_norm, double squared_norm = -1);

}  // namespace hpctrain
