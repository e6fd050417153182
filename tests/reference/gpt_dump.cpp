// gpt_dump: the numbers tests/reference/gpt_vs_torch.py compares with PyTorch (the llm.c way:
// one model, one batch, every value written out). Builds a model from a [model] layers string
// on token windows, initializes it from a seed, and writes to an HDF5 file:
//   /params/<name>     the initial parameters (the model's names; the tied head has none)
//   /tokens [B, T]     the inputs (int32), /targets [B, T] the next tokens
//   /logits [B, T, V]  the first forward, /loss (scalar, mean over B*T positions)
//   /grads/<name>      every parameter's gradient of that loss
//   /losses [S]        the loss before each of S AdamW steps (clip 1.0, no decay on 1-D tensors)
// usage: gpt_dump OUT.h5 "LAYERS" VOCAB T B STEPS SEED [muon]
// muon: the steps are Muon's (muon_lr 0.02, momentum 0.95, 5 Newton-Schulz steps) for the
// matrices muon_split picks, AdamW for the rest; the root attribute "muon" lists the matrices as
// "name first_row rows;..." for the reference.
#include <cstdio>
#include <random>
#include <string>

#include "dump_util.hpp"
#include "hpctrain/backend/ops.hpp"
#include "hpctrain/config/config.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/io/h5.hpp"
#include "hpctrain/layers/loss.hpp"
#include "hpctrain/layers/registry.hpp"
#include "hpctrain/model/model.hpp"
#include "hpctrain/optim/optimizer.hpp"
#include "hpctrain/tensor/step_scalars.hpp"

using namespace hpctrain;

using dump::write;

int main(int argc, char** argv) {
  if (argc != 8 && !(argc == 9 && std::string(argv[8]) == "muon")) {
    std::fprintf(stderr, "usage: gpt_dump OUT.h5 LAYERS VOCAB T B STEPS SEED [muon]\n");
    return 2;
  }
  try {
    const std::string out = argv[1], layers = argv[2];
    const std::int64_t vocab = std::stoll(argv[3]), t = std::stoll(argv[4]), b = std::stoll(argv[5]);
    const int steps = std::stoi(argv[6]);
    const auto seed = static_cast<std::uint64_t>(std::stoull(argv[7]));
    Allocator alloc;
    LayerRegistry registry;
    register_builtin_layers(registry);
    Model model(layers, {t}, registry, alloc);
    model.init_parameters(seed);
    model.set_batch(b);
    model.context().training = true;
    std::vector<std::int32_t> ids(static_cast<std::size_t>(b * t));
    std::vector<std::int32_t> next(ids.size());
    std::mt19937 rng(static_cast<std::uint32_t>(seed));
    std::vector<std::int32_t> stream(ids.size() + 1);
    for (auto& v : stream) v = static_cast<std::int32_t>(rng() % static_cast<std::uint32_t>(vocab));
    for (std::size_t i = 0; i < ids.size(); ++i) {
      ids[i] = stream[i];
      next[i] = stream[i + 1];
    }
    Tensor x = Tensor::wrap(ids.data(), {b, t}, DType::i32, Device::cpu);
    auto loss = make_loss(true);
    OptimConfig oc;
    oc.name = OptimizerName::adamw;
    oc.lr = 1e-3;
    oc.beta1 = 0.9;
    oc.beta2 = 0.99;
    oc.weight_decay = 0.1;
    std::vector<std::pair<std::int64_t, Shape>> tensors;
    std::vector<ParamTensor> typed;
    for (const ParamInfo& p : model.param_info()) {
      tensors.emplace_back(p.offset, p.shape);
      typed.push_back({p.offset, p.shape, model.all_layer_types()[p.layer], p.name});
    }
    Tensor& state = model.store().allocate_state(state_blocks(oc) * model.parameters().numel(), alloc);
    std::unique_ptr<Optimizer> opt;
    std::string muon_list;
    if (argc == 9) {
      oc.name = OptimizerName::muon;
      std::vector<MuonMatrix> matrices;
      std::vector<DecayRun> adam;
      muon_split(typed, false, matrices, adam);
      for (const MuonMatrix& m : matrices)
        for (const ParamInfo& p : model.param_info())
          if (m.offset >= p.offset && m.offset < p.offset + numel(p.shape))
            muon_list +=
                p.name + " " + std::to_string((m.offset - p.offset) / m.cols) + " " + std::to_string(m.rows) + ";";
      opt = make_muon(oc, model.parameters(), model.gradients(), state, adam, matrices);
    } else {
      opt = make_optimizer(oc, model.parameters(), model.gradients(), state,
                           decay_runs(tensors, model.parameters().numel(), false));
    }
    Tensor scalars = step_scalars::make(alloc);
    Tensor lr = step_scalars::slot(scalars, step_scalars::learning_rate);
    fill(lr, static_cast<float>(oc.lr));
    Targets targets;
    targets.classes = next.data();

    std::lock_guard<std::mutex> lock(h5::lock());
    h5::Id file = h5::create_file(out);
    if (!muon_list.empty()) h5::write_string_attribute(file.get(), "muon", muon_list);
    h5::Id params(CHECK_H5(H5Gcreate2(file.get(), "params", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
    h5::Id grads(CHECK_H5(H5Gcreate2(file.get(), "grads", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
    auto flat = [](const std::string& name) {  // (tensor names have no "/" since format 2: kept for safety)
      std::string s = name;
      for (auto& c : s) c = c == '/' ? '.' : c;
      return s;
    };
    const std::vector<float> w0 = to_host(model.parameters());
    for (const ParamInfo& p : model.param_info())
      write(params.get(), flat(p.name), {w0.begin() + p.offset, w0.begin() + p.offset + numel(p.shape)}, p.shape);
    std::vector<float> tok(ids.begin(), ids.end()), tgt(next.begin(), next.end());
    write(file.get(), "tokens", tok, {b, t});
    write(file.get(), "targets", tgt, {b, t});
    std::vector<float> losses;
    for (int s = 0; s < steps; ++s) {
      Tensor sums = scalars.view(0, {3});
      fill(sums, 0.f);
      const Tensor& logits = model.forward(x);
      loss->forward_backward(logits, targets, 1.f / static_cast<float>(b * t), scalars, model.dout());
      model.backward(x, model.dout(), {}, false);
      const auto h = step_scalars::to_host(scalars);
      losses.push_back(h[step_scalars::loss_sum] / h[step_scalars::samples]);
      if (s == 0) {
        write(file.get(), "logits", to_host(logits), logits.shape());
        write(file.get(), "loss", {losses.back()}, {1});
        const std::vector<float> g = to_host(model.gradients());
        for (const ParamInfo& p : model.param_info())
          write(grads.get(), flat(p.name), {g.begin() + p.offset, g.begin() + p.offset + numel(p.shape)}, p.shape);
      }
      clip_by_global_norm(model.gradients(), 1.0);
      opt->step(scalars, s + 1);
    }
    write(file.get(), "losses", losses, {static_cast<std::int64_t>(losses.size())});
    h5::Id after(CHECK_H5(H5Gcreate2(file.get(), "params_after", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
    const std::vector<float> w1 = to_host(model.parameters());
    for (const ParamInfo& p : model.param_info())
      write(after.get(), flat(p.name), {w1.begin() + p.offset, w1.begin() + p.offset + numel(p.shape)}, p.shape);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpt_dump: %s\n", e.what());
    return 1;
  }
}
