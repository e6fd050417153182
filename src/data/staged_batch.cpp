// Implementation of data/staged_batch.hpp.
#include "hpctrain/data/staged_batch.hpp"

#include "hpctrain/backend/cuda/device_api.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain {

namespace {
// Copies `count` values of T into `buf` (grown as needed) on the device; returns the device copy.
template <typename T>
const T* to_device(const std::vector<T>& host, Tensor& buf, Allocator& alloc) {
  if (host.empty()) return nullptr;
  const std::size_t bytes = host.size() * sizeof(T);
  Tensor view = grow(buf, {static_cast<std::int64_t>((bytes + sizeof(float) - 1) / sizeof(float))}, alloc);
  cuda::stage_to_device(view.data(), host.data(), bytes);  // through pinned memory: the host runs ahead
  return reinterpret_cast<const T*>(view.data());
}
}  // namespace

void StagedBatch::stage(const Batch& b) {
  if (alloc_.device() == Device::cpu) {
    samples_ = b.samples.empty() ? nullptr : b.samples.data();
    ids_ = b.ids.empty() ? nullptr : b.ids.data();
    classes_ = b.classes.empty() ? nullptr : b.classes.data();
    targets_ = b.targets.empty() ? nullptr : b.targets.data();
    indices_ = b.indices.data();
    return;
  }
  samples_ = to_device(b.samples, samples_buf_, alloc_);
  ids_ = to_device(b.ids, ids_buf_, alloc_);
  classes_ = to_device(b.classes, classes_buf_, alloc_);
  targets_ = to_device(b.targets, targets_buf_, alloc_);
  indices_ = to_device(b.indices, indices_buf_, alloc_);
}

Tensor StagedBatch::input(std::int64_t first, const Shape& shape) const {
  const std::int64_t width = numel(shape) / shape[0];
  if (ids_) return Tensor::wrap(const_cast<std::int32_t*>(ids_) + first * width, shape, DType::i32, device());
  HPCT_CHECK(samples_, "StagedBatch::input: the batch has no samples");
  return Tensor::wrap(const_cast<float*>(samples_) + first * width, shape, device());
}

}  // namespace hpctrain
