// The volume layers (conv3d, maxpool3d, avgpool3d, gap3d), leaky_relu and scale, and the
// regression losses: finite-difference gradient checks (gradient_check.hpp; the negative control
// is test_layers.cpp's), forward values against direct formulas, oneDNN's 3-D convolution
// against the direct loops, the padding box, and the argument checks.
#include <gtest/gtest.h>

#include <cmath>

#include "gradient_check.hpp"
#include "hpctrain/backend/cpu/conv3d_direct.hpp"
#include "hpctrain/backend/cpu/onednn_conv.hpp"
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/layers/loss.hpp"
#include "hpctrain/tensor/step_scalars.hpp"

using namespace hpctrain;
using unittest::check_layer;
using unittest::make;
using unittest::random_values;

namespace {

Tensor random_tensor(const Shape& s, std::uint32_t seed, Allocator& alloc) {
  Tensor t = Tensor::zeros(s, alloc);
  const auto v = random_values(t.numel(), seed);
  std::copy(v.begin(), v.end(), t.data());
  return t;
}

// The layer's forward and backward (dy given), its output, input gradient and parameter gradients.
struct Pass {
  std::vector<float> y, dx, dw, db;
};
Pass run(const std::string& text, ConvImpl impl, const Shape& in, std::int64_t batch) {
  Allocator alloc;
  auto layer = make(text, impl);
  const Shape out = layer->output_shape(in);
  layer->configure(in);
  std::vector<Tensor> grads;
  unittest::bind_random_params(*layer, in, alloc, 11, &grads);
  Shape xs{batch}, ys{batch};
  xs.insert(xs.end(), in.begin(), in.end());
  ys.insert(ys.end(), out.begin(), out.end());
  Tensor x = random_tensor(xs, 12, alloc), dy = random_tensor(ys, 13, alloc);
  Tensor y = Tensor::zeros(ys, alloc), dx = Tensor::zeros(xs, alloc);
  layer->forward(x, y);
  layer->backward(x, y, dy, dx);
  return {to_host(y), to_host(dx), to_host(grads[0]), to_host(grads[1])};
}

double worst_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) / std::max(1.0, std::fabs(1.0 * a[i])));
  return worst;
}

}  // namespace

TEST(GradientCheck, VolumeLayers) {
  EXPECT_LE(check_layer(*make("conv3d(3,3,pad=1)"), {2, 4, 5, 3}, 2), 1.0);
  EXPECT_LE(check_layer(*make("conv3d(2,2,pad=same)"), {2, 3, 4, 5}, 2), 1.0);  // 0 before, 1 after
  EXPECT_LE(check_layer(*make("conv3d(2,3,stride=2)"), {1, 5, 5, 6}, 2), 1.0);
  EXPECT_LE(check_layer(*make("conv3d(2,2,pad=same)", ConvImpl::onednn), {2, 3, 4, 5}, 2), 1.0);
  EXPECT_LE(check_layer(*make("maxpool3d(2)"), {2, 4, 4, 6}, 2, false, true), 1.0);
  EXPECT_LE(check_layer(*make("maxpool3d(3,stride=2)"), {1, 5, 5, 5}, 2, false, true), 1.0);
  EXPECT_LE(check_layer(*make("avgpool3d(2)"), {2, 4, 4, 2}, 2), 1.0);
  EXPECT_LE(check_layer(*make("avgpool3d(3,stride=2)"), {1, 5, 7, 5}, 2), 1.0);
  EXPECT_LE(check_layer(*make("gap3d"), {3, 2, 3, 4}, 2), 1.0);
  EXPECT_LE(check_layer(*make("leaky_relu(0.3)"), {2, 3, 4}, 3, true), 1.0);
  EXPECT_LE(check_layer(*make("scale(1.2)"), {7}, 3), 1.0);
}

// 'same' padding with an even kernel: the output keeps the size, and its last position along each
// axis sees only the input's last position (the padding is after); checked against a direct sum.
TEST(Conv3d, SamePaddingIsAfterForAnEvenKernel) {
  Allocator alloc;
  auto layer = make("conv3d(1,2,pad=same)");
  const Shape in{1, 3, 3, 3};
  EXPECT_EQ(layer->output_shape(in), (Shape{1, 3, 3, 3}));
  layer->configure(in);
  std::vector<Tensor> params = unittest::bind_random_params(*layer, in, alloc, 5);
  Tensor x = random_tensor({1, 1, 3, 3, 3}, 6, alloc), y = Tensor::zeros({1, 1, 3, 3, 3}, alloc);
  layer->forward(x, y);
  auto at = [&](const Tensor& t, std::int64_t a, std::int64_t i, std::int64_t j) {
    return (a < 3 && i < 3 && j < 3) ? t.data()[(a * 3 + i) * 3 + j] : 0.f;  // zeros after the end
  };
  for (std::int64_t a = 0; a < 3; ++a)
    for (std::int64_t i = 0; i < 3; ++i)
      for (std::int64_t j = 0; j < 3; ++j) {
        double want = params[1].data()[0];
        for (int u = 0; u < 2; ++u)
          for (int v = 0; v < 2; ++v)
            for (int w = 0; w < 2; ++w) want += params[0].data()[(u * 2 + v) * 2 + w] * at(x, a + u, i + v, j + w);
        EXPECT_NEAR(at(y, a, i, j), want, 1e-5) << a << " " << i << " " << j;
      }
}

// oneDNN's convolution (its asymmetric padding native) gives the direct loops' results.
TEST(Conv3d, OnednnMatchesTheDirectLoops) {
  if (!cpu::onednn_compiled()) GTEST_SKIP() << "built without oneDNN";
  for (const char* text : {"conv3d(4,3,pad=1)", "conv3d(3,2,pad=same)", "conv3d(2,3,stride=2,pad=1)"}) {
    const Pass direct = run(text, ConvImpl::im2col, {3, 6, 5, 7}, 2),
               onednn = run(text, ConvImpl::onednn, {3, 6, 5, 7}, 2);
    EXPECT_LT(worst_difference(direct.y, onednn.y), 1e-5) << text;
    EXPECT_LT(worst_difference(direct.dx, onednn.dx), 1e-5) << text;
    EXPECT_LT(worst_difference(direct.dw, onednn.dw), 1e-5) << text;
    EXPECT_LT(worst_difference(direct.db, onednn.db), 1e-5) << text;
  }
}

TEST(Volumes, ShiftVolumePadsAndCrops) {
  Allocator alloc;
  Tensor x = random_tensor({2, 2, 3, 4}, 7, alloc);  // two [2, 3, 4] blocks
  Tensor padded = Tensor::zeros({2, 3, 4, 5}, alloc), back = Tensor::zeros({2, 2, 3, 4}, alloc);
  shift_volume(x, 2, 3, 4, -1, 3, 4, 5, padded);  // one plane of zeros before each axis
  EXPECT_EQ(padded.data()[0], 0.f);
  EXPECT_EQ(padded.data()[((1 * 4) + 1) * 5 + 1], x.data()[0]);
  shift_volume(padded, 3, 4, 5, 1, 2, 3, 4, back);
  for (std::int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(back.data()[i], x.data()[i]) << i;
}

TEST(Volumes, CopyPlanesCopiesAndAdds) {
  Allocator alloc;
  Tensor src = random_tensor({2, 3, 2, 2}, 8, alloc);  // two blocks of 3 planes of 4
  Tensor dst = Tensor::zeros({2, 5, 2, 2}, alloc);
  copy_planes(src, 3, 1, dst, 5, 3, 2, 4, false);  // planes 1..2 -> 3..4
  copy_planes(src, 3, 1, dst, 5, 3, 1, 4, true);   // plane 1 added again to plane 3
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t z = 0; z < 5; ++z)
      for (std::int64_t e = 0; e < 4; ++e) {
        const float got = dst.data()[(b * 5 + z) * 4 + e];
        const float want = z < 3 ? 0.f : src.data()[(b * 3 + z - 2) * 4 + e] * (z == 3 ? 2.f : 1.f);
        ASSERT_EQ(got, want) << b << " " << z << " " << e;
      }
}

TEST(Volumes, LayerArgumentsAreChecked) {
  auto message = [](const std::string& text, const Shape& in) {
    try {
      make(text)->output_shape(in);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message("conv3d(4,3,pad=same,stride=2)", {1, 8, 8, 8}).find("pad=same needs stride 1"), std::string::npos);
  EXPECT_NE(message("conv3d(4,3)", {1, 8, 8}).find("needs [channels, depth, height, width]"), std::string::npos);
  EXPECT_NE(message("maxpool3d(4)", {1, 3, 8, 8}).find("does not fit"), std::string::npos);
  EXPECT_NE(message("leaky_relu", {4}).find("needs the negative slope"), std::string::npos);
  EXPECT_NE(message("dense(0.5)", {4}).find("as an integer"), std::string::npos);
  EXPECT_NE(message("scale(x)", {4}).find("is not an integer"), std::string::npos);
  EXPECT_EQ(message("leaky_relu(0.01)", {4}), "");
  EXPECT_EQ(message("scale(1.2)", {4}), "");
}

// mae and huber: their mean against the formulas, and their gradients by finite differences (the
// errors kept away from the kinks at 0 and +-delta).
TEST(RegressionLosses, ValuesAndGradients) {
  Allocator alloc;
  const std::int64_t rows = 5, cols = 3;
  Tensor out = random_tensor({rows, cols}, 21, alloc), d = Tensor::zeros({rows, cols}, alloc), work = d;
  std::vector<float> target(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < target.size(); ++i)  // errors of 0.2 .. 1.6, either sign: both Huber regimes
    target[i] = out.data()[i] + (i % 2 ? 1.f : -1.f) * (0.2f + 0.1f * static_cast<float>(i));
  Targets t;
  t.values = target.data();
  for (const RegressionLoss kind : {RegressionLoss::mae, RegressionLoss::huber}) {
    const float delta = 0.75f;
    auto loss = make_loss(false, kind, delta);
    Tensor scalars = step_scalars::make(alloc);
    auto mean_loss = [&] {
      fill(scalars, 0.f);
      loss->forward(out, t, scalars, work);
      return static_cast<double>(step_scalars::to_host(scalars)[step_scalars::loss_sum]) / rows;
    };
    double want = 0;
    for (std::int64_t i = 0; i < rows * cols; ++i) {
      const double e = std::fabs(out.data()[i] - target[static_cast<std::size_t>(i)]);
      want += kind == RegressionLoss::mae ? e : e <= delta ? 0.5 * e * e : delta * (e - 0.5 * delta);
    }
    EXPECT_NEAR(mean_loss(), want / (rows * cols), 1e-6) << loss->name();
    loss->forward_backward(out, t, 1.f / rows, scalars, d);
    const float h = 1e-3f;
    for (std::int64_t i = 0; i < out.numel(); ++i) {
      const float keep = out.data()[i];
      out.data()[i] = keep + h;
      const double up = mean_loss();
      out.data()[i] = keep - h;
      const double down = mean_loss();
      out.data()[i] = keep;
      EXPECT_NEAR(d.data()[i], (up - down) / (2.0 * h), 2e-3) << loss->name() << " " << i;
    }
  }
  Tensor sums = Tensor::zeros({cols}, alloc);
  absolute_error_sums(out, target.data(), sums);
  for (std::int64_t j = 0; j < cols; ++j) {
    double want = 0;
    for (std::int64_t i = 0; i < rows; ++i)
      want += std::fabs(out.data()[i * cols + j] - target[static_cast<std::size_t>(i * cols + j)]);
    EXPECT_NEAR(sums.data()[j], want, 1e-5) << j;
  }
}
