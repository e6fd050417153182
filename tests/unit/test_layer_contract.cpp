// The layer contract (layers/layer.hpp): a layer keeps no parameter views of its own inside a
// model; every call reads the views its caller hands over (StepContext::params), and a call
// handed another layer's views is refused. Stated criterion: a dense layer computes with the
// views of the context, not with those given to bind(); a residual block passes each inner layer
// its share; mismatched views throw naming the layer.
#include <gtest/gtest.h>

#include <vector>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/layers/registry.hpp"
#include "unit_test_util.hpp"

using namespace hpctrain;

namespace {

std::unique_ptr<Layer> make_layer(const std::string& text) {
  LayerRegistry r;
  register_builtin_layers(r);
  return r.make(parse_layers(text).front());
}

Tensor filled(const Shape& s, float v, Allocator& alloc) {
  Tensor t = Tensor::zeros(s, alloc);
  fill(t, v);
  return t;
}

// Views for a dense(2) on 3 inputs: W all `w`, b all `b`, zero gradients, handed as `owner`'s.
ParamViews dense_views(float w, float b, const Layer* owner, Allocator& alloc) {
  return {
      {filled({2, 3}, w, alloc), filled({2}, b, alloc)}, {filled({2, 3}, 0.f, alloc), filled({2}, 0.f, alloc)}, owner};
}

}  // namespace

TEST(LayerContract, ACallReadsTheParametersItsCallerHandsOver) {
  Allocator alloc;
  auto dense = make_layer("dense(2)");
  dense->configure({3});
  ParamViews own = dense_views(1.f, 0.f, nullptr, alloc);
  dense->bind(own.params, own.grads);
  const Tensor x = filled({1, 3}, 1.f, alloc);
  Tensor y = Tensor::zeros({1, 2}, alloc);
  dense->forward(x, y);
  EXPECT_EQ(y.data()[0], 3.f);  // bind()'s views: outside a model

  ParamViews handed = dense_views(2.f, 1.f, dense.get(), alloc);
  StepContext ctx;
  ctx.params = &handed;
  dense->set_context(&ctx, 0);
  dense->forward(x, y);
  EXPECT_EQ(y.data()[0], 7.f);  // 3 * 2 + 1: the handed views
  Tensor dy = filled({1, 2}, 1.f, alloc), dx = Tensor::zeros({1, 3}, alloc);
  dense->backward(x, y, dy, dx);
  EXPECT_EQ(handed.grads[1].data()[0], 1.f);  // the gradient went to the handed buffer
  EXPECT_EQ(dx.data()[0], 4.f);               // dy W with W = 2
}

TEST(LayerContract, AResidualBlockHandsEachInnerLayerItsShare) {
  Allocator alloc;
  auto block = make_layer("res(dense(2) dense(2))");
  block->configure({2});
  ASSERT_EQ(block->param_specs({2}).size(), 4u);
  // Inner dense 0: W = 1, b = 0; inner dense 1: W = 0, b = 5. y = x + 5 only when each inner
  // layer reads its own two of the four views.
  ParamViews handed{
      {filled({2, 2}, 1.f, alloc), filled({2}, 0.f, alloc), filled({2, 2}, 0.f, alloc), filled({2}, 5.f, alloc)},
      {filled({2, 2}, 0.f, alloc), filled({2}, 0.f, alloc), filled({2, 2}, 0.f, alloc), filled({2}, 0.f, alloc)},
      block.get()};
  StepContext ctx;
  ctx.params = &handed;
  block->set_context(&ctx, 0);
  const Tensor x = filled({1, 2}, 1.f, alloc);
  Tensor y = Tensor::zeros({1, 2}, alloc);
  block->forward(x, y);
  EXPECT_EQ(y.data()[0], 6.f);
  EXPECT_EQ(y.data()[1], 6.f);
}

TEST(LayerContract, AnotherLayersParametersAreRefused) {
  Allocator alloc;
  auto dense = make_layer("dense(2)"), other = make_layer("dense(2)");
  dense->configure({3});
  ParamViews wrong = dense_views(1.f, 0.f, other.get(), alloc);
  StepContext ctx;
  ctx.params = &wrong;
  dense->set_context(&ctx, 0);
  const Tensor x = filled({1, 3}, 1.f, alloc);
  Tensor y = Tensor::zeros({1, 2}, alloc);
  EXPECT_THROW(dense->forward(x, y), std::exception);
}
