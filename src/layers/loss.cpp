// Softmax cross-entropy and mean squared error (layers/loss.hpp).
#include "hpctrain/layers/loss.hpp"

#include "hpctrain/backend/ops.hpp"

namespace hpctrain {

namespace {
Tensor rows(const Tensor& t) {
  const std::int64_t classes = t.shape().back();
  return t.reshaped({t.numel() / classes, classes});
}

class SoftmaxCrossEntropy final : public Loss {
 public:
  explicit SoftmaxCrossEntropy(Allocator& a) : alloc_(a) {}
  const char* name() const override { return "softmax cross-entropy"; }
  // Logits [N, classes], or [N, T, classes] with N*T labels (a language model: every position
  // predicts the next token): the rows are the N*T positions.
  void forward(const Tensor& out, const Targets& t, Tensor& scalars) override {
    const Tensor logits = rows(out);
    probs_ = grow(probs_buf_, logits.shape(), alloc_);  // stable address across batch sizes (CUDA graphs)
    softmax_cross_entropy(logits, t.classes, probs_, scalars);
  }
  void backward(const Tensor&, const Targets& t, float grad_scale, Tensor& dout) override {
    Tensor d = rows(dout);
    softmax_cross_entropy_backward(probs_, t.classes, grad_scale, d);
  }

 private:
  Allocator& alloc_;
  Tensor probs_buf_, probs_;
};

class MeanSquaredError final : public Loss {
 public:
  const char* name() const override { return "mean squared error"; }
  // Row loss = sum_j (out - target)^2 / width; forward is their mean = the mean over all elements.
  void forward(const Tensor& out, const Targets& t, Tensor& scalars) override {
    mean_squared_error(out, t.values, scalars);
  }
  void backward(const Tensor& out, const Targets& t, float grad_scale, Tensor& dout) override {
    mean_squared_error_backward(out, t.values, grad_scale, dout);
  }
};
}  // namespace

std::unique_ptr<Loss> make_loss(bool classification, Allocator& alloc) {
  if (classification) return std::make_unique<SoftmaxCrossEntropy>(alloc);
  return std::make_unique<MeanSquaredError>();
}

}  // namespace hpctrain
