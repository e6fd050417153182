// tanh: element-wise activation (backend activation_forward/backward).
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class Tanh final : public Layer {
 public:
  const char* type() const override { return "tanh"; }
  Shape output_shape(const Shape& in) const override { return in; }
  void forward(const Tensor& x, Tensor& y) override { activation_forward(Activation::tanh, x, y); }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (dx.defined()) activation_backward(Activation::tanh, x, dy, dx);
  }
};
}  // namespace

void register_tanh(LayerRegistry& r) {
  r.add("tanh", [](const LayerArgs& a) {
    expect_no_args(a);
    return std::make_unique<Tanh>();
  });
}

}  // namespace hpctrain
