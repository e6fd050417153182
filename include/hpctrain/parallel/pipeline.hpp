// One stage of a pipeline (model parallelism): its part of a training step
// over K micro-batches in the order a schedule gives (GPipe: every forward,
// then every backward; 1F1B: M - s - 1 forwards to fill the pipe, then one
// forward and one backward in turn, then the remaining backwards), and its
// part of an evaluation batch. Activations go to the next stage and input
// gradients to the previous one over the model-parallel communicator.
//
// A stage keeps, for each micro-batch in flight, its input and an activation
// set of the model (Model::use_set: the layers' outputs and what they saved for
// backward), so no forward runs twice: GPipe holds all K sets, 1F1B at most
// M - s (the micro-batches in flight, counted: the schedules are compared by
// it). Results do not depend on the schedule or on M: tests/mpi/test_pipeline.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/config/config.hpp"
#include "hpctrain/layers/loss.hpp"
#include "hpctrain/model/model.hpp"
#include "hpctrain/runtime/runtime.hpp"

namespace hpctrain {

// The layer groups of a model-parallel run as a table: which stage holds which layers, on which
// ranks, and where activations go ("" for pipeline_parallel = 1). `model`: any stage's.
std::string describe_pipeline(const Config& cfg, const Runtime& rt, const Model& model);

// The operations of stage `stage` of `stages` for `k` micro-batches: (forward?, micro-batch).
std::vector<std::pair<bool, int>> pipeline_schedule(PipelineSchedule schedule, int stage, int stages, int k);
// The most micro-batches stage `stage` holds between their forward and their backward at once
// under that schedule (its activation sets: gpipe k, 1F1B min(k, stages - stage)).
int pipeline_sets(PipelineSchedule schedule, int stage, int stages, int k);

struct MicroBatch {
  Tensor input;     // stage 0: the samples (other stages receive theirs)
  Targets targets;  // last stage
};

class PipelineStage {
 public:
  // `mp`: the model-parallel group of this replica, rank = stage.
  PipelineStage(Model& model, Loss& loss, Communicator& mp, PipelineSchedule schedule, Allocator& alloc);

  // This stage's part of one training step of `k` micro-batches of `rows` rows. `prepare(m)`
  // returns micro-batch m and sets the model's context (sample ids, ...). The last stage adds the
  // loss sums to `scalars`. Gradients: the first backward overwrites, later ones add; `layer_done`
  // is called as the last backward (`every_backward`: each backward) finishes each layer (gradient buckets).
  // `chunk_done` ([run] reproducible = layout): every backward overwrites the gradients, the last
  // stage adds micro-batch m's loss sums to `scalars` in its backward, and chunk_done(m) follows it.
  void train_step(int k, std::int64_t rows, const std::function<MicroBatch(int)>& prepare, float grad_scale,
                  Tensor& scalars, const std::function<void(std::size_t)>& layer_done, bool every_backward = false,
                  const std::function<void(int)>& chunk_done = {});
  // Forward only: one batch through this stage (the last stage adds the loss sums to `scalars`
  // unless it is null).
  void eval_batch(std::int64_t rows, const MicroBatch& mb, Tensor* scalars);

  int stage() const { return stage_; }
  int stages() const { return stages_; }
  bool last() const { return stage_ + 1 == stages_; }
  int peak_stored() const { return peak_; }  // most micro-batches in flight at once in the last step
  // Over all training steps so far: time blocked waiting for a neighbour, and time in train_step.
  double wait_seconds() const { return wait_s_; }
  double step_seconds() const { return step_s_; }

 private:
  // Receives [rows, sample...] from stage `from` into a buffer taken from `pool` (or a new one).
  Tensor receive(std::int64_t rows, const Shape& sample, int from, std::vector<Tensor>& pool);
  void send(const Tensor& t, int to, std::size_t slot);
  void wait_sends();

  Model& model_;
  Loss& loss_;
  Communicator& mp_;
  PipelineSchedule schedule_;
  Allocator& alloc_;
  int stage_, stages_;
  int peak_ = 0;
  bool timing_ = false;  // inside train_step: receive() adds its waiting to wait_s_
  double wait_s_ = 0, step_s_ = 0;
  Tensor scratch_scalars_;                                    // the last stage's repeated loss pass adds here
  std::vector<Tensor> kept_;                                  // per micro-batch: its input, while in flight
  std::vector<std::size_t> set_of_;                           // per micro-batch: its activation set
  std::vector<Tensor> free_inputs_, free_grads_, free_eval_;  // received buffers to reuse
  std::vector<std::vector<float>> send_buf_;                  // per micro-batch: what was sent, until it is delivered
  std::vector<float> recv_host_;                              // a GPU stage receives here, then uploads
  std::vector<Request> sends_;
};

}  // namespace hpctrain
