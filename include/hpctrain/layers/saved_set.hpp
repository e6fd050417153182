// What a forward pass keeps for its backward, beyond the model's activations: dropout masks,
// normalization statistics, attention's probabilities, max pooling's indices, a residual block's
// inner outputs. One SavedSet per micro-batch in flight (model/model.hpp): a pipeline stage keeps
// the sets its schedule needs instead of re-running forwards; with [train] recompute = blocks a
// residual block's inner tensors go to a set of their own, emptied after each use. Tensors are
// keyed by (layer, k), grown to fit and never shrunk; clear() keeps their memory for the next
// user of the set (the next block's tensors have the same sizes). A model's sets take memory on
// its device from the model's allocator (counted against [run] memory_budget and in the peak);
// anything else (a layer run outside a model) from an allocator of the set's own.
#pragma once

#include <cstddef>
#include <map>
#include <utility>
#include <vector>

#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

class SavedSet {
 public:
  // `alloc`: where tensors on its device come from (null: the set's own allocators).
  explicit SavedSet(Allocator* alloc = nullptr) : alloc_(alloc) {}
  SavedSet(const SavedSet&) = delete;
  SavedSet& operator=(const SavedSet&) = delete;
  // Saved tensor k of `owner` (a layer), viewed as `shape` on `device`: the same storage, and so
  // the same values, each time it is asked for with that shape until the set is reused.
  Tensor get(const void* owner, std::size_t k, const Shape& shape, Device device, DType dtype = DType::f32);
  // Forgets every tensor (nothing may read them after this) and keeps their buffers for later gets.
  void clear();
  std::size_t bytes() const;  // what its tensors and spare buffers hold

 private:
  Allocator host_{Device::cpu}, device_{Device::cuda};  // declared first: they outlive the tensors
  Allocator* alloc_;
  std::map<std::pair<const void*, std::size_t>, Tensor> tensors_;
  std::vector<Tensor> spare_;  // buffers of cleared tensors
};

}  // namespace hpctrain
