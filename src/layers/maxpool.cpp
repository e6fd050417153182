// maxpool(k, stride=k): max over k x k windows of each channel, [C, H, W] -> [C, Ho, Wo].
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class MaxPool final : public Layer {
 public:
  MaxPool(std::int64_t k, std::int64_t stride) : k_(k), stride_(stride) {}
  const char* type() const override { return "maxpool"; }
  Shape output_shape(const Shape& in) const override {
    const Shape s = in.size() == 2 ? Shape{1, in[0], in[1]} : in;
    if (s.size() != 3)
      throw bad_input("[model] layers: maxpool needs [channels, height, width] input, got " + shape_string(in));
    const std::int64_t ho = (s[1] - k_) / stride_ + 1, wo = (s[2] - k_) / stride_ + 1;
    if (ho < 1 || wo < 1)
      throw bad_input("[model] layers: maxpool window " + std::to_string(k_) + " does not fit " + shape_string(in));
    return {s[0], ho, wo};
  }
  void configure(const Shape& in) override { in_ = in.size() == 2 ? Shape{1, in[0], in[1]} : in; }
  LayerMemory memory(const Shape& in, const MemoryQuery& q) const override {  // saved: the argmax indices
    return {4.0 * static_cast<double>(q.rows * numel(output_shape(in))), 0, 0};
  }
  void forward(const Tensor& x, Tensor& y) override {
    Tensor argmax = saved(0, {y.numel()}, x.device(), DType::i32);  // each output's input index
    maxpool_forward(x, in_[0], in_[1], in_[2], k_, stride_, y, argmax);
  }
  void backward(const Tensor&, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (dx.defined()) maxpool_backward(dy, saved(0, {dy.numel()}, dy.device(), DType::i32), dx);
  }

 private:
  std::int64_t k_, stride_;
  Shape in_;  // per sample, from configure()
};
}  // namespace

void register_maxpool(LayerRegistry& r) {
  r.add("maxpool", "maxpool(k, stride=k): maximum over k x k windows", [](const LayerArgs& a) {
    const std::int64_t k = int_arg(a, 0, "the window size");
    return std::make_unique<MaxPool>(k, layer_named_int(a, "stride", k, 1));
  });
}

}  // namespace hpctrain
