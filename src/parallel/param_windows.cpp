// Implementation of the parameter windows of shard = full (parallel/param_windows.hpp).
#include "hpctrain/parallel/param_windows.hpp"

#include <chrono>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain {

ParameterWindows::ParameterWindows(Communicator& comm, ParamStore& store, bool prefetch, Precision precision)
    : comm_(comm), store_(store), prefetch_(prefetch), precision_(precision), buckets_(store.staged_buckets()) {
  HPCT_CHECK(store.packed_parameters(), "parameter windows without packed parameters");
  bucket_of_layer_.assign(store.layers(), -1);
  for (std::size_t i = 0; i < store.layers(); ++i)
    for (std::size_t b = 0; b < buckets_.size(); ++b)
      if (!store.layer(i).empty() && buckets_[b].begin <= store.layer(i).begin && store.layer(i).end <= buckets_[b].end)
        bucket_of_layer_[i] = static_cast<std::ptrdiff_t>(b);
  for (std::size_t b = 0; b < buckets_.size(); ++b) slot_.push_back(store.window(b).data());
  resident_.assign(buckets_.size(), false);
  rounded_.assign(buckets_.size(), false);
  in_flight_.resize(buckets_.size());
}

ParameterWindows::~ParameterWindows() {
  for (std::size_t b = 0; b < buckets_.size(); ++b)
    for (auto& r : in_flight_[b]) r->wait();
}

void ParameterWindows::start(std::size_t b) {
  for (std::size_t e = 0; e < buckets_.size(); ++e)  // the window's bucket leaves it
    if (e != b && slot_[e] == slot_[b]) {
      wait(e);
      resident_[e] = false;
    }
  Tensor window = store_.window(b);
  const Bucket& k = buckets_[b];
  const int d = comm_.size();
  const std::int64_t c = k.size() / d, tail = k.size() - c * d;
  const std::int64_t at = store_.packed_block(b).packed_at;  // (rank D-1's block: c elements, then the tail)
  float* packed = store_.params().data() + at;
  if (c > 0) in_flight_[b].push_back(comm_.iallgather(packed, window.data(), static_cast<std::size_t>(c), DType::f32));
  if (tail > 0) {  // rank D-1's last elements: from its packed block, then to everyone
    Tensor end = window.view(c * d, {tail});
    if (comm_.rank() == d - 1) copy(store_.params().view(at + c, {tail}), end);
    in_flight_[b].push_back(comm_.ibroadcast(end.data(), static_cast<std::size_t>(tail), DType::f32, d - 1));
  }
  resident_[b] = true;
  rounded_[b] = false;
  ++gathers_;
}

void ParameterWindows::wait(std::size_t b) {
  if (in_flight_[b].empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& r : in_flight_[b]) r->wait();
  in_flight_[b].clear();
  wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::ptrdiff_t ParameterWindows::next_in_window_order(std::size_t b, bool backward) const {
  // Buckets are made last layers first: forward runs them from the last bucket down, backward up.
  const std::ptrdiff_t step = backward ? 1 : -1;
  for (auto n = static_cast<std::ptrdiff_t>(b) + step; n >= 0 && n < static_cast<std::ptrdiff_t>(buckets_.size());
       n += step)
    if (slot_[static_cast<std::size_t>(n)] != slot_[b]) return n;  // (the first in the other window)
  return -1;
}

void ParameterWindows::need(std::size_t held, bool backward) {
  const std::ptrdiff_t at = held < bucket_of_layer_.size() ? bucket_of_layer_[held] : -1;
  if (at < 0) return;  // (a layer without parameters)
  const auto b = static_cast<std::size_t>(at);
  if (!resident_[b]) start(b);
  wait(b);
  if (!rounded_[b] && precision_ != Precision::fp32) {  // (once per gather)
    Tensor w = store_.window(b);
    round_to_precision(w, precision_);
  }
  rounded_[b] = true;
  if (!prefetch_) return;
  const std::ptrdiff_t n = next_in_window_order(b, backward);
  if (n >= 0 && !resident_[static_cast<std::size_t>(n)]) start(static_cast<std::size_t>(n));
}

void ParameterWindows::changed() {
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    wait(b);
    resident_[b] = false;
  }
}

double ParameterWindows::take_wait_seconds() {
  const double s = wait_s_;
  wait_s_ = 0;
  return s;
}

}  // namespace hpctrain
