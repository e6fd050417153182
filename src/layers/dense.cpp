// dense(n): y = x W^T + b, W [n, in] (PyTorch's Linear layout), b [n]. Followed by an
// activation layer, the model runs both through forward_fused (bias and activation in one pass).
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class Dense final : public Layer {
 public:
  explicit Dense(std::int64_t out) : out_(out) {}
  const char* type() const override { return "dense"; }
  Shape output_shape(const Shape& in) const override {
    if (in.size() != 1)
      throw bad_input("[model] layers: dense(" + std::to_string(out_) + ") needs a flat input, got " +
                      shape_string(in) + " (insert 'flatten' before it)");
    return {out_};
  }
  std::vector<ParamSpec> param_specs(const Shape& in) const override {
    return {{"weight", {out_, in[0]}, Init::he_normal, in[0], out_}, {"bias", {out_}, Init::zeros, in[0], out_}};
  }
  void forward(const Tensor& x, Tensor& y) override {
    gemm(false, true, 1.f, x, param(0), 0.f, y);
    add_bias(y, param(1));
  }
  bool fuses_activation(Activation) const override { return true; }
  void forward_fused(const Tensor& x, Tensor& y, Activation f, Tensor& z) override {
    gemm(false, true, 1.f, x, param(0), 0.f, y);
    add_bias_activation(y, param(1), f, z);
  }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    const float beta = accumulate_grads() ? 1.f : 0.f;
    gemm(true, false, 1.f, dy, x, beta, grad(0));  // dW (+)= dy^T x
    if (beta == 0.f) fill(grad(1), 0.f);
    accumulate_bias_grad(dy, grad(1));
    if (dx.defined()) gemm(false, false, 1.f, dy, param(0), 0.f, dx);  // dx = dy W
  }

 private:
  std::int64_t out_;
};
}  // namespace

void register_dense(LayerRegistry& r) {
  r.add("dense", "dense(n): n outputs from a flat input; weight [n, in], bias [n]",
        [](const LayerArgs& a) { return std::make_unique<Dense>(int_arg(a, 0, "the number of outputs")); });
}

}  // namespace hpctrain
