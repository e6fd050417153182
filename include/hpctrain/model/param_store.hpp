// The parameter store: every parameter this rank holds, with its gradient and the optimizer's
// state, in one flat buffer each (llm.c's layout), and the answers to "which elements" that the
// rest of the trainer asks:
// a layer's elements, the frozen ones, the copies of tied weights, the gradient buckets and what
// a data-parallel rank owns when the optimizer is sharded.
// Every such answer is one Range type (sorted, disjoint Ranges where there are several).
//
// Each tensor has a spec (ParamInfo): its model-wide name and global shape, its initializer, and
// its placement along the mesh dimensions that may split one tensor (tp, sp): replicated, or
// sharded along an axis into equal blocks, or sharded part by part (a fused q|k|v weight cut by
// heads, with grouped-query sizes; a fused gate|up weight cut in both halves). Fused tensors
// stay fused: one name, one dataset in a checkpoint, one GEMM; an importer that reads separate
// q, k and v tensors concatenates them along the fused axis. The pipeline dimension places
// whole layers (model/partition.hpp) and the data-parallel one is an ownership policy of the
// store (owned()), not a placement. Adding a dimension or a placement: docs/contributing.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hpctrain/core/placement.hpp"
#include "hpctrain/core/range.hpp"
#include "hpctrain/layers/layer.hpp"
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

// The indices along the placement's axis that coordinate `c` of `n` holds: the whole axis when
// replicated, one block per part when sharded (in the order they are stored). bad_input, naming
// `what`, when the axis is out of range, the parts do not add up to the axis or a part does not
// divide by n.
Ranges local_blocks(const Placement& p, const Shape& global, int c, int n, const std::string& what);
// The shape coordinate `c` of `n` holds under `p`.
Shape local_shape(const Placement& p, const Shape& global, int c, int n, const std::string& what);

struct ParamInfo {                 // a tensor's spec and where it lives here
  std::string name;                // model-wide: "h.3.attn.qkv.weight", "dense.1.bias"
  std::int64_t offset = 0;         // in this rank's flat buffers
  std::int64_t global_offset = 0;  // in the whole model's (initialization keys on it)
  Shape shape;                     // what this rank holds (the global shape, or its tensor-parallel block)
  Shape global_shape;              // the whole tensor's (a checkpoint dataset's)
  Init init = Init::zeros;
  std::int64_t fan_in = 1, fan_out = 1;
  float std = 0.02f;            // Init::normal
  std::int64_t live_rows = -1;  // ParamSpec::live_rows: the rows past it are zero padding
  Placements placement;         // along tp (and sp: replicated until spatial parallelism exists)
  Ranges tp_blocks;             // tp sharded: this rank's blocks along placement.tp.axis (local_blocks)
  std::size_t layer = 0;        // model-wide index of the (top-level) layer it belongs to
  std::string legacy;           // its name in format-1 checkpoints: "07_res/01_attention/qkv_weight"
};

// The elements of `p`'s whole tensor (row-major indices into global_shape) that its local
// elements `local` (row-major indices into shape) are, as sorted ranges: the local order is the
// global order (blocks are taken in order). Replicated: the same ranges.
Ranges global_elements(const ParamInfo& p, const Ranges& local);
// The global index of local element k (initialization keys on it).
std::int64_t global_element(const ParamInfo& p, std::int64_t k);
// Whether `p` is split over the tensor-parallel group.
inline bool tp_sharded(const ParamInfo& p) { return p.placement.tp.kind == Placement::Kind::sharded; }

// A gradient bucket: elements averaged together (parallel/grad_buckets.hpp), launched once backward
// has finished layer `ready_after` (the bucket's first: buckets are made last layers first).
struct Bucket : Range {
  std::size_t ready_after = 0;
};

class ParamStore {
 public:
  // The layout, while the model is built: each held layer in turn, then its tensors.
  void add_layer();
  // A tensor of the last added layer; returns its offset here (also written into spec.offset).
  std::int64_t add(ParamInfo spec);
  // A weight tied to one that an earlier pipeline stage holds: a copy here, under its name,
  // whose gradient is summed with the original's (copies(): their elements here).
  std::int64_t add_copy(ParamInfo target);
  // The parameters, zeros (without `whole_parameters`: they wait for stage_parameters), and
  // (`whole_gradients`) the gradients laid out like them; without, they wait for stage_gradients.
  void allocate(Allocator& alloc, bool whole_gradients = true, bool whole_parameters = true);
  // [parallel] shard = gradients (ZeRO-2): grads() holds only the `owned` elements (sorted, each
  // inside one bucket), packed in order; backward writes bucket b's gradients into staging buffer
  // slots[b] (bucket_buffer(b): its element 0 is the bucket's first), and frozen layers' into a
  // scratch nobody reads. Buffers are sized by the largest bucket using them. Replaces whole
  // gradients (their buffer is freed once nothing views it).
  void stage_gradients(const std::vector<Bucket>& buckets, const std::vector<int>& slots, const Ranges& owned,
                       Allocator& alloc);
  bool staged() const { return !bucket_buffers_.empty(); }
  // [parallel] shard = full (ZeRO-3), after stage_gradients with the same buckets: params() holds
  // only the owned elements too, packed as grads(), and each bucket's parameters are gathered
  // into a window (window(b), slots as the gradients'; parallel/param_windows.hpp) for the
  // layers to read. Frozen layers ([train] freeze: in no bucket, owned by nobody) are held whole
  // on every rank instead, their ranges packed in order in frozen_parameters() (they never
  // change: nothing to gather). Replaces whole parameters.
  void stage_parameters(const std::vector<int>& slots, Allocator& alloc);
  Tensor& frozen_parameters() { return frozen_params_; }
  // bf16/fp16 runs of packed parameters: the layers read frozen layers' values rounded to the
  // format from a copy (make_frozen_compute; refresh_frozen_compute rounds them into it).
  void make_frozen_compute(Allocator& alloc);
  void refresh_frozen_compute(Precision p);
  // Where the frozen tensor element at store offset `offset` sits in frozen_parameters(); -1: not frozen.
  std::int64_t frozen_position(std::int64_t offset) const;
  bool packed_parameters() const { return !windows_.empty(); }
  Tensor window(std::size_t b) const { return windows_[b]; }
  const std::vector<Bucket>& staged_buckets() const { return staged_buckets_; }
  const Ranges& owned() const { return owned_; }  // (staged: what grads() packs)
  // Staged: what this rank owns of bucket b, bucket-relative (empty: nothing), and where that
  // block sits in the packed grads() (and packed params()).
  struct PackedBlock {
    Range block;
    std::int64_t packed_at = 0;
  };
  const PackedBlock& packed_block(std::size_t b) const { return packed_blocks_[b]; }
  // Where a layer reads the tensor at `offset`: in params() or (packed) in its bucket's window.
  Tensor param_view(std::int64_t offset, const Shape& shape) const;
  // Bytes of every parameter buffer this rank holds (whole, or packed + windows).
  std::int64_t parameter_bytes() const;
  // Each staging buffer's elements: the largest bucket using it.
  static std::vector<std::int64_t> slot_sizes(const std::vector<Bucket>& buckets, const std::vector<int>& slots);
  Tensor bucket_buffer(std::size_t b) const { return bucket_buffers_[b]; }
  // Where backward writes the gradient of the tensor at `offset`: in grads(), in its bucket's
  // staging buffer, or (staged, frozen) in the scratch; undefined before any gradients exist.
  Tensor grad_view(std::int64_t offset, const Shape& shape) const;
  // Bytes of every gradient buffer this rank holds (whole, or packed + staging + scratch).
  std::int64_t gradient_bytes() const;
  // The optimizer's state (optim/optimizer.hpp make_optimizer): `elems` zeros, once the
  // optimizer knows what this rank updates (its runs). A second call replaces it.
  Tensor& allocate_state(std::int64_t elems, Allocator& alloc);
  Tensor& state() { return state_; }

  Tensor& params() { return params_; }
  Tensor& grads() { return grads_; }
  const Tensor& params() const { return params_; }
  std::int64_t size() const { return size_; }                         // elements held
  const std::vector<ParamInfo>& tensors() const { return tensors_; }  // in buffer order
  std::size_t layers() const { return layers_.size(); }
  Range layer(std::size_t held) const { return layers_[held]; }  // {0, 0} when it holds none
  const Ranges& copies() const { return copies_; }

  // [train] freeze: one flag per held layer. Frozen layers are in no bucket and owned by nobody.
  void set_frozen(std::vector<bool> frozen);
  bool frozen(std::size_t held) const { return !frozen_.empty() && frozen_[held]; }
  const Ranges& frozen_ranges() const { return frozen_ranges_; }

  // Buckets of at least `bucket_elems` elements (the last may be smaller), last layers first, never
  // splitting a layer, none across or over a frozen layer.
  std::vector<Bucket> buckets(std::int64_t bucket_elems) const;
  // The elements rank `rank` of `ranks` owns when `buckets` are sharded element-balanced (ZeRO-1):
  // of a bucket of L elements, c = floor(L / ranks) from begin + rank * c; the last L - c * ranks
  // go to the last rank. Sorted.
  static Ranges owned(const std::vector<Bucket>& buckets, int ranks, int rank);
  // Whole-tensor ownership ([parallel] shard_by = tensors): every tensor inside `buckets` (the
  // trainable ones) with the rank that owns it, in buffer order. Largest first, each to the rank
  // owning the fewest elements so far (ties: the lowest), so the same on every rank.
  std::vector<std::pair<Range, int>> tensor_owners(const std::vector<Bucket>& buckets, int ranks) const;

 private:
  std::vector<ParamInfo> tensors_;
  Ranges layers_;
  Ranges copies_;
  std::vector<bool> frozen_;
  Ranges frozen_ranges_;
  std::int64_t size_ = 0;
  Tensor params_, grads_, state_;
  // Staged gradients (stage_gradients): per bucket its range and a view of its slot's buffer; the
  // buffers themselves, and the frozen layers' scratch.
  std::vector<Bucket> staged_buckets_;
  std::vector<Tensor> bucket_buffers_, slot_buffers_;
  Tensor frozen_scratch_;
  Ranges owned_;
  std::vector<PackedBlock> packed_blocks_;        // per staged bucket
  std::vector<Tensor> windows_, window_buffers_;  // packed parameters: each bucket's window, the slots
  Tensor frozen_params_, frozen_compute_;         // packed parameters: the frozen layers' (and rounded)
};

}  // namespace hpctrain
