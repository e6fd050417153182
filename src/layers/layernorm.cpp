// layernorm / layernorm(bias=0, eps=...): normalizes each position's last dimension,
// y = (x - mean) / sqrt(var + eps) * w + b (PyTorch's nn.LayerNorm over the last dimension; eps
// 1e-5), w initialized to ones and b to zeros; bias=0 leaves b out (nanoGPT's bias=False).
#include <string>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class LayerNorm final : public Layer {
 public:
  LayerNorm(bool bias, float eps) : bias_(bias), eps_(eps) {}
  const char* type() const override { return "layernorm"; }
  bool takes_position_blocks() const override { return true; }
  Shape output_shape(const Shape& in) const override {
    if (in.empty()) throw bad_input("[model] layers: layernorm needs an input with a last dimension");
    refuse_every_position(in);
    return in;
  }
  // Saved: each row's mean and inverse standard deviation.
  LayerMemory memory(const Shape& in, const MemoryQuery& q) const override {
    return {8.0 * static_cast<double>(q.rows * (numel(in) / in.back())), 0, 0};
  }
  std::vector<ParamSpec> param_specs(const Shape& in) const override {
    const std::int64_t c = in.back();
    std::vector<ParamSpec> p{{"weight", {c}, Init::ones, c, c}};
    if (bias_) p.push_back({"bias", {c}, Init::zeros, c, c});
    return p;
  }
  void forward(const Tensor& x, Tensor& y) override {
    const std::int64_t width = x.shape().back(), rows = x.numel() / width;
    Tensor mean = saved(0, {rows}, x.device()), rstd = saved(1, {rows}, x.device());
    layernorm_forward(x, param(0), bias_ ? param(1) : Tensor(), width, eps_, mean, rstd, y);
  }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (!accumulate_grads())
      for (Tensor& g : views().grads) fill(g, 0.f);
    Tensor none;
    const std::int64_t rows = x.numel() / x.shape().back();
    layernorm_backward(x, param(0), saved(0, {rows}, x.device()), saved(1, {rows}, x.device()), dy, x.shape().back(),
                       dx, grad(0), bias_ ? grad(1) : none);
  }

 private:
  bool bias_;
  float eps_;
};
}  // namespace

void register_layernorm(LayerRegistry& r) {
  r.add("layernorm", "layernorm(bias=1, eps=5): layer norm over the last axis, eps = 10^-eps", [](const LayerArgs& a) {
    expect_named_only(a, 0, {"bias", "eps"});
    // eps=k means 10^-k (integers only in layer arguments): the default 5 is PyTorch's 1e-5.
    const std::int64_t e = layer_named_int(a, "eps", 5, 1);
    return std::make_unique<LayerNorm>(layer_named_bool(a, "bias", true), std::stof("1e-" + std::to_string(e)));
  });
}

}  // namespace hpctrain
