// [kernels] cuda_graphs: which configurations a recorded step can replay, and dropping what was
// recorded (train/trainer.hpp). Recording and replaying: parallel/step_executor.cpp.
#include <regex>

#include "hpctrain/train/trainer.hpp"

namespace hpctrain {

std::string cuda_graphs_refusal(const Config& cfg, DeviceKind device, int dp_size) {
  if (!cfg.kernels.cuda_graphs) return "";
  if (device != DeviceKind::cuda) return "[kernels] cuda_graphs = true needs device = cuda";
  if (cfg.parallel.pipeline_parallel > 1)
    return "[kernels] cuda_graphs = true needs [parallel] pipeline_parallel = 1 (pipeline stages exchange activations "
           "through the host)";
  static const std::regex batchnorm(R"((^|[\s(])batchnorm\b)");
  if (dp_size > 1 && cfg.train.sync_batchnorm && std::regex_search(cfg.model.layers, batchnorm))
    return "[kernels] cuda_graphs = true cannot replay synchronized batch norm (its statistics from the " +
           std::to_string(dp_size) +
           " data-parallel ranks go through the host every step); set [train] sync_batchnorm = false or "
           "cuda_graphs = false";
  return "";
}

void Trainer::drop_recordings() {
  executor_->invalidate();
  update_graph_.reset();
}

}  // namespace hpctrain
