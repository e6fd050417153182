// What a run measures of its processes and devices at each log interval, gathered over all
// ranks: CPU time against wall time, resident memory, the CPU packages' energy (RAPL) and the
// GPUs' telemetry (NVML: utilization, memory, power, temperature, energy). The run report
// writes what it gathers (IntervalFigures, RunSummary); what a machine does not expose is
// absent, and nothing fails for it.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hpctrain/comm/communicator.hpp"
#include "hpctrain/core/gpu_telemetry.hpp"
#include "hpctrain/core/process_stats.hpp"
#include "hpctrain/train/run_report.hpp"

namespace hpctrain {

// A per-rank figure over the ranks that have it.
struct OverRanks {
  double min = 0, max = 0, sum = 0;
  int ranks = 0;
  double mean() const { return sum / ranks; }
  Spread spread() const { return {min, mean(), max}; }
};
// Collective over `comm`: each of the figures in `mine` (the same count on every rank; empty
// where this rank has none) over the ranks that have it; empty where no rank has it.
std::vector<std::optional<OverRanks>> over_ranks(Communicator& comm, const std::vector<std::optional<double>>& mine);

struct SystemMonitorOptions {
  std::string gpu_pci_bus_id;   // the rank's GPU ("" when it computes on the CPU)
  bool first_on_gpu = false;    // this rank counts its GPU's energy and hours (the first rank on it)
  bool reads_packages = false;  // this rank reads its node's CPU package energy (one rank per node)
  std::string nvml_library = GpuTelemetry::kDefaultLibrary;
  std::string powercap_root = "/sys/class/powercap";
};

class SystemMonitor {
 public:
  // Starts the clocks of the first interval (CPU time, energy counters). Not collective.
  SystemMonitor(Communicator& world, const SystemMonitorOptions& o);
  // Collective: a line for the log saying where the GPU figures come from, or why there are none.
  std::string describe();
  // Collective: the system figures of the `dt` seconds since the previous interval.
  void interval(IntervalFigures& f, double dt);
  // Collective: the run's energy (read now, so the time after the last interval counts) and its
  // GPU-hours over `wall_s` seconds.
  void finish(RunSummary& s, double wall_s);

 private:
  Communicator& world_;
  SystemMonitorOptions o_;
  GpuTelemetry gpu_;
  std::unique_ptr<PackageEnergy> packages_;
  double cpu_mark_ = 0;
  std::chrono::steady_clock::time_point last_sample_;  // the GPU's (for energy summed from power)
  std::optional<double> package_j_;                    // summed over the intervals, all nodes; none without RAPL
};

}  // namespace hpctrain
