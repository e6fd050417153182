// The parameters of [parallel] shard = full (ZeRO-3, FSDP-style): each data-parallel rank keeps
// only the parameters it owns, packed (ParamStore::stage_parameters; the ownership of the
// gradient buckets, parallel/grad_buckets.hpp), and a bucket's parameters are all-gathered into
// its window just before a layer of the bucket runs, forward or backward.
//
// Two windows are taken in turn (as the gradients' staging buffers are; a bucket holding a weight
// a later layer shares has its own, kept for the whole step). When a layer of bucket b is needed
// and b is not in its window, its gather is waited for (or started and waited for); then the
// gather of the next bucket in the pass's direction (forward: the layers after b's; backward:
// the layers before) starts into the other window, whose bucket the pass has left behind, and
// runs while b's layers compute. After forward the last two buckets are still in their windows,
// so backward starts on them without a gather. An update or a checkpoint loaded marks every
// window stale (changed()).
#pragma once

#include <cstdint>
#include <vector>

#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/core/precision.hpp"
#include "hpctrain/model/model.hpp"

namespace hpctrain {

class ParameterWindows final : public ParameterSource {
 public:
  // `store`: packed parameters and windows (staged with `buckets`, the averager's); `prefetch`:
  // start the next bucket's gather early (false: each gather when needed, for comparison).
  // `precision`: bf16/fp16 round each gathered window to the format (as the 16-bit copy of whole
  // parameters is rounded), so the layers compute with the values they would unsharded.
  ParameterWindows(Communicator& comm, ParamStore& store, bool prefetch, Precision precision);
  ~ParameterWindows() override;
  void need(std::size_t held, bool backward) override;
  void changed() override;
  // Seconds spent waiting for gathers, and gathers made, since the last call.
  double take_wait_seconds();
  std::int64_t gathers() const { return gathers_; }

 private:
  void start(std::size_t b);  // the gather of bucket b into its window (evicting the window's bucket)
  void wait(std::size_t b);
  std::ptrdiff_t next_in_window_order(std::size_t b, bool backward) const;
  Communicator& comm_;
  ParamStore& store_;
  bool prefetch_ = true;
  Precision precision_ = Precision::fp32;
  std::vector<Bucket> buckets_;
  std::vector<std::ptrdiff_t> bucket_of_layer_;  // per held layer: its bucket (-1: none)
  std::vector<const float*> slot_;  // per bucket: its window's buffer (buckets sharing one evict each other)
  std::vector<bool> resident_, rounded_;
  std::vector<std::vector<Request>> in_flight_;
  double wait_s_ = 0;
  std::int64_t gathers_ = 0;
};

}  // namespace hpctrain
