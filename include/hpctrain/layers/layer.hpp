// The layer interface: per-sample shape inference, parameter specs, forward, and a backward that
// writes the input gradient and ADDS the parameter gradients (so micro-batches accumulate).
// A layer owns nothing of a step: at every call the model hands it its parameters and gradient
// buffers (StepContext::params, views of the parameter store), a saved set for what its backward
// reads (saved, compact_*) and an arena for scratch (temp). docs/contributing.md shows the contract
// with a small layer. One layer per file in src/layers/, registered by register_builtin_layers().
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hpctrain/backend/ops.hpp"  // Activation
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/placement.hpp"
#include "hpctrain/layers/loss.hpp"
#include "hpctrain/layers/saved_set.hpp"
#include "hpctrain/layers/spatial.hpp"
#include "hpctrain/layers/step_arena.hpp"
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

enum class Init { he_normal, xavier_uniform, zeros, ones, normal };

struct ParamSpec {
  ParamSpec(std::string name_, Shape shape_, Init init_ = Init::zeros, std::int64_t fan_in_ = 1,
            std::int64_t fan_out_ = 1)
      : name(std::move(name_)), shape(std::move(shape_)), init(init_), fan_in(fan_in_), fan_out(fan_out_) {}
  std::string name;  // "weight", "bias"
  Shape shape;
  Init init = Init::zeros;
  std::int64_t fan_in = 1, fan_out = 1;
  float std = 0.02f;  // Init::normal: N(0, std^2)
  // Weight tying: the layer type whose "weight" this parameter is (the nearest such layer before
  // this one in the model, e.g. an lm_head's "embedding"); the model then binds that parameter
  // here instead of allocating one, after checking the shapes agree. Empty: a parameter of its own.
  std::string tie;
  // Padding rows ([model] vocab_multiple): rows from live_rows on are zero-initialized and left
  // out of --export. -1: every row is live.
  std::int64_t live_rows = -1;
  // Along the tensor-parallel dimension ([parallel] tensor_parallel): replicated, or sharded (each
  // rank holds one block of `shape`, the global shape; Layer::tensor_parallel says which).
  Placement tp;
};

// This rank's place in its tensor-parallel group ([parallel] tensor_parallel = size): a layer
// that splits its work (linear(n, tp=column|row), attention's heads) holds block `rank` of `size`.
// sequence > 0 ([parallel] sequence_parallel, Megatron's): the model's sequence length T; the
// activations outside the split pairs (from the embedding's output to the lm_head's input) hold
// this rank's block of T/size positions, [rows, T/size, C]: a split pair's first layer
// all-gathers them, its last one reduce-scatters instead of summing, and a replicated parameter's
// gradient is this rank's positions' share (the trainer sums it over the group).
struct TensorParallel {
  int rank = 0, size = 1;
  std::int64_t sequence = 0;
};

// [train] loss_chunk (Model::set_loss_chunk): the loss the model's last layer runs itself, a
// chunk of its output rows at a time, instead of writing its whole output. The step sets it
// before each micro-batch's forward and backward: an evaluation forward adds the loss sums to
// `scalars`; a training backward adds them and takes grad_scale times their gradient. No loss:
// the layer writes its output (generation samples from it: one position, set_one_position).
struct HeadLoss {
  Loss* loss = nullptr;
  Targets targets;  // the whole micro-batch's, one per output row (position)
  float grad_scale = 0.f;
  Tensor* scalars = nullptr;
};

// What a forward pass is part of, for layers that behave differently when
// training or draw random numbers (dropout): the model owns one and points
// every layer at it.
class Communicator;
class Layer;

// One layer call's parameters and the gradient buffers its backward writes, in param_specs()
// order: views of the model's parameter store (in a bf16/fp16 run the forward's parameters are
// the rounded copy), handed over after the store made them complete (Model::forward's acquire).
struct ParamViews {
  std::vector<Tensor> params, grads;
  const Layer* layer = nullptr;  // whose they are (Layer::views checks it)
};

struct StepContext {
  bool training = false;
  // Batch statistics (batch norm) are reduced over this communicator when set:
  // the data-parallel group, when [train] sync_batchnorm is on.
  Communicator* stats_comm = nullptr;
  // [parallel] tensor_parallel > 1: the tensor-parallel group, over which split layers sum their
  // partial outputs (row-parallel) and input gradients (column-parallel). Null: no such group.
  Communicator* tp_comm = nullptr;
  // [parallel] spatial_parallel > 1: the spatial group, over which the layers that see depth slabs
  // exchange halos and gather (layers/spatial.hpp). Null: no such group.
  Communicator* sp_comm = nullptr;
  // A forward pass repeated for a backward ([train] recompute = blocks: a residual block re-runs
  // its inner layers): the same batch again, so batch norm leaves its running statistics alone
  // (dropout draws the same mask: its generator is keyed by step, sample and position).
  bool recompute = false;
  // [run] reproducible = layout: layers with running statistics (batch norm) add each chunk's
  // statistics to exact sums and update them once per step (Layer::finish_statistics).
  bool chunk_statistics = false;
  // [train] recompute = blocks: a residual block keeps its inner layers' outputs and saved tensors
  // here instead of in `saved`, empties it after its forward, and re-runs its inner forwards into
  // it in its backward. Null: recompute = none.
  SavedSet* recompute_set = nullptr;
  std::uint64_t seed = 0;
  std::int64_t step = 0;                     // optimizer step
  const std::int64_t* sample_ids = nullptr;  // dataset index of each row of the batch
  // [model] attention_mask = document: the document number of each position of the batch (int32
  // [rows, T] on the model's device; attention looks only within a document); undefined: causal.
  Tensor doc_ids;
  // Generation with a key/value cache (Model::set_length, train/generation.cpp): >= 0 when the
  // forward runs the positions from decode_position on of a token sequence shorter than the
  // model's (its activations [rows, L, ...], L <= T - decode_position) whose earlier positions
  // the previous forwards ran: attention keeps their keys and values (its cache) and attends over
  // all, position embeddings and RoPE offset by decode_position. -1: the whole sequence.
  std::int64_t decode_position = -1;
  // Generation (Model::set_one_output_position): the one position of each sequence of the run
  // whose output the last layer computes (the context's last token); -1 when not set.
  std::int64_t output_position = -1;
  // splitmix64(step) on the model's device, kept by the trainer so that a recorded step (CUDA
  // graph) reads the current step's value; null: layers derive it from `step` themselves.
  const std::uint64_t* step_key = nullptr;
  // The compute format ([precision] dtype): besides the model's rounding of every layer's output,
  // layers with intermediates that are GEMM operands (attention) round them to it, as cuBLAS
  // takes 16-bit operands, so the CPU and the GPU multiply the same values.
  Precision precision = Precision::fp32;
  // Where this micro-batch's forward keeps what its backward reads (Layer::saved): the model
  // points it at the set of the micro-batch being run.
  SavedSet* saved = nullptr;
  // Scratch for the duration of a layer call (Layer::temp): the model's arena.
  StepArena* arena = nullptr;
  // The parameters of the layer being called: the model (and res, for the layers inside it)
  // points it at that layer's views before every forward and backward.
  ParamViews* params = nullptr;
  HeadLoss head_loss;  // (the model's last layer, with [train] loss_chunk)
};

// What one layer call on a micro-batch takes from the model's allocator besides its output and
// the gradients between layers (Layer::memory; Model::memory_estimate sums it for --dry-run and
// the start-up memory check). Bytes.
struct LayerMemory {
  double saved = 0;    // kept from forward to backward in the micro-batch's saved set
  double scratch = 0;  // the most one call takes from the arena at once (nested inner calls included)
  double inner = 0;    // of `saved`, what [train] recompute = blocks drops (a residual block's inner tensors)
  double cache = 0;    // generation's key/value cache for the rows' sequences, kept across forwards (attention)
};
// The micro-batch Layer::memory is asked about: its rows, the compute format, the device, and
// whether it trains (dropout keeps its mask only then).
struct MemoryQuery {
  std::int64_t rows = 1;
  Precision precision = Precision::fp32;
  Device device = Device::cpu;
  bool training = true;
  // A tensor of `elems` elements kept by compact_out / compact_keep: in 16 bits in a bf16/fp16 run
  // (its float32 copy in the arena during the call), else float32.
  LayerMemory compact(double elems, bool packable = true) const {
    if (precision == Precision::fp32 || !packable) return {4 * elems, 0, 0};
    return {2 * elems, temp(elems), 0};
  }
  // The bytes a float32 temp (Layer::temp) of `elems` elements takes from the arena: rounded up
  // to its alignment (layers/step_arena.hpp).
  static double temp(double elems) {
    return 4 * static_cast<double>(StepArena::aligned(static_cast<std::int64_t>(elems)));
  }
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual const char* type() const = 0;
  // Output shape for a per-sample input shape; throws bad_input when the input does not fit.
  virtual Shape output_shape(const Shape& in) const = 0;
  virtual std::vector<ParamSpec> param_specs(const Shape& /*in*/) const { return {}; }
  // Called once with the per-sample input shape before forward (layers that need it keep it).
  virtual void configure(const Shape& /*in*/) {}
  // Non-trainable state kept with the model (batch norm's running statistics), by name.
  virtual std::vector<std::pair<std::string, std::vector<float>*>> buffers() { return {}; }
  // The name a parameter or buffer of this layer had in format-1 checkpoints (positional names,
  // "qkv_weight" for "qkv.weight"), so that they still load (io/checkpoint_file.hpp).
  virtual std::string legacy_name(const std::string& tensor) const;
  // Layers that keep a device copy of their buffers (batch norm on a GPU): copy it into the
  // host vectors above (to_host), or note that the host vectors changed (a checkpoint loaded).
  virtual void sync_buffers(bool /*to_host*/) {}
  // StepContext::chunk_statistics: the running statistics updated once, from the step's chunks'
  // statistics summed exactly over `group` (the data-parallel group: the same on every rank).
  virtual void finish_statistics(Communicator& /*group*/) {}
  // Outside a model (unit tests): the parameters and gradient buffers every call uses when no
  // context hands any. Inside a model the layer keeps no views: StepContext::params.
  void bind(std::vector<Tensor> params, std::vector<Tensor> grads) {
    own_views_ = {std::move(params), std::move(grads), this};
  }
  // x: [batch, in...], y: [batch, out...] (both allocated by the model).
  virtual void forward(const Tensor& x, Tensor& y) = 0;
  // The element-wise function of an activation layer (relu, tanh, gelu); none for other layers.
  virtual std::optional<Activation> activation() const { return std::nullopt; }
  // Whether forward_fused works for a following activation layer of function f: the model then
  // runs both in one pass (dense: the bias add and the activation in one kernel; conv on oneDNN:
  // ReLU as a post-op of the convolution).
  virtual bool fuses_activation(Activation /*f*/) const { return false; }
  // z = f(forward(x)) for the activation layer that follows; y = forward(x) as well, except where
  // the activation's backward does not read it (ReLU's reads its output: conv writes z only).
  virtual void forward_fused(const Tensor& /*x*/, Tensor& /*y*/, Activation /*f*/, Tensor& /*z*/) {}
  // dx is undefined (!dx.defined()) for the first layer: nothing needs it, skip computing it.
  // Parameter gradients are added to the gradient buffers, or overwrite them when
  // accumulate_grads() is false (the step's first micro-batch: no zero-filling pass needed).
  virtual void backward(const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx) = 0;
  void set_accumulate_grads(bool on) { accumulate_ = on; }
  // Before output_shape and param_specs (the model calls it): the block of the work this rank
  // does when the layer splits it over the tensor-parallel group; layers that do not stay whole.
  virtual void set_tensor_parallel(TensorParallel tp) { tp_ = tp; }
  // Whether the layer works with [parallel] sequence_parallel: its output at a position reads only
  // that position's input (norms, activations, dropout), or it gathers and scatters the positions
  // itself (the split pairs, attention, the embeddings, lm_head); the model refuses the others.
  virtual bool takes_position_blocks() const { return false; }
  // [parallel] spatial_parallel (layers/spatial.hpp): what the layer does with `slab`, this rank's
  // depth slab of a volume ([C, D/S, H, W]; `size` slabs); the model refuses a slab input to a
  // layer that answers none. set_spatial: before output_shape (the model calls it, with the
  // role); with split on, output_shape and configure get the slab's shape.
  virtual SpatialRole spatial_role(const Shape& /*slab*/, int /*size*/) const { return SpatialRole::none; }
  void set_spatial(SpatialSplit s) { sp_ = s; }
  // What a call on q.rows samples of per-sample input `in` keeps for backward and takes as scratch
  // (after configure; LayerMemory). Layers that keep nothing and take no scratch: the default.
  // A layer that saves or takes scratch states it here (tests/unit/test_memory_estimate.cpp
  // compares every layer's answer with what a forward and backward took).
  virtual LayerMemory memory(const Shape& /*in*/, const MemoryQuery& /*q*/) const { return {}; }
  // [train] loss_chunk = rows (Model::set_loss_chunk): the model's last layer, when it can
  // (lm_head), runs the loss itself on `rows` of its output rows at a time (StepContext::head_loss):
  // forward and backward then get an undefined output and output gradient, and no [rows, V]
  // tensor is ever whole. False: this layer cannot.
  virtual bool set_loss_chunk(std::int64_t /*rows*/) { return false; }
  // Generation (Model::set_one_output_position): the model's last layer, when it can (lm_head),
  // outputs one position of each sequence, StepContext::output_position ([T, V] -> [1, V]; the
  // other positions' logits are never computed). False: this layer cannot.
  virtual bool set_one_position() { return false; }
  // Generation with a key/value cache (Model::set_positions, after configure): the positions the
  // cache holds, those a generation pass reaches, where its forwards run fewer (configure's T: the
  // prompt's, then one at a time).
  virtual void set_cache_positions(std::int64_t /*positions*/) {}
  // Generation with a key/value cache: whether the cache still holds what a pass from `position`
  // reads (the positions before it that the pass's queries attend to: a sliding-window layer keeps
  // only its window's, so --interactive can go back to an earlier position only within it).
  virtual bool cache_serves(std::int64_t /*position*/) const { return true; }
  // Bytes of the buffers the layer keeps across calls from its own allocators (scratch(): a key/
  // value cache, a device copy of running statistics), its inner layers' with them.
  virtual double own_bytes() const { return static_cast<double>(host_scratch_.in_use() + device_scratch_.in_use()); }
  virtual void set_context(const StepContext* ctx, std::size_t index) {
    ctx_ = ctx;
    index_ = index;
  }

 protected:
  // Scratch for this call only (im2col columns, gradients of intermediates): tensor k, from the
  // model's arena (layers/step_arena.hpp), given back when the call returns; its values are
  // whatever was there. Never keep it in a member or read it in another call. Outside a model (unit
  // tests) a buffer of the layer's own, grown and kept.
  Tensor temp(std::size_t k, const Shape& shape, Device device) {
    if (ctx_ && ctx_->arena && ctx_->arena->device() == device) return ctx_->arena->take(shape);
    return scratch(own_temps_[k], shape, device);
  }
  // A buffer the layer keeps across calls (a device copy of its running statistics, a constant
  // mask): `buf` grown, never shrunk, from the layer's own allocator.
  Tensor scratch(Tensor& buf, const Shape& shape, Device device) {
    if (buf.defined() && buf.device() != device) buf = Tensor();
    return grow(buf, shape, device == Device::cuda ? device_scratch_ : host_scratch_);
  }
  // What forward keeps for backward (masks, statistics, indices, inner outputs): tensor k of this
  // layer in the current micro-batch's saved set, or in the layer's own set when it runs outside a
  // model (unit tests). Ask with the same k and shape in backward to read what forward wrote.
  Tensor saved(std::size_t k, const Shape& shape, Device device, DType dtype = DType::f32) {
    SavedSet* set = ctx_ && ctx_->saved ? ctx_->saved : &own_saved_;
    return set->get(this, k, shape, device, dtype);
  }
  // A saved tensor whose values are in the run's compute format ([precision] dtype). fp32 runs:
  // saved(k) itself. bf16/fp16 runs: kept in 16 bits (half the bytes) while the layer works on
  // an f32 copy from the arena during the call. Forward: write compact_out(k, ...), then
  // compact_keep(k, t), which rounds t to the format in place and packs it; backward:
  // compact_in(k, ...), the kept values unpacked (exact). `packable`: false keeps it in f32 (a
  // dropout mask whose scale the format cannot hold).
  Tensor compact_out(std::size_t k, const Shape& shape, Device device, bool packable = true) {
    return packs(packable) ? temp(kCompactTemps + k, shape, device) : saved(k, shape, device);
  }
  void compact_keep(std::size_t k, Tensor& t, bool packable = true) {
    if (!packs(packable)) return;
    round_to_precision(t, ctx_->precision);
    Tensor kept = saved(k, t.shape(), t.device(), storage_dtype(ctx_->precision));
    pack_16bit(t, kept);
  }
  Tensor compact_in(std::size_t k, const Shape& shape, Device device, bool packable = true) {
    if (!packs(packable)) return saved(k, shape, device);
    Tensor t = temp(kCompactTemps + k, shape, device);
    unpack_16bit(saved(k, shape, device, storage_dtype(ctx_->precision)), t);
    return t;
  }
  bool accumulate_grads() const { return accumulate_; }
  const SpatialSplit& spatial() const { return sp_; }
  // The spatial group's communicator (a split layer called without one: an internal error).
  Communicator& sp_comm() const;
  // (spatial, a layer that gathers) The whole volume [rows, C, D, H, W] of which `slab` is this
  // rank's: gathered over the group into arena scratch (temp keys k, k + 1), or with `keep` into
  // the saved set (saved key k) where backward reads it again (kept = true: read it there).
  Tensor whole_volume(const Tensor& slab, std::size_t k, bool keep = false, bool kept = false);
  // This rank's slab of a whole volume's gradient (every rank of the group holds it whole).
  void slab_gradient(const Tensor& whole, Tensor& slab);
  // The whole volume's per-sample shape of a slab's.
  Shape whole_shape(const Shape& slab) const;
  const TensorParallel& tensor_parallel() const { return tp_; }
  // t summed over the tensor-parallel group, in place (a row-parallel output, a column-parallel
  // input gradient); nothing with one rank.
  void tp_sum(Tensor& t);
  // Sequence parallelism (TensorParallel::sequence) on, with more than one rank.
  bool sequence_split() const { return tp_.sequence > 0 && tp_.size > 1; }
  // Sequence-parallel: bad_input when `in` holds every position (inside a split pair, where each
  // rank computes them all), for a layer with replicated parameters, whose gradient the trainer
  // sums over the group as if each rank held its block of the positions.
  void refuse_every_position(const Shape& in) const;
  // This rank's positions [rows, T/size, ...] -> every rank's, [rows, T, ...], in arena scratch
  // (temp keys k and k + 1); `local` itself when sequence_split() is off.
  Tensor sequence_gather(const Tensor& local, std::size_t k);
  // The group's sum of `full` [rows, T, ...], this rank's positions of it into `local`
  // [rows, T/size, ...] (temp key k); tp_sum(full) into local when sequence_split() is off.
  void sequence_reduce_scatter(Tensor& full, Tensor& local, std::size_t k);
  // Where a sum over the group lands before sequence_reduce_scatter(whole, local): `local` itself
  // without sequence parallelism, else arena scratch (temp key k) for every position,
  // [rows, T, ...] (local's second dimension times the group's size).
  Tensor sequence_whole(Tensor& local, std::size_t k);
  const StepContext& context() const { return *ctx_; }
  bool has_context() const { return ctx_ != nullptr; }
  std::size_t index() const { return index_; }  // position in the model (part of dropout's key)
  // This call's parameter k and its gradient buffer (param_specs() order), from the views the
  // caller handed over (StepContext::params), or those given to bind() outside a model.
  const Tensor& param(std::size_t k) { return views().params[k]; }
  Tensor& grad(std::size_t k) { return views().grads[k]; }
  ParamViews& views() {
    if (!ctx_ || !ctx_->params) return own_views_;
    HPCT_CHECK(ctx_->params->layer == this, std::string(type()) + " called with another layer's parameters");
    return *ctx_->params;
  }

 private:
  static constexpr std::size_t kCompactTemps = 1000;  // compact_out's temp keys (outside a model)
  bool packs(bool packable) const { return packable && ctx_ && ctx_->precision != Precision::fp32; }
  Allocator host_scratch_{Device::cpu}, device_scratch_{Device::cuda};  // outlive the derived layers' scratch
  SavedSet own_saved_;
  ParamViews own_views_;
  std::map<std::size_t, Tensor> own_temps_;
  bool accumulate_ = true;
  TensorParallel tp_;
  SpatialSplit sp_;
  const StepContext* ctx_ = nullptr;
  std::size_t index_ = 0;
};

// A layer's arguments as written in [model] layers: dense(128), conv(32,3,pad=1).
struct LayerArgs {
  std::string name;  // "attn" of "attn:attention(4)"; empty: layer_names() gives "<type>.<k>"
  std::string type;
  std::vector<std::int64_t> positional;  // the integers among the positional arguments
  std::vector<std::string> numbers;      // every positional argument as written (number_arg reads them)
  std::map<std::string, std::string> named;
  std::string text;  // as written, for messages
  std::string body;  // res( ... ): the layers inside, as written
};

}  // namespace hpctrain
