// Tensors: a shape, an element type, a device and a buffer shared by views.
// Memory comes from an Allocator that counts what it holds (current and
// peak), so a rank's memory can be reported and, later, capped and pooled.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hpctrain/core/dtype.hpp"

namespace hpctrain {

using Shape = std::vector<std::int64_t>;
std::int64_t numel(const Shape& s);
std::string shape_string(const Shape& s);  // "[256, 784]"

enum class Device { cpu, cuda };

class Allocator {
 public:
  explicit Allocator(Device device = Device::cpu) : device_(device) {}
  void* allocate(std::size_t bytes);
  void deallocate(void* p, std::size_t bytes);
  std::size_t in_use() const { return in_use_; }
  std::size_t peak() const { return peak_; }
  Device device() const { return device_; }
  // A cap on what this allocator may hold ([run] memory_budget; 0 = none): an allocation that
  // would pass it is a bad_input error on this rank naming both numbers.
  void set_limit(std::size_t bytes) { limit_ = bytes; }

 private:
  Device device_;
  std::size_t in_use_ = 0, peak_ = 0, limit_ = 0;
};

class Tensor {
 public:
  Tensor() = default;
  // A new zero-filled f32 tensor from `alloc`.
  static Tensor zeros(const Shape& shape, Allocator& alloc);
  // A non-owning tensor over memory someone else keeps alive.
  static Tensor wrap(float* data, const Shape& shape, Device device = Device::cpu);

  const Shape& shape() const { return shape_; }
  std::int64_t numel() const { return hpctrain::numel(shape_); }
  std::int64_t rows() const { return shape_.empty() ? 1 : shape_[0]; }  // batch dimension
  std::int64_t cols() const { return rows() ? numel() / rows() : 0; }   // everything else
  DType dtype() const { return DType::f32; }
  Device device() const { return device_; }
  bool defined() const { return data_ != nullptr; }

  float* data() { return data_; }
  const float* data() const { return data_; }
  // A view of `shape` starting `offset` elements in (shares the buffer).
  Tensor view(std::int64_t offset, const Shape& shape) const;
  Tensor reshaped(const Shape& shape) const;  // same elements, another shape

 private:
  Shape shape_;
  Device device_ = Device::cpu;
  std::shared_ptr<void> owner_;  // keeps the buffer alive; null for wrapped memory
  float* data_ = nullptr;
};

}  // namespace hpctrain
