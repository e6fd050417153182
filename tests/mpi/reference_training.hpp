// The single-process reference that data- and model-parallel runs are compared
// against: the whole model in one process, the same sample order, and the
// same micro-batch composition as `dp_size` data-parallel replicas with
// `micro` micro-batches each (micro-batch m joins every replica's m-th slice,
// which is what synchronized batch norm sees), gradients of the global mean.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/comm/mpi_handles.hpp"
#include "hpctrain/data/make_dataset.hpp"
#include "hpctrain/data/reader.hpp"
#include "hpctrain/data/sampler.hpp"
#include "hpctrain/data/store.hpp"
#include "hpctrain/layers/loss.hpp"
#include "hpctrain/model/model.hpp"
#include "hpctrain/optim/optimizer.hpp"
#include "hpctrain/tensor/step_scalars.hpp"
#include "hpctrain/train/trainer.hpp"
#include "mpi_test_util.hpp"

namespace hpctrain::testref {

// Collective: rank 0 writes a small synthetic classification dataset ([2, 3, 3] samples, 7
// classes, 200 train in 2 shards, 30 test); every rank gets its root.
inline std::string make_synthetic_dataset(const std::string& tag) {
  std::string root = (std::filesystem::temp_directory_path() / (tag + std::to_string(getpid()))).string();
  broadcast_string(MPI_COMM_WORLD, root, 0);
  if (world_rank() == 0) {
    GenerateOptions o;
    o.spec.sample_shape = {2, 3, 3};
    o.spec.num_classes = 7;
    o.out = root;
    o.train = 200;
    o.test = 30;
    o.shards = 2;
    o.chunk_rows = 16;
    o.force = true;
    generate_dataset(o);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return root;
}

// Collective: `steps` training steps of `trainer` from the start of epoch 0, each rank reading
// its data-parallel slice as the training loop does.
inline void train_steps(Trainer& trainer, const Config& cfg, const Runtime& rt, const DatasetIndex& index,
                        const Sampler& sampler, int steps) {
  const auto node = node_host_communicator();
  {
    ReaderOptions ro;
    ro.dp = rt.grid().coords().dp;
    ro.dp_size = rt.grid().shape().dp_size;
    Reader reader(index.train, *node, ro);
    reader.start(sampler, {cfg.run.seed, 0, 0});
    for (int s = 0; s < steps; ++s) trainer.train_step(reader.next(), static_cast<float>(cfg.optim.lr));
  }
}

// Parameters of the whole model after `steps` optimizer steps.
inline std::vector<float> reference_parameters(const Config& cfg, const DatasetIndex& index, const Sampler& sampler,
                                               int steps, int dp_size, int micro) {
  Allocator alloc;
  LayerRegistry reg;
  register_builtin_layers(reg, LayerOptions{cfg.run.conv});
  Model model(cfg.model.layers, index.train.sample_shape, reg, alloc);
  model.init_parameters(cfg.run.seed);
  auto loss = make_loss(true, alloc);
  auto opt = make_optimizer(cfg.optim, model.parameters(), model.gradients(), alloc);
  Tensor scalars = step_scalars::make(alloc);
  Tensor lr = step_scalars::slot(scalars, step_scalars::learning_rate);
  fill(lr, static_cast<float>(cfg.optim.lr));
  ChunkCache store(index.train, 1 << 20, true, true);
  const std::int64_t global = cfg.train.global_batch, per = global / dp_size, rows = per / micro;
  for (int s = 0; s < steps; ++s) {
    const std::vector<std::int64_t> all = sampler.batch(0, s, 0, 1);
    for (int m = 0; m < micro; ++m) {
      std::vector<std::int64_t> ids;
      for (int d = 0; d < dp_size; ++d)
        for (std::int64_t j = 0; j < rows; ++j) ids.push_back(all[static_cast<std::size_t>(d * per + m * rows + j)]);
      Batch b;
      assemble_batch(index.train, store, ids, true, true, b);
      model.set_batch(b.size);
      Shape sh{b.size};
      sh.insert(sh.end(), index.train.sample_shape.begin(), index.train.sample_shape.end());
      const Tensor x = Tensor::wrap(b.samples.data(), sh);
      Targets t;
      t.classes = b.classes.data();
      StepContext& ctx = model.context();  // dropout: the same draws per sample as on the ranks
      ctx.training = true;
      ctx.seed = cfg.run.seed;
      ctx.step = s;  // epoch 0, step s (the trainer's key: epoch * 1000000007 + step)
      ctx.sample_ids = b.indices.data();
      const Tensor& out = model.forward(x);
      loss->forward(out, t, scalars);
      loss->backward(out, t, 1.f / static_cast<float>(global), model.dout());
      model.backward(x, model.dout(), {}, m > 0);
    }
    opt->step(scalars, s + 1);
  }
  return std::vector<float>(model.parameters().data(), model.parameters().data() + model.parameters().numel());
}

}  // namespace hpctrain::testref
