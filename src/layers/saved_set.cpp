// Implementation of the per-micro-batch saved tensors (layers/saved_set.hpp).
#include "hpctrain/layers/saved_set.hpp"

namespace hpctrain {

Tensor SavedSet::get(const void* owner, std::size_t k, const Shape& shape, Device device) {
  Tensor& buf = tensors_[{owner, k}];
  if (buf.defined() && buf.device() != device) buf = Tensor();
  return grow(buf, shape, device == Device::cuda ? device_ : host_);
}

std::size_t SavedSet::bytes() const {
  std::size_t n = 0;
  for (const auto& [key, t] : tensors_) n += static_cast<std::size_t>(t.numel()) * sizeof(float);
  return n;
}

}  // namespace hpctrain
