// lm_head(V): a language model's output layer, [T, C] -> logits [T, V] = x W^T with W [V, C]
// shared with the model's token embedding (weight tying, as GPT-2 and nanoGPT): the model binds
// the embedding's table here and adds both layers' gradients into it. lm_head(V, tie=0): an
// untied head with its own W (initialized N(0, std^2)), the same as linear(V, bias=0).
// With [model] vocab_multiple M, W has Vp = round_up(V, M) rows (the rows past V zero) and the
// logits are [T, Vp], the GEMM's width a multiple of M; the logits past V are set to -inf (only
// those columns are written), so softmax, loss, accuracy and sampling never see them and their
// rows of W get a zero gradient.
// With [parallel] tensor_parallel = T > 1 the head is vocabulary-parallel (Megatron's): each rank
// holds T's block of W's rows (the embedding's, tied) and outputs the logits of its block of the
// vocabulary, [T, Vp/T]; the loss is the vocabulary-parallel cross-entropy (layers/loss.hpp), so
// no rank holds whole logit rows; the input gradient is summed over the group. With [parallel]
// sequence_parallel its input holds this rank's block of the positions: all-gathered first (and
// again in backward), the input gradient reduce-scattered.
#include <algorithm>
#include <cmath>
#include <vector>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class LmHead final : public Layer {
 public:
  LmHead(std::int64_t vocab, bool tie, float std, std::int64_t multiple)
      : vocab_(vocab), rows_(padded_vocab(vocab, multiple)), tie_(tie), std_(std) {}
  const char* type() const override { return "lm_head"; }
  bool takes_position_blocks() const override { return true; }
  Shape output_shape(const Shape& in) const override {
    if (in.size() != 2)
      throw bad_input("[model] layers: lm_head(" + std::to_string(vocab_) + ") needs [T, C] activations, got " +
                      shape_string(in));
    const std::int64_t t = sequence_split() ? in[0] * tensor_parallel().size : in[0];  // (gathers the positions)
    return {t, vocab_block_rows(rows_, tensor_parallel().size, "lm_head(" + std::to_string(vocab_) + ")")};
  }
  std::vector<ParamSpec> param_specs(const Shape& in) const override {
    ParamSpec w{"weight", {rows_, in[1]}, Init::normal, in[1], vocab_};
    w.std = std_;
    if (tie_) w.tie = "embedding";
    if (rows_ > vocab_) w.live_rows = vocab_;
    w.tp = Placement::sharded(0);  // (by rows: the vocabulary)
    return {w};
  }
  void forward(const Tensor& x, Tensor& y) override {
    const std::int64_t cols = local_rows();
    Tensor y2 = y.reshaped({y.numel() / cols, cols});
    gemm(false, true, 1.f, sequence_gather(x, 0).reshaped({y2.rows(), x.shape().back()}), param(0), 0.f, y2);
    if (first_row() + cols > vocab_) fill_columns(y2, std::max<std::int64_t>(vocab_ - first_row(), 0), -INFINITY);
  }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    const std::int64_t cols = local_rows();
    const Tensor g = dy.reshaped({dy.numel() / cols, cols});
    const std::int64_t width = x.shape().back();
    gemm(true, false, 1.f, g, sequence_gather(x, 0).reshaped({g.rows(), width}), accumulate_grads() ? 1.f : 0.f,
         grad(0));
    if (!dx.defined()) return;
    Tensor whole = sequence_whole(dx, 2);
    Tensor dx2 = whole.reshaped({g.rows(), width});
    gemm(false, false, 1.f, g, param(0), 0.f, dx2);
    // (vocabulary-parallel: every rank's block of the logits reads the whole input)
    sequence_reduce_scatter(whole, dx, 3);
  }

 private:
  std::int64_t local_rows() const { return rows_ / tensor_parallel().size; }
  std::int64_t first_row() const { return tensor_parallel().rank * local_rows(); }

  std::int64_t vocab_, rows_;
  bool tie_;
  float std_;
};
}  // namespace

void register_lm_head(LayerRegistry& r, std::int64_t vocab_multiple) {
  r.add("lm_head", "lm_head(V, tie=1, std=0.02): logits over a vocabulary of V; tie=1 shares the embedding's weight",
        [vocab_multiple](const LayerArgs& a) {
          expect_named_only(a, 1, {"tie", "std"});
          return std::make_unique<LmHead>(int_arg(a, 0, "the vocabulary size"), layer_named_bool(a, "tie", true),
                                          layer_named_std(a, "std"), vocab_multiple);
        });
}

}  // namespace hpctrain
