// The volume and regression operations on the CUDA backend against the CPU backend (tolerances
// as in test_cuda_ops.cpp: exact for selections and copies, 1e-6 for sums in double, 1e-5 for
// float sums in another order), and conv3d on cuDNN (with the asymmetric 'same' padding made by
// shift_volume) against the CPU's direct convolution.
#include <gtest/gtest.h>

#include "gpu_test_util.hpp"
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/tensor/step_scalars.hpp"

using gputest::CudaOps;

namespace {
using namespace hpctrain;

TEST_F(CudaOps, VolumePoolingAndPadding) {
  const std::int64_t c = 3, d = 6, h = 7, w = 5;
  const Shape in{2, c, d, h, w};
  Tensor x = random(in, 61), dx = on_gpu(x);
  for (const auto& [k, s] : {std::pair<std::int64_t, std::int64_t>{2, 2}, {3, 2}}) {
    const Shape out{2, c, (d - k) / s + 1, (h - k) / s + 1, (w - k) / s + 1};
    Tensor y = Tensor::zeros(out, host_), dy = Tensor::zeros(out, dev_);
    Tensor arg = Tensor::zeros({y.numel()}, host_, DType::i32), darg = Tensor::zeros({y.numel()}, dev_, DType::i32);
    maxpool3d_forward(x, d, h, w, k, s, y, arg);
    maxpool3d_forward(dx, d, h, w, k, s, dy, darg);
    expect_close("maxpool3d_forward", y, dy, 0);
    expect_close("maxpool3d_forward", arg, darg, 0);
    avgpool3d_forward(x, d, h, w, k, s, y);
    avgpool3d_forward(dx, d, h, w, k, s, dy);
    expect_close("avgpool3d_forward", y, dy, 1e-6);
    Tensor g = random(out, 62), dg = on_gpu(g), gx = Tensor::zeros(in, host_), dgx = Tensor::zeros(in, dev_);
    avgpool3d_backward(g, d, h, w, k, s, gx);
    avgpool3d_backward(dg, d, h, w, k, s, dgx);
    expect_close("avgpool3d_backward", gx, dgx, 1e-5);
  }
  for (const std::int64_t offset : {-1, 1}) {  // a pad of 1 before (and 2 after), a crop
    const std::int64_t od = d - 2 * offset + 1, oh = h - 2 * offset + 1, ow = w - 2 * offset + 1;
    Tensor y = Tensor::zeros({2, c, od, oh, ow}, host_), dy = Tensor::zeros(y.shape(), dev_);
    shift_volume(x, d, h, w, offset, od, oh, ow, y);
    shift_volume(dx, d, h, w, offset, od, oh, ow, dy);
    expect_close("shift_volume", y, dy, 0);
  }
  for (const bool add : {false, true}) {  // planes 1..2 of every [c, d] block into planes 0..1 of a 3-plane box
    Tensor y = random({2, c, 3, h, w}, 65), dy = on_gpu(y);
    copy_planes(x, d, 1, y, 3, 0, 2, h * w, add);
    copy_planes(dx, d, 1, dy, 3, 0, 2, h * w, add);
    expect_close("copy_planes", y, dy, 0);
  }
}

TEST_F(CudaOps, LeakyReluAndRegressionLosses) {
  Tensor x = random({5, 40}, 63), dx = on_gpu(x), g = random({5, 40}, 64), dg = on_gpu(g);
  Tensor y = Tensor::zeros(x.shape(), host_), dy = Tensor::zeros(x.shape(), dev_);
  leaky_relu_forward(x, 0.3f, y);
  leaky_relu_forward(dx, 0.3f, dy);
  expect_close("leaky_relu_forward", y, dy, 0);
  leaky_relu_backward(x, g, 0.3f, y);
  leaky_relu_backward(dx, dg, 0.3f, dy);
  expect_close("leaky_relu_backward", y, dy, 0);

  Tensor pred = random({33, 4}, 65), dpred = on_gpu(pred);
  const Tensor target = random({33, 4}, 66);
  Tensor dtarget_keep;
  const float* dtarget = on_gpu(std::vector<float>(target.data(), target.data() + target.numel()), dtarget_keep);
  for (const RegressionLoss kind : {RegressionLoss::mae, RegressionLoss::huber, RegressionLoss::mse}) {
    Tensor sc = step_scalars::make(host_), dsc = step_scalars::make(dev_);
    regression_loss(kind, 0.5f, pred, target.data(), sc);
    regression_loss(kind, 0.5f, dpred, dtarget, dsc);
    expect_close("regression_loss", sc, dsc, 1e-6);
    Tensor gr = Tensor::zeros(pred.shape(), host_), dgr = Tensor::zeros(pred.shape(), dev_);
    regression_loss_backward(kind, 0.5f, pred, target.data(), 0.25f, gr);
    regression_loss_backward(kind, 0.5f, dpred, dtarget, 0.25f, dgr);
    expect_close("regression_loss_backward", gr, dgr, 1e-6);
  }
  Tensor sums = Tensor::zeros({4}, host_), dsums = Tensor::zeros({4}, dev_);
  absolute_error_sums(pred, target.data(), sums);
  absolute_error_sums(dpred, dtarget, dsums);
  expect_close("absolute_error_sums", sums, dsums, 1e-6);
}

// conv3d: cuDNN on the GPU against the direct loops on the CPU, with symmetric, asymmetric
// ('same', even kernel) and strided geometries.
TEST_F(CudaOps, Conv3dCudnnMatchesTheCpu) {
  const Shape in{2, 5, 6, 7};
  const std::int64_t batch = 3;
  for (const char* text : {"conv3d(4,3,pad=1)", "conv3d(3,2,pad=same)", "conv3d(2,3,stride=2)"}) {
    std::vector<std::vector<float>> results[2];  // cpu (direct), cuDNN
    for (int e = 0; e < 2; ++e) {
      LayerRegistry reg;
      register_builtin_layers(reg, LayerOptions{e == 0 ? ConvImpl::im2col : ConvImpl::auto_});
      auto layer = reg.make(parse_layers(text).front());
      const Shape out = layer->output_shape(in);
      layer->configure(in);
      Allocator& a = e == 0 ? host_ : dev_;
      std::vector<Tensor> params, grads;
      std::uint32_t seed = 70;
      for (const auto& ps : layer->param_specs(in)) {
        Tensor h = random(ps.shape, seed++);
        params.push_back(e == 0 ? h : on_gpu(h));
        grads.push_back(Tensor::zeros(ps.shape, a));
      }
      layer->bind(params, grads);
      Shape xs{batch}, ys{batch};
      xs.insert(xs.end(), in.begin(), in.end());
      ys.insert(ys.end(), out.begin(), out.end());
      Tensor hx = random(xs, 80), hdy = random(ys, 81);
      Tensor x = e == 0 ? hx : on_gpu(hx), dy = e == 0 ? hdy : on_gpu(hdy);
      Tensor y = Tensor::zeros(ys, a), dx = Tensor::zeros(xs, a);
      layer->forward(x, y);
      layer->set_accumulate_grads(false);
      layer->backward(x, y, dy, dx);
      results[e] = {to_host(y), to_host(dx), to_host(grads[0]), to_host(grads[1])};
    }
    for (std::size_t k = 0; k < 4; ++k) {
      const auto& c = results[0][k];
      const auto& g = results[1][k];
      ASSERT_EQ(c.size(), g.size());
      double worst = 0;
      for (std::size_t i = 0; i < c.size(); ++i)
        worst = std::max(worst, std::fabs(static_cast<double>(g[i]) - c[i]) / std::max(1.0, std::fabs(1.0 * c[i])));
      EXPECT_LT(worst, 1e-5) << text << " result " << k;
    }
  }
}

}  // namespace
