// Implementation of the per-call scratch arena (layers/step_arena.hpp).
#include "hpctrain/layers/step_arena.hpp"

#include <algorithm>

namespace hpctrain {

Tensor StepArena::take(const Shape& shape) {
  const std::int64_t n = numel(shape), start = used_;
  used_ += aligned(n);
  high_ = std::max(high_, used_);
  if (used_ <= capacity_) return buf_.view(start, shape);
  return Tensor::zeros(shape, alloc_);  // past the end: freed by its user, the buffer regrown later
}

void StepArena::reserve(std::int64_t elems) {
  if (used_ != 0 || elems <= capacity_) return;
  buf_ = Tensor();
  buf_ = Tensor::zeros({elems}, alloc_);
  capacity_ = elems;
}

void StepArena::release(std::int64_t mark) {
  used_ = mark;
  reserve(high_);  // (nothing taken: regrown to the high-water mark, when past the buffer)
}

}  // namespace hpctrain
