// position_embedding: x [T, C] -> x + P, a learned table P [T, C] (GPT's wpe), one row per
// position; T is the input's length ([model] block_size for a token dataset). Initialized
// N(0, std^2), std=0.02 by default. Generation with a key/value cache (StepContext::decode_position)
// adds the rows of the positions it runs. With [parallel] sequence_parallel the input holds this
// rank's block of the positions: their rows are added, and their rows' gradient is this rank's
// share (the trainer sums P's gradient over the tensor-parallel group).
#include <algorithm>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class PositionEmbedding final : public Layer {
 public:
  explicit PositionEmbedding(float std) : std_(std) {}
  const char* type() const override { return "position_embedding"; }
  bool takes_position_blocks() const override { return true; }
  Shape output_shape(const Shape& in) const override {
    if (in.size() != 2)
      throw bad_input("[model] layers: position_embedding needs [T, C] activations, got " + shape_string(in) +
                      " (put it after embedding(V, C))");
    refuse_every_position(in);
    return in;
  }
  std::vector<ParamSpec> param_specs(const Shape& in) const override {
    const std::int64_t t = sequence_split() ? tensor_parallel().sequence : in[0];  // (every position's row)
    ParamSpec p{"weight", {t, in[1]}, Init::normal, t, in[1]};
    p.std = std_;
    return {p};
  }
  void forward(const Tensor& x, Tensor& y) override {
    copy(x, y);
    const std::int64_t len = x.shape()[1], c = x.shape()[2];
    // every sample's [L*C] row += P's rows from..from+L-1 (a key/value cache's positions: from > 0)
    add_bias(y, param(0).view(first_position(len) * c, {len * c}));
  }
  void backward(const Tensor&, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (!accumulate_grads()) fill(grad(0), 0.f);
    const std::int64_t len = dy.shape()[1], c = dy.shape()[2];
    Tensor rows = grad(0).view(first_position(len) * c, {len * c});
    accumulate_bias_grad(dy, rows);
    if (dx.defined()) copy(dy, dx);
  }

 private:
  // The first position of x's len: a key/value cache's next, or this rank's block's first
  // (sequence-parallel), else 0.
  std::int64_t first_position(std::int64_t len) const {
    if (sequence_split()) return tensor_parallel().rank * len;
    return has_context() ? std::max<std::int64_t>(context().decode_position, 0) : 0;
  }

  float std_;
};
}  // namespace

void register_position_embedding(LayerRegistry& r) {
  r.add("position_embedding",
        "position_embedding(std=0.02): learned positions, one row per position of the window ([model] block_size)",
        [](const LayerArgs& a) {
          if (!a.numbers.empty() || a.named.size() > a.named.count("std"))
            throw bad_input("[model] layers: " + a.text +
                            " takes only std= (the length is the input's: [model] block_size)");
          return std::make_unique<PositionEmbedding>(layer_named_std(a, "std"));
        });
}

}  // namespace hpctrain
