// attention(H) / attention(H, bias=0, dropout=P, proj_std=S): causal multi-head self-attention
// over [T, C] (GPT-2's and nanoGPT's CausalSelfAttention): one fused projection to queries, keys
// and values, qkv = x Wqkv^T + bqkv with Wqkv [3C, C]; per head (D = C/H columns each), the
// probabilities softmax(q k^T / sqrt(D)) over the positions up to each query's (the causal
// mask); dropout of P percent on them while training; their weighted sum of the values; the
// output projection y = a Wproj^T + bproj with Wproj [C, C]. Weights N(0, 0.02^2), the output
// projection N(0, proj_std^2) (GPT-2 scales it by 1/sqrt(2 * layers)); biases zero.
// rope=THETA (Llama's: 10000, Llama 3 500000): rotary position embeddings turn the queries and keys
// after the projection (backend rope_rotate, rotate-half pairs as Hugging Face's Llama), and the
// gradient back before the projection's backward; then no position_embedding layer is needed.
//
// In bf16/fp16 runs the intermediates that are GEMM operands (qkv, the probabilities and their
// dropped copy, the heads' output, and in the backward the heads' gradient, the score gradient
// and dqkv) are rounded to that format on both backends: cuBLAS multiplies 16-bit operands.
//
// Kept for the backward: qkv [N, T, 3C], the probabilities [N, H, T, T] (the largest activation
// of a GPT layer: N*H*T*T floats), with dropout their dropped copy and its mask, and the heads'
// output [N, T, C].
#include <cmath>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/hash.hpp"
#include "hpctrain/layers/registry.hpp"

namespace hpctrain {

namespace {
class Attention final : public Layer {
 public:
  Attention(std::int64_t heads, bool bias, float dropout, float proj_std, float rope)
      : heads_(heads), bias_(bias), p_(dropout), proj_std_(proj_std), rope_(rope) {}
  const char* type() const override { return "attention"; }
  Shape output_shape(const Shape& in) const override {
    if (in.size() != 2 || in[1] % heads_ != 0)
      throw bad_input("[model] layers: attention(" + std::to_string(heads_) + ") needs [T, C] activations with C a " +
                      "multiple of the heads, got " + shape_string(in));
    if (rope_ > 0 && (in[1] / heads_) % 2 != 0)
      throw bad_input("[model] layers: attention(" + std::to_string(heads_) + ", rope=...) needs an even head width, " +
                      "got " + std::to_string(in[1] / heads_));
    return in;
  }
  std::vector<ParamSpec> param_specs(const Shape& in) const override {
    const std::int64_t c = in[1];
    ParamSpec proj{"proj.weight", {c, c}, Init::normal, c, c};
    proj.std = proj_std_;
    std::vector<ParamSpec> p{{"qkv.weight", {3 * c, c}, Init::normal, c, 3 * c}};
    if (bias_) p.push_back({"qkv.bias", {3 * c}, Init::zeros, c, 3 * c});
    p.push_back(proj);
    if (bias_) p.push_back({"proj.bias", {c}, Init::zeros, c, c});
    return p;
  }
  void forward(const Tensor& x, Tensor& y) override {
    const std::int64_t n = x.shape()[0], t = x.shape()[1], c = x.shape()[2];
    const Device dev = x.device();
    dropped_ = context().training && p_ > 0;
    Saved s = saved_tensors(n, t, c, dev, true);
    Tensor qkv2 = s.qkv.reshaped({n * t, 3 * c});
    gemm(false, true, 1.f, x.reshaped({n * t, c}), weight(0), 0.f, qkv2);
    if (bias_) add_bias(qkv2, param(1));
    if (rope_ > 0) rope_rotate(s.qkv, heads_, rope_, 0, false);  // the kept qkv holds the turned q, k
    round16(qkv2);  // (16-bit runs: every GEMM operand below is a 16-bit value, on both backends)
    attention_probs(s.qkv, heads_, s.att);
    round16(s.att);
    if (dropped_) {
      const Tensor rows = s.att.reshaped({n, heads_ * t * t});  // one row per sample: keyed by its id
      Tensor out = s.dropped.reshaped(rows.shape()), mask = s.mask.reshaped(rows.shape());
      dropout_forward(rows, p_, layer_key(), step_key(dev), context().sample_ids, mask, out);
      round16(out);
    }
    attention_values(used(s), s.qkv, heads_, s.heads_out);
    round16(s.heads_out);
    Tensor y2 = y.reshaped({n * t, c});
    gemm(false, true, 1.f, s.heads_out.reshaped({n * t, c}), weight(1), 0.f, y2);
    if (bias_) add_bias(y2, param(3));
    keep(s);
  }
  void backward(const Tensor& x, const Tensor&, const Tensor& dy, Tensor& dx) override {
    const std::int64_t n = x.shape()[0], t = x.shape()[1], c = x.shape()[2];
    const Device dev = x.device();
    const float beta = accumulate_grads() ? 1.f : 0.f;
    if (beta == 0.f && bias_) fill(grad(1), 0.f), fill(grad(3), 0.f);
    const Saved s = saved_tensors(n, t, c, dev, false);
    const Tensor g = dy.reshaped({n * t, c});
    gemm(true, false, 1.f, g, s.heads_out.reshaped({n * t, c}), beta, weight_grad(1));  // dWproj
    if (bias_) accumulate_bias_grad(g, grad(3));
    Tensor dheads = temp(0, {n * t, c}, dev);
    gemm(false, false, 1.f, g, weight(1), 0.f, dheads);
    round16(dheads);
    Tensor datt = temp(1, s.att.shape(), dev), dqkv = temp(2, s.qkv.shape(), dev);
    attention_values_backward(used(s), s.qkv, dheads.reshaped({n, t, c}), heads_, datt, dqkv);
    if (dropped_) {
      Tensor rows = datt.reshaped({n, heads_ * t * t});
      multiply(rows, s.mask.reshaped(rows.shape()), rows);
    }
    attention_probs_backward(s.att, datt, s.qkv, heads_, context().precision, dqkv);
    if (rope_ > 0) rope_rotate(dqkv, heads_, rope_, 0, true);  // back to the unturned q, k
    round16(dqkv);
    const Tensor dqkv2 = dqkv.reshaped({n * t, 3 * c});
    gemm(true, false, 1.f, dqkv2, x.reshaped({n * t, c}), beta, weight_grad(0));  // dWqkv
    if (bias_) accumulate_bias_grad(dqkv2, grad(1));
    if (!dx.defined()) return;
    Tensor dx2 = dx.reshaped({n * t, c});
    gemm(false, false, 1.f, dqkv2, weight(0), 0.f, dx2);
  }

 private:
  // 16-bit runs: an intermediate that is a GEMM operand, rounded as cuBLAS takes it (layer.hpp).
  void round16(Tensor& t) const {
    if (context().precision != Precision::fp32) round_to_precision(t, context().precision);
  }
  // Weight k (0: qkv, 1: proj) and its gradient, whatever the biases.
  const Tensor& weight(int k) { return param(static_cast<std::size_t>(bias_ ? 2 * k : k)); }
  Tensor& weight_grad(int k) { return grad(static_cast<std::size_t>(bias_ ? 2 * k : k)); }
  // What forward keeps for backward, in the micro-batch's saved set (layer.hpp): in 16-bit runs
  // in 16 bits (compact_out / compact_keep / compact_in), the mask too when the format holds its
  // scale 1 / (1 - p).
  struct Saved {
    Tensor qkv, att, heads_out, mask, dropped;  // [n,t,3c], [n,H,t,t], [n,t,c], and the dropout's two [n,H,t,t]
  };
  Saved saved_tensors(std::int64_t n, std::int64_t t, std::int64_t c, Device dev, bool writing) {
    auto get = [&](std::size_t k, const Shape& shape, bool packable = true) {
      return writing ? compact_out(k, shape, dev, packable) : compact_in(k, shape, dev, packable);
    };
    Saved s{get(0, {n, t, 3 * c}), get(1, {n, heads_, t, t}), get(2, {n, t, c}), {}, {}};
    if (dropped_) s.mask = get(3, {n, heads_, t, t}, mask_packable()), s.dropped = get(4, {n, heads_, t, t});
    return s;
  }
  void keep(Saved& s) {
    compact_keep(0, s.qkv);
    compact_keep(1, s.att);
    compact_keep(2, s.heads_out);
    if (!dropped_) return;
    compact_keep(3, s.mask, mask_packable());
    compact_keep(4, s.dropped);
  }
  bool mask_packable() const { return exact_in(1.f / (1.f - p_), context().precision); }
  // The probabilities the values are weighted with: dropped (training with dropout) or not.
  static Tensor used(const Saved& s) { return s.dropped.defined() ? s.dropped : s.att; }
  // As the dropout layer keys its draws (layers/dropout.cpp), with another constant.
  std::uint64_t layer_key() const { return splitmix64(context().seed) ^ (0x6174746Eull + index()); }
  const std::uint64_t* step_key(Device dev) {
    if (context().step_key) return context().step_key;
    const std::uint64_t k = splitmix64(static_cast<std::uint64_t>(context().step));
    Tensor buf = scratch(step_key_, {2}, dev);
    upload(&k, sizeof k, buf);
    return reinterpret_cast<const std::uint64_t*>(buf.data());
  }

  std::int64_t heads_;
  bool bias_;
  float p_, proj_std_;
  float rope_;  // RoPE's theta; 0: none
  bool dropped_ = false;
  Tensor step_key_;
};
}  // namespace

void register_attention(LayerRegistry& r) {
  r.add("attention", [](const LayerArgs& a) {
    expect_named_only(a, 1, {"bias", "dropout", "proj_std", "rope"});
    const std::int64_t percent = layer_named_int(a, "dropout", 0, 0);
    if (percent >= 100) throw bad_input("[model] layers: " + a.text + ": dropout is a percentage, 0-99");
    return std::make_unique<Attention>(int_arg(a, 0, "the number of heads"), layer_named_bool(a, "bias", true),
                                       static_cast<float>(percent) / 100.f, layer_named_std(a, "proj_std"),
                                       static_cast<float>(layer_named_int(a, "rope", 0, 0)));
  });
}

}  // namespace hpctrain
