// Implementation of the per-micro-batch saved tensors (layers/saved_set.hpp).
#include "hpctrain/layers/saved_set.hpp"

namespace hpctrain {

Tensor SavedSet::get(const void* owner, std::size_t k, const Shape& shape, Device device, DType dtype) {
  const auto key = std::make_pair(owner, k);
  auto it = tensors_.find(key);
  if (it == tensors_.end()) {  // a new tensor: the smallest spare buffer that holds it, if any
    const std::int64_t n = numel(shape);
    auto best = spare_.end();
    for (auto s = spare_.begin(); s != spare_.end(); ++s)
      if (s->device() == device && s->dtype() == dtype && s->numel() >= n &&
          (best == spare_.end() || s->numel() < best->numel()))
        best = s;
    Tensor buf;
    if (best != spare_.end()) {
      buf = *best;
      spare_.erase(best);
    }
    it = tensors_.emplace(key, buf).first;
  }
  Tensor& buf = it->second;
  if (buf.defined() && buf.device() != device) buf = Tensor();
  if (alloc_ && alloc_->device() == device) return grow(buf, shape, *alloc_, dtype);
  return grow(buf, shape, device == Device::cuda ? device_ : host_, dtype);
}

std::size_t SavedSet::bytes() const {
  std::size_t n = 0;
  for (const auto& entry : tensors_) n += entry.second.defined() ? entry.second.bytes() : 0;
  for (const Tensor& t : spare_) n += t.bytes();
  return n;
}

void SavedSet::clear() {
  for (auto& entry : tensors_)
    if (entry.second.defined()) spare_.push_back(entry.second.view(0, {entry.second.numel()}));
  tensors_.clear();
}

}  // namespace hpctrain
