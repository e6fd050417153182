// Implementation of parallel/reproducible_sums.hpp.
#include "hpctrain/parallel/reproducible_sums.hpp"

#include <cstring>
#include <limits>
#include <vector>

#include "hpctrain/backend/cuda/device_api.hpp"
#include "hpctrain/backend/exact_sum.hpp"
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/tensor/step_scalars.hpp"

namespace hpctrain {

namespace {
void zero(Tensor& t) {
  if (t.device() == Device::cuda)
    cuda::memset_zero(t.raw(), t.bytes());
  else
    std::memset(t.raw(), 0, t.bytes());
}
}  // namespace

ReproducibleSums::ReproducibleSums(Communicator& dp, std::int64_t elements, Allocator& alloc)
    : dp_(dp),
      elements_(elements),
      block_((elements + dp.size() - 1) / dp.size()),
      grads_(Tensor::zeros({block_ * dp.size(), 2}, alloc, DType::i64)),
      rounded_(dp.size() > 1 ? Tensor::zeros({block_ * dp.size()}, alloc) : Tensor()),
      scalars_(Tensor::zeros({3, 2}, alloc, DType::i64)),
      flag_(Tensor::zeros({1}, alloc, DType::i32)),
      scalar_flag_(Tensor::zeros({1}, alloc, DType::i32)),
      scalar_sum_(Tensor::zeros({3, 2}, alloc, DType::i64)) {}

void ReproducibleSums::add_gradient(const Tensor& part, std::int64_t offset) {
  HPCT_CHECK(offset >= 0 && offset + part.numel() <= elements_, "a chunk's gradient past the exact sums' end");
  Tensor sums = grads_.view(2 * offset, {part.numel(), 2});
  exact_accumulate(part, chunks_ == 0, sums, flag_);  // (the step's first chunk: no zeroing pass)
}

void ReproducibleSums::add_chunk(Tensor& scalars) {
  ++chunks_;
  Tensor interval = scalars.view(0, {3});  // loss_sum, correct, samples (tensor/step_scalars.hpp)
  exact_accumulate(interval, false, scalars_, scalar_flag_);
  fill(interval, 0.f);
}

void ReproducibleSums::finish_step(Tensor& grads) {
  if (dp_.size() == 1) {
    chunks_ = 0;
    exact_round(grads_.view(0, {elements_, 2}), flag_, grads);
    return zero(flag_);
  }
  copy(finish_step_gathered(), grads);
}

const Tensor& ReproducibleSums::finish_step_gathered() {
  HPCT_CHECK(dp_.size() > 1, "finish_step_gathered on one rank");
  chunks_ = 0;
  // Integers: the sum over the group is the same whatever order the communicator adds in. Each
  // rank sums and rounds its block of the elements, then the floats are all-gathered (a quarter of
  // an allreduce of the limbs' bytes); the blocks past the gradient's end are padding.
  dp_.allreduce(flag_.raw(), flag_.raw(), 1, DType::i32, ReduceOp::max);
  const std::int64_t first = dp_.rank() * block_;
  Tensor mine = grads_.view(2 * first, {block_, 2});
  dp_.reduce_scatter(grads_.raw(), mine.raw(), static_cast<std::size_t>(2 * block_), DType::i64, ReduceOp::sum);
  Tensor out = rounded_.view(first, {block_});
  exact_round(mine, flag_, out);
  dp_.allgather(out.raw(), rounded_.raw(), static_cast<std::size_t>(block_), DType::f32);
  zero(flag_);
  whole_ = rounded_.view(0, {elements_});
  return whole_;
}

IntervalSums ReproducibleSums::interval(bool group) {
  if (group) {  // (the sums into a copy: this rank's partial sums stay)
    dp_.allreduce(scalars_.raw(), scalar_sum_.raw(), 6, DType::i64, ReduceOp::sum);
    dp_.allreduce(scalar_flag_.raw(), scalar_flag_.raw(), 1, DType::i32, ReduceOp::max);
  }
  std::vector<std::int64_t> limbs(6);
  download(group ? scalar_sum_ : scalars_, limbs.data(), limbs.size() * sizeof(std::int64_t));
  std::int32_t refused = 0;
  download(scalar_flag_, &refused, sizeof refused);
  IntervalSums sums{exact::value_double(limbs[0], limbs[1]), exact::value_double(limbs[2], limbs[3]),
                    exact::value_double(limbs[4], limbs[5])};
  // (a chunk's loss sum not finite, or of 2^24 or more: the trainer stops on it as on any such loss)
  if (refused) sums.loss = std::numeric_limits<double>::quiet_NaN();
  return sums;
}

IntervalSums ReproducibleSums::take_interval() {
  const IntervalSums sums = interval(true);
  zero(scalars_);
  zero(scalar_flag_);
  return sums;
}

void ReproducibleSums::set_interval(const IntervalSums& sums) {
  std::vector<std::int64_t> limbs(6);
  exact::from_double(sums.loss, limbs[0], limbs[1]);
  exact::from_double(sums.correct, limbs[2], limbs[3]);
  exact::from_double(sums.samples, limbs[4], limbs[5]);
  upload(limbs.data(), limbs.size() * sizeof(std::int64_t), scalars_);
}

}  // namespace hpctrain
