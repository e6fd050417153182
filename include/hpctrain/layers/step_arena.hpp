// Scratch that lives for one layer call (im2col columns, attention's backward intermediates, a
// residual block's inner gradients): taken from one buffer in stack order and given back when the
// call returns (StepArena::Scope, opened by the model around every layer call and by a residual
// block around each inner call). The memory is then the deepest call's need, not the sum over
// layers, and it comes from the model's allocator, so it counts against [run] memory_budget and
// in the reported peak. A take past the buffer's end gets memory of its own; the buffer is
// regrown to the high-water mark when everything is given back, so after the first step nothing
// is allocated (CUDA graphs record the same addresses).
#pragma once

#include <cstddef>
#include <cstdint>

#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

class StepArena {
 public:
  explicit StepArena(Allocator& alloc) : alloc_(alloc) {}
  StepArena(const StepArena&) = delete;
  StepArena& operator=(const StepArena&) = delete;
  Device device() const { return alloc_.device(); }
  // `shape` on the allocator's device; its values are whatever the last user left.
  Tensor take(const Shape& shape);
  // Grows the buffer to `elems` now, while nothing is taken (the model's estimate of its deepest
  // call, Model::set_batch): without it the first step's calls grow it one after another, each
  // holding the last size and its overflow at once.
  void reserve(std::int64_t elems);
  std::int64_t high_water() const { return high_; }  // elements: the most taken at once
  static constexpr std::int64_t kAlign = 64;         // elements (256 bytes): what cuBLAS and vector loads like
  // The elements a take of `elems` uses: rounded up to kAlign (take, and estimates: Layer::memory).
  static std::int64_t aligned(std::int64_t elems) { return (elems + kAlign - 1) / kAlign * kAlign; }
  std::int64_t capacity() const { return capacity_; }

  // Gives back everything taken while it was open.
  class Scope {
   public:
    explicit Scope(StepArena* arena) : arena_(arena), mark_(arena ? arena->used_ : 0) {}
    ~Scope() {
      if (arena_) arena_->release(mark_);
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    StepArena* arena_;
    std::int64_t mark_;
  };

 private:
  void release(std::int64_t mark);
  Allocator& alloc_;
  Tensor buf_;
  std::int64_t capacity_ = 0, used_ = 0, high_ = 0;  // elements
};

}  // namespace hpctrain
