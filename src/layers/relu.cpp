// relu: element-wise activation (backend activation_forward/backward).
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class Relu final : public Layer {
 public:
  const char* type() const override { return "relu"; }
  Shape output_shape(const Shape& in) const override { return in; }
  void forward(const Tensor& x, Tensor& y) override { activation_forward(Activation::relu, x, y); }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (dx.defined()) activation_backward(Activation::relu, x, dy, dx);
  }
};
}  // namespace

void register_relu(LayerRegistry& r) {
  r.add("relu", [](const LayerArgs& a) {
    expect_no_args(a);
    return std::make_unique<Relu>();
  });
}

}  // namespace hpctrain
