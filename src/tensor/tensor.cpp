// Implementation of tensors and the counting allocator (tensor/tensor.hpp).
#include "hpctrain/tensor/tensor.hpp"

#include "hpctrain/tensor/step_scalars.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

#include "hpctrain/core/error.hpp"

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
  HPCT_CHECK(device_ == Device::cpu, "the CUDA allocator arrives with the GPU backend");
  if (limit_ > 0 && in_use_ + bytes > limit_) {
    auto mib = [](std::size_t b) { return std::to_string((b + (1 << 20) - 1) >> 20) + " MiB"; };
    throw Error(ExitCode::bad_input, Scope::this_rank,
                "[run] memory_budget = " + mib(limit_) + " exceeded: " + mib(bytes) + " more with " + mib(in_use_) +
                    " held (parameters, gradients, optimizer state, activations); split the model over more ranks "
                    "with [parallel] model_parallel, or use fewer micro-batch rows");
  }
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!p)
    throw Error(ExitCode::internal, Scope::this_rank, "out of memory allocating " + std::to_string(bytes) + " bytes");
  in_use_ += bytes;
  peak_ = std::max(peak_, in_use_);
  return p;
}

void Allocator::deallocate(void* p, std::size_t bytes) {
  std::free(p);
  in_use_ -= bytes;
}

Tensor Tensor::zeros(const Shape& shape, Allocator& alloc) {
  Tensor t;
  t.shape_ = shape;
  t.device_ = alloc.device();
  const std::size_t bytes = static_cast<std::size_t>(hpctrain::numel(shape)) * sizeof(float);
  void* p = alloc.allocate(bytes);
  std::memset(p, 0, bytes);
  t.owner_ = std::shared_ptr<void>(p, [&alloc, bytes](void* q) { alloc.deallocate(q, bytes); });
  t.data_ = static_cast<float*>(p);
  return t;
}

Tensor Tensor::wrap(float* data, const Shape& shape, Device device) {
  Tensor t;
  t.shape_ = shape;
  t.device_ = device;
  t.data_ = data;
  return t;
}

Tensor Tensor::view(std::int64_t offset, const Shape& shape) const {
  HPCT_CHECK(offset >= 0 && offset + hpctrain::numel(shape) <= numel(),
             "view " + shape_string(shape) + " at " + std::to_string(offset) + " outside " + shape_string(shape_));
  Tensor t = *this;
  t.shape_ = shape;
  t.data_ = data_ + offset;
  return t;
}

Tensor Tensor::reshaped(const Shape& shape) const {
  HPCT_CHECK(hpctrain::numel(shape) == numel(), "reshape " + shape_string(shape_) + " to " + shape_string(shape));
  return view(0, shape);
}

}  // namespace hpctrain

namespace hpctrain::step_scalars {

Tensor make(Allocator& alloc) { return Tensor::zeros({count}, alloc); }

Tensor slot(const Tensor& scalars, Slot s) { return scalars.view(s, {1}); }

std::vector<float> to_host(const Tensor& scalars) {
  // The CUDA backend (a later issue) copies device to host here; until then tensors live on the CPU.
  HPCT_CHECK(scalars.device() == Device::cpu, "step scalars on a device this build cannot read yet");
  return std::vector<float>(scalars.data(), scalars.data() + scalars.numel());
}

}  // namespace hpctrain::step_scalars
