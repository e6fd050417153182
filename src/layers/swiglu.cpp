// swiglu: Llama's gated MLP activation. Its input [..., 2F] is the gate and up projections side
// by side (one linear(2F) before it: Hugging Face's gate_proj rows, then up_proj's); its output
// [..., F] = silu(gate) * up. A Llama MLP is `linear(2F, bias=0) swiglu linear(C, bias=0)`.
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class SwiGlu final : public Layer {
 public:
  const char* type() const override { return "swiglu"; }
  bool takes_position_blocks() const override { return true; }
  Shape output_shape(const Shape& in) const override {
    if (in.empty() || in.back() % 2 != 0)
      throw bad_input(
          "[model] layers: swiglu needs an input whose last dimension is even (gate and up side by side), "
          "got " +
          shape_string(in));
    Shape out = in;
    out.back() /= 2;
    return out;
  }
  void forward(const Tensor& x, Tensor& y) override { swiglu_forward(x, y); }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (dx.defined()) swiglu_backward(x, dy, dx);
  }
};
}  // namespace

void register_swiglu(LayerRegistry& r) {
  r.add("swiglu", "swiglu: [T, 2F] -> [T, F] = silu(gate) * up, gate and up side by side", [](const LayerArgs& a) {
    expect_no_args(a);
    return std::make_unique<SwiGlu>();
  });
}

}  // namespace hpctrain
