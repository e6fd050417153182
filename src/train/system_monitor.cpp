// The system figures of a run, gathered over all ranks (train/system_monitor.hpp).
#include "hpctrain/train/system_monitor.hpp"

#include <chrono>
#include <limits>

namespace hpctrain {

namespace {
double seconds_since(std::chrono::steady_clock::time_point& mark) {
  const auto now = std::chrono::steady_clock::now();
  const double s = std::chrono::duration<double>(now - mark).count();
  mark = now;
  return s;
}
std::optional<Spread> spread(const std::optional<OverRanks>& x) {
  return x ? std::optional<Spread>(x->spread()) : std::nullopt;
}
}  // namespace

std::vector<std::optional<OverRanks>> over_ranks(Communicator& comm, const std::vector<std::optional<double>>& mine) {
  const std::size_t n = mine.size();
  constexpr double inf = std::numeric_limits<double>::infinity();
  std::vector<double> sums(2 * n, 0), lo(n, inf), hi(n, -inf);  // sums: the values, then the counts
  for (std::size_t i = 0; i < n; ++i)
    if (mine[i]) {
      sums[i] = lo[i] = hi[i] = *mine[i];
      sums[n + i] = 1;
    }
  comm.allreduce(sums.data(), sums.data(), 2 * n, DType::f64, ReduceOp::sum);
  comm.allreduce(lo.data(), lo.data(), n, DType::f64, ReduceOp::min);
  comm.allreduce(hi.data(), hi.data(), n, DType::f64, ReduceOp::max);
  std::vector<std::optional<OverRanks>> out(n);
  for (std::size_t i = 0; i < n; ++i)
    if (sums[n + i] > 0) out[i] = OverRanks{lo[i], hi[i], sums[i], static_cast<int>(sums[n + i])};
  return out;
}

SystemMonitor::SystemMonitor(Communicator& world, const SystemMonitorOptions& o)
    : world_(world), o_(o), gpu_(o.gpu_pci_bus_id, o.nvml_library) {
  if (o.reads_packages) packages_ = std::make_unique<PackageEnergy>(o.powercap_root);
  cpu_mark_ = process_cpu_seconds();
  last_sample_ = std::chrono::steady_clock::now();
}

std::string SystemMonitor::describe() {
  const bool has_gpu = !o_.gpu_pci_bus_id.empty(), read = gpu_.available();
  const auto n =
      over_ranks(world_, {has_gpu ? std::optional<double>(read) : std::nullopt,
                          read ? std::optional<double>(gpu_.energy_source() == std::string("counter")) : std::nullopt});
  if (!n[0]) return "";  // no rank has a GPU
  const int reading = static_cast<int>(n[0]->sum), ranks = n[0]->ranks;
  std::string line =
      "GPU telemetry (NVML): " + std::to_string(reading) + " of " + std::to_string(ranks) + " rank(s) with a GPU";
  if (n[1])
    line += std::string(", energy from ") + (n[1]->min > 0   ? "the boards' energy counters"
                                             : n[1]->max > 0 ? "energy counters and power x time"
                                                             : "power x time (no energy counter)");
  if (reading < ranks)  // (the line is rank 0's: its own reason, if it is one of them)
    line += "; the others show n/a" +
            (has_gpu && !read ? " (rank " + std::to_string(world_.rank()) + ": " + gpu_.why_not() + ")" : "");
  return line;
}

void SystemMonitor::interval(IntervalFigures& f, double dt) {
  const double cpu = process_cpu_seconds();
  const bool rapl = packages_ && packages_->available();
  const std::optional<GpuSample> g = gpu_.sample(seconds_since(last_sample_));
  const GpuSample none;
  const GpuSample& s = g ? *g : none;
  const auto all = over_ranks(world_, {100 * (cpu - cpu_mark_) / dt, resident_bytes() / (1 << 20),
                                       rapl ? std::optional<double>(packages_->joules_since_last()) : std::nullopt,
                                       s.util_pct, s.mem_used_mib, s.mem_total_mib, s.power_w, s.temp_c, s.energy_j});
  cpu_mark_ = cpu;
  f.cpu_busy_pct = all[0]->mean();
  f.rss_mib = all[1]->max;
  if (all[2]) {
    f.cpu_energy_j = all[2]->sum;
    package_j_ = package_j_.value_or(0) + all[2]->sum;
  }
  f.gpu_util_pct = spread(all[3]);
  f.gpu_mem_used_mib = spread(all[4]);
  if (all[5]) f.gpu_mem_total_mib = all[5]->min;
  f.gpu_power_w = spread(all[6]);
  f.gpu_temp_c = spread(all[7]);
  f.gpu_energy_j = spread(all[8]);
}

void SystemMonitor::finish(RunSummary& s, double wall_s) {
  const bool rapl = packages_ && packages_->available();
  const bool counts = !o_.gpu_pci_bus_id.empty() && o_.first_on_gpu;  // each GPU once
  const std::optional<GpuSample> g = gpu_.sample(seconds_since(last_sample_));
  const auto all =
      over_ranks(world_, {rapl ? std::optional<double>(packages_->joules_since_last()) : std::nullopt,
                          counts ? std::optional<double>(1) : std::nullopt, counts && g ? g->energy_j : std::nullopt});
  if (all[0]) s.cpu_energy_kwh = (package_j_.value_or(0) + all[0]->sum) / 3.6e6;
  if (all[1]) s.gpu_hours = all[1]->sum * wall_s / 3600.0;
  if (all[1] && all[2] && all[2]->ranks == all[1]->ranks) s.gpu_energy_kwh = all[2]->sum / 3.6e6;  // every GPU's
}

}  // namespace hpctrain
