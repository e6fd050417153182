// A pipeline stage's part of training and evaluation (parallel/pipeline.hpp).
#include "hpctrain/parallel/pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>

#include "hpctrain/backend/ops.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/table.hpp"
#include "hpctrain/model/partition.hpp"
#include "hpctrain/tensor/step_scalars.hpp"

namespace hpctrain {

// The layer groups of a pipelined run: which stage holds which layers, on which ranks, and
// where activations go (empty for pipeline_parallel = 1).
std::string describe_pipeline(const Config& cfg, const Runtime& rt, const Model& model) {
  const MeshShape& shape = rt.mesh().shape();
  const int stages = shape.size(MeshDim::pp);
  const auto params = layer_parameter_counts(model);
  const auto groups = partition_layers(params, stages, cfg.model.groups);
  if (stages == 1) return "";
  const auto& names = model.all_layer_names();
  std::ostringstream os;
  os << "\nPipeline: " << stages << " stages, groups "
     << (cfg.model.groups == "auto" ? "auto (balanced by parameters)" : cfg.model.groups) << ", "
     << cfg.train.micro_batches << " micro-batch(es) of " << rt.per_rank_batch() / cfg.train.micro_batches
     << " per step, schedule " << (cfg.parallel.pipeline_schedule == PipelineSchedule::gpipe ? "gpipe" : "1f1b")
     << "\n";
  Table t({"stage", "layers", "parameters", "world ranks (one per replica)", "activations from", "activations to"});
  for (int s = 0; s < stages; ++s) {
    const LayerGroup& g = groups[static_cast<std::size_t>(s)];
    std::int64_t n = 0;
    for (std::size_t i = g.first; i < g.last; ++i) n += params[i];
    std::string ranks;
    MeshCoords first;  // the stage's rank in replica 0
    first[MeshDim::pp] = s;
    for (int r : mesh_group_members(mesh_world_rank(first, shape), shape, MeshDim::dp))
      ranks += (ranks.empty() ? "" : " ") + std::to_string(r);
    t.add_row({std::to_string(s), names[g.first] + (g.last - g.first > 1 ? " .. " + names[g.last - 1] : ""),
               std::to_string(n), ranks, s == 0 ? "(data)" : "stage " + std::to_string(s - 1),
               s + 1 == stages ? "(loss)" : "stage " + std::to_string(s + 1)});
  }
  os << t.render();
  return os.str();
}

std::vector<std::pair<bool, int>> pipeline_schedule(PipelineSchedule schedule, int stage, int stages, int k) {
  std::vector<std::pair<bool, int>> ops;
  if (schedule == PipelineSchedule::gpipe) {
    for (int m = 0; m < k; ++m) ops.emplace_back(true, m);
    for (int m = 0; m < k; ++m) ops.emplace_back(false, m);
    return ops;
  }
  const int warmup = std::min(stages - stage - 1, k);  // 1F1B: fill, then alternate, then drain
  int f = 0, b = 0;
  for (; f < warmup; ++f) ops.emplace_back(true, f);
  for (; f < k; ++f, ++b) {
    ops.emplace_back(true, f);
    ops.emplace_back(false, b);
  }
  for (; b < k; ++b) ops.emplace_back(false, b);
  return ops;
}

int pipeline_sets(PipelineSchedule schedule, int stage, int stages, int k) {
  int held = 0, most = 0;
  for (const auto& [forward, m] : pipeline_schedule(schedule, stage, stages, k)) {
    held += forward ? 1 : -1;
    most = std::max(most, held);
  }
  return most;
}

PipelineStage::PipelineStage(Model& model, Loss& loss, Communicator& mp, PipelineSchedule schedule, Allocator& alloc)
    : model_(model),
      loss_(loss),
      mp_(mp),
      schedule_(schedule),
      alloc_(alloc),
      stage_(mp.rank()),
      stages_(mp.size()),
      scratch_scalars_(step_scalars::make(alloc)) {}

Tensor PipelineStage::receive(std::int64_t rows, const Shape& sample, int from, std::vector<Tensor>& pool) {
  Shape shape{rows};
  shape.insert(shape.end(), sample.begin(), sample.end());
  // A buffer of this shape from the pool (no allocation or zero-fill on the step's path); buffers
  // of another batch size are dropped.
  Tensor t;
  while (!t.defined() && !pool.empty()) {
    if (pool.back().shape() == shape) t = pool.back();
    pool.pop_back();
  }
  if (!t.defined()) t = Tensor::zeros(shape, alloc_);
  const auto t0 = std::chrono::steady_clock::now();
  if (t.device() == Device::cpu) {
    mp_.irecv(t.data(), static_cast<std::size_t>(t.numel()), DType::f32, from)->wait();
  } else {  // a GPU stage: received on the host, then copied up
    recv_host_.resize(static_cast<std::size_t>(t.numel()));
    mp_.irecv(recv_host_.data(), recv_host_.size(), DType::f32, from)->wait();
    upload(recv_host_.data(), recv_host_.size() * sizeof(float), t);
  }
  if (timing_) wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return t;
}

void PipelineStage::send(const Tensor& t, int to, std::size_t slot) {
  if (send_buf_.size() <= slot) send_buf_.resize(slot + 1);
  auto& buf = send_buf_[slot];  // the model reuses its buffers: send a copy that lives until delivered
  buf.resize(static_cast<std::size_t>(t.numel()));
  download(t, buf.data(), buf.size() * sizeof(float));  // a plain copy on the CPU
  sends_.push_back(mp_.isend(buf.data(), buf.size(), DType::f32, to));
}

void PipelineStage::wait_sends() {
  for (auto& r : sends_) r->wait();
  sends_.clear();
}

void PipelineStage::train_step(int k, std::int64_t rows, const std::function<MicroBatch(int)>& prepare,
                               float grad_scale, Tensor& scalars, const std::function<void(std::size_t)>& layer_done,
                               bool every_backward, const std::function<void(int)>& chunk_done) {
  const auto t0 = std::chrono::steady_clock::now();
  timing_ = true;
  model_.set_batch(rows);
  kept_.assign(static_cast<std::size_t>(k), Tensor());
  set_of_.assign(static_cast<std::size_t>(k), 0);
  std::vector<std::size_t> free_sets;  // activation sets no micro-batch in flight uses
  std::size_t sets = 0;
  int stored = 0, backwards = 0;
  peak_ = 0;
  const Shape& out_shape = model_.output_shape();
  // Where the loss sums of the forward and of the backward's repeated pass go: the step's sums
  // count each micro-batch once (reproducible: in its backward, so chunk_done takes that chunk's).
  Tensor& forward_sums = chunk_done ? scratch_scalars_ : scalars;
  Tensor& backward_sums = chunk_done ? scalars : scratch_scalars_;
  for (const auto& [forward, m] : pipeline_schedule(schedule_, stage_, stages_, k)) {
    const MicroBatch mb = prepare(m);  // sets the model's context for micro-batch m
    Tensor& in = kept_[static_cast<std::size_t>(m)];
    std::size_t& set = set_of_[static_cast<std::size_t>(m)];
    if (forward) {
      in = stage_ == 0 ? mb.input : receive(rows, model_.input_shape(), stage_ - 1, free_inputs_);
      peak_ = std::max(peak_, ++stored);
      if (free_sets.empty()) free_sets.push_back(sets++);
      set = free_sets.back();  // this micro-batch's activations and saved tensors, until its backward
      free_sets.pop_back();
      model_.use_set(set);
      // ([train] loss_chunk: the last layer runs the loss in backward, the sums counted there)
      const bool head = model_.give_loss(loss_, mb.targets, grad_scale, &backward_sums);
      const Tensor& out = model_.forward(in);
      if (!last())
        send(out, stage_ + 1, 2 * static_cast<std::size_t>(m));
      else if (!head)
        loss_.forward(out, mb.targets, forward_sums, model_.dout());
      continue;
    }
    model_.use_set(set);  // what m's forward kept: no forward runs again
    Tensor dy;
    if (!last()) {
      dy = receive(rows, out_shape, stage_ + 1, free_grads_);
    } else if (!model_.give_loss(loss_, mb.targets, grad_scale, &scalars)) {  // (loss_chunk: its sums the step's)
      // The model's output for m is in its set; the loss pass is repeated, now with its gradient
      // (dout holds one micro-batch's).
      loss_.forward_backward(model_.output(), mb.targets, grad_scale, backward_sums, model_.dout());
      dy = model_.dout();
    }
    const bool reduce = ++backwards == k || every_backward;
    model_.backward(in, dy, reduce ? layer_done : std::function<void(std::size_t)>(), backwards > 1 && !chunk_done);
    if (chunk_done) chunk_done(m);
    if (stage_ > 0) send(model_.input_grad(), stage_ - 1, 2 * static_cast<std::size_t>(m) + 1);
    if (!last()) free_grads_.push_back(dy);
    if (stage_ > 0) free_inputs_.push_back(in);  // (stage 0's input is a view of the batch)
    in = Tensor();
    free_sets.push_back(set);
    --stored;
  }
  model_.use_set(0);
  wait_sends();
  timing_ = false;
  step_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  HPCT_CHECK(stored == 0, "pipeline step ended with micro-batches in flight");
}

void PipelineStage::eval_batch(std::int64_t rows, const MicroBatch& mb, Tensor* scalars) {
  model_.set_batch(rows);
  const Tensor in = stage_ == 0 ? mb.input : receive(rows, model_.input_sample(), stage_ - 1, free_eval_);
  const bool head = model_.give_loss(loss_, mb.targets, 0.f, scalars);
  const Tensor& out = model_.forward(in);
  if (!last())
    send(out, stage_ + 1, 0);
  else if (scalars && !head)
    loss_.forward(out, mb.targets, *scalars, model_.dout());
  wait_sends();
  if (stage_ > 0) free_eval_.push_back(in);
}

}  // namespace hpctrain
