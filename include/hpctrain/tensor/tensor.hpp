// Tensors: a shape, an element type (f32 unless made otherwise: i32 for indices), a device and a
// buffer shared by views.
// Memory comes from an Allocator that counts what it holds (current and
// peak), so a rank's memory can be reported and capped; on Device::cuda it
// comes from the CUDA backend's caching pool (backend/cuda/device_api.hpp).
// upload/download move data between host memory and a tensor on any device.
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

// Its counts live apart from it, shared with the tensors it made: a tensor may outlive the
// allocator that made it (freeing then updates counts nobody reads), never a dangling reference.
class Allocator {
 public:
  explicit Allocator(Device device = Device::cpu) : device_(device) {}
  Allocator(const Allocator&) = delete;  // (a copy would share or split the counts: neither is meant)
  Allocator& operator=(const Allocator&) = delete;
  void* allocate(std::size_t bytes);
  // What frees `bytes` at `p` later: the memory back to its device and the count down (holds the
  // counts, not the allocator).
  std::shared_ptr<void> owner(void* p, std::size_t bytes);
  std::size_t in_use() const { return counts_->in_use; }
  std::size_t peak() const { return counts_->peak; }
  Device device() const { return device_; }
  // A cap on what this allocator may hold ([run] memory_budget; 0 = none): an allocation that
  // would pass it is a bad_input error on this rank naming both numbers.
  void set_limit(std::size_t bytes) { counts_->limit = bytes; }

 private:
  struct Counts {
    std::size_t in_use = 0, peak = 0, limit = 0;
  };
  Device device_;
  std::shared_ptr<Counts> counts_ = std::make_shared<Counts>();
};

class Tensor {
 public:
  Tensor() = default;
  // A new zero-filled tensor of `dtype` elements from `alloc`.
  static Tensor zeros(const Shape& shape, Allocator& alloc, DType dtype = DType::f32);
  // A non-owning f32 tensor over memory someone else keeps alive.
  static Tensor wrap(float* data, const Shape& shape, Device device = Device::cpu);
  static Tensor wrap(void* data, const Shape& shape, DType dtype, Device device);  // of another dtype

  const Shape& shape() const { return shape_; }
  std::int64_t numel() const { return hpctrain::numel(shape_); }
  std::int64_t rows() const { return shape_.empty() ? 1 : shape_[0]; }  // batch dimension
  std::int64_t cols() const { return rows() ? numel() / rows() : 0; }   // everything else
  DType dtype() const { return dtype_; }
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  Device device() const { return device_; }
  bool defined() const { return data_ != nullptr; }

  // The elements of an f32 tensor (an internal error for another dtype).
  float* data() { return data_as<float>(); }
  const float* data() const { return data_as<float>(); }
  // The elements as T, which must be the tensor's dtype (an internal error otherwise).
  template <typename T>
  T* data_as() {
    if (dtype_ != dtype_of<T>()) wrong_dtype(dtype_of<T>());
    return reinterpret_cast<T*>(data_);
  }
  template <typename T>
  const T* data_as() const {
    if (dtype_ != dtype_of<T>()) wrong_dtype(dtype_of<T>());
    return reinterpret_cast<const T*>(data_);
  }
  // The first byte, whatever the dtype (copies, communication).
  void* raw() { return data_; }
  const void* raw() const { return data_; }
  // A view of `shape` starting `offset` elements in (shares the buffer).
  Tensor view(std::int64_t offset, const Shape& shape) const;
  Tensor reshaped(const Shape& shape) const;  // same elements, another shape

 private:
  [[noreturn]] void wrong_dtype(DType asked) const;
  Shape shape_;
  DType dtype_ = DType::f32;
  Device device_ = Device::cpu;
  std::shared_ptr<void> owner_;  // keeps the buffer alive; null for wrapped memory
  unsigned char* data_ = nullptr;
};

// Host memory <-> tensor (any device): `bytes` from/to the tensor's first element. download returns
// when the data are on the host.
void upload(const void* host, std::size_t bytes, Tensor& dst);
void download(const Tensor& src, void* host, std::size_t bytes);
std::vector<float> to_host(const Tensor& t);
// The elements readable on the host: the tensor's own memory on the CPU (no copy), else a copy
// downloaded into `keep`.
const float* host_data(const Tensor& t, std::vector<float>& keep);
// A host copy reused across downloads (checkpoints). read(t): t's elements on the host: t's own
// memory on the CPU (no copy); from a GPU, downloaded into this buffer (grown when needed, never
// shrunk) on the copy stream, after the work queued so far. Its pages are pinned once per growth
// (cudaHostRegister), so repeated checkpoints neither allocate nor copy from pageable memory.
class HostBuffer {
 public:
  HostBuffer() = default;
  ~HostBuffer();
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  const float* read(const Tensor& t);
  bool pinned() const { return pinned_; }
  std::size_t capacity() const { return data_.size(); }

 private:
  std::vector<float> data_;
  bool pinned_ = false, warned_ = false;
};
// `buf` grown (never shrunk) to hold `shape` of `dtype` and viewed as that shape: layer scratch
// that lives across steps (made anew when the dtype changes).
Tensor grow(Tensor& buf, const Shape& shape, Allocator& alloc, DType dtype = DType::f32);

}  // namespace hpctrain
