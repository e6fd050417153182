// Pooling of volumes [C, D, H, W]: maxpool3d(k, stride=k) and avgpool3d(k, stride=k) over
// k x k x k windows; gap3d: global average pooling, [C, D, H, W] -> [C]. With [parallel]
// spatial_parallel (layers/spatial.hpp) the pools take a depth slab whose windows tile it, and gap3d
// sums its slabs' means over the spatial group; a pool whose windows do not tile the slabs gathers
// the volume first.
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
Shape pooled(const Shape& in, std::int64_t k, std::int64_t stride, const char* what) {
  if (in.size() != 4)
    throw bad_input(std::string("[model] layers: ") + what + " needs [channels, depth, height, width] input, got " +
                    shape_string(in));
  Shape out{in[0]};
  for (std::size_t a = 1; a < 4; ++a) {
    if (in[a] < k)
      throw bad_input(std::string("[model] layers: ") + what + " window " + std::to_string(k) + " does not fit " +
                      shape_string(in));
    out.push_back((in[a] - k) / stride + 1);
  }
  return out;
}

class Pool3d final : public Layer {
 public:
  Pool3d(bool max, std::int64_t k, std::int64_t stride) : max_(max), k_(k), stride_(stride) {}
  const char* type() const override { return max_ ? "maxpool3d" : "avgpool3d"; }
  // (spatial) Windows that tile the slabs pool each slab; others gather the volume first.
  SpatialRole spatial_role(const Shape& slab, int) const override {
    if (slab.size() != 4) return SpatialRole::none;
    return k_ == stride_ && slab[1] % k_ == 0 ? SpatialRole::slabs : SpatialRole::gathers;
  }
  Shape output_shape(const Shape& in) const override {
    return pooled(spatial().gathers() ? whole_shape(in) : in, k_, stride_, type());
  }
  void configure(const Shape& in) override { in_ = spatial().gathers() ? whole_shape(in) : in; }
  LayerMemory memory(const Shape& in, const MemoryQuery& q) const override {  // saved (max): the argmax indices
    return {max_ ? 4.0 * static_cast<double>(q.rows * numel(output_shape(in))) : 0, 0, 0};
  }
  void forward(const Tensor& slab_or_x, Tensor& y) override {
    const Tensor x = spatial().gathers() ? whole_volume(slab_or_x, 1) : slab_or_x;
    if (!max_) return avgpool3d_forward(x, in_[1], in_[2], in_[3], k_, stride_, y);
    Tensor argmax = saved(0, {y.numel()}, x.device(), DType::i32);  // each output's input index
    maxpool3d_forward(x, in_[1], in_[2], in_[3], k_, stride_, y, argmax);
  }
  void backward(const Tensor&, const Tensor&, const Tensor& dy, Tensor& slab_or_dx) override {
    if (!slab_or_dx.defined()) return;
    const bool gathers = spatial().gathers();
    Tensor dx = gathers ? temp(1, whole_shape(slab_or_dx.shape()), dy.device()) : slab_or_dx;
    if (max_)
      maxpool_backward(dy, saved(0, {dy.numel()}, dy.device(), DType::i32), dx);
    else
      avgpool3d_backward(dy, in_[1], in_[2], in_[3], k_, stride_, dx);
    if (gathers) slab_gradient(dx, slab_or_dx);
  }

 private:
  bool max_;
  std::int64_t k_, stride_;
  Shape in_;
};

// The mean of each channel's volume: 2-D average pooling of the [D x H, W] plane in one window.
class GlobalAvgPool3d final : public Layer {
 public:
  const char* type() const override { return "gap3d"; }
  SpatialRole spatial_role(const Shape& slab, int) const override {
    return slab.size() == 4 ? SpatialRole::gathers : SpatialRole::none;
  }
  Shape output_shape(const Shape& in) const override { return {pooled(in, 1, 1, "gap3d")[0]}; }
  void configure(const Shape& in) override {
    rows_ = in[1] * in[2];
    cols_ = in[3];
  }
  void forward(const Tensor& x, Tensor& y) override {
    avgpool_forward(x, rows_, cols_, rows_, cols_, 1, 1, y);
    if (!spatial().on()) return;
    scale(y, 1.f / static_cast<float>(spatial().size));  // (equal slabs: the mean of their means)
    sp_comm().allreduce(y.data(), y.data(), static_cast<std::size_t>(y.numel()), DType::f32, ReduceOp::sum);
  }
  void backward(const Tensor&, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (!dx.defined()) return;
    avgpool_backward(dy, rows_, cols_, rows_, cols_, 1, 1, dx);
    if (spatial().on()) scale(dx, 1.f / static_cast<float>(spatial().size));
  }

 private:
  std::int64_t rows_ = 1, cols_ = 1;
};
}  // namespace

void register_pooling3d(LayerRegistry& r) {
  for (const bool max : {true, false}) {
    const char* name = max ? "maxpool3d" : "avgpool3d";
    r.add(name,
          max ? "maxpool3d(k, stride=k): maximum over k x k x k windows of volumes"
              : "avgpool3d(k, stride=k): average over k x k x k windows of volumes",
          [max](const LayerArgs& a) {
            expect_named_only(a, 1, {"stride"});
            const std::int64_t k = int_arg(a, 0, "the window size");
            return std::make_unique<Pool3d>(max, k, layer_named_int(a, "stride", k, 1));
          });
  }
  r.add("gap3d", "gap3d: global average pool of volumes, [C, D, H, W] -> [C]", [](const LayerArgs& a) {
    expect_no_args(a);
    return std::make_unique<GlobalAvgPool3d>();
  });
}

}  // namespace hpctrain
