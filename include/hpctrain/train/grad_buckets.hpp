// Gradient averaging overlapped with backward: the flat gradient buffer is cut
// into buckets of about [parallel] bucket_mb, in reverse layer order (the
// order backward finishes them), never splitting one layer's parameters. As
// soon as backward has finished every layer of a bucket, the bucket's
// allreduce (average over the data-parallel group) starts, non-blocking, and
// the rest of backward runs while the communicator's progress thread moves it.
#pragma once

#include <cstdint>
#include <vector>

#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/model/model.hpp"

namespace hpctrain {

struct Bucket {
  std::int64_t begin = 0, end = 0;  // element range of the flat gradient buffer
  std::size_t ready_after = 0;      // launch once backward has finished this layer (the bucket's first)
};

// Pure: buckets of at least `bucket_elems` elements (the last may be smaller), last layers first;
// frozen layers ([train] freeze) are in none.
std::vector<Bucket> make_buckets(const Model& model, std::int64_t bucket_elems);

class GradientAverager {
 public:
  GradientAverager(Communicator& comm, Tensor grads, std::vector<Bucket> buckets);
  // Called by backward after each layer (on the step's last micro-batch).
  void layer_done(std::size_t layer);
  // Waits for every bucket; returns the seconds spent waiting.
  double finish();
  // Seconds the same allreduces take back to back with nothing else running
  // (a scratch buffer; median of `repeats` after two warm-up rounds). Collective.
  double time_alone(int repeats = 8);
  const std::vector<Bucket>& buckets() const { return buckets_; }

 private:
  Communicator& comm_;
  Tensor grads_;
  std::vector<Bucket> buckets_;
  std::vector<Request> pending_;
};

}  // namespace hpctrain
