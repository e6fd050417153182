// Softmax cross-entropy and the regression losses (layers/loss.hpp).
#include "hpctrain/layers/loss.hpp"

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/core/error.hpp"

namespace hpctrain {

namespace {
Tensor rows(const Tensor& t) {
  const std::int64_t classes = t.shape().back();
  return t.reshaped({t.numel() / classes, classes});
}

class SoftmaxCrossEntropy final : public Loss {
 public:
  const char* name() const override { return "softmax cross-entropy"; }
  // Logits [N, classes], or [N, T, classes] with N*T labels (a language model: every position
  // predicts the next token): the rows are the N*T positions.
  void forward(const Tensor& out, const Targets& t, Tensor& scalars, Tensor&) override {
    softmax_cross_entropy(rows(out), t.classes, scalars, 0.f, nullptr);
  }
  void forward_backward(const Tensor& out, const Targets& t, float grad_scale, Tensor& scalars, Tensor& dout) override {
    HPCT_CHECK(dout.numel() == out.numel(), "softmax cross-entropy: the gradient buffer is not the logits' size");
    Tensor d = rows(dout);
    softmax_cross_entropy(rows(out), t.classes, scalars, grad_scale, &d);
  }
};

class VocabParallelCrossEntropy final : public Loss {
 public:
  VocabParallelCrossEntropy(Communicator& group, std::int64_t offset) : group_(group), offset_(offset) {}
  const char* name() const override { return "softmax cross-entropy (vocabulary-parallel)"; }
  void forward(const Tensor& out, const Targets& t, Tensor& scalars, Tensor& work) override {
    const Tensor logits = rows(out);
    const std::int64_t n = logits.rows();
    Allocator& alloc = logits.device() == Device::cuda ? device_ : host_;
    // (the probabilities: in `work`, or, for a forward-only model (no dout), a buffer of its own)
    Tensor probs = work.defined() ? rows(work) : grow(probs_, logits.shape(), alloc);
    HPCT_CHECK(probs.numel() == logits.numel(), "softmax cross-entropy: the work buffer is not the logits' size");
    Tensor mx = grow(max_, {n}, alloc), sums = grow(sums_, {n, 2}, alloc);
    row_max(logits, mx);
    group_.allreduce(mx.data(), mx.data(), static_cast<std::size_t>(n), DType::f32, ReduceOp::max);
    softmax_partial(logits, mx, t.classes, offset_, probs, sums);
    group_.allreduce(sums.data(), sums.data(), static_cast<std::size_t>(2 * n), DType::f32, ReduceOp::sum);
    softmax_finish(probs, mx, sums, scalars);
  }
  void forward_backward(const Tensor& out, const Targets& t, float grad_scale, Tensor& scalars, Tensor& dout) override {
    forward(out, t, scalars, dout);  // the probabilities into dout, then the gradient in place
    Tensor d = rows(dout);
    softmax_cross_entropy_backward(d, t.classes, offset_, grad_scale, d);  // (the label's one on its rank)
  }

 private:
  Communicator& group_;
  std::int64_t offset_;
  Allocator host_{Device::cpu}, device_{Device::cuda};
  Tensor max_, sums_, probs_;  // [rows], [rows, 2], [rows, classes] (without a work buffer): grown, kept
};

// Mean squared error, mean absolute error or Huber's loss (backend regression_loss): each row's
// loss is its mean over the targets, so forward's mean over rows is the mean over all elements.
class RegressionLossOf final : public Loss {
 public:
  RegressionLossOf(RegressionLoss kind, float delta) : kind_(kind), delta_(delta) {}
  const char* name() const override {
    return kind_ == RegressionLoss::mse   ? "mean squared error"
           : kind_ == RegressionLoss::mae ? "mean absolute error"
                                          : "Huber loss";
  }
  void forward(const Tensor& out, const Targets& t, Tensor& scalars, Tensor&) override {
    regression_loss(kind_, delta_, out, t.values, scalars);
  }
  void forward_backward(const Tensor& out, const Targets& t, float grad_scale, Tensor& scalars, Tensor& dout) override {
    regression_loss(kind_, delta_, out, t.values, scalars);
    regression_loss_backward(kind_, delta_, out, t.values, grad_scale, dout);
  }

 private:
  RegressionLoss kind_;
  float delta_;
};

}  // namespace

std::unique_ptr<Loss> make_vocab_parallel_loss(Communicator& group, std::int64_t vocab_offset) {
  return std::make_unique<VocabParallelCrossEntropy>(group, vocab_offset);
}

std::unique_ptr<Loss> make_loss(bool classification, RegressionLoss kind, float huber_delta) {
  if (classification) return std::make_unique<SoftmaxCrossEntropy>();
  return std::make_unique<RegressionLossOf>(kind, huber_delta);
}

}  // namespace hpctrain
