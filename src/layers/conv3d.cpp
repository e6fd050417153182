// conv3d(out, k, pad=p|same, stride=s): 3-D convolution of volumes, channels-first
// [C, D, H, W] -> [out, Do, Ho, Wo], weight [out, C, k, k, k] (PyTorch's Conv3d layout), bias
// [out]. pad=same keeps the size (stride 1, as PyTorch's padding='same'): k - 1 in all, the odd
// one after, so an even kernel pads 0 before and 1 after (TensorFlow's 'same', which MLPerf's
// CosmoFlow uses). Three implementations:
// - oneDNN on the CPU (backend/cpu/onednn_conv.hpp, asymmetric padding native);
// - the direct loops (backend/cpu/conv3d_direct.hpp) on the CPU without oneDNN or with
//   [kernels] conv = im2col (the reference in the tests);
// - cuDNN's N-d convolution on a GPU, which pads symmetrically: an asymmetric padding is made by
//   copying the input into a padded box first (backend shift_volume) and cropping the input
//   gradient back.
#include "hpctrain/backend/cpu/conv3d_direct.hpp"
#include "hpctrain/backend/cpu/onednn_conv.hpp"
#include "hpctrain/backend/cuda/cudnn_conv.hpp"
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class Conv3d final : public Layer {
 public:
  // pad < 0: 'same'.
  Conv3d(std::int64_t out, std::int64_t k, std::int64_t pad, std::int64_t stride, ConvImpl impl)
      : out_(out), k_(k), pad_(pad), stride_(stride), impl_(impl) {}
  const char* type() const override { return "conv3d"; }
  Shape output_shape(const Shape& in) const override {
    if (in.size() != 4)
      throw bad_input("[model] layers: conv3d needs [channels, depth, height, width] input, got " + shape_string(in));
    const std::int64_t before = before_pad(), after = after_pad();
    Shape out{out_};
    for (std::size_t a = 1; a < 4; ++a) {
      const std::int64_t o = (in[a] + before + after - k_) / stride_ + 1;
      if (in[a] + before + after < k_ || o < 1)
        throw bad_input("[model] layers: conv3d kernel " + std::to_string(k_) + " does not fit input " +
                        shape_string(in));
      out.push_back(o);
    }
    return out;
  }
  void configure(const Shape& in) override {
    const Shape out = output_shape(in);
    g_ = cpu::ConvGeometry{};
    g_.channels = in[0];
    g_.depth = in[1];
    g_.height = in[2];
    g_.width = in[3];
    g_.out = out_;
    g_.kernel = k_;
    g_.stride = stride_;
    g_.pad = before_pad();
    g_.pad_after = after_pad();
    g_.out_depth = out[1];
    g_.out_height = out[2];
    g_.out_width = out[3];
    onednn_.reset();
    cudnn_.reset();
    const bool use_onednn = impl_ == ConvImpl::onednn || (impl_ == ConvImpl::auto_ && cpu::onednn_compiled());
    if (use_onednn) onednn_ = std::make_unique<cpu::OnednnConv>(g_);  // bad_input when not built with oneDNN
  }
  std::vector<ParamSpec> param_specs(const Shape& in) const override {
    const std::int64_t c = in.empty() ? 1 : in[0], fan_in = c * k_ * k_ * k_;
    return {{"weight", {out_, c, k_, k_, k_}, Init::he_normal, fan_in, out_ * k_ * k_ * k_},
            {"bias", {out_}, Init::zeros, fan_in, out_}};
  }
  void forward(const Tensor& x, Tensor& y) override {
    if (x.device() == Device::cuda && impl_ != ConvImpl::im2col) {
      cuda::CudnnConv& conv = cudnn();
      conv.forward(padded_input(x).data(), param(0).data(), param(1).data(), y.data(), x.rows());
    } else if (onednn_ && x.device() == Device::cpu) {
      onednn_->forward(x.data(), param(0).data(), param(1).data(), y.data(), x.rows());
    } else {
      HPCT_CHECK(x.device() == Device::cpu, "conv3d: the direct convolution runs on the CPU only");
      cpu::conv3d_direct_forward(g_, x.data(), param(0).data(), param(1).data(), y.data(), x.rows());
    }
  }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    float* dw = grad(0).data();
    float* db = grad(1).data();
    if (x.device() == Device::cuda && impl_ != ConvImpl::im2col) {
      const bool asymmetric = g_.pad != g_.pad_end();
      Tensor dxp = asymmetric && dx.defined() ? temp(1, padded_shape(x.rows()), x.device()) : dx;
      cudnn().backward(padded_input(x).data(), dy.data(), param(0).data(), dw, db, dx.defined() ? dxp.data() : nullptr,
                       x.rows(), accumulate_grads());
      if (asymmetric && dx.defined())  // the padded box's gradient, cropped to the input
        shift_volume(dxp, padded_.depth, padded_.height, padded_.width, g_.pad, g_.depth, g_.height, g_.width, dx);
    } else if (onednn_ && x.device() == Device::cpu) {
      onednn_->backward(x.data(), dy.data(), param(0).data(), dw, db, dx.defined() ? dx.data() : nullptr, x.rows(),
                        accumulate_grads());
    } else {
      cpu::conv3d_direct_backward(g_, x.data(), dy.data(), param(0).data(), dw, db, dx.defined() ? dx.data() : nullptr,
                                  x.rows(), accumulate_grads());
    }
  }

 private:
  std::int64_t before_pad() const { return pad_ >= 0 ? pad_ : (k_ - 1) / 2; }
  std::int64_t after_pad() const { return pad_ >= 0 ? pad_ : k_ - 1 - (k_ - 1) / 2; }
  // cuDNN's geometry: the layer's, or with an asymmetric padding that of the padded box, unpadded.
  cuda::CudnnConv& cudnn() {
    if (!cudnn_) {
      padded_ = g_;
      if (g_.pad != g_.pad_end()) {
        const std::int64_t extra = g_.pad + g_.pad_end();
        padded_.depth += extra;
        padded_.height += extra;
        padded_.width += extra;
        padded_.pad = 0;
        padded_.pad_after = 0;
      }
      cudnn_ = std::make_unique<cuda::CudnnConv>(padded_);
    }
    return *cudnn_;
  }
  Shape padded_shape(std::int64_t rows) const {
    return {rows, g_.channels, padded_.depth, padded_.height, padded_.width};
  }
  // x itself, or (asymmetric padding) x copied into the padded box with zeros around it.
  Tensor padded_input(const Tensor& x) {
    if (g_.pad == g_.pad_end()) return x;
    Tensor xp = temp(0, padded_shape(x.rows()), x.device());
    shift_volume(x, g_.depth, g_.height, g_.width, -g_.pad, padded_.depth, padded_.height, padded_.width, xp);
    return xp;
  }

  std::int64_t out_, k_, pad_, stride_;
  ConvImpl impl_;
  cpu::ConvGeometry g_, padded_;
  std::unique_ptr<cpu::OnednnConv> onednn_;  // set when this layer uses oneDNN on the CPU
  std::unique_ptr<cuda::CudnnConv> cudnn_;   // set on the first GPU call
};
}  // namespace

void register_conv3d(LayerRegistry& r, ConvImpl impl) {
  r.add("conv3d",
        "conv3d(out, k, pad=0|same, stride=1): 3-D convolution of [C, D, H, W] volumes, k x k x k; weight "
        "[out, in, k, k, k]; pad=same keeps the size (stride 1; an even kernel pads 0 before, 1 after)",
        [impl](const LayerArgs& a) {
          expect_named_only(a, 2, {"pad", "stride"});
          const std::int64_t stride = layer_named_int(a, "stride", 1, 1);
          const auto pad = a.named.find("pad");
          const bool same = pad != a.named.end() && pad->second == "same";
          if (same && stride != 1)
            throw bad_input("[model] layers: " + a.text + ": pad=same needs stride 1 (as PyTorch's padding='same')");
          return std::make_unique<Conv3d>(int_arg(a, 0, "the number of output channels"),
                                          int_arg(a, 1, "the kernel size"), same ? -1 : layer_named_int(a, "pad", 0, 0),
                                          stride, impl);
        });
}

}  // namespace hpctrain
