// embedding(V, C): token ids [T] (int32) -> their rows of a learned table W [V, C]
// (PyTorch's nn.Embedding), initialized N(0, std^2) (std=0.02 by default, as GPT-2 and nanoGPT).
// The ids have no gradient: a model starts with this layer. An lm_head may share W (weight tying,
// layers/lm_head.cpp); the model then adds both layers' gradients into it. With [model]
// vocab_multiple M the table has round_up(V, M) rows, the rows past V zero (no id reaches them).
// With [parallel] tensor_parallel = T > 1 the table is vocabulary-parallel (Megatron's): each rank
// holds T's block of its rows (T must divide them), looks up the ids in its block (zeros for the
// others) and the group sums the rows; each rank's gradient goes to its own rows. With
// [parallel] sequence_parallel the sum is a reduce-scatter: the output holds this rank's block of
// the positions, [T/T, C] (the gradient is gathered back in backward).
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class Embedding final : public Layer {
 public:
  Embedding(std::int64_t vocab, std::int64_t width, float std, std::int64_t multiple)
      : vocab_(vocab), rows_(padded_vocab(vocab, multiple)), width_(width), std_(std) {}
  const char* type() const override { return "embedding"; }
  bool takes_position_blocks() const override { return true; }
  Shape output_shape(const Shape& in) const override {
    vocab_block_rows(rows_, tensor_parallel().size,
                     "embedding(" + std::to_string(vocab_) + ", " + std::to_string(width_) + ")");
    if (in.size() != 1)
      throw bad_input("[model] layers: embedding(" + std::to_string(vocab_) + ", " + std::to_string(width_) +
                      ") needs token ids [T] as input, got " + shape_string(in) + " (a token dataset's samples)");
    if (!sequence_split()) return {in[0], width_};
    if (in[0] % tensor_parallel().size != 0)
      throw bad_input("[parallel] sequence_parallel: [model] block_size = " + std::to_string(in[0]) +
                      " positions do not divide among tensor_parallel = " + std::to_string(tensor_parallel().size) +
                      " ranks; make block_size a multiple of it");
    return {in[0] / tensor_parallel().size, width_};
  }
  std::vector<ParamSpec> param_specs(const Shape&) const override {
    ParamSpec w{"weight", {rows_, width_}, Init::normal, vocab_, width_};
    w.std = std_;
    if (rows_ > vocab_) w.live_rows = vocab_;
    w.tp = Placement::sharded(0);  // (by rows: the vocabulary)
    return {w};
  }
  void forward(const Tensor& x, Tensor& y) override {
    if (x.dtype() != DType::i32)
      throw bad_input("[model] layers: embedding(" + std::to_string(vocab_) + ", " + std::to_string(width_) +
                      ") reads token ids (int32), but its input is " + dtype_name(x.dtype()) +
                      ": it starts a model on a token dataset");
    // (vocabulary-parallel: each id's row from the rank holding it, summed; sequence-parallel: the
    // sum's block of this rank's positions)
    Tensor whole = sequence_whole(y, 0);
    embedding_forward(x, param(0), first_row(), rows_, whole);
    sequence_reduce_scatter(whole, y, 1);
  }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    if (!accumulate_grads()) fill(grad(0), 0.f);
    embedding_backward(x, sequence_gather(dy, 2), first_row(), rows_, grad(0));
    if (dx.defined()) fill(dx, 0.f);  // token ids are not differentiable
  }

 private:
  std::int64_t first_row() const { return tensor_parallel().rank * (rows_ / tensor_parallel().size); }

  std::int64_t vocab_, rows_, width_;
  float std_;
};
}  // namespace

void register_embedding(LayerRegistry& r, std::int64_t vocab_multiple) {
  r.add("embedding", "embedding(V, C, std=0.02): token ids [T] -> [T, C] from a V-row table",
        [vocab_multiple](const LayerArgs& a) {
          expect_named_only(a, 2, {"std"});
          return std::make_unique<Embedding>(int_arg(a, 0, "the vocabulary size"), int_arg(a, 1, "the embedding width"),
                                             layer_named_std(a, "std"), vocab_multiple);
        });
}

}  // namespace hpctrain
