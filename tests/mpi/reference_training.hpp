// The single-process reference that data- and model-parallel runs are compared
// against: the whole model in one process, the same sample order, and the
// same micro-batch composition as `dp_size` data-parallel replicas with
// `micro` micro-batches each (micro-batch m joins every replica's m-th slice,
// which is what synchronized batch norm sees), gradients of the global mean.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/comm/mpi_handles.hpp"
#include "hpctrain/data/make_dataset.hpp"
#include "hpctrain/data/reader.hpp"
#include "hpctrain/data/sampler.hpp"
#include "hpctrain/data/store.hpp"
#include "hpctrain/data/text_import.hpp"
#include "hpctrain/data/token_dataset.hpp"
#include "hpctrain/data/token_store.hpp"
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

// A GPT with dropout in its attention and its MLP, the head tied to the embedding, for the token
// dataset below (vocabulary 11, [model] block_size = 8).
inline const char* const kTinyGpt =
    "embedding(11, 8) position_embedding res(layernorm attention(2, dropout=20)) res(layernorm linear(16) gelu "
    "dropout(10) linear(8)) layernorm(bias=0) lm_head(11)";

// Collective: rank 0 writes a small token dataset (a random stream of 3000 tokens of a
// vocabulary of 11 in 2 train shards, 400 val tokens); every rank gets its root.
inline std::string make_token_dataset(const std::string& tag) {
  std::string root = (std::filesystem::temp_directory_path() / (tag + std::to_string(getpid()))).string();
  broadcast_string(MPI_COMM_WORLD, root, 0);
  if (world_rank() == 0) {
    std::mt19937 rng(3);
    std::vector<std::uint32_t> tokens(3400);
    for (auto& t : tokens) t = static_cast<std::uint32_t>(rng() % 11);  // every third token repeats below
    for (std::size_t i = 3; i < tokens.size(); i += 3) tokens[i] = tokens[i - 3];
    prepare_split_dir(root + "/train", true);
    prepare_split_dir(root + "/val", true);
    const std::string chars = "abcdefghijk";
    const Vocabulary vocab = Vocabulary::stored("char", chars);
    write_token_shard(root + "/train/a.h5", {tokens.begin(), tokens.begin() + 1500}, vocab);
    write_token_shard(root + "/train/b.h5", {tokens.begin() + 1500, tokens.begin() + 3000}, vocab);
    write_token_shard(root + "/val/a.h5", {tokens.begin() + 3000, tokens.end()}, vocab);
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
    ro.dp = rt.mesh().coord(MeshDim::dp);
    ro.dp_size = rt.mesh().size(MeshDim::dp);
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
  register_builtin_layers(reg, LayerOptions{cfg.kernels.conv, cfg.model.vocab_multiple});
  Model model(cfg.model.layers, index.train.sample_shape, reg, alloc);
  model.init_parameters(cfg.run.seed);
  auto loss = make_loss(true);
  std::vector<std::pair<std::int64_t, Shape>> tensors;
  for (const ParamInfo& p : model.param_info()) tensors.emplace_back(p.offset, p.shape);
  Tensor& state = model.store().allocate_state(state_blocks(cfg.optim) * model.parameters().numel(), alloc);
  auto opt = make_optimizer(cfg.optim, model.parameters(), model.gradients(), state,
                            decay_runs(tensors, model.parameters().numel(), cfg.optim.weight_decay_1d));
  Tensor scalars = step_scalars::make(alloc);
  Tensor lr = step_scalars::slot(scalars, step_scalars::learning_rate);
  fill(lr, static_cast<float>(cfg.optim.lr));
  std::unique_ptr<SampleStore> store;  // token windows, or samples by HDF5 chunk
  if (index.train.tokens)
    store = std::make_unique<TokenBlockCache>(index.train,
                                              1 << 16);  // streamed: the trainer's node cache checked against it
  else
    store = std::make_unique<ChunkCache>(index.train, 1 << 20, true, true);
  const std::int64_t global = cfg.train.global_batch, per = global / dp_size, rows = per / micro;
  const std::int64_t positions = index.train.loss_rows();  // loss terms per sample (token windows: T)
  for (int s = 0; s < steps; ++s) {
    const std::vector<std::int64_t> all = sampler.batch(0, s, 0, 1);
    for (int m = 0; m < micro; ++m) {
      std::vector<std::int64_t> ids;
      for (int d = 0; d < dp_size; ++d)
        for (std::int64_t j = 0; j < rows; ++j) ids.push_back(all[static_cast<std::size_t>(d * per + m * rows + j)]);
      if (index.train.tokens)  // windows -> their first token, as the reader does (epoch 0)
        for (auto& w : ids) w = window_start(index.train, cfg.run.seed, 0, w);
      Batch b;
      assemble_batch(index.train, *store, ids, true, true, b);
      model.set_batch(b.size);
      Shape sh{b.size};
      sh.insert(sh.end(), index.train.sample_shape.begin(), index.train.sample_shape.end());
      const Tensor x =
          b.ids.empty() ? Tensor::wrap(b.samples.data(), sh) : Tensor::wrap(b.ids.data(), sh, DType::i32, Device::cpu);
      Targets t;
      t.classes = b.classes.data();
      StepContext& ctx = model.context();  // dropout: the same draws per sample as on the ranks
      ctx.training = true;
      ctx.seed = cfg.run.seed;
      ctx.step = s;  // epoch 0, step s (the trainer's key: epoch * 1000000007 + step)
      ctx.sample_ids = b.indices.data();
      const Tensor& out = model.forward(x);
      loss->forward_backward(out, t, 1.f / static_cast<float>(global * positions), scalars, model.dout());
      model.backward(x, model.dout(), {}, m > 0);
    }
    if (cfg.optim.clip_norm > 0) clip_by_global_norm(model.gradients(), cfg.optim.clip_norm);
    opt->step(scalars, s + 1);
  }
  return std::vector<float>(model.parameters().data(), model.parameters().data() + model.parameters().numel());
}

// Collective: the whole parameters of this stage, from each rank's packed share (shard = full:
// every element owned once, so a sum over the group places each; frozen layers held whole) or as
// held.
inline std::vector<float> whole_parameters(Trainer& trainer) {
  const ParamStore& store = trainer.model().store();
  const Tensor& p = trainer.model().parameters();
  if (!store.packed_parameters()) return std::vector<float>(p.data(), p.data() + p.numel());
  std::vector<float> whole(static_cast<std::size_t>(store.size()), 0.f);
  std::int64_t at = 0;
  for (const Range& r : store.owned()) {
    std::copy_n(p.data() + at, r.size(), whole.begin() + r.begin);
    at += r.size();
  }
  trainer.dp_comm().allreduce(whole.data(), whole.data(), whole.size(), DType::f32, ReduceOp::sum);
  ParamStore& held = trainer.model().store();  // the frozen layers: whole on every rank, after the sum
  if (held.frozen_parameters().defined()) {
    std::vector<float> frozen(static_cast<std::size_t>(held.frozen_parameters().numel()));
    download(held.frozen_parameters(), frozen.data(), frozen.size() * sizeof(float));
    at = 0;
    for (const Range& r : store.frozen_ranges()) {
      std::copy_n(frozen.begin() + at, r.size(), whole.begin() + r.begin);
      at += r.size();
    }
  }
  return whole;
}

}  // namespace hpctrain::testref
