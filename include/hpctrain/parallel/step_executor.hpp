// How this rank runs the passes of a step, chosen once from the mesh and the configuration
// (make_step_executor): every layer on this rank (one stage), the same recorded and replayed as
// a CUDA graph ([kernels] cuda_graphs), or this rank's stage of a pipeline ([parallel]
// pipeline_parallel > 1). The trainer's step, evaluation and generation call it without knowing
// which; adding a way to run a step (another schedule, tensor-parallel layers) is one class here.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "hpctrain/backend/cuda/device_api.hpp"
#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/config/config.hpp"
#include "hpctrain/data/staged_batch.hpp"
#include "hpctrain/layers/loss.hpp"
#include "hpctrain/model/model.hpp"
#include "hpctrain/parallel/pipeline.hpp"

namespace hpctrain {

// What the trainer gives the passes of one training step.
struct StepHooks {
  std::function<MicroBatch(int)> prepare;  // micro-batch m of the step (and the model's context for it)
  // Around layer i's forward: acquire makes its parameters complete (a sharded optimizer's
  // all-gather still in flight), release says the forward is done with them (empty: nothing to
  // do, as with replicated parameters; ZeRO-3 frees the gathered copy there).
  std::function<void(std::size_t)> acquire, release;
  std::function<void()> forward_done;           // after each micro-batch's forward (nothing may stay in flight)
  std::function<void(std::size_t)> layer_done;  // as the step's last backward finishes layer i (gradient buckets)
  bool every_backward = false;                  // layer_done after every backward, not only the last (staged gradients)
  std::function<void()> dropped_recordings;     // a recorded step is recorded again: so must the update be
  // [run] reproducible = layout: every backward overwrites the gradients, and this runs after
  // micro-batch m's (parallel/reproducible_sums.hpp takes its gradient and loss sums)
  std::function<void(int)> chunk_done;
};

class StepExecutor {
 public:
  virtual ~StepExecutor() = default;
  // Forward, loss and backward of `k` micro-batches of `rows` rows each: the loss sums are added
  // to `scalars` where the output is; the first backward overwrites the gradients, later ones add.
  virtual void train(int k, std::int64_t rows, float grad_scale, Tensor& scalars, const StepHooks& hooks) = 0;
  // The forward of one batch of `rows` rows (evaluation, generation); where the output is, the
  // loss sums are added to `scalars` unless it is null.
  virtual void forward(std::int64_t rows, const MicroBatch& mb, Tensor* scalars) = 0;
  // Whether this rank holds the model's output (and its loss sums): every rank but a pipeline's
  // earlier stages.
  virtual bool holds_output() const { return true; }
  // `values` of the rank holding the output, on every rank of this replica's stages.
  virtual void share_from_output(std::vector<std::uint32_t>& /*values*/) {}
  // `v[0..n)` summed over this replica's stages (a gradient norm's squares; the loss sums, which
  // the other stages add as zeros).
  virtual void sum_over_stages(double* /*v*/, std::size_t /*n*/) {}
  // What was recorded must be recorded again (buffers may move: evaluation, a new batch size).
  virtual void invalidate() {}
  virtual bool replaying() const { return false; }  // a recorded step is being replayed
  virtual PipelineStage* pipeline() { return nullptr; }
};

// Runs `work` on the GPU's compute stream through `graph` ([kernels] cuda_graphs): eagerly when the
// graph is new (warm-up: allocations, cuDNN's algorithm search), then recorded once and replayed.
void run_recorded(std::unique_ptr<cuda::Graph>& graph, const std::function<void()>& work);

// `pp`: this replica's pipeline stages (null: one stage). `staged`: the step's batch on the
// device, whose addresses a recorded step depends on.
std::unique_ptr<StepExecutor> make_step_executor(const Config& cfg, Model& model, Loss& loss, Communicator* pp,
                                                 const StagedBatch& staged, Allocator& alloc);

}  // namespace hpctrain
