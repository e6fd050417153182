// The memory estimate per rank: what the parameter store's buffers, one micro-batch's activations
// (Model::activation_memory) and the staged batch take from the allocator. --dry-run prints it,
// the trainer checks it against the free memory at start-up ([run] check_memory), and
// summary.json reports it beside the allocator's measured peak and the host's RSS
// (docs/performance.md, "Memory estimate").
#pragma once

#include <memory>
#include <string>

#include "hpctrain/config/config.hpp"
#include "hpctrain/model/model.hpp"
#include "hpctrain/runtime/runtime.hpp"

namespace hpctrain {

struct MemoryEstimate {
  // The model buffers: parameters (sharded: the kept share and the gather windows), gradients
  // (the kept share and the staging buffers), the 16-bit copy, the optimizer state. Bytes.
  double parameters = 0, gradients = 0, copy16 = 0, state = 0;
  std::string parameter_note, gradient_note, state_note;  // how sharding shapes them, for --dry-run
  std::int64_t parameter_count = 0;                       // of the stage with the most
  Model::ActivationMemory act;                            // one micro-batch's
  int sets = 1;      // micro-batches held between forward and backward at once (pipeline_sets)
  double batch = 0;  // the step's samples and labels copied to the GPU
  // A pipeline stage's received tensors: a later stage keeps each micro-batch's input it received
  // until that backward (sets of them), an earlier one the output gradient it receives.
  double received = 0;
  bool activations = true;  // false: not estimated (--dry-run of a pipeline: per stage only in the run)
  bool inference = false;   // --eval-only, --generate: forward alone (a refusal's advice differs)
  bool generation = false;  // --generate: the forwards hold the prompt and its tokens (Model::set_positions)
  double buffers() const { return parameters + gradients + copy16 + state; }
  // The model buffers, the activations kept and the gradients between layers (the "Peak" line).
  double peak_without_scratch() const { return buffers() + sets * act.kept() + act.cache + act.gradients + received; }
  double total() const { return peak_without_scratch() + act.scratch + batch; }
};

// For `model` built for this rank (the trainer's: its stage) or, in --dry-run, for the whole model
// (the buffers of the stage with the most parameters; activations only without pipeline stages).
// `stage`: the pipeline stage `model` is (its micro-batches in flight); -1: this rank's.
MemoryEstimate estimate_memory(const Config& cfg, const Runtime& rt, const Model& model, bool whole_model,
                               int stage = -1);
// --dry-run's lines: the buffers, the activations, the peak and the estimate in all.
std::string describe_memory(const Config& cfg, const Runtime& rt, const Model& model);
// --dry-run of a pipeline: each stage's estimate as its ranks' start-up check computes it (its
// buffers, its micro-batches in flight, the gradients between its layers, its deepest call's
// scratch). `stages`: each stage's layers, built as the trainer builds them (shapes only).
std::string describe_stage_memory(const Config& cfg, const Runtime& rt,
                                  const std::vector<std::unique_ptr<Model>>& stages);
// [run] check_memory, at start-up after the model buffers are allocated (`held` bytes so far): one
// line naming the estimate, the free memory and what to change when the rest does not fit this
// rank's GPU, or (CPU) the host's available memory shared by its ranks; empty when it fits (the
// trainer raises it on every rank: comm/agreement.hpp raise_if_any).
std::string memory_refusal(const MemoryEstimate& e, double held, const Config& cfg, const Runtime& rt);

}  // namespace hpctrain
