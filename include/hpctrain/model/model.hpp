// A model: the layers of [model] layers in order, shapes inferred from the
// data's sample shape, parameters and gradients in its parameter store (model/param_store.hpp:
// one flat buffer each; a layer's parameters are views named "<layer>.<param>", layers/registry.hpp's
// layer_names(): "h.3.attn.qkv.weight", "conv2d.0.bias"), activations
// allocated for a batch size, forward and backward through all layers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hpctrain/layers/registry.hpp"
#include "hpctrain/model/param_store.hpp"
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

// Layer name patterns ([train] freeze, [checkpoint] init_layers): comma-separated shell patterns
// ("conv2d.*, h.0"). A pattern names a layer when it matches the name ("h.0.mlp.fc", of a
// tensor h.0.mlp.fc.weight) or one of its leading '.'-separated parts ("h.0": the whole block,
// "h": every block; "h.1" is not a part of "h.10").
std::vector<std::string> split_patterns(const std::string& text);
bool layer_matches(const std::string& pattern, const std::string& layer_path);

// Every parameter's initial values into host[0, total) (the flat buffer, ParamInfo::offset), on
// `threads` threads: each value is a function of (seed, its model-wide index) alone, so the bits
// do not depend on the thread count (tested).
void fill_initial_values(const std::vector<ParamInfo>& info, std::uint64_t seed, float* host, std::int64_t total,
                         int threads);

// Where a layer's parameters come from when this rank does not hold them whole ([parallel]
// shard = full: parallel/param_windows.hpp): asked before each layer's forward and backward
// (`held`: the layer's index here), and told when the owned parameters changed (an update, a
// checkpoint loaded: Model::refresh_compute_parameters).
class ParameterSource {
 public:
  virtual ~ParameterSource() = default;
  virtual void need(std::size_t held, bool backward) = 0;
  virtual void changed() = 0;
};

class Model {
 public:
  // bad_input for unknown layer types, bad arguments or shapes that do not fit.
  // [first, last): the top-level layers this rank holds (a pipeline stage's group);
  // by default all. Layers keep their model-wide names and initialization.
  // `whole_gradients` false: no gradient buffer until stage_gradients (ZeRO-2 never allocates the
  // whole one); `whole_parameters` false: none of the parameters until stage_parameters (ZeRO-3).
  // `tp`: this rank's place in its tensor-parallel group; layers that split their work over it
  // hold their block of each split tensor (ParamInfo::shape; global_shape the whole), initialized
  // as the whole model's elements (the same values as with one rank), and sum over the group
  // through the communicator set_tensor_parallel_comm gives.
  // `sp` ([parallel] spatial_parallel, layers/spatial.hpp): `sample_shape` is this rank's depth
  // slab of each volume; the layers up to the first that gathers take slabs (bad_input naming a
  // layer that cannot, or a model that never gathers), exchanging over set_spatial_comm's group.
  Model(const std::string& layers, const Shape& sample_shape, const LayerRegistry& registry, Allocator& alloc,
        std::size_t first = 0, std::size_t last = static_cast<std::size_t>(-1), bool whole_gradients = true,
        bool whole_parameters = true, TensorParallel tp = {}, SpatialSplit sp = {});
  // [parallel] shard = full, after stage_gradients with the same buckets (ParamStore::stage_parameters):
  // this rank keeps its owned parameters, packed; the layers read their bucket's window, which
  // the parameter source fills before each call (bf16/fp16: rounded to the format there, in
  // float32; no 16-bit copy). Before set_precision.
  void stage_parameters(const std::vector<Bucket>& buckets);
  void set_parameter_source(ParameterSource* source) { source_ = source; }
  // [parallel] shard = gradients (ParamStore::stage_gradients): backward writes each bucket into
  // one of two staging buffers taken in turn (a bucket holding a weight that a later layer
  // shares, which that layer's backward writes first, gets its own), and gradients() holds only
  // the `owned` elements, packed. Every backward then overwrites the staging buffers (nothing
  // accumulates there: the gradient averager reduces each micro-batch's and adds what this rank
  // owns into gradients()).
  void stage_gradients(const std::vector<Bucket>& buckets, const Ranges& owned);
  // The staging buffer of each bucket: 0 and 1 in turn, 2, 3, ... for those holding a shared weight.
  std::vector<int> gradient_slots(const std::vector<Bucket>& buckets) const;

  // Deterministic initialization from the seed (He normal / Xavier uniform / zeros),
  // a pure function of (seed, parameter index): the same on every rank.
  void init_parameters(std::uint64_t seed);
  void set_batch(std::int64_t rows);  // allocates activations when the batch grows; set 0 is then in use
  // Generation with a key/value cache (StepContext::decode_position): the next forwards run `len`
  // positions of a token model's T (every per-sample shape starts with T; bad_input otherwise);
  // 0: all T again. In views of the batch's buffers: nothing is allocated.
  void set_length(std::int64_t len);
  Shape input_sample() const;  // the input's per-sample shape at that length (a pipeline stage receives it)
  // Activation sets: a forward writes its activations and what its layers keep for backward
  // (layers/saved_set.hpp) into the current set, and backward reads that set. One set unless a
  // pipeline stage holds several micro-batches between their forward and backward: it switches
  // with use_set(k) (sets made on first use, each grown to the batch it is used with, kept for the run).
  void use_set(std::size_t k);
  std::size_t sets() const { return sets_.size(); }
  std::int64_t forward_passes() const { return forward_passes_; }  // forward() calls so far
  // Bytes the sets' saved tensors hold (not their activations), the recompute set's included.
  std::size_t saved_bytes() const;
  // Bytes of what the sets hold for backward: the layers' outputs and the saved tensors.
  std::size_t activation_bytes() const;
  // Mixed precision ([precision] dtype = bf16 | fp16): the layers compute with a copy of the
  // parameters rounded to that format, and activations and their gradients are rounded to it
  // after every layer; accumulation stays float32, the optimizer updates the float32 master
  // parameters (parameters()), and refresh_compute_parameters() rounds them into the copy.
  // The copy and the outputs kept between layers (but the last) are stored in 16 bits; each
  // layer call gets float32 copies of its parameters and inputs from the arena. Before set_batch.
  // A forward-only model (set_forward_only first) keeps no copy: it rounds the float32 parameters
  // themselves to the format (refresh_compute_parameters), which the layers read as they are: the
  // same values, without a copy per layer call, and 2 bytes a parameter less.
  void set_precision(Precision p);
  void refresh_compute_parameters();
  Precision precision() const { return precision_; }
  // Runs a dense layer and the activation layer after it in one forward pass (on by default; the
  // results are the same bits either way, tested). Only in float32: with bf16/fp16 the dense
  // output is rounded before the activation reads it.
  void set_fusion(bool on) { fusion_ = on; }
  // [train] recompute = blocks: every residual block that is not inside another keeps only its
  // input for backward and re-runs its inner forwards there (layers/residual.cpp); the gradients
  // are the same bits (tested). An evaluation forward then holds one block's inner tensors at a
  // time as well. Off (recompute = none) by default.
  void set_recompute_blocks(bool on) { ctx_.recompute_set = on ? &recompute_set_ : nullptr; }
  // Forward only (--eval-only, --generate): set_batch makes no gradient buffers between layers, and
  // dout() and input_grad() stay undefined; backward must not be called. The outputs between layers
  // take turns in two buffers of the widest (nothing reads an output after the next layer has run).
  // Set before set_precision and set_batch.
  void set_forward_only(bool on);
  // [train] loss_chunk = rows > 0 on the model that holds the output: its last layer (lm_head;
  // bad_input naming it when it cannot, Layer::set_loss_chunk) runs the loss itself on `rows`
  // output rows at a time, so neither the whole output nor its gradient is allocated. The step
  // then hands it the loss (give_loss) instead of running the loss on output(). Before set_batch.
  void set_loss_chunk(std::int64_t rows);
  bool loss_in_head() const { return loss_in_head_; }
  // Generation on the model that holds the output (before set_batch): when its last layer can
  // (lm_head, Layer::set_one_position), the output is one position of each sequence, [rows, 1, V],
  // the one StepContext::output_position names (the context's last token, the only logits a draw
  // reads): no [T, V] logits are computed or held. Returns whether it is: false, the whole output.
  bool set_one_output_position();
  bool one_output_position() const { return one_position_; }
  // Generation on a token model (every layer's output [T, ...]; bad_input otherwise): its
  // key/value caches sized for `len` <= T positions, the most a pass reaches, instead of T
  // (block_size), and its activations, scratch arena, memory estimate and layers (Layer::configure)
  // for `forward` <= len, the most one forward runs (0: len; with the cache and a context that
  // fits block_size, the prompt's: the later forwards run one position each). Buffers already
  // made are dropped (set_batch makes them again): called before each pass, a longer
  // conversation grows them. A sequence-parallel model keeps T (returns false).
  bool set_positions(std::int64_t len, std::int64_t forward = 0);
  // The positions a pass reaches (set_positions' len; T before it is called).
  std::int64_t positions() const { return positions_ > 0 ? positions_ : shapes_.front()[0]; }
  // Whether every layer's key/value cache holds what a pass from `position` reads
  // (Layer::cache_serves; this rank's layers: a pipeline asks every stage).
  bool cache_serves(std::int64_t position) const;
  // For the next forward (evaluation: the loss sums into `scalars`) or backward (training: also
  // grad_scale times their gradient): true when the last layer runs the loss (loss_in_head), and
  // the caller does not; false, and the caller runs it on output(), otherwise. Null `scalars` (no
  // loss wanted: generation): false, and forward writes the output (one position of each
  // sequence with set_one_output_position).
  bool give_loss(Loss& loss, const Targets& targets, float grad_scale, Tensor* scalars);
  // Elements of scratch the deepest layer call took (layers/step_arena.hpp), for reports and tests.
  std::int64_t arena_high_water() const { return arena_.high_water(); }
  // `acquire(i)`, when given, runs before layer i reads its parameters (a sharded optimizer's
  // all-gather of them may still be in flight), `release(i)` after its forward is done with them.
  const Tensor& forward(const Tensor& x, const std::function<void(std::size_t)>& acquire = {},
                        const std::function<void(std::size_t)>& release = {});
  // Writes every layer's input gradient and adds to the gradient buffer (or,
  // with accumulate = false, overwrites it: the step's first micro-batch);
  // calls layer_done(i) after layer i (last layer first) when given.
  void backward(const Tensor& x, const Tensor& dout, const std::function<void(std::size_t)>& layer_done = {},
                bool accumulate = true);
  // [train] freeze: which held layers' parameters are not updated (one flag per held layer).
  // Backward skips the layers below the lowest trainable one on the first stage (nothing needs
  // their gradients) and zeroes the gradients of frozen layers it runs, so they add nothing to
  // the norm or the averages; the trainer leaves them out of the buckets and the update.
  void set_frozen(std::vector<bool> frozen);
  bool frozen(std::size_t i) const { return store_.frozen(i); }
  // Where the loss writes d(loss)/d(output); undefined with loss_in_head().
  Tensor& dout() { return grads_act_.back(); }
  // d(loss)/d(input) after backward, for a model that does not start at layer 0 (a later
  // pipeline stage sends it upstream); undefined for the first stage (nothing needs it).
  const Tensor& input_grad() const { return grads_act_.front(); }
  const Shape& input_shape() const { return shapes_.front(); }
  // Of the last forward; undefined after one whose loss the last layer ran (give_loss).
  const Tensor& output() const { return acts_.back(); }

  void set_tensor_parallel_comm(Communicator* comm) { ctx_.tp_comm = comm; }
  const TensorParallel& tensor_parallel() const { return tp_; }
  void set_spatial_comm(Communicator* comm) { ctx_.sp_comm = comm; }
  // (spatial) Where the parameters of the layers that take slabs lie in the store: their
  // gradients are this rank's slab's share, summed over the spatial group by the trainer.
  Ranges slab_parameter_ranges() const;
  // Set before forward: training or evaluating, and what dropout keys its draws on.
  StepContext& context() { return ctx_; }

  // Where every parameter held here lives, and the questions about its elements.
  const ParamStore& store() const { return store_; }
  ParamStore& store() { return store_; }
  Tensor& parameters() { return store_.params(); }
  Tensor& gradients() { return store_.grads(); }
  const std::vector<ParamInfo>& param_info() const { return store_.tensors(); }
  // Non-trainable state (batch norm's running statistics) by name, "batchnorm.0.running_mean".
  // Layer::sync_buffers for every layer held: before reading buffers() (to_host) and after
  // writing them (checkpoints).
  void sync_buffers(bool to_host);
  void finish_statistics(Communicator& group);  // Layer::finish_statistics for every layer held
  std::vector<std::pair<std::string, std::vector<float>*>> buffers();
  const std::vector<std::string>& layer_names() const { return names_; }  // "conv2d.0", ... (held here)
  // The whole model, whichever layers this rank holds (checkpoint layout): every layer's name,
  // every parameter (offset = global_offset), every buffer's name and size.
  const std::vector<std::string>& all_layer_names() const { return all_names_; }
  const std::vector<std::string>& all_layer_types() const { return all_types_; }  // "res", "dense", ...
  const std::vector<ParamInfo>& all_param_info() const { return all_info_; }
  struct BufferInfo {
    std::string name, legacy;  // as ParamInfo's
    std::int64_t size = 0;
    std::size_t layer = 0;
  };
  const std::vector<BufferInfo>& all_buffers() const { return all_buffers_; }
  std::size_t first_layer() const { return first_; }              // model-wide index of this rank's first layer
  const Shape& whole_output_shape() const { return whole_out_; }  // the last layer's, on every stage
  const Shape& output_shape() const { return shapes_.back(); }
  // What a batch of `rows` samples takes besides the activations (set_batch): the float32
  // gradients between layers (the output's, which is the loss's work buffer, layers/loss.hpp, none
  // with loss_in_head(); a later pipeline stage's input's; two of the widest for the ones in
  // between, in turn), and in 16-bit runs (`precision`) the two float32 buffers of the widest output.
  double gradient_buffer_bytes(std::int64_t rows, Precision precision) const;
  // What one micro-batch of `rows` samples takes from the allocator besides the parameter store,
  // as set_batch and a training forward and backward take it (model/model_memory.cpp; --dry-run and
  // the start-up memory check): bytes.
  struct ActivationMemory {
    double outputs = 0;    // the layers' outputs kept for backward (one activation set)
    double saved = 0;      // what the layers keep besides (Layer::memory; recompute: one block's inner tensors)
    double gradients = 0;  // gradient_buffer_bytes
    double scratch = 0;    // the arena's high-water mark: the deepest layer call's scratch
    double cache = 0;      // generation (one output position): the key/value caches of `rows` sequences
    double kept() const { return outputs + saved; }  // (per micro-batch in flight; the caches once)
    double total() const { return kept() + cache + gradients + scratch; }
  };
  // For a run in `precision` on `device` ([train] recompute = blocks: `recompute`); the model's own
  // precision need not be set (--dry-run's is not).
  ActivationMemory activation_memory(std::int64_t rows, Precision precision, Device device, bool recompute) const;
  std::size_t layers() const { return layers_.size(); }
  // The bytes the layers keep across calls from their own allocators (Layer::own_bytes: generation's
  // key/value caches), which the model's allocator does not count.
  double layer_own_bytes() const;
  // Weights tied across pipeline stages (a GPT's embedding on the first stage, its head on the
  // last): the later stage holds a copy under the earlier layer's parameter name (so
  // param_info() finds either by that name); store().copies() are their ranges here. The trainer
  // sums the two stages' gradients so both take the same update.
  // Weight tying in the whole model: (layer, the earlier layer whose weight it shares), model-wide indices.
  const std::vector<std::pair<std::size_t, std::size_t>>& ties() const { return all_ties_; }
  // The whole model's entry (all_param_info) of the weight a tie shares: layer `target`'s weight.
  const ParamInfo& tied_weight(std::size_t target) const;
  std::string summary() const;  // table: layer, output shape, parameters

 private:
  void allocate_gradient_buffers(std::int64_t rows);  // (set_batch: what backward writes)
  // A forward-only bf16/fp16 model's parameters are rounded to the format in place (set_precision).
  bool rounded_in_place() const {
    return precision_ != Precision::fp32 && forward_only_ && !store_.packed_parameters();
  }
  // Every layer's views of `weights` (the master parameters, or their rounded copy) and of the
  // gradient buffer, handed to it at each call (StepContext::params).
  void make_views(const Tensor& weights);
  void zero_frozen_gradients();  // [train] freeze: their gradients stay zero
  // Layer i's parameters for a call: its views (fp32), or float32 copies of the 16-bit ones
  // taken from the arena (bf16/fp16; inside the call's StepArena::Scope).
  ParamViews& call_params(std::size_t i);
  Tensor work(std::size_t j) const;  // bf16/fp16 forward: layer j-1's float32 output
  Tensor held(std::size_t j);        // layer j-1's kept output as float32 (16 bits: unpacked into the arena)
  // A parameter tied to an earlier layer's weight (ParamSpec::tie): bound to that weight, or to a
  // copy of it (ParamStore::add_copy) when an earlier pipeline stage holds it.
  void tie_parameter(const ParamSpec& p, std::size_t layer, bool mine);
  // Layer i's tensors into all_info_ and all_buffers_ (and the store, when held here).
  void add_tensors(const Layer& layer, const Shape& in, std::size_t i, bool mine, std::int64_t& global);
  std::vector<std::vector<std::pair<std::int64_t, Shape>>> bindings_;  // per held layer: its parameters' offsets
  std::vector<ParamViews> views_;                                      // per held layer: from bindings_
  std::vector<std::size_t> tied_targets_;
  ParameterSource* source_ = nullptr;  // (shard = full: fills the windows the views read)
  bool in_backward_ = false;
  // Layer i's parameters for a call: what source_ must fill first, then call_params or the views.
  void need(std::size_t i) {
    if (source_) source_->need(i, in_backward_);
  }
  std::vector<std::pair<std::size_t, std::size_t>> all_ties_;  // held layers whose weight a later held layer shares
  Allocator& alloc_;
  TensorParallel tp_;
  std::vector<bool> slab_input_;  // (spatial) per layer held here: it works on its input's slab
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<std::string> names_;  // "flatten.0"
  std::vector<Shape> shapes_;       // per-sample: input, then each layer's output
  std::vector<std::string> all_names_, all_types_;
  std::vector<ParamInfo> all_info_;
  std::vector<BufferInfo> all_buffers_;
  std::size_t first_ = 0;
  Shape whole_out_;
  ParamStore store_;
  Precision precision_ = Precision::fp32;
  bool fusion_ = true;
  bool forward_only_ = false;
  bool loss_in_head_ = false;        // set_loss_chunk
  bool one_position_ = false;        // set_one_output_position
  Tensor whole_output_;              // loss_in_head_: the output of a forward without a loss (generation), grown
  Tensor compute_params_;            // 16-bit copy the layers use when precision_ != fp32 (not forward-only)
  ParamViews call_;                  // call_params' float32 copies
  Tensor work_[2];                   // bf16/fp16 forward: float32 outputs, alternating
  StepArena arena_{alloc_};          // every layer call's scratch
  SavedSet recompute_set_{&alloc_};  // [train] recompute = blocks: one block's inner tensors at a time
  StepContext ctx_;
  std::int64_t rows_ = -1, capacity_ = 0;
  std::int64_t length_ = 0;     // set_length: the positions of a shortened forward; 0: all
  std::int64_t block_ = 0;      // set_positions: the positions the model was made for (T); 0: not called
  std::int64_t positions_ = 0;  // set_positions' len; 0: not called
  struct ActivationSet {
    explicit ActivationSet(Allocator& alloc) : saved(&alloc) {}
    std::vector<Tensor> acts;  // capacity-sized: [i] = output of layer i-1 ([0] unused: the input)
    Tensor turns[2];           // forward-only: the outputs between layers, in turn (acts views them)
    std::int64_t capacity = 0;
    SavedSet saved;
  };
  Shape sample_shape(std::size_t i) const;                 // shapes_[i], its first dimension length_ after set_length
  Shape batch_shape(std::size_t i) const;                  // [rows_, sample_shape(i)...]
  std::int64_t widest_between() const;                     // the most elements a sample has in an output between layers
  void require_token_model(const std::string& why) const;  // bad_input unless every output is [T, ...]
  std::vector<std::unique_ptr<ActivationSet>> sets_;
  std::size_t set_ = 0;
  std::int64_t forward_passes_ = 0;
  std::vector<Tensor> grad_buf_;          // capacity-sized buffers
  std::vector<Tensor> acts_, grads_act_;  // views for rows_ of the current set's, and of grad_buf_
};

// [train] freeze for `model`: a flag per held layer. bad_input when a pattern names no layer of
// the whole model, or when every layer with parameters would be frozen (nothing would train).
std::vector<bool> frozen_layers(const std::string& freeze, const Model& model);

}  // namespace hpctrain
