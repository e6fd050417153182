// Implementation of bucketed, overlapped gradient averaging (parallel/grad_buckets.hpp).
#include "hpctrain/parallel/grad_buckets.hpp"

#include <algorithm>
#include <chrono>

#include "hpctrain/backend/cuda/device_api.hpp"
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain {

namespace {
// A bucket's shard geometry: block size c per rank, and the tail [begin + D*c, end) of rank D-1.
struct Blocks {
  std::int64_t c = 0, tail_begin = 0, tail = 0;
};
Blocks blocks_of(const Bucket& b, int ranks) {
  Blocks k;
  k.c = b.size() / ranks;
  k.tail_begin = b.begin + k.c * ranks;
  k.tail = b.end - k.tail_begin;
  return k;
}
}  // namespace

GradientAverager::GradientAverager(Communicator& comm, Tensor grads, std::vector<Bucket> buckets, bool sharded,
                                   std::vector<std::pair<Range, int>> tensor_owners, const ParamStore* staging)
    : comm_(comm), grads_(std::move(grads)), buckets_(std::move(buckets)), sharded_(sharded && comm.size() > 1) {
  if (sharded_ && !tensor_owners.empty()) {
    tensor_owners_ = std::move(tensor_owners);
    for (const auto& [r, owner] : tensor_owners_)
      if (owner == comm_.rank()) owned_.push_back(r);
  } else if (sharded_) {
    owned_ = ParamStore::owned(buckets_, comm_.size(), comm_.rank());
  } else {
    for (const Bucket& b : buckets_) owned_.push_back(b);
    std::sort(owned_.begin(), owned_.end());
  }
  if (!staging || !staging->staged()) return;
  HPCT_CHECK(sharded_ && tensor_owners_.empty(), "staged gradients need a sharded optimizer by elements");
  HPCT_CHECK(staging->owned() == owned_, "staged gradients owned by another rule than the averager's");
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    buffers_.push_back(staging->bucket_buffer(b));
    blocks_.push_back(staging->packed_block(b));
  }
  HPCT_CHECK(grads_.numel() >= total(owned_), "the packed gradient is smaller than what this rank owns");
  in_flight_.resize(buckets_.size());
}

void GradientAverager::launch(const Bucket& b, float* first, std::vector<Request>& into) {
  if (!sharded_ || !tensor_owners_.empty()) {  // (by tensors: every rank has every average, updates its own)
    into.push_back(comm_.iallreduce(first, first, static_cast<std::size_t>(b.size()), DType::f32, ReduceOp::avg));
    return;
  }
  const Blocks k = blocks_of(b, comm_.size());
  if (k.c > 0)  // in place: this rank's block of the bucket receives its average
    into.push_back(comm_.ireduce_scatter(first, first + comm_.rank() * k.c, static_cast<std::size_t>(k.c), DType::f32,
                                         ReduceOp::avg));
  if (k.tail > 0) {
    float* tail = first + (k.tail_begin - b.begin);
    into.push_back(comm_.iallreduce(tail, tail, static_cast<std::size_t>(k.tail), DType::f32, ReduceOp::avg));
  }
}

void GradientAverager::fold(std::size_t b) {
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& r : in_flight_[b]) r->wait();
  staged_wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  in_flight_[b].clear();
  const Range& k = blocks_[b].block;
  if (k.empty()) return;
  const Tensor src = buffers_[b].view(k.begin, {k.size()});
  Tensor dst = grads_.view(blocks_[b].packed_at, {k.size()});
  if (rounds_ == 0)
    copy(src, dst);
  else
    add(dst, src, dst);
}

void GradientAverager::launch_gather(const Bucket& b, float* first, std::vector<Request>& into) {
  const Blocks k = blocks_of(b, comm_.size());
  if (k.c > 0)
    into.push_back(comm_.iallgather(first + comm_.rank() * k.c, first, static_cast<std::size_t>(k.c), DType::f32));
  if (k.tail > 0)
    into.push_back(comm_.ibroadcast(first + (k.tail_begin - b.begin), static_cast<std::size_t>(k.tail), DType::f32,
                                    comm_.size() - 1));
}

void GradientAverager::layer_done(std::size_t layer) {
  if (!staged()) {
    for (const Bucket& b : buckets_)
      if (b.ready_after == layer) {
        launch(b, grads_.data() + b.begin, pending_);
        ++launched_;
      }
    return;
  }
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (buckets_[b].ready_after != layer) continue;
    launch(buckets_[b], buffers_[b].data(), in_flight_[b]);
    ++launched_;
    // The next bucket's layers write into its buffer next: what an earlier bucket left there is taken first.
    for (std::size_t e = 0; e < b && b + 1 < buckets_.size(); ++e)
      if (!in_flight_[e].empty() && buffers_[e].data() == buffers_[b + 1].data()) fold(e);
  }
  if (launched_ < buckets_.size()) return;
  for (std::size_t b = 0; b < buckets_.size(); ++b)  // the backward is done: the next writes every buffer again
    if (!in_flight_[b].empty()) fold(b);
  launched_ = 0;
  ++rounds_;
}

double GradientAverager::gather_parameters(Tensor& params) {
  start_gather(params);
  return wait_gathered();
}

void GradientAverager::start_gather(Tensor& params) {
  HPCT_CHECK(sharded_ && (staged() || params.numel() == grads_.numel()),
             "gather_parameters without a sharded optimizer");
  HPCT_CHECK(gathers_.empty(), "parameter gathers started twice");
  for (const auto& [r, owner] : tensor_owners_) {  // by tensors: each from its owner, in buffer order
    gathers_.emplace_back(r.begin, std::vector<Request>{});
    gathers_.back().second.push_back(
        comm_.ibroadcast(params.data() + r.begin, static_cast<std::size_t>(r.size()), DType::f32, owner));
  }
  if (!tensor_owners_.empty()) return;
  // The forward's order, first layers first: the buckets are made last layers first (ParamStore::buckets).
  for (auto b = buckets_.rbegin(); b != buckets_.rend(); ++b) {
    gathers_.emplace_back(b->begin, std::vector<Request>{});
    launch_gather(*b, params.data() + b->begin, gathers_.back().second);
  }
}

double GradientAverager::wait_gathered(std::int64_t end) {
  if (gathers_.empty()) return 0;
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t done = 0;
  for (; done < gathers_.size() && (end < 0 || gathers_[done].first < end); ++done)
    for (auto& r : gathers_[done].second) r->wait();
  gathers_.erase(gathers_.begin(), gathers_.begin() + static_cast<std::ptrdiff_t>(done));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double GradientAverager::finish() {
  if (staged()) {  // (every backward's averages were taken as it ended: the time waited for them then)
    HPCT_CHECK(launched_ == 0 && (rounds_ > 0 || buckets_.empty()),
               "staged gradients: a backward's buckets were not all launched");
    rounds_ = 0;
    const double waited = staged_wait_s_;
    staged_wait_s_ = 0;
    return waited;
  }
  HPCT_CHECK(launched_ == buckets_.size(),
             std::to_string(launched_) + " of " + std::to_string(buckets_.size()) + " gradient buckets launched");
  launched_ = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& r : pending_) r->wait();
  pending_.clear();
  // On a GPU the wait only orders the compute stream; the time measured is then the host's share.
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double GradientAverager::time_alone(int repeats) {
  // One rank sends nothing; the probe would only allocate a second gradient buffer on the device.
  if (comm_.size() == 1) return 0;
  Allocator alloc(grads_.device());  // the gradients' device: the same path as the real averages
  // (staged: the largest bucket's worth, each bucket averaged at its start, then the parameters' size for the gathers)
  std::int64_t widest = 0;
  for (const Bucket& b : buckets_) widest = std::max(widest, b.size());
  Tensor scratch = Tensor::zeros({staged() ? std::max<std::int64_t>(widest, 1) : grads_.numel()}, alloc);
  fill(scratch, 1.f);
  std::vector<double> times;
  for (int r = -2; r < repeats; ++r) {  // two warm-up rounds (first touch of the buffer, MPI's own set-up)
    comm_.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Request> reqs;
    auto wait_all = [&] {
      for (auto& q : reqs) q->wait();
      reqs.clear();
    };
    // (staged: one bucket at a time in the one scratch, as the two staging buffers allow at most two)
    for (const Bucket& b : buckets_) {
      launch(b, scratch.data() + (staged() ? 0 : b.begin), reqs);
      if (staged()) wait_all();
    }
    wait_all();
    if (sharded_) {  // and the parameters' all-gather (or broadcasts) that follows the update
      for (const auto& [t, owner] : tensor_owners_)
        reqs.push_back(
            comm_.ibroadcast(scratch.data() + t.begin, static_cast<std::size_t>(t.size()), DType::f32, owner));
      if (tensor_owners_.empty())
        for (const Bucket& b : buckets_) {
          launch_gather(b, scratch.data() + (staged() ? 0 : b.begin), reqs);
          if (staged()) wait_all();
        }
      wait_all();
    }
    if (grads_.device() == Device::cuda) cuda::synchronize();  // NCCL's wait only orders the compute stream
    if (r >= 0) times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace hpctrain
