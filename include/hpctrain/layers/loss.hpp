// Losses on the model's output: softmax cross-entropy for classes, and for regression targets
// mean squared error, mean absolute error or Huber's ([train] loss). Both calls add the sum of the
// row losses (and, for classes, the correct rows) to the step scalars (tensor/step_scalars.hpp) on
// the device. forward() is evaluation's: it writes nothing else (`work`, a buffer of the output's
// size the caller owns, is scratch for the losses that need one). forward_backward() is training's:
// it also writes dout = grad_scale * d(sum of row losses)/d(output), so the caller passes
// 1 / (rows in the whole step) to get the mean's gradient. Softmax cross-entropy turns each row's
// exponentials into its gradient while the row is in cache (llm.c's fused classifier): no
// [positions, vocabulary] buffer is held besides the logits and their gradient, and none is
// written and read back.
#pragma once

#include <cstdint>
#include <memory>

#include "hpctrain/backend/ops.hpp"  // RegressionLoss
#include "hpctrain/tensor/tensor.hpp"

namespace hpctrain {

struct Targets {
  const std::int32_t* classes = nullptr;  // classification: one per row, or per position of a sequence
  const float* values = nullptr;          // regression, rows x width
};

class Loss {
 public:
  virtual ~Loss() = default;
  virtual const char* name() const = 0;
  virtual void forward(const Tensor& out, const Targets& t, Tensor& scalars, Tensor& work) = 0;
  virtual void forward_backward(const Tensor& out, const Targets& t, float grad_scale, Tensor& scalars,
                                Tensor& dout) = 0;
};

// Softmax cross-entropy for classes (and tokens), else the regression loss `kind` (mse, mae or
// huber with `huber_delta`).
std::unique_ptr<Loss> make_loss(bool classification, RegressionLoss kind = RegressionLoss::mse,
                                float huber_delta = 1.f);
// Softmax cross-entropy over a vocabulary split among the ranks of `group` ([parallel]
// tensor_parallel: lm_head's logits are this rank's block, the columns from `vocab_offset` on of
// the whole vocabulary; Megatron's vocabulary-parallel cross-entropy): the rows' maxima, softmax
// sums and label logits are combined over the group (two sums, one max), so no rank holds a
// whole logit row. The same loss, gradient and correct rows (a tie with the label's logit counts
// as correct) as one rank's, in another summation order.
class Communicator;
std::unique_ptr<Loss> make_vocab_parallel_loss(Communicator& group, std::int64_t vocab_offset);

}  // namespace hpctrain
