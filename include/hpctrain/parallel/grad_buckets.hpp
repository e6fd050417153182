// Gradient averaging overlapped with backward: the flat gradient buffer is cut
// into buckets of about [parallel] bucket_mb (ParamStore::buckets), in reverse layer order (the
// order backward finishes them), never splitting one layer's parameters. As
// soon as backward has finished every layer of a bucket, the bucket's
// allreduce (average over the data-parallel group) starts, non-blocking, and
// the rest of backward runs while the communicator's progress thread moves it.
//
// Sharded ([parallel] shard_optimizer, ZeRO stage 1): each bucket is reduce-scattered instead,
// rank r of D receiving the average of its block [begin + r*c, begin + (r+1)*c), c = floor(L/D);
// the bucket's last L - c*D (< D) elements are averaged by a small allreduce and belong to rank
// D-1 (ParamStore::owned). A rank updates only what it owns (owned()); gather_parameters() then all-gathers the
// blocks (and broadcasts the tails) so every rank holds the whole updated parameters.
//
// Staged ([parallel] shard = gradients, ZeRO-2: ParamStore::stage_gradients): backward writes each
// bucket into a staging buffer; layer_done comes after every backward (each micro-batch), and each
// bucket is reduce-scattered in its buffer as above; once its average is in, this rank's block is
// added into the packed gradient it keeps (copied on the step's first micro-batch). Before the
// next bucket's layers write into a buffer, the average it still holds is waited for; at the end
// of each backward every one is.
#pragma once

#include <cstdint>
#include <vector>

#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/model/model.hpp"

namespace hpctrain {

class GradientAverager {
 public:
  // `sharded`: reduce-scatter (see above) instead of allreduce. Sharded by whole tensors
  // ([parallel] shard_by = tensors): `tensor_owners` (ParamStore::tensor_owners) given; the buckets
  // are allreduced, each rank updates the tensors it owns, and each tensor is then broadcast from
  // its owner.
  // `staging`: the store whose staged gradients (ParamStore::stage_gradients) this averages;
  // `grads` is then its packed gradient. Staged needs `sharded` by elements.
  GradientAverager(Communicator& comm, Tensor grads, std::vector<Bucket> buckets, bool sharded = false,
                   std::vector<std::pair<Range, int>> tensor_owners = {}, const ParamStore* staging = nullptr);
  // Called by backward after each layer (on the step's last micro-batch; staged: on every one).
  void layer_done(std::size_t layer);
  bool staged() const { return !buffers_.empty(); }
  // Waits for every bucket; returns the seconds spent waiting (staged: this step's waits inside backward).
  double finish();
  // Seconds the same allreduces take back to back with nothing else running
  // (a scratch buffer; median of `repeats` after two warm-up rounds). Collective; 0 on one rank.
  double time_alone(int repeats = 8);
  const std::vector<Bucket>& buckets() const { return buckets_; }
  bool sharded() const { return sharded_; }
  // What this rank owns (sharded), else every bucket's range; sorted.
  const Ranges& owned() const { return owned_; }
  // Sharded: collective; every rank's updated blocks of `params` (laid out like the gradients)
  // reach every rank. Returns the seconds it took.
  double gather_parameters(Tensor& params);
  // Sharded, overlapped with the next forward: starts those all-gathers (by tensors: broadcasts),
  // the first layers' first, and returns at once; wait_gathered(end) before reading elements below `end`.
  void start_gather(Tensor& params);
  // Waits for the gathers of the buckets that begin below `end` (every one: -1); the seconds spent.
  double wait_gathered(std::int64_t end = -1);
  bool gathering() const { return !gathers_.empty(); }

 private:
  // Starts bucket b's average (allreduce, or reduce-scatter and tail allreduce) on its elements
  // at `first` (first[0] is element b.begin).
  void launch(const Bucket& b, float* first, std::vector<Request>& into);
  // Staged: waits for bucket b's average and adds (round 0: copies) this rank's block into grads_.
  void fold(std::size_t b);
  void launch_gather(const Bucket& b, float* first, std::vector<Request>& into);
  Communicator& comm_;
  Tensor grads_;
  std::vector<Bucket> buckets_;
  bool sharded_ = false;
  std::vector<std::pair<Range, int>> tensor_owners_;  // sharded by whole tensors: each tensor's owner
  Ranges owned_;
  std::vector<Request> pending_;  // (sharded: a bucket's reduce-scatter and its tail's allreduce)
  std::size_t launched_ = 0;      // buckets started this step (staged: this backward)
  // Staged: each bucket's staging buffer, this rank's block in it (bucket-relative) and where
  // that block goes in grads_; the averages in flight by bucket; the step's backwards so far.
  std::vector<Tensor> buffers_;
  std::vector<ParamStore::PackedBlock> blocks_;
  std::vector<std::vector<Request>> in_flight_;
  int rounds_ = 0;
  double staged_wait_s_ = 0;  // this step's waits for staged averages (finish() returns them)
  // Gathers in flight (start_gather): each bucket's first element and its requests, by that element.
  std::vector<std::pair<std::int64_t, std::vector<Request>>> gathers_;
};

}  // namespace hpctrain
