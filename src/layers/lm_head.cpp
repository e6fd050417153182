// lm_head(V): a language model's output layer, [T, C] -> logits [T, V] = x W^T with W [V, C]
// shared with the model's token embedding (weight tying, as GPT-2 and nanoGPT): the model binds
// the embedding's table here and adds both layers' gradients into it. lm_head(V, tie=0): an
// untied head with its own W (initialized N(0, std^2)), the same as linear(V, bias=0).
// lm_head(V, softcap=S): Gemma 2's final_logit_softcapping, the logits S tanh(logits / S) (backend
// softcap_forward/backward; the backward reads the capped logits, its output).
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
// With [train] loss_chunk = R (set_loss_chunk) the head runs the loss itself (StepContext::head_loss)
// on R rows of logits at a time, in two [R, V] buffers of scratch: the logits, the loss on them,
// and in training at once their gradient through the head (dW += dlogits^T x, dx = dlogits W)
// before the next chunk. Training's forward then does nothing: its backward computes the logits
// (once). The whole [T, V] logits and their gradient are never held (Liger's fused linear
// cross-entropy): the same loss and gradients as without, in another summation order.
// Generation (set_one_position): the output is one position of each sequence, [1, V], the one
// StepContext::output_position names (the context's last token; nanoGPT's and Hugging Face's
// generate compute only its logits too).
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
  LmHead(std::int64_t vocab, bool tie, float std, std::int64_t multiple, float softcap)
      : vocab_(vocab), rows_(padded_vocab(vocab, multiple)), tie_(tie), std_(std), softcap_(softcap) {}
  const char* type() const override { return "lm_head"; }
  bool takes_position_blocks() const override { return true; }
  Shape output_shape(const Shape& in) const override {
    if (in.size() != 2)
      throw bad_input("[model] layers: lm_head(" + std::to_string(vocab_) + ") needs [T, C] activations, got " +
                      shape_string(in));
    const std::int64_t t = one_position_ ? 1 : sequence_split() ? in[0] * tensor_parallel().size : in[0];
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
  bool set_loss_chunk(std::int64_t rows) override {
    chunk_ = rows;
    return true;
  }
  bool set_one_position() override {
    one_position_ = true;
    return true;
  }
  // Scratch: with loss_chunk two [R, V] buffers (the logits, their gradient); with sequence
  // parallelism the gathered input (two buffers), the whole input gradient and its reduce-scatter's;
  // with softcap and no loss_chunk the capped logits' gradient [T, V] (training).
  LayerMemory memory(const Shape& in, const MemoryQuery& q) const override {
    double scratch = 0;
    if (sequence_split())
      scratch += 4 * MemoryQuery::temp(static_cast<double>(q.rows * in[0] * tensor_parallel().size * in[1]));
    if (chunk_ == 0 && softcap_ > 0.f && q.training)
      scratch += MemoryQuery::temp(static_cast<double>(q.rows * output_shape(in)[0] * local_rows()));
    if (chunk_ == 0) return {0, scratch, 0};
    const std::int64_t rows = std::min(chunk_, q.rows * output_shape(in)[0]);
    return {0, scratch + 2 * MemoryQuery::temp(static_cast<double>(rows * local_rows())), 0};
  }
  void forward(const Tensor& x, Tensor& y) override {
    if (!y.defined()) {  // (loss_chunk: evaluation runs the loss here, training in backward)
      if (!context().training) loss_in_chunks(sequence_gather(x, 0), nullptr);
      return;
    }
    const std::int64_t cols = local_rows();
    Tensor y2 = y.reshaped({y.numel() / cols, cols});
    if (one_position_)
      one_position(x, y2);
    else
      gemm(false, true, 1.f, sequence_gather(x, 0).reshaped({y2.rows(), x.shape().back()}), param(0), 0.f, y2);
    if (softcap_ > 0.f) softcap_forward(y2, softcap_);
    if (first_row() + cols > vocab_) fill_columns(y2, std::max<std::int64_t>(vocab_ - first_row(), 0), -INFINITY);
  }
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy_in, Tensor& dx) override {
    const Tensor dy = softcap_ > 0.f && dy_in.defined() ? capped_gradient(y, dy_in) : dy_in;
    if (!dy.defined()) {  // (loss_chunk)
      if (!dx.defined()) return loss_in_chunks(sequence_gather(x, 0), nullptr, true);
      Tensor whole = sequence_whole(dx, 2);
      loss_in_chunks(sequence_gather(x, 0), &whole, true);
      return sequence_reduce_scatter(whole, dx, 3);
    }
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
  // [train] loss_chunk: chunk_ rows of x [n, C] at a time: their logits (bf16/fp16: rounded, as
  // the model rounds a layer's output), the loss, and with `train` its gradient (rounded) into
  // dW and into dx's rows (when given).
  void loss_in_chunks(const Tensor& x, Tensor* dx, bool train = false) {
    const HeadLoss& h = context().head_loss;
    HPCT_CHECK(h.loss && h.scalars && h.targets.classes,
               "lm_head: [train] loss_chunk without the step's loss and labels (StepContext::head_loss)");
    const Precision precision = context().precision;
    const std::int64_t cols = local_rows(), width = x.shape().back(), n = x.numel() / width;
    const std::int64_t r = std::min(chunk_, n);
    const Tensor logits_buf = temp(4, {r, cols}, x.device()), grad_buf = temp(5, {r, cols}, x.device());
    for (std::int64_t at = 0; at < n; at += r) {
      const std::int64_t m = std::min(r, n - at);
      const Tensor xc = x.view(at * width, {m, width});
      Tensor logits = logits_buf.view(0, {m, cols}), d = grad_buf.view(0, {m, cols});
      gemm(false, true, 1.f, xc, param(0), 0.f, logits);
      if (softcap_ > 0.f) softcap_forward(logits, softcap_);
      if (first_row() + cols > vocab_) fill_columns(logits, std::max<std::int64_t>(vocab_ - first_row(), 0), -INFINITY);
      if (precision != Precision::fp32) round_to_precision(logits, precision);
      Targets t = h.targets;
      t.classes += at;
      if (!train) {
        h.loss->forward(logits, t, *h.scalars, d);  // (d: the vocabulary-parallel loss's work buffer)
        continue;
      }
      h.loss->forward_backward(logits, t, h.grad_scale, *h.scalars, d);
      if (softcap_ > 0.f) softcap_backward(logits, softcap_, d);
      if (precision != Precision::fp32) round_to_precision(d, precision);
      gemm(true, false, 1.f, d, xc, at > 0 || accumulate_grads() ? 1.f : 0.f, grad(0));
      if (!dx) continue;
      Tensor dxc = dx->view(at * width, {m, width});
      gemm(false, false, 1.f, d, param(0), 0.f, dxc);
    }
  }
  // Generation (set_one_position): the logits of position StepContext::output_position of each
  // sequence of x [rows, L, C] into y [rows, V].
  void one_position(const Tensor& x, Tensor& y) {
    const std::int64_t width = x.shape().back(), len = x.shape()[x.shape().size() - 2];
    const std::int64_t p = context().output_position;
    HPCT_CHECK(!sequence_split() && p >= 0 && p < len,
               "lm_head: one output position (generation) needs StepContext::output_position in [0, " +
                   std::to_string(len) + "), got " + std::to_string(p));
    if (len == 1) return gemm(false, true, 1.f, x.reshaped({y.rows(), width}), param(0), 0.f, y);  // (side by side)
    for (std::int64_t b = 0; b < y.rows(); ++b) {
      Tensor row = y.view(b * y.cols(), {1, y.cols()});
      gemm(false, true, 1.f, x.view((b * len + p) * width, {1, width}), param(0), 0.f, row);
    }
  }
  // softcap: the gradient of the logits before the cap, from the capped logits y and their gradient.
  Tensor capped_gradient(const Tensor& y, const Tensor& dy) {
    Tensor d = temp(6, dy.shape(), dy.device());
    copy(dy, d);
    softcap_backward(y, softcap_, d);
    return d;
  }
  std::int64_t local_rows() const { return rows_ / tensor_parallel().size; }
  std::int64_t first_row() const { return tensor_parallel().rank * local_rows(); }

  std::int64_t vocab_, rows_;
  bool tie_;
  float std_, softcap_;        // softcap: 0 = none
  std::int64_t chunk_ = 0;     // [train] loss_chunk: rows of logits at a time; 0 = the whole output
  bool one_position_ = false;  // set_one_position (generation)
};
}  // namespace

void register_lm_head(LayerRegistry& r, std::int64_t vocab_multiple) {
  r.add("lm_head",
        "lm_head(V, tie=1, std=0.02, softcap=0): logits over a vocabulary of V; tie=1 shares the embedding's weight; "
        "softcap=S: the logits S tanh(logits / S)",
        [vocab_multiple](const LayerArgs& a) {
          expect_named_only(a, 1, {"tie", "std", "softcap"});
          return std::make_unique<LmHead>(int_arg(a, 0, "the vocabulary size"), layer_named_bool(a, "tie", true),
                                          layer_named_std(a, "std"), vocab_multiple,
                                          layer_named_number(a, "softcap", 0.f));
        });
}

}  // namespace hpctrain
