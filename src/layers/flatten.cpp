// flatten: [batch, d1, d2, ...] -> [batch, d1*d2*...].
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class Flatten final : public Layer {
 public:
  const char* type() const override { return "flatten"; }
  Shape output_shape(const Shape& in) const override { return {numel(in)}; }
  void forward(const Tensor& x, Tensor& y) override { copy(x, y); }
  void backward(const Tensor&, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (dx.defined()) copy(dy, dx);
  }
};
}  // namespace

void register_flatten(LayerRegistry& r) {
  r.add("flatten", "flatten: [C, H, W] -> [C*H*W]", [](const LayerArgs& a) {
    expect_no_args(a);
    return std::make_unique<Flatten>();
  });
}

}  // namespace hpctrain
