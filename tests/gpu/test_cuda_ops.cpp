// Every backend operation on the CUDA backend against the CPU backend (the
// reference) on the same inputs. Tolerances, as the largest |gpu - cpu| over
// max(1, |cpu|):
// - exact (0): data movement, selections and integer-keyed draws: copy, fill,
//   scale, multiply, add, bias adds, ReLU, max pooling (values and argmax),
//   im2col, dropout masks, bf16/fp16 rounding, softmax backward, the optimizers'
//   element-wise updates on identical inputs (both compute the same float
//   expression; -fmad contraction on the GPU may differ in the last bit, so
//   these use 1e-6);
// - 1e-6: transcendental activations (tanh, GELU: device libm within 2 ulp),
//   losses and sums accumulated in double;
// - 1e-5: float sums in another order (bias gradients, col2im, average pooling)
//   and cuBLAS GEMMs (another blocking; TF32 off).
// Every operation in backend_operations() must be compared in the GPU tests
// (test_cuda_coverage.cpp checks the list); the sequence models' operations are in
// test_cuda_sequence_ops.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "gpu_test_util.hpp"
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/tensor/step_scalars.hpp"

using namespace hpctrain;

namespace {

using gputest::CudaOps;

TEST_F(CudaOps, Gemm) {
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      const std::int64_t m = 37, k = 53, n = 29;
      Tensor a = random(ta ? Shape{k, m} : Shape{m, k}, 1), b = random(tb ? Shape{n, k} : Shape{k, n}, 2);
      Tensor c = random({m, n}, 3), dc = on_gpu(c);
      gemm(ta, tb, 0.7f, a, b, 0.3f, c);
      Tensor da = on_gpu(a), db = on_gpu(b);
      gemm(ta, tb, 0.7f, da, db, 0.3f, dc);
      expect_close("gemm", c, dc, 1e-5);
    }
  // bf16 / fp16 tensor-core math on operands already rounded to the format (what [precision] dtype
  // hands cuBLAS): the products are exact in float32, so only the summation order differs.
  for (const auto& [math, p] :
       {std::pair{cuda::GemmMath::bf16, Precision::bf16}, {cuda::GemmMath::fp16, Precision::fp16}}) {
    Tensor a = random({64, 96}, 30), b = random({96, 48}, 31), c = Tensor::zeros({64, 48}, host_);
    round_to_precision(a, p);
    round_to_precision(b, p);
    Tensor da = on_gpu(a), db = on_gpu(b), dc = Tensor::zeros(c.shape(), dev_);
    gemm(false, false, 1.f, a, b, 0.f, c);
    cuda::set_gemm_math(math);
    gemm(false, false, 1.f, da, db, 0.f, dc);
    cuda::set_gemm_math(cuda::GemmMath::fp32);
    expect_close("gemm", c, dc, 1e-5);
  }
}

// pack_16bit / unpack_16bit: the GPU's 16-bit copies are the CPU's bytes (round to nearest even
// in both formats, values over fp16's range included), and unpack back to the same floats.
TEST_F(CudaOps, SixteenBitStorageMatchesTheCpu) {
  const Shape s{257, 33};
  Tensor x = random(s, 12);
  for (std::int64_t i = 0; i < x.numel(); ++i) x.data()[i] *= static_cast<float>(1 << (i % 40)) / 1024.f;
  Tensor dx = on_gpu(x);
  for (const DType t : {DType::bf16, DType::f16}) {
    Tensor hp = Tensor::zeros(s, host_, t), dp = Tensor::zeros(s, dev_, t);
    pack_16bit(x, hp);
    pack_16bit(dx, dp);
    std::vector<std::uint16_t> hb(static_cast<std::size_t>(x.numel())), db(hb.size());
    download(hp, hb.data(), hp.bytes());
    download(dp, db.data(), dp.bytes());
    gputest::compared().insert("pack_16bit");
    EXPECT_EQ(hb, db) << dtype_name(t);
    Tensor hu = Tensor::zeros(s, host_), du = Tensor::zeros(s, dev_);
    unpack_16bit(hp, hu);
    unpack_16bit(dp, du);
    expect_close("unpack_16bit", hu, du, 0);
  }
}

// exact_accumulate / exact_round ([run] reproducible = layout): the GPU's limbs are the CPU's bit
// for bit, with the additions in the other order, and round to the same floats; an overflow flags.
TEST_F(CudaOps, ExactSumsMatchTheCpuInAnyOrder) {
  const Shape s{777};
  Tensor a = random(s, 40), b = random(s, 41);
  for (std::int64_t i = 0; i < a.numel(); ++i) a.data()[i] = std::ldexp(a.data()[i], static_cast<int>(i % 90) - 70);
  Tensor hacc = Tensor::zeros({777, 2}, host_, DType::i64), hflag = Tensor::zeros({1}, host_, DType::i32);
  Tensor dacc = Tensor::zeros({777, 2}, dev_, DType::i64), dflag = Tensor::zeros({1}, dev_, DType::i32);
  exact_accumulate(a, false, hacc, hflag);
  exact_accumulate(b, false, hacc, hflag);
  Tensor da = on_gpu(a), db = on_gpu(b);
  exact_accumulate(da, false, dacc, dflag);  // (overwritten next)
  exact_accumulate(db, true, dacc, dflag);
  exact_accumulate(da, false, dacc, dflag);
  std::vector<std::int64_t> h(static_cast<std::size_t>(hacc.numel())), d(h.size());
  download(hacc, h.data(), hacc.bytes());
  download(dacc, d.data(), dacc.bytes());
  gputest::compared().insert("exact_accumulate");
  EXPECT_EQ(h, d);
  Tensor hy = Tensor::zeros(s, host_), dy = Tensor::zeros(s, dev_);
  exact_round(hacc, hflag, hy);
  exact_round(dacc, dflag, dy);
  expect_close("exact_round", hy, dy, 0);
  a.data()[5] = 3e7f;  // (>= 2^24: refused, flagged)
  Tensor big = on_gpu(a);
  exact_accumulate(big, false, dacc, dflag);
  std::int32_t flag = 0;
  download(dflag, &flag, sizeof flag);
  EXPECT_EQ(flag, 1);
}

TEST_F(CudaOps, ElementWise) {
  const Shape s{33, 70};
  Tensor x = random(s, 4), y = random(s, 5), dx = on_gpu(x), dy = on_gpu(y);
  Tensor bias = random({70}, 6), dbias = on_gpu(bias);
  auto both = [&](const char* op, double tol, auto&& f) {
    Tensor hc = random(s, 7), dc = on_gpu(hc);
    f(x, y, hc);
    f(dx, dy, dc);
    expect_close(op, hc, dc, tol);
  };
  both("copy", 0, [](const Tensor& a, const Tensor&, Tensor& o) { copy(a, o); });
  both("fill", 0, [](const Tensor&, const Tensor&, Tensor& o) { fill(o, 2.5f); });
  both("fill_columns", 0, [](const Tensor&, const Tensor&, Tensor& o) { fill_columns(o, 61, 2.5f); });
  both("scale", 0, [](const Tensor&, const Tensor&, Tensor& o) { scale(o, 0.375f); });
  both("multiply", 0, [](const Tensor& a, const Tensor& b, Tensor& o) { multiply(a, b, o); });
  both("add", 0, [](const Tensor& a, const Tensor& b, Tensor& o) { add(a, b, o); });
  for (const auto f :
       {Activation::relu, Activation::tanh, Activation::gelu, Activation::relu2, Activation::gelu_tanh}) {
    Tensor hy = random(s, 9), dy2 = on_gpu(hy), hz = Tensor::zeros(s, host_), dz = Tensor::zeros(s, dev_);
    add_bias_activation(hy, bias, f, hz);
    add_bias_activation(dy2, dbias, f, dz);
    expect_close("add_bias_activation", hy, dy2, 0);
    expect_close("add_bias_activation", hz, dz, f == Activation::relu ? 0 : 1e-6);
  }
  both("add_bias", 0,
       [&](const Tensor&, const Tensor&, Tensor& o) { add_bias(o, o.device() == Device::cuda ? dbias : bias); });
  both("accumulate_bias_grad", 1e-5, [&](const Tensor& a, const Tensor&, Tensor&) {
    Tensor& db = a.device() == Device::cuda ? dbias : bias;
    accumulate_bias_grad(a, db);
  });
  expect_close("accumulate_bias_grad", bias, dbias, 1e-5);
  for (const auto f :
       {Activation::relu, Activation::tanh, Activation::gelu, Activation::relu2, Activation::gelu_tanh}) {
    const double tol = f == Activation::relu ? 0 : 1e-6;
    both("activation_forward", tol, [f](const Tensor& a, const Tensor&, Tensor& o) { activation_forward(f, a, o); });
    both("activation_backward", tol,
         [f](const Tensor& a, const Tensor& b, Tensor& o) { activation_backward(f, a, b, o); });
  }
  Tensor r = random({1000}, 8, -70000.f, 70000.f), dr = on_gpu(r);
  for (const auto p : {Precision::bf16, Precision::fp16}) {
    Tensor hc = Tensor::zeros(r.shape(), host_), dc = on_gpu(r);
    copy(r, hc);
    round_to_precision(hc, p);
    round_to_precision(dc, p);
    expect_close("round_to_precision", hc, dc, 0);
  }
  const double s_cpu = sum_of_squares(x), s_gpu = sum_of_squares(dx);
  gputest::compared().insert("sum_of_squares");
  EXPECT_NEAR(s_gpu, s_cpu, 1e-12 * s_cpu);
}

TEST_F(CudaOps, LossesAndCorrectCount) {
  const std::int64_t rows = 70, n = 13;
  Tensor z = random({rows, n}, 9, -4.f, 4.f), dz = on_gpu(z);
  std::vector<std::int32_t> labels(rows);
  for (std::int64_t i = 0; i < rows; ++i) labels[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 7) % n);
  for (std::int64_t i = 0; i < 10; ++i) z.data()[i * n + labels[static_cast<std::size_t>(i)]] = 9.f;  // some right
  dz = on_gpu(z);
  Tensor keep;
  const std::int32_t* dl = on_gpu(labels, keep);
  // Training's call (the gradient written), then evaluation's (the sums only, the same on each device).
  Tensor g = Tensor::zeros(z.shape(), host_), dg = Tensor::zeros(z.shape(), dev_);
  Tensor sc = step_scalars::make(host_), dsc = step_scalars::make(dev_);
  softmax_cross_entropy(z, labels.data(), sc, 0.25f, &g);
  softmax_cross_entropy(dz, dl, dsc, 0.25f, &dg);
  expect_close("softmax_cross_entropy", g, dg, 1e-6);
  expect_close("softmax_cross_entropy", sc, dsc, 1e-6);
  Tensor esc = step_scalars::make(host_), desc = step_scalars::make(dev_);
  softmax_cross_entropy(z, labels.data(), esc, 0.f, nullptr);
  softmax_cross_entropy(dz, dl, desc, 0.f, nullptr);
  expect_close("softmax_cross_entropy", esc, desc, 1e-6);
  EXPECT_EQ(step_scalars::to_host(dsc), step_scalars::to_host(desc));  // (the same sums without the gradient)
  // The backward of stored probabilities (the vocabulary-parallel loss's) on whole rows.
  Tensor p = Tensor::zeros(z.shape(), host_), dp = Tensor::zeros(z.shape(), dev_);
  for (std::int64_t i = 0; i < rows * n; ++i) p.data()[i] = 0.5f + 0.001f * static_cast<float>(i % 97);
  dp = on_gpu(p);
  softmax_cross_entropy_backward(p, labels.data(), 0, 0.25f, g);
  softmax_cross_entropy_backward(dp, dl, 0, 0.25f, dg);
  expect_close("softmax_cross_entropy_backward", g, dg, 1e-6);
  // The vocabulary-parallel pieces on a block of columns from 5 on (labels outside it included).
  const std::int64_t off = 5, cols = 6;
  Tensor zb = Tensor::zeros({rows, cols}, host_);
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) zb.data()[i * cols + j] = z.data()[i * n + off + j];
  Tensor dzb = on_gpu(zb), mx = Tensor::zeros({rows}, host_), dmx = Tensor::zeros({rows}, dev_);
  row_max(zb, mx);
  row_max(dzb, dmx);
  expect_close("row_max", mx, dmx, 0);
  Tensor pb = Tensor::zeros({rows, cols}, host_), dpb = Tensor::zeros({rows, cols}, dev_);
  Tensor s2 = Tensor::zeros({rows, 2}, host_), ds2 = Tensor::zeros({rows, 2}, dev_);
  softmax_partial(zb, mx, labels.data(), off, pb, s2);
  softmax_partial(dzb, dmx, dl, off, dpb, ds2);
  expect_close("softmax_partial", pb, dpb, 1e-6);
  expect_close("softmax_partial", s2, ds2, 1e-6);
  Tensor vsc = step_scalars::make(host_), dvsc = step_scalars::make(dev_);
  softmax_finish(pb, mx, s2, vsc);
  softmax_finish(dpb, dmx, ds2, dvsc);
  expect_close("softmax_finish", pb, dpb, 1e-6);
  expect_close("softmax_finish", vsc, dvsc, 1e-5);
  Tensor gb = g.view(0, {rows, cols}), dgb = dg.view(0, {rows, cols});
  softmax_cross_entropy_backward(pb, labels.data(), off, 0.25f, gb);
  softmax_cross_entropy_backward(dpb, dl, off, 0.25f, dgb);
  expect_close("softmax_cross_entropy_backward", gb, dgb, 1e-6);
  gputest::compared().insert("count_correct");
  EXPECT_EQ(count_correct(dz, dl), count_correct(z, labels.data()));
  EXPECT_GE(count_correct(z, labels.data()), 10);
}

TEST_F(CudaOps, OptimizerUpdates) {
  const Shape s{1031};
  for (const bool variant : {false, true}) {
    Tensor w = random(s, 11), g = random(s, 12), m = random(s, 13, 0.f, 0.1f), v = random(s, 14, 0.f, 0.01f);
    Tensor dw = on_gpu(w), dg = on_gpu(g), dm = on_gpu(m), dv = on_gpu(v);
    Tensor sc = step_scalars::make(host_);
    sc.data()[step_scalars::learning_rate] = 0.01f;
    sc.data()[step_scalars::adam_step] = 3.f;
    Tensor dsc = on_gpu(sc);
    sgd_update(w, g, m, sc, 0.9f, 1e-4f, variant);
    sgd_update(dw, dg, dm, dsc, 0.9f, 1e-4f, variant);
    expect_close("sgd_update", w, dw, 1e-6);
    expect_close("sgd_update", m, dm, 1e-6);
    adam_update(w, g, m, v, sc, 0.9f, 0.999f, 1e-8f, 0.01f, variant);
    adam_update(dw, dg, dm, dv, dsc, 0.9f, 0.999f, 1e-8f, 0.01f, variant);
    expect_close("adam_update", w, dw, 1e-6);
    expect_close("adam_update", v, dv, 1e-6);
  }
}

TEST_F(CudaOps, ConvolutionHelpersAndPooling) {
  const std::int64_t c = 3, h = 9, w = 8, k = 3, stride = 2, pad = 1;
  const std::int64_t ho = (h + 2 * pad - k) / stride + 1, wo = (w + 2 * pad - k) / stride + 1, ld = ho * wo + 5;
  Tensor x = random({c, h, w}, 15), dx = on_gpu(x);
  Tensor cols = Tensor::zeros({c * k * k, ld}, host_), dcols = Tensor::zeros(cols.shape(), dev_);
  im2col(x, c, h, w, k, stride, pad, ld, cols);
  im2col(dx, c, h, w, k, stride, pad, ld, dcols);
  expect_close("im2col", cols, dcols, 0);
  Tensor back = random({c, h, w}, 16), dback = on_gpu(back);
  col2im(cols, c, h, w, k, stride, pad, ld, back);
  col2im(dcols, c, h, w, k, stride, pad, ld, dback);
  expect_close("col2im", back, dback, 1e-5);
  Tensor y = random({4, 50}, 17), dy = on_gpu(y), b = random({4}, 18), db = on_gpu(b);
  add_channel_bias(y, b);
  add_channel_bias(dy, db);
  expect_close("add_channel_bias", y, dy, 0);
  accumulate_channel_bias_grad(y, b);
  accumulate_channel_bias_grad(dy, db);
  expect_close("accumulate_channel_bias_grad", b, db, 1e-5);

  const Shape batch{2, c, h, w};
  Tensor xb = random(batch, 19), dxb = on_gpu(xb);
  for (const auto& [pk, ps] : {std::pair<std::int64_t, std::int64_t>{2, 2}, {3, 2}}) {
    const std::int64_t po = (h - pk) / ps + 1, pw = (w - pk) / ps + 1;
    Tensor py = Tensor::zeros({2, c, po, pw}, host_), dpy = Tensor::zeros(py.shape(), dev_);
    Tensor arg = Tensor::zeros({py.numel()}, host_, DType::i32), darg = Tensor::zeros({py.numel()}, dev_, DType::i32);
    maxpool_forward(xb, c, h, w, pk, ps, py, arg);
    maxpool_forward(dxb, c, h, w, pk, ps, dpy, darg);
    expect_close("maxpool_forward", py, dpy, 0);
    expect_close("maxpool_forward", arg, darg, 0);  // the same indices, bit for bit
    Tensor g = random(py.shape(), 20), dg = on_gpu(g);
    Tensor gx = Tensor::zeros(batch, host_), dgx = Tensor::zeros(batch, dev_);
    maxpool_backward(g, arg, gx);
    maxpool_backward(dg, darg, dgx);
    expect_close("maxpool_backward", gx, dgx, 1e-6);  // overlapping windows add in another order
    Tensor ay = Tensor::zeros(py.shape(), host_), day = Tensor::zeros(py.shape(), dev_);
    avgpool_forward(xb, h, w, pk, pk, ps, ps, ay);
    avgpool_forward(dxb, h, w, pk, pk, ps, ps, day);
    expect_close("avgpool_forward", ay, day, 1e-6);
    avgpool_backward(g, h, w, pk, pk, ps, ps, gx);
    avgpool_backward(dg, h, w, pk, pk, ps, ps, dgx);
    expect_close("avgpool_backward", gx, dgx, 1e-5);
  }
}

TEST_F(CudaOps, DropoutDrawsTheSameMask) {
  Tensor x = random({16, 300}, 21), dx = on_gpu(x);
  std::vector<std::int64_t> ids(16);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = 1000 + static_cast<std::int64_t>(i) * 37;
  Tensor keep;
  const std::int64_t* dids = on_gpu(ids, keep);
  Tensor m = Tensor::zeros(x.shape(), host_), y = Tensor::zeros(x.shape(), host_);
  Tensor dm = Tensor::zeros(x.shape(), dev_), dy = Tensor::zeros(x.shape(), dev_);
  const std::uint64_t step_key = 0x5678;
  Tensor keep_key;
  const std::uint64_t* dkey = on_gpu(std::vector<std::uint64_t>{step_key}, keep_key);
  dropout_forward(x, 0.3f, 0x1234, &step_key, ids.data(), 600, m, y);  // (a block at column 600 of longer rows)
  dropout_forward(dx, 0.3f, 0x1234, dkey, dids, 600, dm, dy);
  expect_close("dropout_forward", m, dm, 0);
  expect_close("dropout_forward", y, dy, 0);
}

TEST_F(CudaOps, BatchNormPieces) {
  const std::int64_t n = 5, c = 6, plane = 49;
  Tensor x = random({n, c, 7, 7}, 22), dx = on_gpu(x), g = random(x.shape(), 23), dg = on_gpu(g);
  std::vector<double> s(2 * c, 0.0), ds(2 * c, 0.0);
  channel_moments(x, c, plane, s);
  channel_moments(dx, c, plane, ds);
  gputest::compared().insert("channel_moments");
  for (std::size_t i = 0; i < s.size(); ++i) EXPECT_NEAR(ds[i], s[i], 1e-9 * std::max(1.0, std::fabs(s[i])));
  std::vector<float> mean(c), inv(c), a(c), b(c), sc(c), mdy(c), mdyx(c);
  for (std::size_t i = 0; i < mean.size(); ++i) {
    mean[i] = 0.1f * static_cast<float>(i);
    inv[i] = 1.f + 0.2f * static_cast<float>(i);
    a[i] = 0.5f + static_cast<float>(i);
    b[i] = -0.25f * static_cast<float>(i);
    sc[i] = 1.5f - 0.1f * static_cast<float>(i);
    mdy[i] = 0.01f * static_cast<float>(i);
    mdyx[i] = -0.02f * static_cast<float>(i);
  }
  std::fill(s.begin(), s.end(), 0.0);
  std::fill(ds.begin(), ds.end(), 0.0);
  batchnorm_grad_sums(x, g, mean, inv, plane, s);
  batchnorm_grad_sums(dx, dg, mean, inv, plane, ds);
  gputest::compared().insert("batchnorm_grad_sums");
  for (std::size_t i = 0; i < s.size(); ++i) EXPECT_NEAR(ds[i], s[i], 1e-6 * std::max(1.0, std::fabs(s[i])));
  Tensor y = Tensor::zeros(x.shape(), host_), dy = Tensor::zeros(x.shape(), dev_);
  channel_affine(x, a, b, plane, y);
  channel_affine(dx, a, b, plane, dy);
  expect_close("channel_affine", y, dy, 1e-6);
  batchnorm_backward_data(x, g, mean, inv, sc, mdy, mdyx, plane, y);
  batchnorm_backward_data(dx, dg, mean, inv, sc, mdy, mdyx, plane, dy);
  expect_close("batchnorm_backward_data", y, dy, 1e-6);
}

// The conv layer on a GPU (cuDNN, the default there, and im2col + cuBLAS) against the CPU's
// im2col + GEMM: output, input gradient and parameter gradients accumulated over two micro-batches.
TEST_F(CudaOps, ConvLayerCudnnAndIm2colMatchTheCpu) {
  const Shape in{3, 9, 8};
  const std::int64_t batch = 4;
  for (const char* text : {"conv(8,3,pad=1)", "conv(4,3,pad=2,stride=2)", "conv(5,1)"}) {
    std::vector<std::vector<float>> results[3];  // cpu, cudnn, im2col on the GPU
    for (int e = 0; e < 3; ++e) {
      LayerRegistry reg;
      register_builtin_layers(reg, LayerOptions{e == 2   ? ConvImpl::im2col
                                                : e == 0 ? ConvImpl::im2col
                                                         : ConvImpl::auto_});
      auto layer = reg.make(parse_layers(text).front());
      const Shape out = layer->output_shape(in);
      layer->configure(in);
      Allocator& a = e == 0 ? host_ : dev_;
      const auto specs = layer->param_specs(in);
      std::vector<Tensor> params, grads;
      std::uint32_t seed = 40;
      for (const auto& ps : specs) {
        Tensor h = random(ps.shape, seed++);
        params.push_back(e == 0 ? h : on_gpu(h));
        grads.push_back(Tensor::zeros(ps.shape, a));
      }
      layer->bind(params, grads);
      Tensor hx = random({batch, in[0], in[1], in[2]}, 50);
      Tensor hdy = random({batch, out[0], out[1], out[2]}, 51);
      Tensor x = e == 0 ? hx : on_gpu(hx), dy = e == 0 ? hdy : on_gpu(hdy);
      Tensor y = Tensor::zeros(hdy.shape(), a), dx = Tensor::zeros(hx.shape(), a);
      layer->forward(x, y);
      layer->set_accumulate_grads(false);
      layer->backward(x, y, dy, dx);
      layer->set_accumulate_grads(true);
      layer->backward(x, y, dy, dx);
      results[e] = {to_host(y), to_host(dx), to_host(grads[0]), to_host(grads[1])};
    }
    for (int e = 1; e < 3; ++e)
      for (std::size_t k = 0; k < 4; ++k) {
        const auto& c = results[0][k];
        const auto& g = results[e][k];
        ASSERT_EQ(c.size(), g.size());
        double worst = 0;
        for (std::size_t i = 0; i < c.size(); ++i)
          worst = std::max(worst, std::fabs(static_cast<double>(g[i]) - c[i]) / std::max(1.0, std::fabs(1.0 * c[i])));
        EXPECT_LT(worst, 1e-5) << text << (e == 1 ? " cuDNN" : " im2col") << " result " << k;
      }
  }
}

// stage_to_device copies what the host buffer held at the call, though the host reuses the
// buffer at once, over more calls than the ring has pinned buffers.
TEST_F(CudaOps, StagingCopiesTheHostDataOfTheCall) {
  std::vector<float> host(5000);
  std::vector<Tensor> dst;
  for (int c = 0; c < 20; ++c) {
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(c * 10000 + static_cast<int>(i));
    dst.push_back(Tensor::zeros({static_cast<std::int64_t>(host.size())}, dev_));
    cuda::stage_to_device(dst.back().data(), host.data(), host.size() * sizeof(float));
  }
  for (int c = 0; c < 20; ++c) {
    const auto got = to_host(dst[static_cast<std::size_t>(c)]);
    EXPECT_EQ(got[0], static_cast<float>(c * 10000)) << c;
    EXPECT_EQ(got[4999], static_cast<float>(c * 10000 + 4999)) << c;
  }
}

// The dispatch checks every tensor argument, not only the first: a CPU tensor among GPU ones is an
// internal error naming the operation and the argument.
TEST_F(CudaOps, TensorsOnTwoDevicesAreRefused) {
  Tensor a = on_gpu(random({4, 3}, 1)), b = random({4, 3}, 2), out = on_gpu(random({4, 3}, 3));
  try {
    add(a, b, out);
    FAIL() << "no error for tensors on two devices";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("backend operation 'add': tensor argument 2 is on another device"),
              std::string::npos)
        << e.what();
  }
}

// Checkpoint downloads (tensor.hpp HostBuffer): into one pinned buffer reused across reads, after the
// work queued on the compute stream (the copy stream waits for it), equal to a plain download.
TEST_F(CudaOps, CheckpointDownloadsArePinnedReusedAndOrdered) {
  Tensor d = on_gpu(random({1 << 20}, 70));
  HostBuffer buf;
  const float* first = buf.read(d);
  EXPECT_TRUE(buf.pinned());
  EXPECT_TRUE(cuda::is_pinned(first));
  EXPECT_TRUE(std::equal(first, first + d.numel(), to_host(d).begin()));
  scale(d, 2.f);  // queued on the compute stream; the next read must see it
  Tensor head = d.view(0, {1000});
  fill(head, 5.f);
  const std::vector<float> want = to_host(d);
  const float* second = buf.read(d);
  EXPECT_EQ(first, second) << "the buffer was allocated again";
  EXPECT_TRUE(std::equal(second, second + d.numel(), want.begin()));
  Tensor small = on_gpu(random({100}, 71));
  EXPECT_EQ(buf.read(small), first);  // smaller: the same pages
  EXPECT_EQ(buf.capacity(), static_cast<std::size_t>(d.numel()));
}

}  // namespace
