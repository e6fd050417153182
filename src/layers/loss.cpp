// Softmax cross-entropy and mean squared error (layers/loss.hpp).
#include "hpctrain/layers/loss.hpp"

#include "hpctrain/backend/ops.hpp"

namespace hpctrain {

namespace {
class SoftmaxCrossEntropy final : public Loss {
 public:
  explicit SoftmaxCrossEntropy(Allocator& a) : alloc_(a) {}
  const char* name() const override { return "softmax cross-entropy"; }
  void forward(const Tensor& out, const Targets& t, Tensor& scalars) override {
    probs_ = grow(probs_buf_, out.shape(), alloc_);  // stable address across batch sizes (CUDA graphs)
    softmax_cross_entropy(out, t.classes, probs_, scalars);
  }
  void backward(const Tensor&, const Targets& t, float grad_scale, Tensor& dout) override {
    softmax_cross_entropy_backward(probs_, t.classes, grad_scale, dout);
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
