// attention(H) / attention(H, bias=0, proj_bias=0, dropout=P, proj_std=S, kv_heads=K, rope=THETA,
// qk_norm=1, head_dim=D, window=W, softcap=S, query_scalar=Q, fused=0|1): causal self-attention over [T, C] (GPT-2's
// and nanoGPT's CausalSelfAttention; with kv_heads, rope and qk_norm Llama's and modded-nanogpt's). One fused
// projection to queries, keys and values, qkv = x Wqkv^T + bqkv with Wqkv [(H + 2K) D, C] (D = C/H; K = H by default:
// [3C, C]); per query head the probabilities softmax(q k^T / sqrt(D)) over the positions up to each query's (the causal
// mask; with [model] attention_mask = document also within its document; with window=W only the last W of them, the
// query's own included: sliding-window attention, Mistral's and Gemma 3's local layers, Hugging Face's sliding_window;
// fused only; with softcap=S, Gemma 2's attn_logit_softcapping, each scaled score s is S tanh(s / S) before the
// softmax; with query_scalar=Q, Gemma 2's query_pre_attn_scalar, the scores are q k^T / sqrt(Q)), the weighted sum of
// the values of its key/value head (query head h reads head h / (H/K): grouped-query attention); the output projection
// y = a Wproj^T + bproj with Wproj [C, C]. head_dim=D (Qwen3 0.6B's 128 at C = 1024 with 16 heads, Mistral Nemo's):
// heads of D columns whatever C is, Wqkv [(H + 2K) D, C] and Wproj [C, H D]. Weights N(0, 0.02^2), the output
// projection N(0, proj_std^2) (GPT-2 scales it by 1/sqrt(2 * layers); 0: zeros, modded-nanogpt's); biases zero. bias=0:
// neither bias; proj_bias=0 (Qwen2's): bqkv only. qk_norm=1: each query and key head divided by its root mean square
// (no weight, eps 1e-6) after the projection. With qk_norm_weight=1 (Qwen3's q_norm and k_norm) each is then scaled by
// a learned weight of D columns, q_norm.weight for the queries and k_norm.weight for the keys (ones at first), with eps
// 10^-qk_eps (default 6), before the rotation (qk_whole=1, OLMo 2's: a position's queries normalized together over
// all H D columns with a weight of H D, its keys over K D; qk_offset=1, Gemma 3's: by 1 + weight, zeros at first;
// layers/norm_weight.hpp): the heads before the norm are kept for the backward (rmsnorm_forward/backward on copies of
// the query and key planes). Split by heads, each rank's heads give a part of the weights' gradients: summed over the
// group here (with sequence parallelism the trainer sums them, as for every replicated parameter). rope=THETA (Llama's:
// 10000, Llama 3 500000; rope_factor, rope_low, rope_high, rope_context: Llama 3's rope_scaling; rope_linear=F:
// linear scaling, every frequency F times lower, Gemma 3 4B-27B's; rope_short, rope_long, rope_amp: longrope's,
// Phi-3.5 mini's; rope_dims=R: the first R columns of each head rotate, Phi-4 mini's; layers/rope.hpp):
// rotary position embeddings turn the queries and keys after that (backend rope_rotate, rotate-half pairs as Hugging
// Face's Llama).
//
// fused=1 (the default without dropout): backend flash_attention_forward/backward, which never
// hold T x T; kept for the backward: qkv [N, T, (H + 2K) D], the heads' output [N, T, C] and the
// log-sum-exp [N, H, T]. fused=0 (the default with dropout=P, P percent of the probabilities
// dropped while training; multi-head only): the probabilities [N, H, T, T] are computed and kept
// (the largest activation of a GPT layer), with dropout their dropped copy and its mask too.
//
// Generation with a key/value cache (StepContext::decode_position): the new positions' queries,
// keys and values are added to a cache of this layer's and attend over all positions so far
// (backend flash_attention_decode), whatever `fused` says: without dropout, the same values.
//
// [parallel] tensor_parallel = T > 1 (Megatron's split by heads): each rank holds H/T query heads
// and K/T key/value heads (T must divide both): its block of each of Wqkv's q, k and v parts (and
// of bqkv), and the matching columns of Wproj; the output projection's partial products are
// summed over the group, then bproj (replicated) added once, and the input gradient (each rank's
// heads read every input) is summed in backward. Dropout on the probabilities draws each element
// as one rank would (this rank's heads are a block of the sample's row: a column offset). With
// [parallel] sequence_parallel its input and output hold this rank's block of the positions: the
// input is all-gathered first (again in backward), the projection's partial products
// reduce-scattered, the input gradient reduce-scattered, bproj's gradient this rank's positions'.
//
// In bf16/fp16 runs the intermediates that are GEMM operands (qkv, the probabilities and their
// dropped copy, the heads' output, and in the backward the heads' gradient, the score gradient
// and dqkv) are rounded to that format on both backends: cuBLAS multiplies 16-bit operands.
#include <cmath>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/hash.hpp"
#include "hpctrain/layers/norm_weight.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/layers/rope.hpp"

namespace hpctrain {

namespace {
// The layer's arguments, as written.
struct AttentionArgs {
  std::int64_t heads = 0, kv_heads = 0;  // kv_heads 0: heads
  std::int64_t head_dim = 0;             // 0: C / heads
  bool qkv_bias = true, proj_bias = true, qk_norm = false, qk_weight = false, qk_offset = false, fused = true;
  bool qk_whole = false;  // qk_weight's norm over all heads of a position (OLMo 2's), not head by head
  float qk_eps = 1e-6f;   // qk_weight's
  float dropout = 0, proj_std = 0.02f;
  Rotary rotary;                   // rope=THETA (0: none) and its scaling, rope_dims
  AttentionOptions fused_options;  // the sliding window (0: all) and the scores' cap (0: none)
};

class Attention final : public Layer {
 public:
  explicit Attention(const AttentionArgs& a) : a_(a), kv_(a.kv_heads ? a.kv_heads : a.heads) {}
  const char* type() const override { return "attention"; }
  bool takes_position_blocks() const override { return true; }
  Shape output_shape(const Shape& in) const override {
    const std::string me = "[model] layers: attention(" + std::to_string(a_.heads) + ", ...)";
    if (in.size() != 2 || (a_.head_dim == 0 && in[1] % a_.heads != 0))
      throw bad_input(me + " needs [T, C] activations with C a multiple of the heads (or head_dim), got " +
                      shape_string(in));
    if (a_.rotary.theta > 0) (void)a_.rotary.rotated(width(in[1]), me);
    const int tp = tensor_parallel().size;
    if (a_.heads % tp != 0 || kv_ % tp != 0)
      throw bad_input(me + ": " + std::to_string(a_.heads) + " query and " + std::to_string(kv_) +
                      " key/value heads do not divide among [parallel] tensor_parallel = " + std::to_string(tp) +
                      " ranks");
    if (a_.qk_whole && tp > 1)
      throw bad_input(me + ": qk_whole=1 (a QK-norm over every head) with [parallel] tensor_parallel = " +
                      std::to_string(tp) + ": each rank holds some of the heads");
    if (a_.fused && width(in[1]) > 256)
      throw bad_input(me + ": fused attention takes heads of at most 256 columns, got " + std::to_string(width(in[1])));
    return in;
  }
  std::vector<ParamSpec> param_specs(const Shape& in) const override {
    const std::int64_t c = in[1], d = width(c), qkv = (a_.heads + 2 * kv_) * d;
    // Global shapes; split by heads: q, k and v each cut into equal blocks, Wproj by columns.
    const Placement by_heads = Placement::sharded(0, {a_.heads * d, kv_ * d, kv_ * d});
    ParamSpec proj{"proj.weight", {c, a_.heads * d}, Init::normal, a_.heads * d, c};
    proj.std = a_.proj_std;
    proj.tp = Placement::sharded(1);
    std::vector<ParamSpec> p{{"qkv.weight", {qkv, c}, Init::normal, c, qkv}};
    p.back().tp = by_heads;
    if (a_.qkv_bias) p.push_back({"qkv.bias", {qkv}, Init::zeros, c, qkv}), p.back().tp = by_heads;
    if (a_.qk_weight)
      for (const char* name : {"q_norm.weight", "k_norm.weight"})
        p.push_back({name, {qk_width(name[0] == 'k', d)}, a_.qk_offset ? Init::zeros : Init::ones, d, d});
    p.push_back(proj);
    if (a_.proj_bias) p.push_back({"proj.bias", {c}, Init::zeros, c, c});
    return p;
  }
  void configure(const Shape& in) override { t_ = cache_t_ = sequence_split() ? tensor_parallel().sequence : in[0]; }
  void set_cache_positions(std::int64_t positions) override { cache_t_ = positions; }
  bool cache_serves(std::int64_t position) const override {
    return position == 0 || (cache_.defined() && base_ <= first_read(position));
  }
  // Saved: as saved_tensors lists them. Scratch, in backward: the heads' gradient and dqkv (unfused:
  // the probabilities' gradient), the float32 copies of 16-bit saved tensors, and with sequence
  // parallelism the gathered input and output gradient (two buffers each: Layer::sequence_gather),
  // the whole input gradient and its reduce-scatter's buffer.
  LayerMemory memory(const Shape& in, const MemoryQuery& q) const override {
    const auto n = static_cast<double>(q.rows), t = static_cast<double>(t_), c = static_cast<double>(in[1]);
    const double h = static_cast<double>(heads()), k = static_cast<double>(kv()), d = static_cast<double>(width(in[1]));
    const double qkv = n * t * (h + 2 * k) * d, out = n * t * h * d, probs = n * h * t * t;
    LayerMemory m;
    auto add = [&m](const LayerMemory& x) { m.saved += x.saved, m.scratch += x.scratch; };
    add(q.compact(qkv));
    add(q.compact(out));
    if (a_.fused) m.saved += 4 * n * h * t;
    if (!a_.fused) add(q.compact(probs));
    if (q.training && a_.dropout > 0)
      add(q.compact(probs, exact_in(1.f / (1.f - a_.dropout), q.precision))), add(q.compact(probs));
    const double factors = a_.qk_whole ? 2 : h + k;                                       // (QK-norm's, a position's)
    if (a_.qk_norm) m.saved += 4 * n * t * ((a_.qk_weight ? (h + k) * d : 0) + factors);  // (weights: the heads)
    if (a_.qk_weight) m.scratch += 2 * (MemoryQuery::temp(n * t * h * d) + MemoryQuery::temp(n * t * k * d));
    if (a_.qk_weight && tensor_parallel().size > 1 && !sequence_split()) m.scratch += 2 * MemoryQuery::temp(d);
    if (a_.qk_offset)  // (1 + weight, each part's)
      m.scratch += MemoryQuery::temp(static_cast<double>(qk_width(false, width(in[1])))) +
                   MemoryQuery::temp(static_cast<double>(qk_width(true, width(in[1]))));
    m.cache = 4 * n * static_cast<double>(cache_rows(t_)) * 2 * k * d;  // (decode: float32 [n, R, 2K D])
    m.scratch += MemoryQuery::temp(out) + MemoryQuery::temp(qkv) + (a_.fused ? 0 : MemoryQuery::temp(probs)) +
                 (sequence_split() ? 6 * MemoryQuery::temp(n * t * c) : 0);
    return m;
  }
  void forward(const Tensor& x_in, Tensor& y) override {
    if (has_context() && context().decode_position >= 0) return decode(x_in, y);
    const Tensor x = sequence_gather(x_in, 10);  // (sequence-parallel: every position)
    const std::int64_t n = x.shape()[0], t = x.shape()[1], c = x.shape()[2], hc = heads() * width(c);
    const Device dev = x.device();
    dropped_ = context().training && a_.dropout > 0;
    Saved s = saved_tensors(n, t, c, dev, true);
    Tensor qkv2 = s.qkv.reshaped({n * t, s.qkv.shape()[2]});
    gemm(false, true, 1.f, x.reshaped({n * t, c}), param(kWqkv), 0.f, qkv2);
    if (a_.qkv_bias) add_bias(qkv2, param(kBqkv));
    if (a_.qk_weight)
      weighted_qk_norm(s.qkv, s.pre_q, s.pre_k, s.rstd_q, s.rstd_k);
    else if (a_.qk_norm)
      qk_norm_forward(s.qkv, heads(), kv(), kQkNormEps, s.rstd);
    if (a_.rotary.theta > 0) rotate(s.qkv, c, 0, t, false);  // kept turned
    round16(qkv2);  // (16-bit runs: every GEMM operand below is a 16-bit value, on both backends)
    if (a_.fused) {
      flash_attention_forward(s.qkv, heads(), kv(), context().doc_ids, a_.fused_options, s.heads_out, s.lse);
    } else {
      if (context().doc_ids.defined())
        throw bad_input("[model] attention_mask = document needs fused attention; attention(..., dropout=P) holds " +
                        std::string("the probabilities (fused=0): drop the attention dropout"));
      probabilities_forward(s);
    }
    round16(s.heads_out);
    Tensor whole = sequence_whole(y, 12);
    Tensor y2 = whole.reshaped({n * t, c});
    gemm(false, true, 1.f, s.heads_out.reshaped({n * t, hc}), param(wproj()), 0.f, y2);
    sequence_reduce_scatter(whole, y, 13);  // (split by heads: each rank's heads' share of the projection)
    if (a_.proj_bias) {
      Tensor out = y.reshaped({y.numel() / c, c});
      add_bias(out, param(wproj() + 1));
    }
    keep(s);
  }
  void backward(const Tensor& x_in, const Tensor&, const Tensor& dy_in, Tensor& dx) override {
    const Tensor x = sequence_gather(x_in, 10), dy = sequence_gather(dy_in, 12);  // (sequence-parallel)
    const std::int64_t n = x.shape()[0], t = x.shape()[1], c = x.shape()[2], hc = heads() * width(c);
    const Device dev = x.device();
    const float beta = accumulate_grads() ? 1.f : 0.f;
    if (beta == 0.f && a_.qkv_bias) fill(grad(kBqkv), 0.f);
    if (beta == 0.f && a_.proj_bias) fill(grad(wproj() + 1), 0.f);
    if (beta == 0.f && a_.qk_weight) fill(grad(qk_weight_at()), 0.f), fill(grad(qk_weight_at() + 1), 0.f);
    const Saved s = saved_tensors(n, t, c, dev, false);
    const Tensor g = dy.reshaped({n * t, c});
    gemm(true, false, 1.f, g, s.heads_out.reshaped({n * t, hc}), beta, grad(wproj()));  // dWproj
    if (a_.proj_bias)
      accumulate_bias_grad(dy_in.reshaped({dy_in.numel() / c, c}), grad(wproj() + 1));  // (this rank's positions)
    Tensor dheads = temp(0, {n, t, hc}, dev), dqkv = temp(2, s.qkv.shape(), dev);
    Tensor dheads2 = dheads.reshaped({n * t, hc});
    gemm(false, false, 1.f, g, param(wproj()), 0.f, dheads2);
    round16(dheads);
    if (a_.fused)
      flash_attention_backward(s.qkv, s.heads_out, s.lse, dheads, heads(), kv(), context().doc_ids, a_.fused_options,
                               dqkv);
    else
      probabilities_backward(s, dheads, dqkv);
    // QK-norm's backward on the turned values and gradients (a rotation keeps mean(dy * xhat)), then
    // unturned; with weights (which a rotation does not keep) unturned first.
    if (a_.qk_norm && !a_.qk_weight) qk_norm_backward(s.qkv, s.rstd, heads(), kv(), dqkv);
    if (a_.rotary.theta > 0) rotate(dqkv, c, 0, t, true);
    if (a_.qk_weight) weighted_qk_norm_backward(s, dqkv);
    round16(dqkv);
    const Tensor dqkv2 = dqkv.reshaped({n * t, dqkv.shape()[2]});
    gemm(true, false, 1.f, dqkv2, x.reshaped({n * t, c}), beta, grad(kWqkv));  // dWqkv
    if (a_.qkv_bias) accumulate_bias_grad(dqkv2, grad(kBqkv));
    if (!dx.defined()) return;
    Tensor whole = sequence_whole(dx, 14);
    Tensor dx2 = whole.reshaped({n * t, c});
    gemm(false, false, 1.f, dqkv2, param(kWqkv), 0.f, dx2);
    sequence_reduce_scatter(whole, dx, 15);  // (every rank's heads read the whole input)
  }

 private:
  static constexpr float kQkNormEps = 1e-6f;
  // Generation with a key/value cache (StepContext::decode_position = P): x [B, L, C] holds
  // positions P .. P+L-1 of B sequences drawn side by side (--samples). Their queries, keys and
  // values are computed side by side (normed and turned as in forward); the keys and values go to
  // the rows of positions P .. P+L-1 of each sequence's cache (ready_cache: [B, R, 2K D] kept
  // across calls, no queries: (H + 2K) / 2K times less than the whole rows), and the L queries
  // attend over the rows their sequence keeps before them (its documents: doc_ids [B, P+L]).
  // Nothing is kept for a backward.
  void decode(const Tensor& x, Tensor& y) {
    const std::int64_t b = x.shape()[0], len = x.shape()[1], c = x.shape()[2], p = context().decode_position;
    const std::int64_t ld = (heads() + 2 * kv()) * width(c), kv_ld = 2 * kv() * width(c), hc = heads() * width(c);
    HPCT_CHECK(p + len <= cache_t_, "attention: a key/value cache holds sequences of " + std::to_string(cache_t_) +
                                        " positions, not " + shape_string(x.shape()) + " from position " +
                                        std::to_string(p));
    ready_cache(b, p, len, kv_ld, x.device());
    const std::int64_t rows = cache_.shape()[1], at = p - base_;  // (position p's row)
    Tensor now = temp(2, {b, len, ld}, x.device());
    Tensor now2 = now.reshaped({b * len, ld});
    gemm(false, true, 1.f, x.reshaped({b * len, c}), param(kWqkv), 0.f, now2);
    if (a_.qkv_bias) add_bias(now2, param(kBqkv));
    if (a_.qk_weight) {
      const Device dev = x.device();
      Tensor pre_q = temp(6, {b * len, heads(), width(c)}, dev), pre_k = temp(7, {b * len, kv(), width(c)}, dev);
      Tensor rstd_q = temp(8, {b * len * qk_factors(false)}, dev), rstd_k = temp(9, {b * len * qk_factors(true)}, dev);
      weighted_qk_norm(now, pre_q, pre_k, rstd_q, rstd_k);
    } else if (a_.qk_norm) {
      Tensor rstd = temp(3, {b * len, heads() + kv()}, x.device());
      qk_norm_forward(now, heads(), kv(), kQkNormEps, rstd);
    }
    if (a_.rotary.theta > 0) rotate(now, c, p, p + len, false);
    round16(now2);
    Tensor out = temp(0, {b, len, hc}, x.device()), lse = temp(1, {b, heads(), len}, x.device());
    const Tensor& docs = context().doc_ids;
    for (std::int64_t s = 0; s < b; ++s) {
      const Tensor q = now.view(s * len * ld, {1, len, ld});  // (the queries: each row's first H D)
      Tensor fresh = cache_.view((s * rows + at) * kv_ld, {1, len, kv_ld});
      copy_planes(q, heads() + 2 * kv(), heads(), fresh, 2 * kv(), 0, 2 * kv(), width(c), false);  // (k|v columns)
      Tensor out_s = out.view(s * len * hc, {1, len, hc}), lse_s = lse.view(s * heads() * len, {1, heads(), len});
      flash_attention_decode(q, cache_.view(s * rows * kv_ld, {1, at + len, kv_ld}), heads(), kv(),
                             docs.defined() ? docs.view(s * (p + len) + base_, {1, at + len}) : docs, a_.fused_options,
                             out_s, lse_s);
    }
    round16(out);
    Tensor y2 = y.reshaped({b * len, c});
    gemm(false, true, 1.f, out.reshaped({b * len, hc}), param(wproj()), 0.f, y2);
    tp_sum(y2);
    if (a_.proj_bias) add_bias(y2, param(wproj() + 1));
  }
  // The sliding window when it is shorter than the sequence (window=W < T), else 0: every position.
  std::int64_t short_window() const {
    const std::int64_t w = a_.fused_options.window;
    return w > 0 && w < cache_t_ ? w : 0;
  }
  // The first position whose row a pass from position p reads: p - (W - 1) with a sliding window.
  std::int64_t first_read(std::int64_t p) const {
    return short_window() > 0 ? std::max<std::int64_t>(0, p - (short_window() - 1)) : 0;
  }
  // The rows of a sequence's cache for passes of up to `len` positions: P (every position a
  // generation pass reaches: Model::set_positions); with a sliding window of W < P, the W - 1
  // positions before the pass that its queries read, W - 1 more to move them into, and the pass's
  // own: at most 2 (W - 1) + len.
  std::int64_t cache_rows(std::int64_t len) const {
    return short_window() > 0 ? std::min(cache_t_, 2 * (short_window() - 1) + len) : cache_t_;
  }
  // The cache made ready for a pass over positions p .. p+len-1: row r of a sequence holds
  // position base_ + r. A pass from 0 starts anew; a later one keeps positions first_read(p) ..
  // p-1. Where the pass's rows run past the cache's end, those kept rows move to the front, in
  // place (with a window they lie more than W - 1 rows ahead: no overlap) or into a larger cache
  // (--interactive's next turn when the conversation grew: Model::set_positions). So a long
  // generation in a windowed layer holds its window's rows, not T's (llama.cpp's SWA cache).
  void ready_cache(std::int64_t b, std::int64_t p, std::int64_t len, std::int64_t ld, Device dev) {
    const std::int64_t rows = cache_.defined() ? cache_.shape()[1] : 0, lo = first_read(p), need = cache_rows(len);
    HPCT_CHECK(p == 0 || (cache_.defined() && cache_.shape()[0] == b && base_ <= lo),
               "attention: a key/value cache of " + std::to_string(b) + " sequences from position " +
                   std::to_string(p) + " needs the rows from position " + std::to_string(lo) + "; it holds " +
                   (cache_.defined() ? shape_string(cache_.shape()) + " from " + std::to_string(base_) : "none"));
    if (p == 0 && rows == need && cache_.shape()[0] == b) return void(base_ = 0);
    if (p > 0 && p + len - base_ <= rows) return;  // (the rows are there)
    const std::int64_t kept = p - lo;
    const auto keep = [&](const Tensor& from, std::int64_t from_rows, std::int64_t to_rows) {
      for (std::int64_t s = 0; kept > 0 && s < b; ++s) {
        Tensor to = cache_.view(s * to_rows * ld, {1, kept, ld});
        copy(from.view((s * from_rows + lo - base_) * ld, {1, kept, ld}), to);
      }
      base_ = lo;
    };
    if (p > 0 && rows >= need) return keep(cache_, rows, rows);  // (moved to the front)
    const Tensor old = cache_;
    cache_ = Tensor();
    cache_ = scratch(cache_, {b, need, ld}, dev);
    keep(old, rows, need);
  }
  // What forward keeps for backward, in the micro-batch's saved set (layer.hpp): in 16-bit runs
  // in 16 bits (compact_out / compact_keep / compact_in), the mask too when the format holds its
  // scale 1 / (1 - p); the log-sum-exp and QK-norm's factors in float32.
  struct Saved {
    Tensor qkv, att, heads_out, mask, dropped;  // [n,t,(H+2K)D], [n,H,t,t], [n,t,c], the dropout's two [n,H,t,t]
    Tensor lse, rstd;                           // [n,H,t] (fused), [n*t, H+K] (qk_norm)
    Tensor pre_q, pre_k, rstd_q, rstd_k;        // qk_norm_weight: the heads before it [n*t, H|K, D], [n*t*(H|K)]
  };
  Saved saved_tensors(std::int64_t n, std::int64_t t, std::int64_t c, Device dev, bool writing) {
    auto get = [&](std::size_t k, const Shape& shape, bool packable = true) {
      return writing ? compact_out(k, shape, dev, packable) : compact_in(k, shape, dev, packable);
    };
    const std::int64_t h = heads(), d = width(c), qkv = (h + 2 * kv()) * d;
    Saved s;
    s.qkv = get(0, {n, t, qkv});
    s.heads_out = get(2, {n, t, h * d});
    if (a_.fused) s.lse = saved(1, {n, h, t}, dev);
    if (!a_.fused) s.att = get(1, {n, h, t, t});
    if (dropped_) s.mask = get(3, {n, h, t, t}, mask_packable()), s.dropped = get(4, {n, h, t, t});
    if (a_.qk_norm && !a_.qk_weight) s.rstd = saved(5, {n * t, h + kv()}, dev);
    if (a_.qk_weight) {
      s.pre_q = saved(6, {n * t, h, d}, dev), s.pre_k = saved(7, {n * t, kv(), d}, dev);
      s.rstd_q = saved(8, {n * t * qk_factors(false)}, dev), s.rstd_k = saved(9, {n * t * qk_factors(true)}, dev);
    }
    return s;
  }
  void keep(Saved& s) {
    compact_keep(0, s.qkv);
    compact_keep(2, s.heads_out);
    if (!a_.fused) compact_keep(1, s.att);
    if (!dropped_) return;
    compact_keep(3, s.mask, mask_packable());
    compact_keep(4, s.dropped);
  }
  // The unfused path (multi-head only): the probabilities held, dropout on them while training.
  void probabilities_forward(Saved& s) {
    attention_probs(s.qkv, heads(), s.att);
    round16(s.att);
    if (dropped_) {
      const std::int64_t n = s.att.shape()[0], per_sample = s.att.numel() / n;
      const Tensor rows = s.att.reshaped({n, per_sample});  // one row per sample: keyed by its id
      Tensor out = s.dropped.reshaped(rows.shape()), mask = s.mask.reshaped(rows.shape());
      // (tensor parallelism: this rank's heads are block `rank` of the sample's row of every head)
      dropout_forward(rows, a_.dropout, layer_key(), step_key(s.att.device()), context().sample_ids,
                      tensor_parallel().rank * per_sample, mask, out);
      round16(out);
    }
    attention_values(used(s), s.qkv, heads(), s.heads_out);
  }
  void probabilities_backward(const Saved& s, const Tensor& dheads, Tensor& dqkv) {
    Tensor datt = temp(1, s.att.shape(), s.att.device());
    attention_values_backward(used(s), s.qkv, dheads, heads(), datt, dqkv);
    if (dropped_) {
      const std::int64_t n = datt.shape()[0];
      Tensor rows = datt.reshaped({n, datt.numel() / n});
      multiply(rows, s.mask.reshaped(rows.shape()), rows);
    }
    attention_probs_backward(s.att, datt, s.qkv, heads(), context().precision, dqkv);
  }
  // rope_rotate with this layer's frequencies for a pass reaching `positions` (longrope's choice).
  void rotate(Tensor& qkv, std::int64_t c, std::int64_t offset, std::int64_t positions, bool inverse) {
    rope_rotate(qkv, heads(), kv(), a_.rotary.frequencies(width(c), positions), offset, inverse,
                static_cast<float>(a_.rotary.scaling.amplitude));
  }
  // 16-bit runs: an intermediate that is a GEMM operand, rounded as cuBLAS takes it (layer.hpp).
  void round16(Tensor& t) const {
    if (context().precision != Precision::fp32) round_to_precision(t, context().precision);
  }
  // A head's columns for activations of width c.
  std::int64_t width(std::int64_t c) const { return a_.head_dim ? a_.head_dim : c / a_.heads; }
  // The query and key/value heads this rank computes (all of them without tensor parallelism).
  std::int64_t heads() const { return a_.heads / tensor_parallel().size; }
  std::int64_t kv() const { return kv_ / tensor_parallel().size; }
  // The parameters' indices, in param_specs' order: Wqkv, bqkv (qkv_bias), the query and key norm
  // weights (qk_norm_weight), Wproj, bproj (proj_bias).
  static constexpr std::size_t kWqkv = 0, kBqkv = 1;
  std::size_t qk_weight_at() const { return a_.qkv_bias ? 2 : 1; }               // (k_norm's: + 1)
  std::size_t wproj() const { return qk_weight_at() + (a_.qk_weight ? 2 : 0); }  // (bproj: wproj() + 1)
  // The columns one weighted QK-norm spans (the keys' or the queries'): a head's D, or with qk_whole
  // all of a position's heads; and the factors it keeps per position.
  std::int64_t qk_width(bool keys, std::int64_t d) const { return a_.qk_whole ? (keys ? kv() : heads()) * d : d; }
  std::int64_t qk_factors(bool keys) const { return a_.qk_whole ? 1 : keys ? kv() : heads(); }
  // qk_norm_weight: the query and key planes of qkv [rows, H + 2K, D] copied to pre_q [rows, H, D] and
  // pre_k [rows, K, D], each RMS-normalized over D (qk_whole: over a row's H D or K D) and scaled by
  // its weight (rstd_q, rstd_k: the factors), written back in place.
  void weighted_qk_norm(Tensor& qkv, Tensor& pre_q, Tensor& pre_k, Tensor& rstd_q, Tensor& rstd_k) {
    const std::int64_t planes = heads() + 2 * kv(), d = pre_q.shape().back();
    const Device dev = qkv.device();
    for (int part = 0; part < 2; ++part) {
      Tensor& pre = part ? pre_k : pre_q;
      const std::int64_t first = part ? heads() : 0, count = part ? kv() : heads();
      copy_planes(qkv, planes, first, pre, count, 0, count, d, false);
      Tensor normed = temp(static_cast<std::size_t>(4 + part), pre.shape(), dev);
      rmsnorm_forward(pre, qk_factor(qk_weight_at() + static_cast<std::size_t>(part), dev), qk_width(part, d),
                      a_.qk_eps, part ? rstd_k : rstd_q, normed);
      copy_planes(normed, count, 0, qkv, planes, first, count, d, false);
    }
  }
  // The weight QK-norm parameter `w` scales by: itself, or 1 + it (qk_offset).
  Tensor qk_factor(std::size_t w, Device dev) {
    return norm_factor(param(w), a_.qk_offset, a_.qk_offset ? temp(11 + w, param(w).shape(), dev) : Tensor());
  }
  // Its backward, in place on dqkv's (unturned) query and key planes; the weights' gradients added.
  void weighted_qk_norm_backward(const Saved& s, Tensor& dqkv) {
    const std::int64_t planes = heads() + 2 * kv(), d = s.pre_q.shape().back();
    for (int part = 0; part < 2; ++part) {
      const Tensor& pre = part ? s.pre_k : s.pre_q;
      const std::int64_t first = part ? heads() : 0, count = part ? kv() : heads();
      Tensor dy = temp(4, pre.shape(), pre.device()), dx = temp(5, pre.shape(), pre.device());
      copy_planes(dqkv, planes, first, dy, count, 0, count, d, false);
      const std::size_t w = qk_weight_at() + static_cast<std::size_t>(part);
      const bool sum_here = tensor_parallel().size > 1 && !sequence_split();
      Tensor dw = sum_here ? temp(10, {d}, pre.device()) : grad(w);  // (this micro-batch's part, to sum)
      if (sum_here) fill(dw, 0.f);
      rmsnorm_backward(pre, qk_factor(w, pre.device()), part ? s.rstd_k : s.rstd_q, dy, qk_width(part, d), dx, dw);
      if (sum_here) tp_sum(dw), add(grad(w), dw, grad(w));
      copy_planes(dx, count, 0, dqkv, planes, first, count, d, false);
    }
  }
  bool mask_packable() const { return exact_in(1.f / (1.f - a_.dropout), context().precision); }
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

  AttentionArgs a_;
  std::int64_t kv_;  // key/value heads
  bool dropped_ = false;
  Tensor step_key_;
  std::int64_t t_ = 0;        // the sequence's positions (configure): the most one forward runs
  std::int64_t cache_t_ = 0;  // generation: the positions the key/value cache holds (set_cache_positions; else t_)
  Tensor cache_;              // decode: the key/value rows of the positions run so far (ready_cache)
  std::int64_t base_ = 0;     // the position of each sequence's first row in cache_
};

AttentionArgs attention_args(const LayerArgs& a) {
  std::vector<std::string> keys{"bias",     "proj_bias", "qk_norm_weight", "qk_eps",       "qk_offset",
                                "qk_whole", "head_dim",  "dropout",        "proj_std",     "kv_heads",
                                "qk_norm",  "window",    "softcap",        "query_scalar", "fused"};
  keys.insert(keys.end(), rotary_arg_names().begin(), rotary_arg_names().end());
  expect_named_only(a, 1, keys);
  AttentionArgs r;
  r.heads = int_arg(a, 0, "the number of heads");
  const std::int64_t percent = layer_named_int(a, "dropout", 0, 0);
  if (percent >= 100) throw bad_input("[model] layers: " + a.text + ": dropout is a percentage, 0-99");
  r.dropout = static_cast<float>(percent) / 100.f;
  r.qkv_bias = layer_named_bool(a, "bias", true);
  r.proj_bias = layer_named_bool(a, "proj_bias", r.qkv_bias);
  r.proj_std = layer_named_std(a, "proj_std");
  r.kv_heads = layer_named_int(a, "kv_heads", 0, 1);
  if (r.kv_heads && r.heads % r.kv_heads != 0)
    throw bad_input("[model] layers: " + a.text + ": kv_heads = " + std::to_string(r.kv_heads) + " must divide the " +
                    std::to_string(r.heads) + " heads");
  r.rotary = rotary_args(a);
  r.qk_norm = layer_named_bool(a, "qk_norm", false);
  r.head_dim = layer_named_int(a, "head_dim", 0, 0);
  r.qk_weight = layer_named_bool(a, "qk_norm_weight", false);
  r.qk_eps = layer_named_eps(a, "qk_eps", 6);
  r.qk_offset = layer_named_bool(a, "qk_offset", false);
  if (r.qk_offset && !r.qk_weight)
    throw bad_input("[model] layers: " + a.text + ": qk_offset=1 needs qk_norm_weight=1 (it offsets the weight)");
  r.qk_whole = layer_named_bool(a, "qk_whole", false);
  if (r.qk_whole && !r.qk_weight)
    throw bad_input("[model] layers: " + a.text + ": qk_whole=1 needs qk_norm_weight=1 (it spans the weighted norm)");
  if (r.qk_weight && !r.qk_norm)
    throw bad_input("[model] layers: " + a.text + ": qk_norm_weight=1 needs qk_norm=1 (it weights the norm)");
  r.fused = layer_named_bool(a, "fused", percent == 0);
  if (r.fused && percent > 0)
    throw bad_input("[model] layers: " + a.text + ": dropout on the probabilities needs fused=0 (fused attention " +
                    "never holds them)");
  if (!r.fused && r.kv_heads && r.kv_heads != r.heads)
    throw bad_input("[model] layers: " + a.text + ": grouped-query attention (kv_heads) needs fused=1");
  r.fused_options.window = layer_named_int(a, "window", 0, 0);
  r.fused_options.softcap = layer_named_number(a, "softcap", 0.f);
  const float scalar = layer_named_number(a, "query_scalar", 0.f);
  r.fused_options.scale = scalar > 0.f ? 1.f / std::sqrt(scalar) : 0.f;
  if (!r.fused && (r.fused_options.window || r.fused_options.softcap > 0.f || scalar > 0.f))
    throw bad_input("[model] layers: " + a.text +
                    ": a sliding window, softcap or query_scalar needs fused=1 (no attention dropout)");
  return r;
}
}  // namespace

void register_attention(LayerRegistry& r) {
  r.add("attention",
        "attention(heads, bias=1, proj_bias=bias, dropout=0, proj_std=0.02, kv_heads=heads, " + rotary_usage() +
            ", qk_norm=0, qk_norm_weight=0, qk_eps=6, qk_offset=0, qk_whole=0, "
            "head_dim=C/heads, "
            "window=0, softcap=0, query_scalar=head_dim, fused=1): causal self-attention on [T, C]; rope=THETA rotary "
            "positions; window=W: each position sees the last W only; softcap=S: scores S tanh(s / S); query_scalar=Q: "
            "scores q . k / sqrt(Q)",
        [](const LayerArgs& a) { return std::make_unique<Attention>(attention_args(a)); });
}

}  // namespace hpctrain
