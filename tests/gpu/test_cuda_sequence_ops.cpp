// The sequence models' operations on the CUDA backend against the CPU backend (tolerances as in
// test_cuda_ops.cpp): embedding, layer norm and causal attention's pieces, and fused attention
// with QK-norm and RoPE on grouped-query heads.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gpu_test_util.hpp"
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/layers/rope.hpp"
#include "hpctrain/model/model.hpp"

using namespace hpctrain;

namespace {

using gputest::CudaOps;

// The sequence-model operations: embedding (its gradient adds with atomics: 1e-5), layer norm
// (float sums in another order: 1e-5), causal attention's four pieces (cuBLAS strided-batched
// GEMMs and the masked softmax kernels: 1e-5).
TEST_F(CudaOps, SequenceModelOps) {
  const std::int64_t n = 3, t = 17, c = 12, heads = 3, vocab = 9;
  Tensor ids = Tensor::zeros({n, t}, host_, DType::i32);  // token ids: int32
  for (std::int64_t i = 0; i < n * t; ++i) ids.data_as<std::int32_t>()[i] = static_cast<std::int32_t>((i * 7) % vocab);
  Tensor dids = on_gpu(ids), table = random({vocab, c}, 40), dtable = on_gpu(table);
  Tensor y = Tensor::zeros({n, t, c}, host_), dy = Tensor::zeros({n, t, c}, dev_);
  embedding_forward(ids, table, 0, vocab, y);
  embedding_forward(dids, dtable, 0, vocab, dy);
  expect_close("embedding_forward", y, dy, 0);
  Tensor g = random({n, t, c}, 41), dg = on_gpu(g), acc = random({vocab, c}, 42), dacc = on_gpu(acc);
  embedding_backward(ids, g, 0, vocab, acc);
  embedding_backward(dids, dg, 0, vocab, dacc);
  expect_close("embedding_backward", acc, dacc, 0);  // each id's rows added in position order on both
  {  // a block of the table's rows (vocabulary-parallel): rows 3..5 here, the other ids zeros / nothing
    Tensor block = table.view(3 * c, {3, c}), dblock = on_gpu(block);
    embedding_forward(ids, block, 3, vocab, y);
    embedding_forward(dids, dblock, 3, vocab, dy);
    expect_close("embedding_forward", y, dy, 0);
    Tensor ab = random({3, c}, 46), dab = on_gpu(ab);
    embedding_backward(ids, g, 3, vocab, ab);
    embedding_backward(dids, dg, 3, vocab, dab);
    expect_close("embedding_backward", ab, dab, 0);
  }

  Tensor x = random({n, t, c}, 43, -2.f, 3.f), dx = on_gpu(x), w = random({c}, 44), dw = on_gpu(w);
  Tensor b = random({c}, 45), db = on_gpu(b);
  Tensor mean = Tensor::zeros({n * t}, host_), rstd = Tensor::zeros({n * t}, host_);
  Tensor dmean = Tensor::zeros({n * t}, dev_), drstd = Tensor::zeros({n * t}, dev_);
  for (const bool bias : {true, false}) {
    layernorm_forward(x, w, bias ? b : Tensor(), c, 1e-5f, mean, rstd, y);
    layernorm_forward(dx, dw, bias ? db : Tensor(), c, 1e-5f, dmean, drstd, dy);
    expect_close("layernorm_forward", y, dy, 1e-5);
    expect_close("layernorm_forward", rstd, drstd, 1e-5);
    Tensor gx = Tensor::zeros(x.shape(), host_), dgx = Tensor::zeros(x.shape(), dev_);
    Tensor gw = random({c}, 46), dgw = on_gpu(gw), gb = random({c}, 47), dgb = on_gpu(gb), none;
    layernorm_backward(x, w, mean, rstd, g, c, gx, gw, bias ? gb : none);
    layernorm_backward(dx, dw, dmean, drstd, dg, c, dgx, dgw, bias ? dgb : none);
    expect_close("layernorm_backward", gx, dgx, 1e-5);
    expect_close("layernorm_backward", gw, dgw, 1e-5);
    expect_close("layernorm_backward", gb, dgb, 1e-5);
  }

  // RMS norm (float sums in another order: 1e-5).
  {
    rmsnorm_forward(x, w, c, 1e-5f, rstd, y);
    rmsnorm_forward(dx, dw, c, 1e-5f, drstd, dy);
    expect_close("rmsnorm_forward", y, dy, 1e-5);
    expect_close("rmsnorm_forward", rstd, drstd, 1e-5);
    Tensor gx = Tensor::zeros(x.shape(), host_), dgx = Tensor::zeros(x.shape(), dev_);
    Tensor gw = random({c}, 49), dgw = on_gpu(gw);
    rmsnorm_backward(x, w, rstd, g, c, gx, gw);
    rmsnorm_backward(dx, dw, drstd, dg, c, dgx, dgw);
    expect_close("rmsnorm_backward", gx, dgx, 1e-5);
    expect_close("rmsnorm_backward", gw, dgw, 1e-5);
  }

  // RoPE: the angles in double on both, then float rotations (1e-6); forward then inverse is x.
  {
    Tensor r = random({n, t, 3 * c}, 51), dr = on_gpu(r), before = random({n, t, 3 * c}, 51);
    const auto freq = rope_inv_freq(10000, c / heads);
    rope_rotate(r, heads, heads, freq, 5, false, 1.f);
    rope_rotate(dr, heads, heads, freq, 5, false, 1.f);
    expect_close("rope_rotate", r, dr, 1e-6);
    rope_rotate(dr, heads, heads, freq, 5, true, 1.f);
    expect_close("rope_rotate inverse", before, dr, 1e-6);
    // Partial (Phi-4 mini's kind: the first 2 of each head's 4 columns) with longrope's amplitude 1.25,
    // forward and transposed: the CPU's.
    const auto part = rope_inv_freq(10000, c / heads - 2);
    Tensor pr = random({n, t, 3 * c}, 52), dpr = on_gpu(pr);
    for (const bool inverse : {false, true}) {
      rope_rotate(pr, heads, heads, part, 5, inverse, 1.25f);
      rope_rotate(dpr, heads, heads, part, 5, inverse, 1.25f);
      expect_close(inverse ? "rope_rotate partial, transposed" : "rope_rotate partial", pr, dpr, 1e-6);
    }
  }
  // SwiGLU (the same float operations: 1e-6) and GeGLU (tanhf against std::tanh: 1e-5), element-wise.
  struct Gated {
    const char* name;
    void (*forward)(const Tensor&, Tensor&);
    void (*backward)(const Tensor&, const Tensor&, Tensor&);
    double tolerance;
  };
  for (const Gated& op :
       {Gated{"swiglu", swiglu_forward, swiglu_backward, 1e-6}, Gated{"geglu", geglu_forward, geglu_backward, 1e-5}}) {
    Tensor half = Tensor::zeros({n, t, c / 2}, host_), dhalf = Tensor::zeros({n, t, c / 2}, dev_);
    op.forward(x, half);
    op.forward(dx, dhalf);
    expect_close((std::string(op.name) + "_forward").c_str(), half, dhalf, op.tolerance);
    Tensor gh = random({n, t, c / 2}, 50), dgh = on_gpu(gh);
    Tensor gx = Tensor::zeros(x.shape(), host_), dgx = Tensor::zeros(x.shape(), dev_);
    op.backward(x, gh, gx);
    op.backward(dx, dgh, dgx);
    expect_close((std::string(op.name) + "_backward").c_str(), gx, dgx, op.tolerance);
  }
  // Gemma 2's soft-capping (tanhf against std::tanh: 1e-5), in place, -inf kept.
  Tensor capped = random({n, t, c}, 51, -8.f, 8.f);
  capped.data()[3] = -INFINITY;
  Tensor dcapped = on_gpu(capped);
  softcap_forward(capped, 3.f);
  softcap_forward(dcapped, 3.f);
  expect_close("softcap_forward", capped, dcapped, 1e-5);
  Tensor gc = random(capped.shape(), 52), dgc = on_gpu(gc);
  softcap_backward(capped, 3.f, gc);
  softcap_backward(dcapped, 3.f, dgc);
  expect_close("softcap_backward", gc, dgc, 1e-5);

  Tensor qkv = random({n, t, 3 * c}, 48), dqkv_in = on_gpu(qkv);
  Tensor att = Tensor::zeros({n, heads, t, t}, host_), datt = Tensor::zeros(att.shape(), dev_);
  attention_probs(qkv, heads, att);
  attention_probs(dqkv_in, heads, datt);
  expect_close("attention_probs", att, datt, 1e-5);
  Tensor out = Tensor::zeros({n, t, c}, host_), dout = Tensor::zeros({n, t, c}, dev_);
  attention_values(att, qkv, heads, out);
  attention_values(datt, dqkv_in, heads, dout);
  expect_close("attention_values", out, dout, 1e-5);
  Tensor gatt = Tensor::zeros(att.shape(), host_), dgatt = Tensor::zeros(att.shape(), dev_);
  Tensor gqkv = Tensor::zeros(qkv.shape(), host_), dgqkv = Tensor::zeros(qkv.shape(), dev_);
  attention_values_backward(att, qkv, g, heads, gatt, gqkv);
  attention_values_backward(datt, dqkv_in, dg, heads, dgatt, dgqkv);
  expect_close("attention_values_backward", gatt, dgatt, 1e-5);
  attention_probs_backward(att, gatt, qkv, heads, Precision::fp32, gqkv);
  attention_probs_backward(datt, dgatt, dqkv_in, heads, Precision::fp32, dgqkv);
  expect_close("attention_probs_backward", gatt, dgatt, 1e-5);
  expect_close("attention_probs_backward", gqkv, dgqkv, 1e-5);
}

// Fused attention, QK-norm and RoPE on grouped-query heads (4 query heads, 2 key/value heads, D
// 8), causal and with documents, each with and without a sliding window of 29 positions and Gemma 2's
// soft-capped scores, against the CPU's: float sums in another order (1e-5).
TEST_F(CudaOps, FusedAttentionOps) {
  const std::int64_t n = 2, t = 70, heads = 4, kv = 2, d = 8, width = (heads + 2 * kv) * d;
  Tensor qkv = random({n, t, width}, 60, -2.f, 2.f), dqkv_in = on_gpu(qkv);
  Tensor rstd = Tensor::zeros({n * t, heads + kv}, host_), drstd = Tensor::zeros(rstd.shape(), dev_);
  qk_norm_forward(qkv, heads, kv, 1e-6f, rstd);
  qk_norm_forward(dqkv_in, heads, kv, 1e-6f, drstd);
  expect_close("qk_norm_forward", qkv, dqkv_in, 1e-5);
  RopeScaling llama3;
  llama3.factor = 8, llama3.original_context = 32;  // every band of the blend at this T
  const auto freq = rope_inv_freq(500000, d, llama3);
  rope_rotate(qkv, heads, kv, freq, 3, false, 1.f);
  rope_rotate(dqkv_in, heads, kv, freq, 3, false, 1.f);
  expect_close("rope_rotate", qkv, dqkv_in, 1e-5);
  Tensor docs = Tensor::zeros({n, t}, host_, DType::i32);
  for (std::int64_t i = 0; i < n * t; ++i) docs.data_as<std::int32_t>()[i] = static_cast<std::int32_t>(i % t / 23);
  Tensor ids = Tensor::zeros({n, t}, host_, DType::i32), made = Tensor::zeros({n, t}, host_, DType::i32);
  for (std::int64_t i = 0; i < n * t; ++i) ids.data_as<std::int32_t>()[i] = static_cast<std::int32_t>(i * 7 % 11);
  Tensor dmade = Tensor::zeros({n, t}, dev_, DType::i32);
  document_numbers(ids, 3, made);
  document_numbers(on_gpu(ids), 3, dmade);
  expect_close("document_numbers", made, dmade, 0);  // (int32 bits compared as they are)
  const Tensor ddocs = on_gpu(docs), none;
  for (int masks = 0; masks < 8; ++masks) {  // documents (1), a window (2), soft-capped scores (4)
    const bool by_doc = masks & 1;
    // (documents with capped scores: also a score scale of its own, Gemma 2 27B's query_pre_attn_scalar)
    const AttentionOptions w{masks & 2 ? 29 : 0, masks & 4 ? 2.f : 0.f, (masks & 5) == 5 ? 0.2f : 0.f};
    const Tensor& dc = by_doc ? docs : none;
    const Tensor& ddc = by_doc ? ddocs : none;
    Tensor y = Tensor::zeros({n, t, heads * d}, host_), dy = Tensor::zeros(y.shape(), dev_);
    Tensor lse = Tensor::zeros({n, heads, t}, host_), dlse = Tensor::zeros(lse.shape(), dev_);
    flash_attention_forward(qkv, heads, kv, dc, w, y, lse);
    flash_attention_forward(dqkv_in, heads, kv, ddc, w, dy, dlse);
    expect_close("flash_attention_forward", y, dy, 1e-5);
    expect_close("flash_attention_forward", lse, dlse, 1e-5);
    // A key/value cache's last 5 queries (their query columns, cut out by copy_planes on each
    // side as the attention layer does) against every position's keys and values.
    const std::int64_t first = t - 5, per = heads + 2 * kv;
    Tensor cache = Tensor::zeros({n, t, 2 * kv * d}, host_), dcache = Tensor::zeros(cache.shape(), dev_);
    Tensor q = Tensor::zeros({n, 5, heads * d}, host_), dq = Tensor::zeros(q.shape(), dev_);
    copy_planes(qkv, per, heads, cache, 2 * kv, 0, 2 * kv, d, false);
    copy_planes(dqkv_in, per, heads, dcache, 2 * kv, 0, 2 * kv, d, false);
    for (std::int64_t s = 0; s < n; ++s) {
      Tensor to = q.view(s * 5 * heads * d, {1, 5, heads * d}), dto = dq.view(s * 5 * heads * d, {1, 5, heads * d});
      copy_planes(qkv.view((s * t + first) * per * d, {1, 5, per * d}), per, 0, to, heads, 0, heads, d, false);
      copy_planes(dqkv_in.view((s * t + first) * per * d, {1, 5, per * d}), per, 0, dto, heads, 0, heads, d, false);
    }
    expect_close("copy_planes (the keys and values)", cache, dcache, 0);
    expect_close("copy_planes (the queries)", q, dq, 0);
    Tensor yq = Tensor::zeros({n, 5, heads * d}, host_), dyq = Tensor::zeros(yq.shape(), dev_);
    Tensor lq = Tensor::zeros({n, heads, 5}, host_), dlq = Tensor::zeros(lq.shape(), dev_);
    flash_attention_decode(q, cache, heads, kv, dc, w, yq, lq);
    flash_attention_decode(dq, dcache, heads, kv, ddc, w, dyq, dlq);
    expect_close("flash_attention_decode", yq, dyq, 1e-5);
    expect_close("flash_attention_decode", lq, dlq, 1e-5);
    for (std::int64_t i = 0; i < yq.numel(); ++i)  // (the CPU's decode is the CPU's forward's last rows)
      ASSERT_NEAR(yq.data()[i], y.data()[((i / (5 * heads * d)) * t + first) * heads * d + i % (5 * heads * d)], 1e-5);
    Tensor g = random(y.shape(), 61), dg = on_gpu(g);
    Tensor gq = Tensor::zeros(qkv.shape(), host_), dgq = Tensor::zeros(qkv.shape(), dev_);
    flash_attention_backward(qkv, y, lse, g, heads, kv, dc, w, gq);
    flash_attention_backward(dqkv_in, dy, dlse, dg, heads, kv, ddc, w, dgq);
    expect_close("flash_attention_backward", gq, dgq, 1e-5);
    Tensor gn = gq, dgn = dgq;  // (in place)
    qk_norm_backward(qkv, rstd, heads, kv, gn);
    qk_norm_backward(dqkv_in, drstd, heads, kv, dgn);
    expect_close("qk_norm_backward", gn, dgn, 1e-5);
  }
}

// Generation's key/value caches on the GPU (attention's ready_cache: the kept rows moved with
// device copies) against the CPU: a model with a sliding window of 6 and a global layer, two
// sequences side by side, a prompt of 5, then one to twelve positions at a time to 90; every
// pass's logits within 1e-5 (as the unit test KvCacheWindow.LongGenerationHoldsTheWindowsRows).
TEST_F(CudaOps, WindowedCacheGenerationMatchesTheCpu) {
  const std::int64_t t = 90, b = 2, vocab = 23;
  const std::string layers =
      "embedding(23, 32) res(rmsnorm attention(4, kv_heads=2, rope=10000, bias=0, window=6)) res(rmsnorm "
      "attention(4, kv_heads=2, rope=500000, bias=0)) res(rmsnorm linear(64, bias=0) swiglu linear(32, bias=0)) "
      "rmsnorm lm_head(23)";
  LayerRegistry r;
  register_builtin_layers(r);
  Model cpu(layers, {t}, r, host_), gpu(layers, {t}, r, dev_);
  cpu.init_parameters(3);
  gpu.init_parameters(3);
  cpu.set_batch(b);
  gpu.set_batch(b);
  Tensor ids = Tensor::zeros({b, t}, host_, DType::i32);
  for (std::int64_t i = 0; i < b * t; ++i) ids.data_as<std::int32_t>()[i] = static_cast<std::int32_t>(i * 11 % vocab);
  std::int64_t p = 0;
  for (std::int64_t len : {5, 1, 1, 1, 1, 1, 1, 1, 1, 12, 1, 1, 2, 3, 7}) {
    Tensor run = Tensor::zeros({b, len}, host_, DType::i32);
    for (std::int64_t s = 0; s < b; ++s)
      std::copy_n(ids.data_as<std::int32_t>() + s * t + p, len, run.data_as<std::int32_t>() + s * len);
    const Tensor drun = on_gpu(run);
    for (Model* m : {&cpu, &gpu}) {
      m->context().decode_position = p;
      m->set_length(len);
    }
    const Tensor& want = cpu.forward(run);
    const Tensor& got = gpu.forward(drun);
    SCOPED_TRACE("positions " + std::to_string(p) + " .. " + std::to_string(p + len - 1));
    expect_close("a model's cached forward", want, got, 1e-5);
    p += len;
  }
}

}  // namespace
