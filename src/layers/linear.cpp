// linear(n) / linear(n, bias=0, std=0.02): a linear map of the last dimension, [..., C] ->
// [..., n], y = x W^T + b with W [n, C] (PyTorch's nn.Linear applied to every position of a
// sequence), W initialized N(0, std^2) as GPT-2 does and b to zeros; bias=0 leaves b out. Unlike
// dense(n), which needs a flat input, it keeps the leading dimensions.
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
// [rows, d1, ..., dk] as [rows * d1 * ... * dk-1, dk].
Tensor as_matrix(const Tensor& t) {
  const std::int64_t last = t.shape().back();
  return t.reshaped({t.numel() / last, last});
}

class Linear final : public Layer {
 public:
  Linear(std::int64_t out, bool bias, float std) : out_(out), bias_(bias), std_(std) {}
  const char* type() const override { return "linear"; }
  Shape output_shape(const Shape& in) const override {
    if (in.empty()) throw bad_input("[model] layers: linear(" + std::to_string(out_) + ") needs a non-scalar input");
    Shape s = in;
    s.back() = out_;
    return s;
  }
  std::vector<ParamSpec> param_specs(const Shape& in) const override {
    ParamSpec w{"weight", {out_, in.back()}, Init::normal, in.back(), out_};
    w.std = std_;
    std::vector<ParamSpec> p{w};
    if (bias_) p.push_back({"bias", {out_}, Init::zeros, in.back(), out_});
    return p;
  }
  void forward(const Tensor& x, Tensor& y) override {
    Tensor y2 = as_matrix(y);
    gemm(false, true, 1.f, as_matrix(x), param(0), 0.f, y2);
    if (bias_) add_bias(y2, param(1));
  }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    const float beta = accumulate_grads() ? 1.f : 0.f;
    const Tensor g = as_matrix(dy);
    gemm(true, false, 1.f, g, as_matrix(x), beta, grad(0));  // dW (+)= dy^T x
    if (bias_) {
      if (beta == 0.f) fill(grad(1), 0.f);
      accumulate_bias_grad(g, grad(1));
    }
    if (!dx.defined()) return;
    Tensor dx2 = as_matrix(dx);
    gemm(false, false, 1.f, g, param(0), 0.f, dx2);  // dx = dy W
  }

 private:
  std::int64_t out_;
  bool bias_;
  float std_;
};
}  // namespace

void register_linear(LayerRegistry& r) {
  r.add("linear", "linear(n, bias=1, std=0.02): n outputs for every position of [T, C] (or a flat input)",
        [](const LayerArgs& a) {
          expect_named_only(a, 1, {"bias", "std"});
          return std::make_unique<Linear>(int_arg(a, 0, "the number of outputs"), layer_named_bool(a, "bias", true),
                                          layer_named_std(a, "std"));
        });
}

}  // namespace hpctrain
