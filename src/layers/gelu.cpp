// gelu: element-wise activation (backend activation_forward/backward).
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class Gelu final : public Layer {
 public:
  const char* type() const override { return "gelu"; }
  Shape output_shape(const Shape& in) const override { return in; }
  void forward(const Tensor& x, Tensor& y) override { activation_forward(Activation::gelu, x, y); }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (dx.defined()) activation_backward(Activation::gelu, x, dy, dx);
  }
};
}  // namespace

void register_gelu(LayerRegistry& r) {
  r.add("gelu", [](const LayerArgs& a) {
    expect_no_args(a);
    return std::make_unique<Gelu>();
  });
}

}  // namespace hpctrain
