// rmsnorm / rmsnorm(eps=...): normalizes each position's last dimension by its root mean square,
// y = x / sqrt(mean(x^2) + eps) * w (Llama's RMSNorm; eps = 10^-5 by default, Llama 3's
// rms_norm_eps), w initialized to ones; no bias. offset=1 (Gemma's): y = x / sqrt(mean(x^2) + eps)
// * (1 + w), w initialized to zeros (layers/norm_weight.hpp).
#include <string>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/norm_weight.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class RmsNorm final : public Layer {
 public:
  RmsNorm(float eps, bool offset) : eps_(eps), offset_(offset) {}
  const char* type() const override { return "rmsnorm"; }
  bool takes_position_blocks() const override { return true; }
  Shape output_shape(const Shape& in) const override {
    if (in.empty()) throw bad_input("[model] layers: rmsnorm needs an input with a last dimension");
    refuse_every_position(in);
    return in;
  }
  // Saved: each row's inverse root mean square; scratch with offset: 1 + w.
  LayerMemory memory(const Shape& in, const MemoryQuery& q) const override {
    return {4.0 * static_cast<double>(q.rows * (numel(in) / in.back())),
            offset_ ? MemoryQuery::temp(static_cast<double>(in.back())) : 0, 0};
  }
  std::vector<ParamSpec> param_specs(const Shape& in) const override {
    const std::int64_t c = in.back();
    return {{"weight", {c}, offset_ ? Init::zeros : Init::ones, c, c}};
  }
  void forward(const Tensor& x, Tensor& y) override {
    const std::int64_t width = x.shape().back(), rows = x.numel() / width;
    Tensor rstd = saved(0, {rows}, x.device());
    rmsnorm_forward(x, factor(x.device()), width, eps_, rstd, y);
  }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (!accumulate_grads())
      for (Tensor& g : views().grads) fill(g, 0.f);
    const std::int64_t rows = x.numel() / x.shape().back();
    rmsnorm_backward(x, factor(x.device()), saved(0, {rows}, x.device()), dy, x.shape().back(), dx, grad(0));
  }

 private:
  Tensor factor(Device dev) {
    return norm_factor(param(0), offset_, offset_ ? temp(0, param(0).shape(), dev) : Tensor());
  }
  float eps_;
  bool offset_;
};
}  // namespace

void register_rmsnorm(LayerRegistry& r) {
  r.add("rmsnorm",
        "rmsnorm(eps=5, offset=0): RMS norm over the last axis, eps = 10^-eps (or eps itself below 1), weight only "
        "(offset=1: 1 + weight, "
        "Gemma's)",
        [](const LayerArgs& a) {
          expect_named_only(a, 0, {"eps", "offset"});
          // eps=k means 10^-k (the default 5 is Llama 3's 1e-5); eps=E below 1 is E itself.
          return std::make_unique<RmsNorm>(layer_named_eps(a, "eps", 5), layer_named_bool(a, "offset", false));
        });
}

}  // namespace hpctrain
