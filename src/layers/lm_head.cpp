// lm_head(V): a language model's output layer, [T, C] -> logits [T, V] = x W^T with W [V, C]
// shared with the model's token embedding (weight tying, as GPT-2 and nanoGPT): the model binds
// the embedding's table here and adds both layers' gradients into it. lm_head(V, tie=0): an
// untied head with its own W (initialized N(0, std^2)), the same as linear(V, bias=0).
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class LmHead final : public Layer {
 public:
  LmHead(std::int64_t vocab, bool tie, float std) : vocab_(vocab), tie_(tie), std_(std) {}
  const char* type() const override { return "lm_head"; }
  Shape output_shape(const Shape& in) const override {
    if (in.size() != 2)
      throw bad_input("[model] layers: lm_head(" + std::to_string(vocab_) + ") needs [T, C] activations, got " +
                      shape_string(in));
    return {in[0], vocab_};
  }
  std::vector<ParamSpec> param_specs(const Shape& in) const override {
    ParamSpec w{"weight", {vocab_, in[1]}, Init::normal, in[1], vocab_};
    w.std = std_;
    if (tie_) w.tie = "embedding";
    return {w};
  }
  void forward(const Tensor& x, Tensor& y) override {
    Tensor y2 = y.reshaped({y.numel() / vocab_, vocab_});
    gemm(false, true, 1.f, x.reshaped({y2.rows(), x.shape().back()}), params_[0], 0.f, y2);
  }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    const Tensor g = dy.reshaped({dy.numel() / vocab_, vocab_});
    const std::int64_t width = x.shape().back();
    gemm(true, false, 1.f, g, x.reshaped({g.rows(), width}), accumulate_grads() ? 1.f : 0.f, grads_[0]);
    if (!dx.defined()) return;
    Tensor dx2 = dx.reshaped({g.rows(), width});
    gemm(false, false, 1.f, g, params_[0], 0.f, dx2);
  }

 private:
  std::int64_t vocab_;
  bool tie_;
  float std_;
};
}  // namespace

void register_lm_head(LayerRegistry& r) {
  r.add("lm_head", [](const LayerArgs& a) {
    expect_named_only(a, 1, {"tie", "std"});
    return std::make_unique<LmHead>(int_arg(a, 0, "the vocabulary size"), layer_named_bool(a, "tie", true),
                                    layer_named_std(a, "std"));
  });
}

}  // namespace hpctrain
