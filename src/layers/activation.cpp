// relu, tanh, gelu (exact), relu2 (relu(x)^2, modded-nanogpt's MLP activation), gelu_tanh (GELU's
// tanh approximation, GPT-2's gelu_new): element-wise activations (backend activation_forward /
// activation_backward), one layer class registered under five names.
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class ActivationLayer final : public Layer {
 public:
  ActivationLayer(Activation f, const char* name) : f_(f), name_(name) {}
  const char* type() const override { return name_; }
  bool takes_position_blocks() const override { return true; }
  Shape output_shape(const Shape& in) const override { return in; }
  std::optional<Activation> activation() const override { return f_; }
  void forward(const Tensor& x, Tensor& y) override { activation_forward(f_, x, y); }
  // ReLU's gradient from its output (y > 0 exactly where x > 0): a convolution fused with it
  // writes only y (Layer::forward_fused). the others read their input.
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx) override {
    if (dx.defined()) activation_backward(f_, f_ == Activation::relu ? y : x, dy, dx);
  }

 private:
  Activation f_;
  const char* name_;
};
}  // namespace

void register_activations(LayerRegistry& r) {
  struct Kind {
    Activation f;
    const char* name;
    const char* usage;
  };
  for (const Kind& k : {Kind{Activation::relu, "relu", "relu: max(x, 0)"}, Kind{Activation::tanh, "tanh", "tanh"},
                        Kind{Activation::gelu, "gelu", "gelu: x * Phi(x) (erf form)"},
                        Kind{Activation::relu2, "relu2", "relu2: relu(x)^2"},
                        Kind{Activation::gelu_tanh, "gelu_tanh", "gelu_tanh: GELU's tanh approximation (GPT-2)"}}) {
    r.add(k.name, k.usage, [f = k.f, name = k.name](const LayerArgs& a) {
      expect_no_args(a);
      return std::make_unique<ActivationLayer>(f, name);
    });
  }
}

}  // namespace hpctrain
