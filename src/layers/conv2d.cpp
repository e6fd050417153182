// conv(out, k, pad=p, stride=s): 2-D convolution, channels-first [C, H, W] ->
// [out, Ho, Wo], weight [out, C, k, k] (PyTorch's layout), bias [out].
// Two implementations, chosen by [kernels] conv when the layer is configured:
// - im2col + GEMM, per sample: im2col, then one GEMM (out x C*k*k by C*k*k x
//   Ho*Wo). Lowering the whole batch into one big GEMM was measured slower
//   here (1,925 vs 2,199 samples/s for the MNIST CNN): per-sample patches stay
//   in cache.
// - oneDNN (backend/cpu/onednn_conv.hpp), when built with it.
// - cuDNN (backend/cuda/cudnn_conv.hpp) for tensors on a GPU.
// On the CPU, auto takes oneDNN for more than one input channel, im2col + GEMM
// for one (tools/bench/conv_bench.cpp measured both; docs/performance.md "Speed against
// PyTorch"); on a GPU, auto takes cuDNN and im2col is im2col + cuBLAS.
#include "hpctrain/backend/cpu/onednn_conv.hpp"
#include "hpctrain/backend/cuda/cudnn_conv.hpp"
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class Conv2d final : public Layer {
 public:
  Conv2d(std::int64_t out, std::int64_t k, std::int64_t pad, std::int64_t stride, ConvImpl impl)
      : out_(out), k_(k), pad_(pad), stride_(stride), impl_(impl) {}
  const char* type() const override { return "conv"; }
  Shape output_shape(const Shape& in) const override {
    const Shape s = in.size() == 2 ? Shape{1, in[0], in[1]} : in;  // [H, W] images are one channel
    if (s.size() != 3)
      throw bad_input("[model] layers: conv needs [channels, height, width] input, got " + shape_string(in));
    const std::int64_t ho = (s[1] + 2 * pad_ - k_) / stride_ + 1, wo = (s[2] + 2 * pad_ - k_) / stride_ + 1;
    if (ho < 1 || wo < 1)
      throw bad_input("[model] layers: conv kernel " + std::to_string(k_) + " does not fit input " + shape_string(in));
    return {out_, ho, wo};
  }
  void configure(const Shape& in) override {
    in_ = in.size() == 2 ? Shape{1, in[0], in[1]} : in;
    out_shape_ = output_shape(in);
    const bool use_onednn =
        impl_ == ConvImpl::onednn || (impl_ == ConvImpl::auto_ && cpu::onednn_compiled() && in_[0] > 1);
    onednn_.reset();
    cudnn_.reset();
    geometry_.channels = in_[0];
    geometry_.height = in_[1];
    geometry_.width = in_[2];
    geometry_.out = out_;
    geometry_.kernel = k_;
    geometry_.pad = pad_;
    geometry_.stride = stride_;
    geometry_.out_height = out_shape_[1];
    geometry_.out_width = out_shape_[2];
    if (use_onednn) onednn_ = std::make_unique<cpu::OnednnConv>(geometry_);  // bad_input when not built with oneDNN
  }
  // Scratch: im2col's columns of one sample, and in backward their gradient (oneDNN and cuDNN
  // keep their workspaces themselves).
  LayerMemory memory(const Shape& in, const MemoryQuery& q) const override {
    const bool im2col = q.device == Device::cpu ? !onednn_ : impl_ == ConvImpl::im2col;
    const Shape out = output_shape(in);
    const double cols = static_cast<double>((in.size() == 2 ? 1 : in[0]) * k_ * k_ * out[1] * out[2]);
    return {0, im2col ? 2 * MemoryQuery::temp(cols) : 0, 0};
  }
  std::vector<ParamSpec> param_specs(const Shape& in) const override {
    const std::int64_t c = in.size() == 2 ? 1 : in[0];
    const std::int64_t fan_in = c * k_ * k_;
    return {{"weight", {out_, c, k_, k_}, Init::he_normal, fan_in, out_ * k_ * k_},
            {"bias", {out_}, Init::zeros, fan_in, out_}};
  }
  void forward(const Tensor& x, Tensor& y) override {
    if (CudnnConvPtr gpu = cudnn(x)) {
      gpu->forward(x.data(), param(0).data(), param(1).data(), y.data(), x.rows());
      return;
    }
    if (onednn_ && x.device() == Device::cpu) {
      onednn_->forward(x.data(), param(0).data(), param(1).data(), y.data(), x.rows());
      return;
    }
    im2col_forward(x, y, false);
  }
  // ReLU in the convolution's pass, z written once (y is not: ReLU's backward reads z). With
  // oneDNN: ReLU as the primitive's post-op. With im2col + GEMM (one input channel): each
  // sample's output gets its bias and ReLU while it is still in cache. On GPUs: the
  // convolution, then the activation.
  bool fuses_activation(Activation f) const override { return f == Activation::relu; }
  void forward_fused(const Tensor& x, Tensor& y, Activation f, Tensor& z) override {
    if (x.device() == Device::cpu && f == Activation::relu) {
      if (onednn_)
        onednn_->forward(x.data(), param(0).data(), param(1).data(), z.data(), x.rows(), true);
      else
        im2col_forward(x, z, true);
      return;
    }
    forward(x, y);
    activation_forward(f, y, z);
  }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (CudnnConvPtr gpu = cudnn(x)) {
      gpu->backward(x.data(), dy.data(), param(0).data(), grad(0).data(), grad(1).data(),
                    dx.defined() ? dx.data() : nullptr, x.rows(), accumulate_grads());
      return;
    }
    if (onednn_ && x.device() == Device::cpu) {
      onednn_->backward(x.data(), dy.data(), param(0).data(), grad(0).data(), grad(1).data(),
                        dx.defined() ? dx.data() : nullptr, x.rows(), accumulate_grads());
      return;
    }
    const std::int64_t c = in_[0], p = out_shape_[1] * out_shape_[2], ckk = c * k_ * k_;
    Tensor cols = temp(0, {ckk, p}, x.device()), dcols = temp(1, {ckk, p}, x.device());
    const Tensor w = param(0).reshaped({out_, ckk});
    Tensor dw = grad(0).reshaped({out_, ckk});
    if (!accumulate_grads()) {
      fill(grad(0), 0.f);
      fill(grad(1), 0.f);
    }
    if (dx.defined()) fill(dx, 0.f);
    for (std::int64_t n = 0; n < x.rows(); ++n) {
      const Tensor dyn = dy.view(n * dy.cols(), {out_, p});
      im2col(x.view(n * x.cols(), {c, in_[1], in_[2]}), c, in_[1], in_[2], k_, stride_, pad_, p, cols);
      gemm(false, true, 1.f, dyn, cols, 1.f, dw);  // dW += dy_n cols^T
      accumulate_channel_bias_grad(dyn, grad(1));
      if (dx.defined()) {
        gemm(true, false, 1.f, w, dyn, 0.f, dcols);  // dcols = W^T dy_n
        Tensor dxn = dx.view(n * dx.cols(), {c, in_[1], in_[2]});
        col2im(dcols, c, in_[1], in_[2], k_, stride_, pad_, p, dxn);
      }
    }
  }

 private:
  using CudnnConvPtr = cuda::CudnnConv*;
  // cuDNN for a tensor on a GPU unless [kernels] conv = im2col (made on first use); null otherwise.
  // im2col + GEMM, a sample at a time: its columns, the GEMM into `out`, the bias, and with `relu`
  // the ReLU in place (the sample's output still in cache).
  void im2col_forward(const Tensor& x, Tensor& out, bool relu) {
    const std::int64_t c = in_[0], p = out_shape_[1] * out_shape_[2], ckk = c * k_ * k_;
    Tensor cols = temp(0, {ckk, p}, x.device());
    const Tensor w = param(0).reshaped({out_, ckk});
    for (std::int64_t n = 0; n < x.rows(); ++n) {
      im2col(x.view(n * x.cols(), {c, in_[1], in_[2]}), c, in_[1], in_[2], k_, stride_, pad_, p, cols);
      Tensor yn = out.view(n * out.cols(), {out_, p});
      gemm(false, false, 1.f, w, cols, 0.f, yn);
      add_channel_bias(yn, param(1));
      if (relu) activation_forward(Activation::relu, yn, yn);
    }
  }
  CudnnConvPtr cudnn(const Tensor& x) {
    if (x.device() != Device::cuda || impl_ == ConvImpl::im2col) return nullptr;
    if (!cudnn_) cudnn_ = std::make_unique<cuda::CudnnConv>(geometry_);
    return cudnn_.get();
  }
  std::int64_t out_, k_, pad_, stride_;
  Shape in_, out_shape_;  // per sample, from configure()
  ConvImpl impl_;
  cpu::ConvGeometry geometry_;
  std::unique_ptr<cpu::OnednnConv> onednn_;  // set when this layer uses oneDNN
  std::unique_ptr<cuda::CudnnConv> cudnn_;   // set on the first GPU forward
};

}  // namespace

void register_conv2d(LayerRegistry& r, ConvImpl impl) {
  r.add("conv", "conv(out, k, pad=0, stride=1): 2-D convolution, k x k; weight [out, in, k, k]",
        [impl](const LayerArgs& a) {
          for (const auto& [k, v] : a.named)
            if (k != "pad" && k != "stride")
              throw bad_input("[model] layers: " + a.text + ": unknown argument '" + k + "' (pad, stride)");
          return std::make_unique<Conv2d>(int_arg(a, 0, "the number of output channels"),
                                          int_arg(a, 1, "the kernel size"), layer_named_int(a, "pad", 0, 0),
                                          layer_named_int(a, "stride", 1, 1), impl);
        });
}

}  // namespace hpctrain
