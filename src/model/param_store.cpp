// Implementation of the parameter store (model/param_store.hpp).
#include "hpctrain/model/param_store.hpp"

#include <algorithm>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain {

Ranges local_blocks(const Placement& p, const Shape& global, int c, int n, const std::string& what) {
  if (p.kind == Placement::Kind::replicated) return {{0, global.empty() ? 1 : global[0]}};
  if (p.axis < 0 || static_cast<std::size_t>(p.axis) >= global.size())
    throw bad_input(what + ": sharded along axis " + std::to_string(p.axis) + " of a tensor of shape " +
                    shape_string(global));
  const std::int64_t len = global[static_cast<std::size_t>(p.axis)];
  const std::vector<std::int64_t> parts = p.parts.empty() ? std::vector<std::int64_t>{len} : p.parts;
  std::int64_t sum = 0;
  for (const std::int64_t s : parts) sum += s;
  if (sum != len)
    throw bad_input(what + ": fused parts of " + std::to_string(sum) + " along axis " + std::to_string(p.axis) +
                    " of a tensor of shape " + shape_string(global) + " (they must add up to " + std::to_string(len) +
                    ")");
  Ranges out;
  std::int64_t at = 0;
  for (const std::int64_t s : parts) {
    if (s % n != 0)
      throw bad_input(what + ": a part of " + std::to_string(s) + " along axis " + std::to_string(p.axis) +
                      " of shape " + shape_string(global) + " does not divide into " + std::to_string(n) +
                      " equal blocks");
    out.push_back({at + c * (s / n), at + (c + 1) * (s / n)});
    at += s;
  }
  return out;
}

Shape local_shape(const Placement& p, const Shape& global, int c, int n, const std::string& what) {
  if (p.kind == Placement::Kind::replicated) return global;
  Shape s = global;
  s[static_cast<std::size_t>(p.axis)] = total(local_blocks(p, global, c, n, what));
  return s;
}

namespace {
// Elements along p's split axis and after it (one "row" of the axis), and the axis' global length.
struct AxisGeometry {
  std::int64_t inner = 1, local_len = 1, global_len = 1;
};
AxisGeometry axis_geometry(const ParamInfo& p) {
  AxisGeometry g;
  const auto axis = static_cast<std::size_t>(p.placement.tp.axis);
  for (std::size_t i = axis + 1; i < p.shape.size(); ++i) g.inner *= p.shape[i];
  g.local_len = p.shape[axis];
  g.global_len = p.global_shape[axis];
  return g;
}
}  // namespace

std::int64_t global_element(const ParamInfo& p, std::int64_t k) {
  if (!tp_sharded(p)) return k;
  const AxisGeometry g = axis_geometry(p);
  const std::int64_t i = k % g.inner, r = k / g.inner % g.local_len, o = k / (g.inner * g.local_len);
  std::int64_t at = 0;  // r's block
  for (const Range& b : p.tp_blocks) {
    if (r < at + b.size()) return (o * g.global_len + b.begin + (r - at)) * g.inner + i;
    at += b.size();
  }
  HPCT_CHECK(false, p.name + ": local element " + std::to_string(k) + " is in no block");
  return 0;
}

Ranges global_elements(const ParamInfo& p, const Ranges& local) {
  if (!tp_sharded(p)) return local;
  const AxisGeometry g = axis_geometry(p);
  Ranges out;
  const std::int64_t outer = numel(p.shape) / (g.local_len * g.inner);
  for (const Range& want : local)
    for (std::int64_t o = 0; o < outer; ++o) {
      std::int64_t at = 0;  // a piece: a block's rows of one outer index, contiguous on both sides
      for (const Range& b : p.tp_blocks) {
        const std::int64_t lb = (o * g.local_len + at) * g.inner, le = lb + b.size() * g.inner;
        const std::int64_t gb = (o * g.global_len + b.begin) * g.inner;
        at += b.size();
        const std::int64_t lo = std::max(lb, want.begin), hi = std::min(le, want.end);
        if (lo >= hi) continue;
        const Range piece{gb + (lo - lb), gb + (hi - lb)};
        if (!out.empty() && out.back().end == piece.begin)
          out.back().end = piece.end;
        else
          out.push_back(piece);
      }
    }
  return out;
}

void ParamStore::add_layer() { layers_.push_back({size_, size_}); }

std::int64_t ParamStore::add(ParamInfo spec) {
  HPCT_CHECK(!layers_.empty() && !params_.defined(), "ParamStore::add before add_layer or after allocate");
  spec.offset = size_;
  size_ += numel(spec.shape);
  layers_.back().end = size_;
  tensors_.push_back(std::move(spec));
  return tensors_.back().offset;
}

std::int64_t ParamStore::add_copy(ParamInfo target) {
  const std::int64_t at = add(std::move(target));
  copies_.push_back({at, at + numel(tensors_.back().shape)});
  return at;
}

void ParamStore::allocate(Allocator& alloc, bool whole_gradients, bool whole_parameters) {
  for (Range& r : layers_)
    if (r.empty()) r = {0, 0};
  if (whole_parameters) params_ = Tensor::zeros({size_}, alloc);
  if (whole_gradients) grads_ = Tensor::zeros({size_}, alloc);
}

void ParamStore::stage_gradients(const std::vector<Bucket>& buckets, const std::vector<int>& slots, const Ranges& owned,
                                 Allocator& alloc) {
  const std::vector<std::int64_t> slot_size = slot_sizes(buckets, slots);
  grads_ = Tensor();  // (freed once nothing views it: the model remakes its views)
  slot_buffers_.clear();
  for (const std::int64_t n : slot_size) slot_buffers_.push_back(Tensor::zeros({std::max<std::int64_t>(n, 1)}, alloc));
  staged_buckets_ = buckets;
  bucket_buffers_.clear();
  for (std::size_t b = 0; b < buckets.size(); ++b)
    bucket_buffers_.push_back(slot_buffers_[static_cast<std::size_t>(slots[b])].view(0, {buckets[b].size()}));
  std::int64_t widest_frozen = 1;
  for (const Range& r : frozen_ranges_) widest_frozen = std::max(widest_frozen, r.size());
  frozen_scratch_ = frozen_ranges_.empty() ? Tensor() : Tensor::zeros({widest_frozen}, alloc);
  grads_ = Tensor::zeros({std::max<std::int64_t>(total(owned), 1)}, alloc);
  owned_ = owned;
  packed_blocks_.assign(buckets.size(), PackedBlock{});
  std::int64_t at = 0;  // owned is sorted, at most one range per bucket, packed in that order
  for (const Range& o : owned) {
    for (std::size_t b = 0; b < buckets.size(); ++b)
      if (buckets[b].begin <= o.begin && o.end <= buckets[b].end)
        packed_blocks_[b] = {{o.begin - buckets[b].begin, o.end - buckets[b].begin}, at};
    at += o.size();
  }
}

void ParamStore::stage_parameters(const std::vector<int>& slots, Allocator& alloc) {
  HPCT_CHECK(staged(), "stage_parameters: stage the gradients first");
  params_ = Tensor::zeros({std::max<std::int64_t>(total(owned_), 1)}, alloc);
  frozen_params_ = frozen_ranges_.empty() ? Tensor() : Tensor::zeros({total(frozen_ranges_)}, alloc);
  window_buffers_.clear();
  for (const std::int64_t n : slot_sizes(staged_buckets_, slots))
    window_buffers_.push_back(Tensor::zeros({std::max<std::int64_t>(n, 1)}, alloc));
  windows_.clear();
  for (std::size_t b = 0; b < staged_buckets_.size(); ++b)
    windows_.push_back(window_buffers_[static_cast<std::size_t>(slots[b])].view(0, {staged_buckets_[b].size()}));
}

std::int64_t ParamStore::frozen_position(std::int64_t offset) const {
  std::int64_t at = 0;
  for (const Range& r : frozen_ranges_) {
    if (r.begin <= offset && offset < r.end) return at + (offset - r.begin);
    at += r.size();
  }
  return -1;
}

void ParamStore::make_frozen_compute(Allocator& alloc) {
  if (frozen_params_.defined()) frozen_compute_ = Tensor::zeros(frozen_params_.shape(), alloc);
}

void ParamStore::refresh_frozen_compute(Precision p) {
  if (!frozen_compute_.defined()) return;
  copy(frozen_params_, frozen_compute_);
  round_to_precision(frozen_compute_, p);
}

Tensor ParamStore::param_view(std::int64_t offset, const Shape& shape) const {
  if (!packed_parameters()) return params_.defined() ? params_.view(offset, shape) : Tensor();
  if (const std::int64_t f = frozen_position(offset); f >= 0)  // (held whole: frozen)
    return (frozen_compute_.defined() ? frozen_compute_ : frozen_params_).view(f, shape);
  for (std::size_t b = 0; b < staged_buckets_.size(); ++b)
    if (staged_buckets_[b].begin <= offset && offset < staged_buckets_[b].end)
      return windows_[b].view(offset - staged_buckets_[b].begin, shape);
  HPCT_CHECK(false, "a tensor at " + std::to_string(offset) + " is in no bucket's window");
  return Tensor();
}

std::int64_t ParamStore::parameter_bytes() const {
  std::int64_t n = params_.defined() ? params_.numel() : 0;
  for (const Tensor& t : window_buffers_) n += t.numel();
  for (const Tensor* t : {&frozen_params_, &frozen_compute_})
    if (t->defined()) n += t->numel();
  return n * static_cast<std::int64_t>(sizeof(float));
}

std::vector<std::int64_t> ParamStore::slot_sizes(const std::vector<Bucket>& buckets, const std::vector<int>& slots) {
  HPCT_CHECK(slots.size() == buckets.size(), "staged gradients: one slot per bucket");
  std::vector<std::int64_t> out;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const auto k = static_cast<std::size_t>(slots[b]);
    if (out.size() <= k) out.resize(k + 1, 0);
    out[k] = std::max(out[k], buckets[b].size());
  }
  return out;
}

Tensor ParamStore::grad_view(std::int64_t offset, const Shape& shape) const {
  if (!staged()) return grads_.defined() ? grads_.view(offset, shape) : Tensor();
  for (std::size_t b = 0; b < staged_buckets_.size(); ++b)
    if (staged_buckets_[b].begin <= offset && offset < staged_buckets_[b].end)
      return bucket_buffers_[b].view(offset - staged_buckets_[b].begin, shape);
  for (const Range& r : frozen_ranges_)
    if (r.begin <= offset && offset < r.end) return frozen_scratch_.view(offset - r.begin, shape);
  HPCT_CHECK(false, "a trainable tensor at " + std::to_string(offset) + " is in no gradient bucket");
  return Tensor();
}

std::int64_t ParamStore::gradient_bytes() const {
  std::int64_t n = grads_.defined() ? grads_.numel() : 0;
  for (const Tensor& t : slot_buffers_) n += t.numel();
  if (frozen_scratch_.defined()) n += frozen_scratch_.numel();
  return n * static_cast<std::int64_t>(sizeof(float));
}

Tensor& ParamStore::allocate_state(std::int64_t elems, Allocator& alloc) {
  state_ = Tensor::zeros({elems}, alloc);
  return state_;
}

void ParamStore::set_frozen(std::vector<bool> frozen) {
  HPCT_CHECK(frozen.size() == layers_.size(), "set_frozen: one flag per held layer");
  frozen_ = std::move(frozen);
  frozen_ranges_.clear();
  for (std::size_t i = 0; i < layers_.size(); ++i)
    if (frozen_[i] && !layers_[i].empty()) frozen_ranges_.push_back(layers_[i]);
}

std::vector<Bucket> ParamStore::buckets(std::int64_t bucket_elems) const {
  std::vector<Bucket> out;
  Bucket open;
  bool have = false;
  for (std::size_t i = layers_.size(); i-- > 0;) {
    const Range r = layers_[i];
    if (r.empty()) continue;
    if (frozen(i)) {  // no gradient to average: the bucket ends here, the next starts after it
      if (have) out.push_back(open);
      have = false;
      continue;
    }
    if (!have) {
      open.end = r.end;
      have = true;
    }
    open.begin = r.begin;
    open.ready_after = i;
    if (open.size() >= bucket_elems) {
      out.push_back(open);
      have = false;
    }
  }
  if (have) out.push_back(open);
  return out;
}

Ranges ParamStore::owned(const std::vector<Bucket>& buckets, int ranks, int rank) {
  Ranges out;
  for (const Bucket& b : buckets) {
    const std::int64_t c = b.size() / ranks;
    const std::int64_t lo = b.begin + rank * c;
    const std::int64_t hi = rank == ranks - 1 ? b.end : lo + c;
    if (hi > lo) out.push_back({lo, hi});
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::pair<Range, int>> ParamStore::tensor_owners(const std::vector<Bucket>& buckets, int ranks) const {
  std::vector<std::pair<Range, int>> out;
  const Ranges trainable = merged(Ranges(buckets.begin(), buckets.end()));
  for (const ParamInfo& t : tensors_) {
    const Range r{t.offset, t.offset + numel(t.shape)};
    if (total(intersect(trainable, {r})) == r.size()) out.push_back({r, -1});
  }
  std::vector<std::size_t> order(out.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return out[a].first.size() > out[b].first.size(); });
  std::vector<std::int64_t> load(static_cast<std::size_t>(ranks), 0);
  for (const std::size_t i : order) {
    const auto least = std::min_element(load.begin(), load.end()) - load.begin();  // (the first: the lowest rank)
    out[i].second = static_cast<int>(least);
    load[static_cast<std::size_t>(least)] += out[i].first.size();
  }
  return out;
}

}  // namespace hpctrain
