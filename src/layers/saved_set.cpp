// Implementation of the per-micro-batch saved tensors (layers/saved_set.hpp).
#include "hpctrain/layers/saved_set.hpp"

namespace hpctrain {

Tensor SavedSet::get(const void* owner, std::size_t k, const Shape& shape, Device device) {
  Tensor& buf = tensors_[{owner, k}];
  if (buf.defined() && buf.device() != device) buf = Tensor();
  return grow(buf, shape, device == Device::cuda ? device_ : host_);
}

}  // namespace hpctrain
