// The memory estimate per rank (train/memory_estimate.hpp): the model buffers as the parameter
// store and the optimizer allocate them, the activations as Model::activation_memory counts them.
#include "hpctrain/train/memory_estimate.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "hpctrain/backend/cuda/device_api.hpp"
#include "hpctrain/core/error.hpp"
#include "hpctrain/core/table.hpp"
#include "hpctrain/model/partition.hpp"
#include "hpctrain/optim/optimizer.hpp"
#include "hpctrain/parallel/pipeline.hpp"
#include "hpctrain/train/trainer.hpp"

namespace hpctrain {

namespace {

const double kMiB = 1 << 20;

std::string f1(double v) { return fixed_text(v, 1); }

// Parameters and trainable parameters of the stage with the most (whole_model: `model` holds
// every layer) or of `model` itself: what its store holds (a later stage's copy of a tied weight
// included), less its frozen layers'.
std::pair<std::int64_t, std::int64_t> stage_parameters(const Config& cfg, const Runtime& rt, const Model& model,
                                                       bool whole_model) {
  if (!whole_model) {
    const std::int64_t held = model.store().size();
    return {held, held - total(model.store().frozen_ranges())};
  }
  const auto counts = layer_parameter_counts(model);
  const auto groups = partition_layers(counts, rt.mesh().size(MeshDim::pp), cfg.model.groups);
  // A later stage's copy of a weight tied across stages (trained unless the layer holding it is frozen).
  std::vector<std::int64_t> copies(groups.size(), 0), trained(groups.size(), 0);
  for (const auto& [layer, target] : model.ties()) {
    const auto a = static_cast<std::size_t>(stage_of_layer(groups, layer));
    if (static_cast<int>(a) == stage_of_layer(groups, target)) continue;
    const std::int64_t n = numel(model.tied_weight(target).shape);
    copies[a] += n;
    trained[a] += model.frozen(layer) ? 0 : n;
  }
  std::int64_t params = 0, trainable = 0;
  for (std::size_t s = 0; s < groups.size(); ++s) {
    std::int64_t n = copies[s], t = trained[s];
    for (std::size_t i = groups[s].first; i < groups[s].last; ++i) {
      n += counts[i];
      t += model.frozen(i) ? 0 : counts[i];
    }
    if (n > params) params = n, trainable = t;
  }
  return {params, trainable};
}

// The parameters, gradients, 16-bit copy and optimizer state, with the optimizer state sharded
// over the data-parallel ranks when [parallel] shard is optimizer or gradients, the gradients too
// when it is gradients, the parameters too when it is full.
void estimate_buffers(const Config& cfg, const Runtime& rt, const Model& model, bool whole_model, MemoryEstimate& e) {
  const int dp = rt.mesh().size(MeshDim::dp);
  const auto [params, trainable] = stage_parameters(cfg, rt, model, whole_model);
  e.parameter_count = params;
  const bool sharded = cfg.parallel.shard != Sharding::none && dp > 1;
  const double state = static_cast<double>(state_blocks(cfg.optim) * trainable) * 4;
  const std::string d = std::to_string(dp);
  e.state = sharded ? state / dp : state;
  e.state_note = sharded  ? " (sharded over " + d + " ranks; " + f1(state / kMiB) + " MiB unsharded)"
                 : dp > 1 ? " (whole on every rank: [parallel] shard = none)"
                          : "";
  e.parameters = e.gradients = static_cast<double>(params) * 4;
  if (staged_gradients(cfg, dp)) {  // what ParamStore::stage_gradients holds (the whole model's buckets: P = 1 exact)
    const auto bucket_elems = static_cast<std::int64_t>(cfg.parallel.bucket_mb * kMiB / sizeof(float));
    const auto buckets = model.store().buckets(std::max<std::int64_t>(1, bucket_elems));
    std::int64_t staging = 0;
    for (const std::int64_t n : ParamStore::slot_sizes(buckets, model.gradient_slots(buckets))) staging += n;
    std::int64_t widest_frozen = 0;  // (their gradients' scratch)
    for (const Range& r : model.store().frozen_ranges()) widest_frozen = std::max(widest_frozen, r.size());
    staging += widest_frozen;
    const double owned = static_cast<double>(total(ParamStore::owned(buckets, dp, dp - 1))) * 4;
    e.gradient_note = " (1/" + d + " kept: " + f1(owned / kMiB) + " MiB, and staging buffers " +
                      f1(static_cast<double>(staging) * 4 / kMiB) + " MiB; " + f1(e.gradients / kMiB) +
                      " MiB unsharded)";
    e.gradients = owned + static_cast<double>(staging) * 4;
    if (packed_parameters(cfg, dp)) {  // (ParamStore::stage_parameters: the same share, windows as the staging)
      const double windows = static_cast<double>(staging - widest_frozen) * 4;
      e.parameter_note =
          " (1/" + d + " kept: " + f1(owned / kMiB) + " MiB, and gather windows " + f1(windows / kMiB) + " MiB)";
      e.parameters = owned + windows;
    }
  }
  // (packed parameters: no 16-bit copy)
  if (cfg.precision.dtype != Precision::fp32 && !packed_parameters(cfg, dp)) e.copy16 = static_cast<double>(params) * 2;
}

// Bytes the host can still give: /proc/meminfo's MemAvailable (0 where it cannot be read).
double host_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

}  // namespace

MemoryEstimate estimate_memory(const Config& cfg, const Runtime& rt, const Model& model, bool whole_model, int stage) {
  MemoryEstimate e;
  estimate_buffers(cfg, rt, model, whole_model, e);
  const int pp = rt.mesh().size(MeshDim::pp);
  e.activations = !(whole_model && pp > 1);
  if (!e.activations) return e;
  const std::int64_t rows = rt.per_rank_batch() / cfg.train.micro_batches;
  const Device device = rt.device().kind == DeviceKind::cuda ? Device::cuda : Device::cpu;
  e.act = model.activation_memory(rows, cfg.precision.dtype, device, cfg.train.recompute != Recompute::none);
  // (a pipeline stage holds the micro-batches its schedule runs forward before their backward)
  const int s = stage < 0 ? rt.mesh().coord(MeshDim::pp) : stage;
  e.sets = pp > 1 ? pipeline_sets(cfg.parallel.pipeline_schedule, s, pp, cfg.train.micro_batches) : 1;
  if (pp > 1) {  // (parallel/pipeline.cpp receive: float32 buffers from the model's allocator)
    const auto r = static_cast<double>(rows);
    if (s > 0) e.received += 4 * r * static_cast<double>(numel(model.input_sample())) * e.sets;
    if (s + 1 < pp) e.received += 4 * r * static_cast<double>(numel(model.output_shape()));
  }
  if (device == Device::cuda) {  // (StagedBatch: the step's samples, labels and indices on the GPU)
    const double sample = static_cast<double>(numel(model.input_sample()));
    e.batch = static_cast<double>(rt.per_rank_batch()) * (4 * sample + 16);
  }
  return e;
}

std::string describe_memory(const Config& cfg, const Runtime& rt, const Model& model) {
  const MemoryEstimate e = estimate_memory(cfg, rt, model, true);
  std::ostringstream os;
  os << "\nMemory per rank (model buffers of the largest stage, " << e.parameter_count << " parameters): parameters "
     << f1(e.parameters / kMiB) << " MiB" << e.parameter_note << ", gradients " << f1(e.gradients / kMiB) << " MiB"
     << e.gradient_note << (e.copy16 > 0 ? ", reduced-precision copy (half the parameters')" : "")
     << ", optimizer state " << f1(e.state / kMiB) << " MiB" << e.state_note << "\n";
  if (!e.activations) return os.str() + "Activations: per stage, below\n";
  const std::int64_t rows = rt.per_rank_batch() / cfg.train.micro_batches;
  const std::string batch =
      std::to_string(rows) +
      (cfg.model.block_size > 0 ? " windows of " + std::to_string(cfg.model.block_size) + " tokens" : " samples");
  const double kept = e.act.kept(), peak = e.peak_without_scratch();
  char line[900];
  std::snprintf(line, sizeof(line),
                "Activations per rank: %.1f MiB (%.0f bytes) for a micro-batch of %s: the layers' outputs %.1f MiB, "
                "what they keep for backward %.1f MiB\n"
                "Peak per rank: about %.1f MiB (%.0f bytes): the model buffers %.1f MiB, the activations %.1f MiB "
                "and their float32 gradients between layers %.1f MiB\n"
                "Estimate per rank in all: %.1f MiB (%.0f bytes), with the deepest layer call's scratch %.1f MiB and "
                "the batch on the GPU %.1f MiB ([run] check_memory compares it with the free memory at start-up)\n",
                kept / kMiB, kept, batch.c_str(), e.act.outputs / kMiB, e.act.saved / kMiB, peak / kMiB, peak,
                e.buffers() / kMiB, kept / kMiB, e.act.gradients / kMiB, e.total() / kMiB, e.total(),
                e.act.scratch / kMiB, e.batch / kMiB);
  return os.str() + line;
}

std::string describe_stage_memory(const Config& cfg, const Runtime& rt,
                                  const std::vector<std::unique_ptr<Model>>& stages) {
  Table t({"stage", "model buffers", "activations", "gradients between layers", "received", "scratch", "in all"});
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const MemoryEstimate e = estimate_memory(cfg, rt, *stages[s], false, static_cast<int>(s));
    t.add_row(
        {std::to_string(s), f1(e.buffers() / kMiB) + " MiB",
         f1(e.sets * e.act.kept() / kMiB) + " MiB (" + std::to_string(e.sets) + " x " + f1(e.act.kept() / kMiB) + ")",
         f1(e.act.gradients / kMiB) + " MiB", f1(e.received / kMiB) + " MiB", f1(e.act.scratch / kMiB) + " MiB",
         f1(e.total() / kMiB) + " MiB"});
  }
  const std::int64_t rows = rt.per_rank_batch() / cfg.train.micro_batches;
  return "Memory per rank of each stage ([run] check_memory's estimate at start-up; activations: the "
         "micro-batches a stage holds at once x one micro-batch of " +
         std::to_string(rows) +
         " samples; received: the inputs a later stage keeps for backward and the gradient "
         "an earlier one receives):\n" +
         t.render();
}

std::string memory_refusal(const MemoryEstimate& e, double held, const Config& cfg, const Runtime& rt) {
  if (!cfg.run.check_memory) return "";
  const bool gpu = rt.device().kind == DeviceKind::cuda;
  // (CPU: every rank of the host needs about as much; a shared GPU likewise)
  const int sharing = gpu && !rt.device().shared ? 1 : rt.rank_info().local_size;
  const double need = (e.total() - held) * sharing;
  const double free = gpu ? static_cast<double>(cuda::free_device_memory()) : host_available_bytes();
  if (free <= 0 || need <= free) return "";
  const std::string ranks = sharing > 1 ? " by the " + std::to_string(sharing) + " ranks there" : "";
  const std::string where = gpu ? "free on " + rt.device().description : "available on host " + rt.rank_info().host;
  return "[run] check_memory: the estimate per rank is " + f1(e.total() / kMiB) + " MiB (model buffers " +
         f1(e.buffers() / kMiB) + (e.inference ? ", activations " : ", activations and their gradients ") +
         f1((e.sets * e.act.kept() + e.act.gradients + e.received) / kMiB) + ", scratch " + f1(e.act.scratch / kMiB) +
         (e.act.cache > 0 ? ", --generate's key/value caches " + f1(e.act.cache / kMiB) : "") + "); " +
         f1(need / kMiB) + " MiB still to allocate" + ranks + ", but " + f1(free / kMiB) + " MiB is " + where +
         (e.generation
              ? ": use fewer --tokens or a shorter prompt (the key/value caches hold the prompt and the tokens "
                "drawn, at most [model] block_size; without them every forward does), fewer --samples or a smaller "
                "[train] micro_batch (the samples run at once), or "
          : e.inference
              ? ": use a smaller [model] block_size (the positions each forward holds), a smaller [train] "
                "micro_batch (the rows run at once), or "
              : ": use a smaller [train] micro_batch, [train] recompute = blocks, [train] loss_chunk (a language "
                "model's logits), [parallel] shard = gradients or full, or ") +
         "more ranks with pipeline_parallel (--dry-run shows the estimate; check_memory = false starts anyway)";
}

}  // namespace hpctrain
