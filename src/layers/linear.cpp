// linear(n) / linear(n, bias=0, std=0.02): a linear map of the last dimension, [..., C] ->
// [..., n], y = x W^T + b with W [n, C] (PyTorch's nn.Linear applied to every position of a
// sequence), W initialized N(0, std^2) as GPT-2 does and b to zeros; bias=0 leaves b out. Unlike
// dense(n), which needs a flat input, it keeps the leading dimensions.
// With [parallel] tensor_parallel = T > 1 (Megatron's pair; nothing changes with T = 1):
//   tp=column: each rank holds n/T rows of W (and of b) and outputs its n/T of the features; the
//     input is whole, so the input gradient is a partial sum, summed over the group in backward.
//     parts=a+b (gate|up of SwiGLU): W's rows are fused parts cut on their own, so each rank
//     holds its block of every part, in order.
//   tp=row: the input is a column-parallel layer's split output (C/T here of C); each rank holds
//     C/T columns of W, its product is summed over the group in forward, then the (replicated)
//     bias added once; the input gradient needs no sum.
// With [parallel] sequence_parallel (Megatron's), the activations around the pair hold this
// rank's block of the positions: tp=column all-gathers its input ([T/T, C] -> [T, C]; again in
// backward rather than keeping it) and reduce-scatters its input gradient; tp=row reduce-scatters
// its output ([T, n] -> [T/T, n], then the bias) and all-gathers its output gradient; the bias
// gradient is then this rank's positions' share (the trainer sums it over the group).
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
// [rows, d1, ..., dk] as [rows * d1 * ... * dk-1, dk].
Tensor as_matrix(const Tensor& t) {
  const std::int64_t last = t.shape().back();
  return t.reshaped({t.numel() / last, last});
}

class Linear final : public Layer {
 public:
  enum class Split { none, column, row };
  Linear(std::int64_t out, bool bias, float std, Split split, std::int64_t parts)
      : out_(out), bias_(bias), std_(std), split_(split), parts_(parts) {}
  const char* type() const override { return "linear"; }
  bool takes_position_blocks() const override { return true; }
  Shape output_shape(const Shape& in) const override {
    if (in.empty()) throw bad_input("[model] layers: linear(" + std::to_string(out_) + ") needs a non-scalar input");
    if (split_ == Split::none) refuse_every_position(in);  // (its replicated weight)
    const std::int64_t t = tensor_parallel().size;
    if (split_ == Split::column && out_ % (parts_ * t) != 0)
      throw bad_input("[model] layers: linear(" + std::to_string(out_) + ", tp=column): " + std::to_string(out_) +
                      " outputs" + (parts_ > 1 ? " in " + std::to_string(parts_) + " parts" : std::string()) +
                      " do not divide among [parallel] tensor_parallel = " + std::to_string(t) + " ranks");
    Shape s = in;
    s.back() = split_ == Split::column ? out_ / t : out_;
    if (sequence_split() && split_ != Split::none) {
      if (in.size() != 2)
        throw bad_input("[parallel] sequence_parallel: linear(" + std::to_string(out_) +
                        ", tp=...) needs [T, C] activations, got " + shape_string(in));
      s[0] = split_ == Split::column ? in[0] * t : in[0] / t;  // (gathers the positions; scatters them)
    }
    return s;
  }
  std::vector<ParamSpec> param_specs(const Shape& in) const override {
    // Global shapes: the model lays out this rank's block by the placements.
    const std::int64_t c = split_ == Split::row ? in.back() * tensor_parallel().size : in.back();
    ParamSpec w{"weight", {out_, c}, Init::normal, c, out_};
    w.std = std_;
    if (split_ == Split::column)
      w.tp =
          Placement::sharded(0, parts_ > 1 ? std::vector<std::int64_t>(static_cast<std::size_t>(parts_), out_ / parts_)
                                           : std::vector<std::int64_t>{});
    if (split_ == Split::row) w.tp = Placement::sharded(1);
    std::vector<ParamSpec> p{w};
    if (bias_) {
      p.push_back({"bias", {out_}, Init::zeros, c, out_});
      if (split_ == Split::column) p.back().tp = Placement::sharded(0, w.tp.parts);
    }
    return p;
  }
  // Sequence-parallel scratch (Layer::sequence_gather and the rest), the larger call's: a column's
  // backward gathers the input (two buffers) and makes the whole input gradient and its
  // reduce-scatter's buffer; a row's calls take two buffers of the whole output (or its gradient).
  LayerMemory memory(const Shape& in, const MemoryQuery& q) const override {
    if (!sequence_split() || split_ == Split::none) return {};
    const auto n = static_cast<double>(q.rows);
    if (split_ == Split::column)
      return {0, 4 * MemoryQuery::temp(n * static_cast<double>(in[0] * tensor_parallel().size * in[1])), 0};
    return {0, 2 * MemoryQuery::temp(n * static_cast<double>(in[0] * out_)), 0};
  }
  void forward(const Tensor& x, Tensor& y) override {
    // (sequence-parallel: a column's input gathered, a row's sum scattered; else as they are)
    const bool column = split_ == Split::column, row = split_ == Split::row;
    Tensor whole = row ? sequence_whole(y, 0) : y;
    Tensor y2 = as_matrix(whole);
    gemm(false, true, 1.f, as_matrix(column ? sequence_gather(x, 1) : x), param(0), 0.f, y2);
    if (row) sequence_reduce_scatter(whole, y, 3);  // (the bias after the sum: added once)
    if (bias_) {
      Tensor out = as_matrix(y);
      add_bias(out, param(1));
    }
  }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    const bool column = split_ == Split::column, row = split_ == Split::row;
    const float beta = accumulate_grads() ? 1.f : 0.f;
    const Tensor g = as_matrix(row ? sequence_gather(dy, 0) : dy);
    gemm(true, false, 1.f, g, as_matrix(column ? sequence_gather(x, 2) : x), beta, grad(0));  // dW (+)= dy^T x
    if (bias_) {
      if (beta == 0.f) fill(grad(1), 0.f);
      accumulate_bias_grad(as_matrix(dy), grad(1));  // (sequence-parallel row: this rank's positions)
    }
    if (!dx.defined()) return;
    Tensor whole = column ? sequence_whole(dx, 4) : dx;
    Tensor dx2 = as_matrix(whole);
    gemm(false, false, 1.f, g, param(0), 0.f, dx2);     // dx = dy W
    if (column) sequence_reduce_scatter(whole, dx, 5);  // (each rank's outputs reach every input)
  }

 private:
  std::int64_t out_;
  bool bias_;
  float std_;
  Split split_;
  std::int64_t parts_;  // fused parts of the outputs (tp=column, parts=...)
};

Linear::Split split_arg(const LayerArgs& a) {
  const auto it = a.named.find("tp");
  if (it == a.named.end()) return Linear::Split::none;
  if (it->second == "column") return Linear::Split::column;
  if (it->second == "row") return Linear::Split::row;
  throw bad_input("[model] layers: " + a.text + ": tp = '" + it->second + "' must be column or row");
}
}  // namespace

void register_linear(LayerRegistry& r) {
  r.add("linear",
        "linear(n, bias=1, std=0.02, tp=column|row, parts=1): n outputs for every position of [T, C] (or a flat "
        "input); tp: how [parallel] tensor_parallel splits it (column: the outputs, in `parts` equal fused parts; "
        "row: the inputs, outputs summed)",
        [](const LayerArgs& a) {
          expect_named_only(a, 1, {"bias", "std", "tp", "parts"});
          const Linear::Split split = split_arg(a);
          const std::int64_t parts = layer_named_int(a, "parts", 1, 1);
          if (parts > 1 && split != Linear::Split::column)
            throw bad_input("[model] layers: " + a.text + ": parts = " + std::to_string(parts) + " needs tp=column");
          return std::make_unique<Linear>(int_arg(a, 0, "the number of outputs"), layer_named_bool(a, "bias", true),
                                          layer_named_std(a, "std"), split, parts);
        });
}

}  // namespace hpctrain
