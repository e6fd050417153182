// volume_dump: the numbers tests/reference/volume_vs_torch.py compares with PyTorch (as
// gpt_dump for the decoders): a model from a [model] layers string on [C, D, H, W] volumes with
// regression targets, initialized from a seed, one batch, every value written to an HDF5 file:
//   /params/<name>   the initial parameters        /x [B, C, D, H, W], /targets [B, K]
//   /out [B, K]      the forward's output          /loss (scalar: the mean over B and K)
//   /grads/<name>    every parameter's gradient of that loss
// usage: volume_dump OUT.h5 "LAYERS" C D H W K B mse|mae|huber SEED
#include <cstdio>
#include <random>
#include <string>

#include "dump_util.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/io/h5.hpp"
#include "hpctrain/layers/loss.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/model/model.hpp"
#include "hpctrain/tensor/step_scalars.hpp"

using namespace hpctrain;

using dump::write;

int main(int argc, char** argv) {
  if (argc != 11) {
    std::fprintf(stderr, "usage: volume_dump OUT.h5 LAYERS C D H W K B mse|mae|huber SEED\n");
    return 2;
  }
  try {
    const std::string out = argv[1], layers = argv[2], kind = argv[9];
    const Shape sample{std::stoll(argv[3]), std::stoll(argv[4]), std::stoll(argv[5]), std::stoll(argv[6])};
    const std::int64_t k = std::stoll(argv[7]), b = std::stoll(argv[8]);
    const auto seed = static_cast<std::uint64_t>(std::stoull(argv[10]));
    const RegressionLoss loss_kind = kind == "mae"     ? RegressionLoss::mae
                                     : kind == "huber" ? RegressionLoss::huber
                                                       : RegressionLoss::mse;
    Allocator alloc;
    LayerRegistry registry;
    register_builtin_layers(registry);
    Model model(layers, sample, registry, alloc);
    model.init_parameters(seed);
    model.set_batch(b);
    model.context().training = true;
    std::mt19937 rng(static_cast<std::uint32_t>(seed));
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    Shape xs{b};
    xs.insert(xs.end(), sample.begin(), sample.end());
    std::vector<float> xv(static_cast<std::size_t>(numel(xs))), tv(static_cast<std::size_t>(b * k));
    for (auto& v : xv) v = u(rng);
    for (auto& v : tv) v = u(rng);
    Tensor x = Tensor::wrap(xv.data(), xs, Device::cpu);
    auto loss = make_loss(false, loss_kind, 0.5f);  // (huber: delta 0.5, so both of its parts are used)
    Tensor scalars = step_scalars::make(alloc);
    Targets targets;
    targets.values = tv.data();
    const Tensor& y = model.forward(x);
    loss->forward_backward(y, targets, 1.f / static_cast<float>(b), scalars, model.dout());
    model.backward(x, model.dout(), {}, false);
    const auto h = step_scalars::to_host(scalars);

    std::lock_guard<std::mutex> lock(h5::lock());
    h5::Id file = h5::create_file(out);
    h5::Id params(CHECK_H5(H5Gcreate2(file.get(), "params", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
    h5::Id grads(CHECK_H5(H5Gcreate2(file.get(), "grads", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
    const std::vector<float> w = to_host(model.parameters()), g = to_host(model.gradients());
    for (const ParamInfo& p : model.param_info()) {
      write(params.get(), p.name, {w.begin() + p.offset, w.begin() + p.offset + numel(p.shape)}, p.shape);
      write(grads.get(), p.name, {g.begin() + p.offset, g.begin() + p.offset + numel(p.shape)}, p.shape);
    }
    write(file.get(), "x", xv, xs);
    write(file.get(), "targets", tv, {b, k});
    write(file.get(), "out", to_host(y), y.shape());
    write(file.get(), "loss", {h[step_scalars::loss_sum] / h[step_scalars::samples]}, {1});
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "volume_dump: %s\n", e.what());
    return 1;
  }
}
