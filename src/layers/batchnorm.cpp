// batchnorm(momentum=10, eps=5): batch normalization per channel ([C, H, W]
// input, statistics over batch, height and width) or per feature ([F] input).
// Training: batch statistics, reduced over the data-parallel group when the
// model's StepContext carries a communicator ([train] sync_batchnorm), so the
// result equals batch norm on the whole global batch; running statistics
// updated PyTorch's way (momentum 0.1, unbiased variance). Evaluation: the
// running statistics. Parameters weight (gamma, ones) and bias (beta, zeros);
// buffers running_mean and running_var.
#include <cmath>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class BatchNorm final : public Layer {
 public:
  BatchNorm(float momentum, float eps) : momentum_(momentum), eps_(eps) {}
  const char* type() const override { return "batchnorm"; }
  Shape output_shape(const Shape& in) const override {
    if (in.size() != 1 && in.size() != 3)
      throw bad_input("[model] layers: batchnorm needs [features] or [channels, height, width] input, got " +
                      shape_string(in));
    return in;
  }
  void configure(const Shape& in) override {
    channels_ = in[0];
    plane_ = in.size() == 3 ? in[1] * in[2] : 1;
    running_mean_.assign(static_cast<std::size_t>(channels_), 0.f);
    running_var_.assign(static_cast<std::size_t>(channels_), 1.f);
  }
  std::vector<ParamSpec> param_specs(const Shape& in) const override {
    return {{"weight", {in[0]}, Init::ones, 1, 1}, {"bias", {in[0]}, Init::zeros, 1, 1}};
  }
  std::vector<std::pair<std::string, std::vector<float>*>> buffers() override {
    return {{"running_mean", &running_mean_}, {"running_var", &running_var_}};
  }

  void forward(const Tensor& x, Tensor& y) override {
    const std::int64_t n = x.rows(), c = channels_, p = plane_;
    const auto uc = static_cast<std::size_t>(c);
    mean_.assign(uc, 0.f);
    inv_std_.assign(uc, 0.f);
    if (context().training) {
      std::vector<double> sums(2 * uc + 1, 0.0);  // sum x, sum x^2 per channel, then the count
      for (std::int64_t i = 0; i < n; ++i)
        for (std::int64_t ch = 0; ch < c; ++ch) {
          const float* v = x.data() + (i * c + ch) * p;
          for (std::int64_t k = 0; k < p; ++k) {
            sums[static_cast<std::size_t>(ch)] += v[k];
            sums[uc + static_cast<std::size_t>(ch)] += static_cast<double>(v[k]) * v[k];
          }
        }
      sums[2 * uc] = static_cast<double>(n * p);
      if (context().stats_comm)
        context().stats_comm->allreduce(sums.data(), sums.data(), sums.size(), DType::f64, ReduceOp::sum);
      const double m = sums[2 * uc];
      for (std::size_t ch = 0; ch < uc; ++ch) {
        const double mean = sums[ch] / m, var = std::max(0.0, sums[uc + ch] / m - mean * mean);
        mean_[ch] = static_cast<float>(mean);
        inv_std_[ch] = static_cast<float>(1.0 / std::sqrt(var + eps_));
        if (context().recompute) continue;  // the same batch again (pipeline backward): statistics already taken
        running_mean_[ch] = (1 - momentum_) * running_mean_[ch] + momentum_ * static_cast<float>(mean);
        running_var_[ch] =
            (1 - momentum_) * running_var_[ch] + momentum_ * static_cast<float>(var * m / std::max(1.0, m - 1));
      }
    } else {
      for (std::size_t ch = 0; ch < uc; ++ch) {
        mean_[ch] = running_mean_[ch];
        inv_std_[ch] = 1.f / std::sqrt(running_var_[ch] + eps_);
      }
    }
    const float* gamma = params_[0].data();
    const float* beta = params_[1].data();
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t ch = 0; ch < c; ++ch) {
        const auto u = static_cast<std::size_t>(ch);
        const float* v = x.data() + (i * c + ch) * p;
        float* o = y.data() + (i * c + ch) * p;
        const float a = gamma[ch] * inv_std_[u], b = beta[ch] - a * mean_[u];
        for (std::int64_t k = 0; k < p; ++k) o[k] = a * v[k] + b;
      }
  }

  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    const std::int64_t n = x.rows(), c = channels_, p = plane_;
    const auto uc = static_cast<std::size_t>(c);
    std::vector<double> sums(2 * uc + 1, 0.0);  // sum dy, sum dy * xhat per channel, then the count
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t ch = 0; ch < c; ++ch) {
        const auto u = static_cast<std::size_t>(ch);
        const float* v = x.data() + (i * c + ch) * p;
        const float* g = dy.data() + (i * c + ch) * p;
        for (std::int64_t k = 0; k < p; ++k) {
          sums[u] += g[k];
          sums[uc + u] += static_cast<double>(g[k]) * (v[k] - mean_[u]) * inv_std_[u];
        }
      }
    sums[2 * uc] = static_cast<double>(n * p);
    // This rank's part of the parameter gradients (averaged over ranks later, like every gradient).
    float* dgamma = grads_[0].data();
    float* dbeta = grads_[1].data();
    for (std::size_t u = 0; u < uc; ++u) {
      dgamma[u] = (accumulate_grads() ? dgamma[u] : 0.f) + static_cast<float>(sums[uc + u]);
      dbeta[u] = (accumulate_grads() ? dbeta[u] : 0.f) + static_cast<float>(sums[u]);
    }
    if (!dx.defined()) return;
    if (context().training && context().stats_comm)
      context().stats_comm->allreduce(sums.data(), sums.data(), sums.size(), DType::f64, ReduceOp::sum);
    const double m = sums[2 * uc];
    const float* gamma = params_[0].data();
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t ch = 0; ch < c; ++ch) {
        const auto u = static_cast<std::size_t>(ch);
        const float* v = x.data() + (i * c + ch) * p;
        const float* g = dy.data() + (i * c + ch) * p;
        float* o = dx.data() + (i * c + ch) * p;
        const float scale = gamma[ch] * inv_std_[u];
        if (!context().training) {  // statistics are constants when evaluating
          for (std::int64_t k = 0; k < p; ++k) o[k] = scale * g[k];
          continue;
        }
        const auto mean_dy = static_cast<float>(sums[u] / m), mean_dyx = static_cast<float>(sums[uc + u] / m);
        for (std::int64_t k = 0; k < p; ++k) {
          const float xhat = (v[k] - mean_[u]) * inv_std_[u];
          o[k] = scale * (g[k] - mean_dy - xhat * mean_dyx);
        }
      }
  }

 private:
  float momentum_, eps_;
  std::int64_t channels_ = 0, plane_ = 1;
  std::vector<float> running_mean_, running_var_, mean_, inv_std_;
};
}  // namespace

void register_batchnorm(LayerRegistry& r) {
  r.add("batchnorm", [](const LayerArgs& a) {
    if (!a.positional.empty()) throw bad_input("[model] layers: " + a.text + " takes only momentum= and eps=");
    for (const auto& [k, v] : a.named)
      if (k != "momentum" && k != "eps")
        throw bad_input("[model] layers: " + a.text + ": unknown argument '" + k + "' (momentum, eps)");
    // momentum in percent (10 = 0.1), eps as a power of ten (5 = 1e-5).
    const auto momentum = static_cast<float>(layer_named_int(a, "momentum", 10, 0)) / 100.f;
    const auto eps = static_cast<float>(std::pow(10.0, -static_cast<double>(layer_named_int(a, "eps", 5, 1))));
    return std::make_unique<BatchNorm>(momentum, eps);
  });
}

}  // namespace hpctrain
