// What a forward pass keeps for its backward, beyond the model's activations: dropout masks,
// normalization statistics, attention's probabilities, max pooling's indices, a residual block's
// inner outputs. One SavedSet per micro-batch in flight (model/model.hpp): a pipeline stage keeps
// the sets its schedule needs instead of re-running forwards. Tensors are keyed by (layer, k),
// grown to fit and never shrunk, from an allocator per device (not counted against
// [run] memory_budget, like layer scratch).
#pragma once

#include <cstddef>
#include <map>
#include <utility>
#include <vector>

#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

class SavedSet {
 public:
  SavedSet() = default;
  SavedSet(const SavedSet&) = delete;
  SavedSet& operator=(const SavedSet&) = delete;
  // Saved tensor k of `owner` (a layer), viewed as `shape` on `device`: the same storage, and so
  // the same values, each time it is asked for with that shape until the set is reused.
  Tensor get(const void* owner, std::size_t k, const Shape& shape, Device device);

 private:
  Allocator host_{Device::cpu}, device_{Device::cuda};  // declared first: they outlive the tensors
  std::map<std::pair<const void*, std::size_t>, Tensor> tensors_;
};

}  // namespace hpctrain
