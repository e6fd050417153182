// Implementation of bucketed, overlapped gradient averaging (train/grad_buckets.hpp).
#include "hpctrain/train/grad_buckets.hpp"

#include <algorithm>
#include <chrono>

#include "hpctrain/backend/cuda/device_api.hpp"
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain {

std::vector<Bucket> make_buckets(const Model& model, std::int64_t bucket_elems) {
  std::vector<Bucket> out;
  Bucket open;
  bool have = false;
  for (std::size_t i = model.layers(); i-- > 0;) {
    const auto [begin, end] = model.layer_param_range(i);
    if (begin == end) continue;
    if (model.frozen(i)) {  // no gradient to average: the bucket ends here, the next starts after it
      if (have) out.push_back(open);
      have = false;
      continue;
    }
    if (!have) {
      open.end = end;
      have = true;
    }
    open.begin = begin;
    open.ready_after = i;
    if (open.end - open.begin >= bucket_elems) {
      out.push_back(open);
      have = false;
    }
  }
  if (have) out.push_back(open);
  return out;
}

GradientAverager::GradientAverager(Communicator& comm, Tensor grads, std::vector<Bucket> buckets)
    : comm_(comm), grads_(std::move(grads)), buckets_(std::move(buckets)) {}

void GradientAverager::layer_done(std::size_t layer) {
  for (const Bucket& b : buckets_)
    if (b.ready_after == layer)
      pending_.push_back(comm_.iallreduce(grads_.data() + b.begin, grads_.data() + b.begin,
                                          static_cast<std::size_t>(b.end - b.begin), DType::f32, ReduceOp::avg));
}

double GradientAverager::finish() {
  HPCT_CHECK(pending_.size() == buckets_.size(),
             std::to_string(pending_.size()) + " of " + std::to_string(buckets_.size()) + " gradient buckets launched");
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& r : pending_) r->wait();
  pending_.clear();
  // On a GPU the wait only orders the compute stream; the time measured is then the host's share.
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double GradientAverager::time_alone(int repeats) {
  Allocator alloc(grads_.device());  // the gradients' device: the same path as the real averages
  Tensor scratch = Tensor::zeros({grads_.numel()}, alloc);
  fill(scratch, 1.f);
  std::vector<double> times;
  for (int r = -2; r < repeats; ++r) {  // two warm-up rounds (first touch of the buffer, MPI's own set-up)
    comm_.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Request> reqs;
    for (const Bucket& b : buckets_)
      reqs.push_back(comm_.iallreduce(scratch.data() + b.begin, scratch.data() + b.begin,
                                      static_cast<std::size_t>(b.end - b.begin), DType::f32, ReduceOp::avg));
    for (auto& q : reqs) q->wait();
    if (grads_.device() == Device::cuda) cuda::synchronize();  // NCCL's wait only orders the compute stream
    if (r >= 0) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace hpctrain
