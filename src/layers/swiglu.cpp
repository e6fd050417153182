// swiglu: Llama's gated MLP activation. Its input [..., 2F] is the gate and up projections side
// by side (one linear(2F) before it: Hugging Face's gate_proj rows, then up_proj's); its output
// [..., F] = silu(gate) * up. A Llama MLP is `linear(2F, bias=0) swiglu linear(C, bias=0)`.
// geglu: Gemma's, the same with GELU's tanh approximation for silu (gelu_pytorch_tanh).
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class GatedUnit final : public Layer {
 public:
  explicit GatedUnit(bool gelu) : gelu_(gelu) {}
  const char* type() const override { return gelu_ ? "geglu" : "swiglu"; }
  bool takes_position_blocks() const override { return true; }
  Shape output_shape(const Shape& in) const override {
    if (in.empty() || in.back() % 2 != 0)
      throw bad_input(std::string("[model] layers: ") + type() +
                      " needs an input whose last dimension is even (gate and up side by side), got " +
                      shape_string(in));
    Shape out = in;
    out.back() /= 2;
    return out;
  }
  void forward(const Tensor& x, Tensor& y) override { gelu_ ? geglu_forward(x, y) : swiglu_forward(x, y); }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (dx.defined()) gelu_ ? geglu_backward(x, dy, dx) : swiglu_backward(x, dy, dx);
  }

 private:
  bool gelu_;
};
}  // namespace

void register_swiglu(LayerRegistry& r) {
  r.add("swiglu", "swiglu: [T, 2F] -> [T, F] = silu(gate) * up, gate and up side by side", [](const LayerArgs& a) {
    expect_no_args(a);
    return std::make_unique<GatedUnit>(false);
  });
  r.add("geglu", "geglu: [T, 2F] -> [T, F] = gelu_tanh(gate) * up, gate and up side by side (Gemma's)",
        [](const LayerArgs& a) {
          expect_no_args(a);
          return std::make_unique<GatedUnit>(true);
        });
}

}  // namespace hpctrain
