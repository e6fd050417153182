// Implementation of tensors and the counting allocator (tensor/tensor.hpp).
#include "hpctrain/tensor/tensor.hpp"

#include "hpctrain/tensor/step_scalars.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

#include "hpctrain/backend/cuda/device_api.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/log.hpp"

namespace hpctrain {

std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

std::string shape_string(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

void* Allocator::allocate(std::size_t bytes) {
  Counts& c = *counts_;
  if (c.limit > 0 && c.in_use + bytes > c.limit) {
    auto mib = [](std::size_t b) { return std::to_string((b + (1 << 20) - 1) >> 20) + " MiB"; };
    throw Error(ExitCode::bad_input, Scope::this_rank,
                "[run] memory_budget = " + mib(c.limit) + " exceeded: " + mib(bytes) + " more with " + mib(c.in_use) +
                    " held (parameters, gradients, optimizer state, activations); split the model over more ranks "
                    "with [parallel] pipeline_parallel, or use fewer micro-batch rows");
  }
  void* p = nullptr;
  if (device_ == Device::cuda) {
    p = cuda::device_allocate(bytes);
  } else {
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    p = std::aligned_alloc(64, rounded ? rounded : 64);
  }
  if (!p)
    throw Error(ExitCode::internal, Scope::this_rank, "out of memory allocating " + std::to_string(bytes) + " bytes");
  c.in_use += bytes;
  c.peak = std::max(c.peak, c.in_use);
  return p;
}

std::shared_ptr<void> Allocator::owner(void* p, std::size_t bytes) {
  return std::shared_ptr<void>(p, [counts = counts_, device = device_, bytes](void* q) {
    if (device == Device::cuda)
      cuda::device_release(q, bytes);
    else
      std::free(q);
    counts->in_use -= bytes;
  });
}

Tensor Tensor::zeros(const Shape& shape, Allocator& alloc, DType dtype) {
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.device_ = alloc.device();
  const std::size_t bytes = t.bytes();
  void* p = alloc.allocate(bytes);
  if (alloc.device() == Device::cuda)
    cuda::memset_zero(p, bytes);
  else
    std::memset(p, 0, bytes);
  t.owner_ = alloc.owner(p, bytes);
  t.data_ = static_cast<unsigned char*>(p);
  return t;
}

void Tensor::wrong_dtype(DType asked) const {
  throw Error(
      ExitCode::internal, Scope::this_rank,
      std::string("a ") + dtype_name(dtype_) + " tensor " + shape_string(shape_) + " read as " + dtype_name(asked));
}

Tensor Tensor::wrap(float* data, const Shape& shape, Device device) {
  Tensor t;
  t.shape_ = shape;
  t.device_ = device;
  t.data_ = reinterpret_cast<unsigned char*>(data);
  return t;
}

Tensor Tensor::wrap(void* data, const Shape& shape, DType dtype, Device device) {
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.device_ = device;
  t.data_ = static_cast<unsigned char*>(data);
  return t;
}

Tensor Tensor::view(std::int64_t offset, const Shape& shape) const {
  HPCT_CHECK(offset >= 0 && offset + hpctrain::numel(shape) <= numel(),
             "view " + shape_string(shape) + " at " + std::to_string(offset) + " outside " + shape_string(shape_));
  Tensor t = *this;
  t.shape_ = shape;
  t.data_ = data_ + static_cast<std::size_t>(offset) * dtype_size(dtype_);
  return t;
}

Tensor Tensor::reshaped(const Shape& shape) const {
  HPCT_CHECK(hpctrain::numel(shape) == numel(), "reshape " + shape_string(shape_) + " to " + shape_string(shape));
  return view(0, shape);
}

void upload(const void* host, std::size_t bytes, Tensor& dst) {
  HPCT_CHECK(bytes <= dst.bytes(), "upload of " + std::to_string(bytes) + " bytes into " + shape_string(dst.shape()));
  if (dst.device() == Device::cuda)
    cuda::memcpy_to_device(dst.raw(), host, bytes);
  else if (bytes)
    std::memcpy(dst.raw(), host, bytes);
}

void download(const Tensor& src, void* host, std::size_t bytes) {
  HPCT_CHECK(bytes <= src.bytes(), "download of " + std::to_string(bytes) + " bytes from " + shape_string(src.shape()));
  if (src.device() == Device::cuda)
    cuda::memcpy_to_host(host, src.raw(), bytes);
  else if (bytes)
    std::memcpy(host, src.raw(), bytes);
}

std::vector<float> to_host(const Tensor& t) {
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  download(t, out.data(), out.size() * sizeof(float));
  return out;
}

const float* host_data(const Tensor& t, std::vector<float>& keep) {
  if (t.device() == Device::cpu) return t.data();
  keep = to_host(t);
  return keep.data();
}

HostBuffer::~HostBuffer() {
  if (pinned_) cuda::unpin_host(data_.data());
}

const float* HostBuffer::read(const Tensor& t) {
  if (t.device() == Device::cpu) return t.data();
  const auto n = static_cast<std::size_t>(t.numel());
  if (n > data_.size()) {  // grow: unpinned first, the new pages pinned once
    if (pinned_) cuda::unpin_host(data_.data());
    pinned_ = false;
    data_.assign(n, 0.f);
    std::string why;
    pinned_ = cuda::pin_host(data_.data(), n * sizeof(float), &why);
    if (!pinned_ && !warned_) {
      warn("checkpoint downloads from pageable memory: pinning " + std::to_string(n * sizeof(float) >> 20) +
           " MiB of host memory failed (" + why + ")");
      warned_ = true;
    }
  }
  cuda::download_after_compute(data_.data(), t.data(), n * sizeof(float));
  return data_.data();
}

Tensor grow(Tensor& buf, const Shape& shape, Allocator& alloc, DType dtype) {
  const std::int64_t n = hpctrain::numel(shape);
  if (!buf.defined() || buf.numel() < n || buf.dtype() != dtype) buf = Tensor::zeros({n}, alloc, dtype);
  return buf.view(0, shape);
}

}  // namespace hpctrain

namespace hpctrain::step_scalars {

Tensor make(Allocator& alloc) { return Tensor::zeros({count}, alloc); }

Tensor slot(const Tensor& scalars, Slot s) { return scalars.view(s, {1}); }

std::vector<float> to_host(const Tensor& scalars) { return hpctrain::to_host(scalars); }

}  // namespace hpctrain::step_scalars
