// [run] reproducible = layout (docs/reproducibility.md): every chunk of [train] micro_batch samples
// computes its gradient alone (its backward overwrites the gradient buffer), and the chunks'
// gradients and loss sums are added into fixed-point accumulators (backend exact_accumulate:
// integer additions, so their order does not matter), summed over the data-parallel group as
// integers and then rounded. A chunk's rows go through the same GEMMs whichever rank holds them,
// so the step's gradient, and with it the parameters, are the same bits whatever the number of
// data-parallel ranks and micro-batches.
#pragma once

#include <cstdint>

#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/io/checkpoint_file.hpp"  // IntervalSums
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

class ReproducibleSums {
 public:
  // `dp`: the data-parallel group, on the gradients' memory; `elements`: the whole gradient's size.
  ReproducibleSums(Communicator& dp, std::int64_t elements, Allocator& alloc);
  // A chunk's gradient of elements [offset, offset + part's): all of it at once, or bucket by
  // bucket as its backward finishes them (staged gradients); each element once per chunk.
  void add_gradient(const Tensor& part, std::int64_t offset = 0);
  // After a chunk's backward (and its add_gradient calls): its loss, correct and samples sums (the
  // scalars' first three slots, zeroed here for the next chunk).
  void add_chunk(Tensor& scalars);
  // The step's gradient: the chunks' of every rank, summed exactly, rounded into `grads` (NaN
  // everywhere if an element of a chunk was not finite or of magnitude 2^24 or more); then
  // zeroed for the next step.
  void finish_step(Tensor& grads);
  // The same for more than one rank, into a whole gradient held here (valid until the next step;
  // staged gradients copy their owned ranges from it).
  const Tensor& finish_step_gathered();
  // The log interval's sums: `group` = over the data-parallel group (the same bits on every
  // rank), else this rank's (a checkpoint's partial sums); take_* zeroes them. The loss is NaN
  // when a chunk's loss sum was refused (not finite, or of magnitude 2^24 or more).
  IntervalSums interval(bool group);
  IntervalSums take_interval();
  void set_interval(const IntervalSums& sums);  // this rank's (a checkpoint's, when resuming)

 private:
  Communicator& dp_;
  std::int64_t elements_, block_;  // the gradient's elements; each rank's block of them (rounded up)
  Tensor grads_;                   // int64 [block_ x ranks, 2]: the limbs of each element's sum
  Tensor rounded_;                 // f32 [block_ x ranks]: the blocks' rounded sums, gathered
  Tensor whole_;                   // its first elements_
  Tensor scalars_, flag_;          // int64 [3, 2], int32 [1] (a chunk's element refused)
  Tensor scalar_flag_;             // int32 [1]: a chunk's loss, correct or samples sum refused
  Tensor scalar_sum_;              // the group's interval sums (int64 [3, 2])
  int chunks_ = 0;                 // chunks added this step
};

}  // namespace hpctrain
