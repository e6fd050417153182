// A batch's data where the model computes. On the CPU: the host batch itself
// (no copy). On a GPU: the samples, labels or targets and sample indices
// copied into device buffers that are reused from step to step (the backend
// operations read labels, targets and sample ids on the tensors' device).
#pragma once

#include <cstdint>

#include "hpctrain/data/reader.hpp"
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

class StagedBatch {
 public:
  explicit StagedBatch(Allocator& alloc) : alloc_(alloc) {}
  // Points at (CPU) or copies (GPU) `b`; the pointers below stay valid until the next stage().
  void stage(const Batch& b);
  Device device() const { return alloc_.device(); }
  // The model's input for rows [first, first + shape[0]) of the batch: its samples (float32), or
  // its token ids (int32) for a token dataset.
  Tensor input(std::int64_t first, const Shape& shape) const;
  const void* input_data() const { return ids_ ? static_cast<const void*>(ids_) : samples_; }
  const float* samples() const { return samples_; }
  const std::int32_t* ids() const { return ids_; }
  const std::int32_t* classes() const { return classes_; }  // null without labels
  const float* targets() const { return targets_; }         // null without targets
  const std::int64_t* indices() const { return indices_; }

 private:
  Allocator& alloc_;
  Tensor samples_buf_, ids_buf_, classes_buf_, targets_buf_, indices_buf_;  // device copies (GPU only)
  const float* samples_ = nullptr;
  const std::int32_t* ids_ = nullptr;
  const std::int32_t* classes_ = nullptr;
  const float* targets_ = nullptr;
  const std::int64_t* indices_ = nullptr;
};

}  // namespace hpctrain
