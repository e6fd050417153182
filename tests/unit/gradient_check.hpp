// The layers' finite-difference gradient checker, shared by the layer tests (test_layers.cpp,
// test_volume_layers.cpp).
//
// Checker: L(x, w) = sum(y * r) for a fixed random r; analytic dL/dx and dL/dw from
// backward(dy = r); numeric by central differences with h = 1e-2 in float32, L accumulated in
// double. Stated tolerance: |analytic - numeric| <= 2e-3 * max(1, |numeric|) for every element
// (layers are linear or smooth at the scale of h; ReLU inputs are kept away from 0).
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hpctrain/layers/registry.hpp"
#include "unit_test_util.hpp"

namespace unittest {

using namespace hpctrain;

inline constexpr double kTolerance = 2e-3;

inline double weighted_sum(const Tensor& y, const std::vector<float>& r) {
  double s = 0;
  for (std::int64_t i = 0; i < y.numel(); ++i) s += static_cast<double>(y.data()[i]) * r[static_cast<std::size_t>(i)];
  return s;
}

// Gives a configured layer random parameters (seeded) and zero gradients; returns them.
inline std::vector<Tensor> bind_random_params(Layer& layer, const Shape& in, Allocator& alloc, std::uint32_t seed,
                                              std::vector<Tensor>* grads_out = nullptr) {
  std::vector<Tensor> params, grads;
  for (const ParamSpec& p : layer.param_specs(in)) {
    params.push_back(Tensor::zeros(p.shape, alloc));
    grads.push_back(Tensor::zeros(p.shape, alloc));
    const auto v = random_values(numel(p.shape), seed++);
    std::copy(v.begin(), v.end(), params.back().data());
  }
  layer.bind(params, grads);
  if (grads_out) *grads_out = grads;
  return params;
}

// Largest violation of the tolerance (<= 1 passes) over dL/dx and dL/dparams.
// distinct = true: inputs are a shuffled ramp spaced 0.05 apart, so a probe of +-h cannot change which
// element of a pooling window is the largest.
// ids: token ids for the input (an embedding's), used as given and not probed (no gradient).
inline double check_layer(Layer& layer, const Shape& sample_in, std::int64_t batch, bool away_from_zero = false,
                          bool distinct = false, const std::vector<std::int32_t>* token_ids = nullptr) {
  Allocator alloc;
  const Shape sample_out = layer.output_shape(sample_in);
  layer.configure(sample_in);
  StepContext ctx;  // training, fixed seed/step: dropout's mask is fixed, so the layer is differentiable
  ctx.training = true;
  ctx.seed = 9;
  ctx.step = 4;
  std::vector<std::int64_t> ids(static_cast<std::size_t>(batch));
  for (std::int64_t i = 0; i < batch; ++i) ids[static_cast<std::size_t>(i)] = 100 + i;
  ctx.sample_ids = ids.data();
  layer.set_context(&ctx, 3);
  Shape in{batch}, out{batch};
  in.insert(in.end(), sample_in.begin(), sample_in.end());
  out.insert(out.end(), sample_out.begin(), sample_out.end());
  std::vector<Tensor> grads;
  std::vector<Tensor> params = bind_random_params(layer, sample_in, alloc, 7, &grads);  // views: probes write through
  Tensor x = Tensor::zeros(in, alloc, token_ids ? DType::i32 : DType::f32), y = Tensor::zeros(out, alloc),
         dx = Tensor::zeros(in, alloc);
  auto xv = random_values(numel(in), 1, away_from_zero);
  if (distinct) {
    for (std::size_t i = 0; i < xv.size(); ++i)
      xv[i] = 0.05f * static_cast<float>(i) - 0.025f * static_cast<float>(xv.size());
    std::shuffle(xv.begin(), xv.end(), std::mt19937(3));
  }
  if (token_ids)
    std::copy(token_ids->begin(), token_ids->end(), x.data_as<std::int32_t>());
  else
    std::copy(xv.begin(), xv.end(), x.data());
  const auto r = random_values(numel(out), 2);
  Tensor dy = Tensor::zeros(out, alloc);
  std::copy(r.begin(), r.end(), dy.data());
  layer.forward(x, y);
  layer.backward(x, y, dy, dx);

  double worst = 0;
  const float h = 1e-2f;
  auto probe = [&](float* value, float analytic) {
    const float keep = *value;
    *value = keep + h;
    layer.forward(x, y);
    const double up = weighted_sum(y, r);
    *value = keep - h;
    layer.forward(x, y);
    const double down = weighted_sum(y, r);
    *value = keep;
    const double numeric = (up - down) / (2.0 * h);
    worst = std::max(worst, std::fabs(analytic - numeric) / (kTolerance * std::max(1.0, std::fabs(numeric))));
  };
  for (std::int64_t i = 0; i < (token_ids ? 0 : x.numel()); ++i) probe(x.data() + i, dx.data()[i]);
  for (std::size_t p = 0; p < params.size(); ++p)
    for (std::int64_t i = 0; i < params[p].numel(); ++i) probe(params[p].data() + i, grads[p].data()[i]);
  // The layer outlives `alloc`: its views go now, while the allocator their memory returns to lives
  // (else the layer's destructor frees through a dead allocator: a crash with the tests at -O1,
  // ASan's stack-use-after-return).
  layer.bind({}, {});
  return worst;
}

inline std::unique_ptr<Layer> make(const std::string& text, ConvImpl conv = ConvImpl::im2col) {
  LayerRegistry r;
  register_builtin_layers(r, LayerOptions{conv});
  return r.make(parse_layers(text).front());
}

}  // namespace unittest
