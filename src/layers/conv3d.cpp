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
// With [parallel] spatial_parallel (layers/spatial.hpp) the input is this rank's depth slab: it is
// copied into a box padded on every side (as for cuDNN above), the box's depth padding filled with
// the neighbours' halo planes (fill_halos), and the box convolved unpadded; backward returns the
// halo planes' gradient to the neighbours. This needs outputs that tile the slabs: 'same' (or pad
// = (k - 1) / 2 with an odd k), or windows that tile the depth (k = stride, no padding); a conv3d
// whose outputs do not tile the slabs gathers the whole volume first and convolves it whole.
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
  // (spatial) Outputs that tile the slabs: halo exchanges; others gather the volume first.
  SpatialRole spatial_role(const Shape& slab, int size) const override {
    if (slab.size() != 4) return SpatialRole::none;
    Shape whole = slab;
    whole[1] *= size;
    const std::int64_t out = (whole[1] + before_pad() + after_pad() - k_) / stride_ + 1;
    const bool tiles =
        out * stride_ == whole[1] && slab[1] % stride_ == 0 && slab[1] >= before_pad() && slab[1] >= after_pad();
    return tiles ? SpatialRole::slabs : SpatialRole::gathers;
  }
  Shape output_shape(const Shape& in) const override {
    return spatial().slabs()     ? slab_output_shape(in)
           : spatial().gathers() ? whole_output_shape(whole_shape(in))
                                 : whole_output_shape(in);
  }
  Shape whole_output_shape(const Shape& in) const {
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
  void configure(const Shape& slab_or_in) override {
    const Shape in = spatial().gathers() ? whole_shape(slab_or_in) : slab_or_in;
    const Shape out = output_shape(slab_or_in);
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
    if (spatial().slabs()) {  // the box: the slab with its padding and halos, convolved unpadded
      halo_ = Halo{before_pad(), after_pad(), in[1], 0};
      const std::int64_t extra = halo_.lo + halo_.hi;
      g_.depth += extra;
      g_.height += extra;
      g_.width += extra;
      g_.pad = g_.pad_after = 0;
      halo_.plane = g_.height * g_.width;
    }
    onednn_.reset();
    cudnn_.reset();
    const bool use_onednn = impl_ == ConvImpl::onednn || (impl_ == ConvImpl::auto_ && cpu::onednn_compiled());
    if (use_onednn) onednn_ = std::make_unique<cpu::OnednnConv>(g_);  // bad_input when not built with oneDNN
  }
  // Scratch: (spatial slabs) the box and its gradient, the halo planes saved; (cuDNN, asymmetric
  // 'same' padding) the padded input and its gradient. oneDNN keeps its workspace itself.
  LayerMemory memory(const Shape&, const MemoryQuery& q) const override {
    const auto rows = static_cast<double>(q.rows), c = static_cast<double>(g_.channels);
    if (spatial().slabs()) {
      const double box = rows * c * static_cast<double>(g_.depth * g_.height * g_.width);
      const double lo = rows * c * static_cast<double>(halo_.lo * halo_.plane),
                   hi = rows * c * static_cast<double>(halo_.hi * halo_.plane);
      return {4 * (lo + hi), 2 * MemoryQuery::temp(box) + MemoryQuery::temp(lo) + MemoryQuery::temp(hi), 0};
    }
    if (q.device != Device::cuda || impl_ == ConvImpl::im2col || g_.pad == g_.pad_end()) return {};
    const std::int64_t grow = g_.pad + g_.pad_end();
    const double padded = rows * c * static_cast<double>((g_.depth + grow) * (g_.height + grow) * (g_.width + grow));
    return {0, 2 * MemoryQuery::temp(padded), 0};
  }
  std::vector<ParamSpec> param_specs(const Shape& in) const override {
    const std::int64_t c = in.empty() ? 1 : in[0], fan_in = c * k_ * k_ * k_;
    return {{"weight", {out_, c, k_, k_, k_}, Init::he_normal, fan_in, out_ * k_ * k_ * k_},
            {"bias", {out_}, Init::zeros, fan_in, out_}};
  }
  void forward(const Tensor& slab_or_x, Tensor& y) override {
    const Tensor x = spatial().slabs()     ? slab_box(slab_or_x, true)
                     : spatial().gathers() ? whole_volume(slab_or_x, 2, true)
                                           : slab_or_x;
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
  void backward(const Tensor& slab_or_x, const Tensor&, const Tensor& dy, Tensor& slab_dx) override {
    const bool split = spatial().on();
    const Tensor x = spatial().slabs()     ? slab_box(slab_or_x, false)
                     : spatial().gathers() ? whole_volume(slab_or_x, 2, false, true)
                                           : slab_or_x;
    Tensor dx = split && slab_dx.defined() ? temp(5, x.shape(), x.device()) : slab_dx;
    conv_backward(x, dy, dx);
    if (!split || !slab_dx.defined()) return;
    if (spatial().gathers()) return slab_gradient(dx, slab_dx);
    HaloBuffers b = halo_buffers(x.rows(), x.device());
    return_halo_gradients(sp_comm(), halo_, dx, b);
    shift_volume(dx, g_.depth, g_.height, g_.width, halo_.lo, slab_depth(), g_.height - halo_.lo - halo_.hi,
                 g_.width - halo_.lo - halo_.hi, slab_dx);
  }

 private:
  void conv_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
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

  std::int64_t slab_depth() const { return halo_.depth; }
  // (spatial) The slab's output: the whole volume's, whose depth tiles the slabs (spatial_role).
  Shape slab_output_shape(const Shape& in) const {
    Shape out = whole_output_shape(whole_shape(in));
    out[1] /= spatial().size;
    return out;
  }
  HaloBuffers halo_buffers(std::int64_t rows, Device dev) {
    const std::int64_t blocks = rows * g_.channels;
    auto shaped = [&](std::int64_t n) { return Shape{blocks, n, halo_.plane}; };
    return {temp(2, shaped(halo_.hi), dev), temp(3, shaped(halo_.lo), dev), saved(0, shaped(halo_.lo), dev),
            saved(1, shaped(halo_.hi), dev)};
  }
  // (spatial) The slab in its box: padded with zeros, the halos exchanged (forward) or put back
  // from what forward received (backward).
  Tensor slab_box(const Tensor& slab, bool exchange) {
    const std::int64_t rows = slab.rows(), lo = halo_.lo, extra = halo_.lo + halo_.hi;
    Tensor box = temp(4, {rows, g_.channels, g_.depth, g_.height, g_.width}, slab.device());
    shift_volume(slab, slab_depth(), g_.height - extra, g_.width - extra, -lo, g_.depth, g_.height, g_.width, box);
    HaloBuffers b = halo_buffers(rows, slab.device());
    if (exchange)
      fill_halos(sp_comm(), halo_, box, b);
    else
      place_halos(halo_, spatial().rank, spatial().size, box, b);
    return box;
  }
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
  Halo halo_;                                // (spatial: the box around this rank's slab; g_ is the box's geometry)
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
