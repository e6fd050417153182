// avgpool(k, stride=k): mean over k x k windows of each channel;
// gap: global average pooling, [C, H, W] -> [C].
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
Shape as_chw(const Shape& in, const char* what) {
  const Shape s = in.size() == 2 ? Shape{1, in[0], in[1]} : in;  // [H, W] is one channel
  if (s.size() != 3)
    throw bad_input(std::string("[model] layers: ") + what + " needs [channels, height, width] input, got " +
                    shape_string(in));
  return s;
}

class AvgPool final : public Layer {
 public:
  AvgPool(std::int64_t k, std::int64_t stride) : k_(k), stride_(stride) {}
  const char* type() const override { return "avgpool"; }
  Shape output_shape(const Shape& in) const override {
    const Shape s = as_chw(in, "avgpool");
    const std::int64_t ho = (s[1] - k_) / stride_ + 1, wo = (s[2] - k_) / stride_ + 1;
    if (ho < 1 || wo < 1)
      throw bad_input("[model] layers: avgpool window " + std::to_string(k_) + " does not fit " + shape_string(in));
    return {s[0], ho, wo};
  }
  void configure(const Shape& in) override { in_ = as_chw(in, "avgpool"); }
  void forward(const Tensor& x, Tensor& y) override { avgpool_forward(x, in_[1], in_[2], k_, k_, stride_, stride_, y); }
  void backward(const Tensor&, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (dx.defined()) avgpool_backward(dy, in_[1], in_[2], k_, k_, stride_, stride_, dx);
  }

 private:
  std::int64_t k_, stride_;
  Shape in_;
};

class GlobalAvgPool final : public Layer {
 public:
  const char* type() const override { return "gap"; }
  Shape output_shape(const Shape& in) const override { return {as_chw(in, "gap")[0]}; }
  void configure(const Shape& in) override { in_ = as_chw(in, "gap"); }
  void forward(const Tensor& x, Tensor& y) override { avgpool_forward(x, in_[1], in_[2], in_[1], in_[2], 1, 1, y); }
  void backward(const Tensor&, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (dx.defined()) avgpool_backward(dy, in_[1], in_[2], in_[1], in_[2], 1, 1, dx);
  }

 private:
  Shape in_;
};
}  // namespace

void register_pooling(LayerRegistry& r) {
  r.add("avgpool", "avgpool(k, stride=k): average over k x k windows", [](const LayerArgs& a) {
    const std::int64_t k = int_arg(a, 0, "the window size");
    return std::make_unique<AvgPool>(k, layer_named_int(a, "stride", k, 1));
  });
  r.add("gap", "gap: global average pool, [C, H, W] -> [C]", [](const LayerArgs& a) {
    expect_no_args(a);
    return std::make_unique<GlobalAvgPool>();
  });
}

}  // namespace hpctrain
