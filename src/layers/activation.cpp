// relu, tanh, gelu (exact), relu2 (relu(x)^2, modded-nanogpt's MLP activation), gelu_tanh (GELU's
// tanh approximation, GPT-2's gelu_new): element-wise activations (backend activation_forward /
// activation_backward), one layer class registered under five names. Beside them, with a
// number: leaky_relu(slope) (backend leaky_relu_forward) and scale(x) (y = x * input; CosmoFlow's
// output is tanh then scale(1.2)).
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class ActivationLayer final : public Layer {
 public:
  ActivationLayer(Activation f, const char* name) : f_(f), name_(name) {}
  const char* type() const override { return name_; }
  bool takes_position_blocks() const override { return true; }
  SpatialRole spatial_role(const Shape&, int) const override { return SpatialRole::slabs; }
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

class LeakyRelu final : public Layer {
 public:
  explicit LeakyRelu(float slope) : slope_(slope) {}
  const char* type() const override { return "leaky_relu"; }
  bool takes_position_blocks() const override { return true; }
  SpatialRole spatial_role(const Shape&, int) const override { return SpatialRole::slabs; }
  Shape output_shape(const Shape& in) const override { return in; }
  void forward(const Tensor& x, Tensor& y) override { leaky_relu_forward(x, slope_, y); }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (dx.defined()) leaky_relu_backward(x, dy, slope_, dx);
  }

 private:
  float slope_;
};

class Scale final : public Layer {
 public:
  explicit Scale(float factor) : factor_(factor) {}
  const char* type() const override { return "scale"; }
  bool takes_position_blocks() const override { return true; }
  SpatialRole spatial_role(const Shape&, int) const override { return SpatialRole::slabs; }
  Shape output_shape(const Shape& in) const override { return in; }
  void forward(const Tensor& x, Tensor& y) override {
    copy(x, y);
    scale(y, factor_);
  }
  void backward(const Tensor&, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (!dx.defined()) return;
    copy(dy, dx);
    scale(dx, factor_);
  }

 private:
  float factor_;
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
  r.add("leaky_relu", "leaky_relu(slope): x for x > 0, slope * x otherwise (e.g. leaky_relu(0.3))",
        [](const LayerArgs& a) {
          expect_named_only(a, 1, {});
          return std::make_unique<LeakyRelu>(static_cast<float>(number_arg(a, 0, "the negative slope")));
        });
  r.add("scale", "scale(x): the input times x (e.g. scale(1.2))", [](const LayerArgs& a) {
    expect_named_only(a, 1, {});
    return std::make_unique<Scale>(static_cast<float>(number_arg(a, 0, "the factor")));
  });
}

}  // namespace hpctrain
