// batchnorm(momentum=10, eps=5): batch normalization per channel ([C, H, W]
// input, statistics over batch, height and width) or per feature ([F] input).
// Training: batch statistics, reduced over the data-parallel group when the
// model's StepContext carries a communicator ([train] sync_batchnorm), so the
// result equals batch norm on the whole global batch; running statistics
// updated PyTorch's way (momentum 0.1, unbiased variance). Evaluation: the
// running statistics. Parameters weight (gamma, ones) and bias (beta, zeros);
// buffers running_mean and running_var.
// On a GPU, when no other rank's statistics are needed, cuDNN does the whole
// layer on the device (backend/cuda/cudnn_batchnorm.hpp) with device copies of
// the running statistics, synchronized with the host vectors for checkpoints
// (sync_buffers); otherwise the backend operations below, with per-channel
// sums through the host.
// [run] reproducible = layout (StepContext::chunk_statistics): the statistics
// are each chunk's own, and the running statistics are updated once per step
// with the mean of every chunk's (exact sums over the data-parallel group), so
// they are the same bits on every rank and in every layout.
#include <algorithm>
#include <cmath>

#include "hpctrain/backend/cuda/cudnn_batchnorm.hpp"
#include "hpctrain/backend/exact_sum.hpp"
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
  // Saved: the batch's mean and inverse standard deviation per channel (on a GPU on the device; the
  // host copy then comes from the saved set's own allocator).
  LayerMemory memory(const Shape& in, const MemoryQuery&) const override {
    return {8.0 * static_cast<double>(in[0]), 0, 0};
  }
  std::vector<ParamSpec> param_specs(const Shape& in) const override {
    return {{"weight", {in[0]}, Init::ones, 1, 1}, {"bias", {in[0]}, Init::zeros, 1, 1}};
  }
  std::vector<std::pair<std::string, std::vector<float>*>> buffers() override {
    return {{"running_mean", &running_mean_}, {"running_var", &running_var_}};
  }

  // The statistics and per-channel coefficients are small host vectors; the passes over the data are
  // backend operations (channel_moments, channel_affine, batchnorm_grad_sums, batchnorm_backward_data).
  void sync_buffers(bool to_host) override {
    if (!running_d_.defined()) return;
    if (to_host) {
      const auto c = static_cast<std::size_t>(channels_);
      download(running_d_, running_mean_.data(), c * sizeof(float));
      download(running_d_.view(channels_, {channels_}), running_var_.data(), c * sizeof(float));
    } else {
      device_current_ = false;  // the host vectors were written: upload them before the next use
    }
  }

  void forward(const Tensor& x, Tensor& y) override {
    on_device_ = x.device() == Device::cuda && !context().chunk_statistics &&
                 (!context().stats_comm || context().stats_comm->size() == 1);  // no statistics from other ranks
    if (on_device_) {
      forward_cudnn(x, y);
      return;
    }
    const std::int64_t c = channels_, p = plane_;
    const auto uc = static_cast<std::size_t>(c);
    mean_.assign(uc, 0.f);
    inv_std_.assign(uc, 0.f);
    if (context().training) {
      std::vector<double> sums(2 * uc + 1, 0.0);  // sum x, sum x^2 per channel, then the count
      channel_moments(x, c, p, sums);
      sums[2 * uc] = static_cast<double>(x.rows() * p);
      if (context().stats_comm)
        context().stats_comm->allreduce(sums.data(), sums.data(), sums.size(), DType::f64, ReduceOp::sum);
      const double m = sums[2 * uc];
      for (std::size_t ch = 0; ch < uc; ++ch) {
        const double mean = sums[ch] / m, var = std::max(0.0, sums[uc + ch] / m - mean * mean);
        mean_[ch] = static_cast<float>(mean);
        inv_std_[ch] = static_cast<float>(1.0 / std::sqrt(var + eps_));
        if (context().recompute) continue;  // the same batch again (pipeline backward): statistics already taken
        if (context().chunk_statistics) {
          add_chunk_statistic(ch, mean, var * m / std::max(1.0, m - 1));
          continue;
        }
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
    gamma_ = to_host(param(0));  // kept for backward (the parameters change only after it)
    const std::vector<float> beta = to_host(param(1));
    std::vector<float> a(uc), b(uc);
    for (std::size_t ch = 0; ch < uc; ++ch) {
      a[ch] = gamma_[ch] * inv_std_[ch];
      b[ch] = beta[ch] - a[ch] * mean_[ch];
    }
    channel_affine(x, a, b, p, y);
    Tensor kept = saved(1, {2 * c}, Device::cpu);  // the statistics, for this micro-batch's backward
    std::copy(mean_.begin(), mean_.end(), kept.data());
    std::copy(inv_std_.begin(), inv_std_.end(), kept.data() + c);
  }

  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (on_device_ && context().training) {
      Tensor dxx = dx.defined() ? dx : temp(0, x.shape(), x.device());  // cuDNN always writes dx
      const Tensor stats = saved(0, {2 * channels_}, x.device());
      cudnn_->backward(x.data(), dy.data(), dxx.data(), x.rows(), param(0).data(), grad(0).data(), grad(1).data(),
                       accumulate_grads(), stats.data(), stats.data() + channels_);
      return;
    }
    HPCT_CHECK(!on_device_, "batch norm backward in evaluation mode on a GPU");
    restore_statistics();
    const std::int64_t p = plane_;
    const auto uc = static_cast<std::size_t>(channels_);
    std::vector<double> sums(2 * uc + 1, 0.0);  // sum dy, sum dy * xhat per channel, then the count
    batchnorm_grad_sums(x, dy, mean_, inv_std_, p, sums);
    sums[2 * uc] = static_cast<double>(x.rows() * p);
    // This rank's part of the parameter gradients (averaged over ranks later, like every gradient).
    std::vector<float> dgamma(uc, 0.f), dbeta(uc, 0.f);
    if (accumulate_grads()) {
      dgamma = to_host(grad(0));
      dbeta = to_host(grad(1));
    }
    for (std::size_t u = 0; u < uc; ++u) {
      dgamma[u] += static_cast<float>(sums[uc + u]);
      dbeta[u] += static_cast<float>(sums[u]);
    }
    upload(dgamma.data(), uc * sizeof(float), grad(0));
    upload(dbeta.data(), uc * sizeof(float), grad(1));
    if (!dx.defined()) return;
    if (context().training && context().stats_comm)
      context().stats_comm->allreduce(sums.data(), sums.data(), sums.size(), DType::f64, ReduceOp::sum);
    const double m = sums[2 * uc];
    std::vector<float> scale(uc), mean_dy(uc, 0.f), mean_dyx(uc, 0.f);
    for (std::size_t u = 0; u < uc; ++u) {
      scale[u] = gamma_[u] * inv_std_[u];
      if (!context().training) continue;  // statistics are constants when evaluating: dx = scale * dy
      mean_dy[u] = static_cast<float>(sums[u] / m);
      mean_dyx[u] = static_cast<float>(sums[uc + u] / m);
    }
    batchnorm_backward_data(x, dy, mean_, inv_std_, scale, mean_dy, mean_dyx, p, dx);
  }

  void finish_statistics(Communicator& group) override {
    const auto uc = static_cast<std::size_t>(channels_);
    if (chunk_sums_.empty()) chunk_sums_.assign(4 * uc + 2, 0);  // (evaluation-only steps: zeros to add)
    // The limbs of every channel's mean and variance sums, then the chunks and the refusals.
    group.allreduce(chunk_sums_.data(), chunk_sums_.data(), chunk_sums_.size(), DType::i64, ReduceOp::sum);
    const double chunks = static_cast<double>(chunk_sums_[4 * uc]);
    const bool refused = chunk_sums_[4 * uc + 1] != 0;
    for (std::size_t ch = 0; chunks > 0 && ch < uc; ++ch) {
      const std::int64_t* s = &chunk_sums_[4 * ch];
      const float mean = refused ? NAN : static_cast<float>(exact::value_double(s[0], s[1]) / chunks);
      const float var = refused ? NAN : static_cast<float>(exact::value_double(s[2], s[3]) / chunks);
      running_mean_[ch] = (1 - momentum_) * running_mean_[ch] + momentum_ * mean;
      running_var_[ch] = (1 - momentum_) * running_var_[ch] + momentum_ * var;
    }
    std::fill(chunk_sums_.begin(), chunk_sums_.end(), 0);
  }

 private:
  // (chunk_statistics) Adds one chunk's statistic of channel `ch` to the step's exact sums: a
  // value of 2^24 or more (or not finite) makes the running statistics NaN.
  void add_chunk_statistic(std::size_t ch, double mean, double var) {
    const auto uc = static_cast<std::size_t>(channels_);
    if (chunk_sums_.empty()) chunk_sums_.assign(4 * uc + 2, 0);
    std::int64_t* s = &chunk_sums_[4 * ch];
    const bool ok = exact::add(static_cast<float>(mean), s[0], s[1]) && exact::add(static_cast<float>(var), s[2], s[3]);
    if (!ok) chunk_sums_[4 * uc + 1] = 1;
    if (ch + 1 == uc) ++chunk_sums_[4 * uc];  // (one chunk counted once, after its last channel)
  }

  // The statistics this micro-batch's forward used (another micro-batch's may have run since).
  void restore_statistics() {
    const Tensor kept = saved(1, {2 * channels_}, Device::cpu);
    mean_.assign(kept.data(), kept.data() + channels_);
    inv_std_.assign(kept.data() + channels_, kept.data() + 2 * channels_);
  }
  void forward_cudnn(const Tensor& x, Tensor& y) {
    const std::int64_t c = channels_;
    if (!cudnn_) cudnn_ = std::make_unique<cuda::CudnnBatchNorm>(c, plane_, static_cast<double>(eps_));
    if (!running_d_.defined() || !device_current_) {  // [running_mean | running_var] on the device
      running_d_ = scratch(running_d_, {2 * c}, x.device());
      upload(running_mean_.data(), static_cast<std::size_t>(c) * sizeof(float), running_d_);
      Tensor var = running_d_.view(c, {c});
      upload(running_var_.data(), static_cast<std::size_t>(c) * sizeof(float), var);
      device_current_ = true;
    }
    float* mean = running_d_.data();
    float* var = running_d_.data() + c;
    if (context().training) {
      Tensor stats = saved(0, {2 * c}, x.device());  // batch mean and inverse std for backward
      const double factor = context().recompute ? 0.0 : static_cast<double>(momentum_);
      cudnn_->forward_training(x.data(), y.data(), x.rows(), param(0).data(), param(1).data(), factor, mean, var,
                               stats.data(), stats.data() + c);
    } else {
      cudnn_->forward_inference(x.data(), y.data(), x.rows(), param(0).data(), param(1).data(), mean, var);
    }
  }

  float momentum_, eps_;
  std::int64_t channels_ = 0, plane_ = 1;
  std::vector<float> running_mean_, running_var_, mean_, inv_std_, gamma_;
  // (chunk_statistics) Per channel the limbs of its mean's and variance's sums over the step's
  // chunks, then the chunks and whether a value was refused (backend/exact_sum.hpp).
  std::vector<std::int64_t> chunk_sums_;
  // The cuDNN path: device running statistics (current unless a checkpoint wrote the host ones),
  // the batch's saved statistics, and dx when the caller needs none.
  std::unique_ptr<cuda::CudnnBatchNorm> cudnn_;
  Tensor running_d_;
  bool on_device_ = false, device_current_ = false;
};
}  // namespace

void register_batchnorm(LayerRegistry& r) {
  r.add("batchnorm", "batchnorm(momentum=10, eps=5): per channel or feature; momentum in percent, eps = 10^-eps",
        [](const LayerArgs& a) {
          if (!a.numbers.empty()) throw bad_input("[model] layers: " + a.text + " takes only momentum= and eps=");
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
