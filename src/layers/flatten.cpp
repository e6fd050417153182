// flatten: [batch, d1, d2, ...] -> [batch, d1*d2*...]. With [parallel] spatial_parallel
// (layers/spatial.hpp) its input is a volume's depth slab [C, D/S, H, W]: it gathers the slabs, and
// its output is the whole volume's, flattened (the same on every rank of the spatial group).
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class Flatten final : public Layer {
 public:
  const char* type() const override { return "flatten"; }
  SpatialRole spatial_role(const Shape& slab, int) const override {
    return slab.size() == 4 ? SpatialRole::gathers : SpatialRole::none;
  }
  Shape output_shape(const Shape& in) const override { return {numel(in) * (spatial().on() ? spatial().size : 1)}; }
  void forward(const Tensor& x, Tensor& y) override {
    if (!spatial().on()) return copy(x, y);
    const Shape& s = x.shape();  // [rows, C, D/S, H, W]: gathered straight into y
    Tensor gathered = temp(0, {spatial().size, x.numel()}, x.device());
    gather_slabs(sp_comm(), x, s[2], s[3] * s[4], gathered, y);
  }
  void backward(const Tensor&, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (!dx.defined()) return;
    if (!spatial().on()) return copy(dy, dx);
    slab_gradient(dy, dx);
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
