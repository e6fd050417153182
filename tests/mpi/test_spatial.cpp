// Spatial parallelism's layers (layers/spatial.hpp) at 1-4 ranks: each rank runs a layer on its
// depth slab of a volume (halo exchanges, gathers) and must reproduce one process running it on the
// whole volume: its slab of the output (or the whole output for a layer that gathers), its slab of
// the input gradient, and parameter gradients that sum over the ranks to the whole volume's (a
// slab layer's; a gathering layer's are whole on every rank). conv3d with halos before and after
// (even and odd kernels, 'same' and explicit padding, padding 2 deep, stride 2), conv3d and a pool
// whose windows do not tile the slabs (gather first), pools, flatten and gap3d; conv3d through
// both the direct loops and oneDNN. Within 1e-5 of max(1, |value|).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/comm/mpi_communicator.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/layers/spatial.hpp"
#include "mpi_test_util.hpp"

using namespace hpctrain;

namespace {

Tensor random_tensor(const Shape& s, std::uint32_t seed, Allocator& alloc) {
  Tensor t = Tensor::zeros(s, alloc);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data()[i] = u(gen);
  return t;
}

struct LayerRun {
  Tensor y, dx;
  std::vector<Tensor> grads;
};

// The layer on `x` (whole, or this rank's slab when `sp` splits), backward with `dy`; parameters
// from a fixed seed, so every rank and the whole-volume run hold the same ones.
LayerRun run(const std::string& text, ConvImpl impl, const Shape& in, SpatialSplit sp, Communicator* comm,
             const Tensor& x, const Tensor& dy_whole, Allocator& alloc) {
  LayerRegistry registry;
  register_builtin_layers(registry, LayerOptions{impl});
  auto layer = registry.make(parse_layers(text).front());
  if (sp.on()) {
    sp.role = layer->spatial_role(in, sp.size);
    layer->set_spatial(sp);
  }
  const Shape out = layer->output_shape(in);
  layer->configure(in);
  std::vector<Tensor> params, grads;
  std::uint32_t seed = 40;
  for (const ParamSpec& p : layer->param_specs(in)) {
    params.push_back(random_tensor(p.shape, seed++, alloc));
    grads.push_back(Tensor::zeros(p.shape, alloc));
  }
  layer->bind(params, grads);
  StepContext ctx;
  ctx.sp_comm = comm;
  layer->set_context(&ctx, 0);
  Shape ys{x.rows()};
  ys.insert(ys.end(), out.begin(), out.end());
  Tensor y = Tensor::zeros(ys, alloc), dx = Tensor::zeros(x.shape(), alloc);
  Tensor dy = Tensor::zeros(ys, alloc);
  if (sp.slabs()) {  // (this rank's planes of the whole output's gradient)
    const std::int64_t depth = ys[2], plane = ys[3] * ys[4];
    copy_planes(dy_whole, depth * sp.size, depth * sp.rank, dy, depth, 0, depth, plane, false);
  } else {
    copy(dy_whole, dy);
  }
  layer->forward(x, y);
  layer->backward(x, y, dy, dx);
  return {y, dx, grads};
}

double worst(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.numel(), b.numel());
  double w = 0;
  for (std::int64_t i = 0; i < std::min(a.numel(), b.numel()); ++i)
    w = std::max(
        w, std::fabs(static_cast<double>(a.data()[i]) - b.data()[i]) / std::max(1.0, std::fabs(1.0 * a.data()[i])));
  return w;
}

// `t`'s planes [rank x depth / size, ...) of a [N, C, depth, plane] tensor, as [N, C, depth / size, plane].
Tensor planes_of(const Tensor& t, int rank, int size, Allocator& alloc) {
  Shape s = t.shape();
  const std::int64_t depth = s[2], plane = s[3] * s[4];
  s[2] = depth / size;
  Tensor out = Tensor::zeros(s, alloc);
  copy_planes(t, depth, s[2] * rank, out, s[2], 0, s[2], plane, false);
  return out;
}

}  // namespace

TEST(Spatial, SlabLayersMatchTheWholeVolume) {
  MpiCommunicator comm(MPI_COMM_WORLD, MpiCommOptions{});
  const int size = comm.size(), rank = comm.rank();
  Allocator alloc;
  const std::int64_t n = 2, c = 2, depth = 4 * size, h = 5, w = 4;
  const Shape whole_in{c, depth, h, w}, slab_in{c, depth / size, h, w};
  const Tensor x = random_tensor({n, c, depth, h, w}, 7, alloc);
  const Tensor slab = planes_of(x, rank, size, alloc);
  struct Case {
    const char* text;
    ConvImpl impl;
    SpatialRole role;  // what the layer must choose at slabs of 4 planes
  };
  const Case cases[] = {
      {"conv3d(3,2,pad=same)", ConvImpl::im2col, SpatialRole::slabs},  // 0 before, 1 after
      {"conv3d(3,2,pad=same)", ConvImpl::onednn, SpatialRole::slabs},
      {"conv3d(2,3,pad=1)", ConvImpl::im2col, SpatialRole::slabs},
      {"conv3d(2,5,pad=2)", ConvImpl::onednn, SpatialRole::slabs},     // two planes each side
      {"conv3d(2,4,pad=same)", ConvImpl::im2col, SpatialRole::slabs},  // 1 before, 2 after
      {"conv3d(2,2,stride=2)", ConvImpl::im2col, SpatialRole::slabs},
      {"conv3d(2,3)", ConvImpl::onednn, SpatialRole::gathers},  // outputs D - 2: do not tile
      {"maxpool3d(2)", ConvImpl::im2col, SpatialRole::slabs},
      {"avgpool3d(2)", ConvImpl::im2col, SpatialRole::slabs},
      {"maxpool3d(3)", ConvImpl::im2col, SpatialRole::gathers},  // 3 does not divide 4 planes
      {"gap3d", ConvImpl::im2col, SpatialRole::gathers},
      {"flatten", ConvImpl::im2col, SpatialRole::gathers},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(std::string(k.text) + (k.impl == ConvImpl::onednn ? " (oneDNN)" : "") + " at " + std::to_string(size) +
                 " rank(s)");
    // One process: the whole volume (every rank computes it alike).
    LayerRegistry registry;
    register_builtin_layers(registry, LayerOptions{k.impl});
    Shape out = registry.make(parse_layers(k.text).front())->output_shape(whole_in);
    Shape ys{n};
    ys.insert(ys.end(), out.begin(), out.end());
    const Tensor dy = random_tensor(ys, 8, alloc);
    const LayerRun whole = run(k.text, k.impl, whole_in, {}, nullptr, x, dy, alloc);
    const LayerRun split = run(k.text, k.impl, slab_in, {rank, size, true}, &comm, slab, dy, alloc);
    const bool gathers = k.role == SpatialRole::gathers;
    if (size > 1) {
      LayerRegistry r2;
      register_builtin_layers(r2, LayerOptions{k.impl});
      EXPECT_EQ(r2.make(parse_layers(k.text).front())->spatial_role(slab_in, size), k.role);
    }
    EXPECT_LE(worst(gathers || size == 1 ? whole.y : planes_of(whole.y, rank, size, alloc), split.y), 1e-5);
    EXPECT_LE(worst(planes_of(whole.dx, rank, size, alloc), split.dx), 1e-5);
    for (std::size_t p = 0; p < whole.grads.size(); ++p) {
      Tensor g = split.grads[p];
      if (!gathers)  // (a slab layer's: this slab's share)
        comm.allreduce(g.data(), g.data(), static_cast<std::size_t>(g.numel()), DType::f32, ReduceOp::sum);
      EXPECT_LE(worst(whole.grads[p], g), 1e-5) << "parameter " << p;
    }
  }
}
