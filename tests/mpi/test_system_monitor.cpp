// The system figures gathered over the ranks (train/system_monitor.hpp) at 1-4 ranks, with the
// GPU telemetry read from the fake NVML (tests/unit/fake_nvml.cpp): rank r reads fake GPU r
// (utilization 50 + 10 r %, power 100 + 50 r W except GPU 3, energy counter +(r + 1) J per
// reading except GPU 2, which has only power), then the run report's lines made from them.
#include <gtest/gtest.h>

#include <chrono>

#include <string>

#include "hpctrain/runtime/runtime.hpp"
#include "hpctrain/train/system_monitor.hpp"

#include "mpi_test_util.hpp"

using namespace hpctrain;

namespace {
std::string fake_bus(int gpu) {
  char bus[32];
  std::snprintf(bus, sizeof(bus), "00000000:%02X:00.0", 0x0A + gpu);
  return bus;
}
SystemMonitorOptions fake_gpu(int gpu) {
  SystemMonitorOptions o;
  o.gpu_pci_bus_id = fake_bus(gpu);
  o.first_on_gpu = true;
  o.nvml_library = HPCTRAIN_FAKE_NVML;
  return o;
}
}  // namespace

TEST(OverRanks, LeastMeanAndMostOverTheRanksThatHaveTheFigure) {
  auto comm = host_communicator(MPI_COMM_WORLD, "test");
  const int r = world_rank(), n = world_size();
  const auto all = over_ranks(*comm, {double(r), r % 2 ? std::optional<double>(10.0 * r) : std::nullopt, std::nullopt});
  ASSERT_TRUE(all[0]);
  EXPECT_EQ(all[0]->min, 0);
  EXPECT_EQ(all[0]->max, n - 1);
  EXPECT_EQ(all[0]->ranks, n);
  EXPECT_DOUBLE_EQ(all[0]->mean(), (n - 1) / 2.0);
  if (n == 1) {
    EXPECT_FALSE(all[1]);  // no odd rank: no figure
  } else {
    ASSERT_TRUE(all[1]);
    EXPECT_EQ(all[1]->min, 10);
    EXPECT_EQ(all[1]->max, n == 4 ? 30 : 10);
    EXPECT_EQ(all[1]->ranks, n / 2);
  }
  EXPECT_FALSE(all[2]);
}

TEST(SystemMonitor, GathersEveryRanksGpuFiguresAndTheRunsEnergy) {
  auto comm = host_communicator(MPI_COMM_WORLD, "test");
  const int r = world_rank(), n = world_size();
  const auto started = std::chrono::steady_clock::now();
  SystemMonitor m(*comm, fake_gpu(r));
  const std::string line = m.describe();
  EXPECT_EQ(line, "GPU telemetry (NVML): " + std::to_string(n) + " of " + std::to_string(n) +
                      " rank(s) with a GPU, energy from " +
                      (n < 3 ? "the boards' energy counters" : "energy counters and power x time"));  // GPU 2: power
  IntervalFigures f;
  m.interval(f, 1.0);
  ASSERT_TRUE(f.gpu_util_pct);
  EXPECT_EQ(f.gpu_util_pct->min, 50);
  EXPECT_EQ(f.gpu_util_pct->max, 50 + 10 * (n - 1));
  EXPECT_DOUBLE_EQ(f.gpu_util_pct->mean, 50 + 5.0 * (n - 1));
  EXPECT_EQ(f.gpu_mem_total_mib, 81920);
  EXPECT_EQ(f.gpu_mem_used_mib->max, 1024.0 * n);
  EXPECT_EQ(f.gpu_temp_c->max, 40 + n - 1);
  const int powered = n == 4 ? 3 : n;  // GPU 3 reports no power: the mean is over the others
  EXPECT_DOUBLE_EQ(f.gpu_power_w->mean, 100 + 25.0 * (powered - 1));
  EXPECT_EQ(f.gpu_power_w->max, 100 + 50 * (powered - 1));
  if (n <= 2) {  // GPU r: +(r + 1) J per reading since the start
    EXPECT_EQ(f.gpu_energy_j->min, 1);
    EXPECT_EQ(f.gpu_energy_j->max, n);
  } else {  // GPU 2: 200 W over the time since its monitor started (however long a loaded machine took)
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    comm->allreduce(&elapsed, &elapsed, 1, DType::f64, ReduceOp::max);
    const double others = n == 3 ? 1 + 2 : 1 + 2 + 4, e2 = f.gpu_energy_j->mean * n - others;
    EXPECT_GT(e2, 0);
    EXPECT_LE(e2, 200 * elapsed + 1e-6);
    EXPECT_NEAR(f.gpu_energy_j->min, std::min(1.0, e2), 1e-9);  // (e2 from the mean: rounding)
    EXPECT_NEAR(f.gpu_energy_j->max, std::max(n == 3 ? 2.0 : 4.0, e2), 1e-9);
  }
  const std::string progress = RunReport::progress_line(f);
  EXPECT_NE(progress.find("| gpu 50-" + std::to_string(50 + 10 * (n - 1)) + "% |"), std::string::npos) << progress;

  RunSummary s;
  m.finish(s, 1800.0);  // half an hour on n GPUs
  ASSERT_TRUE(s.gpu_hours);
  EXPECT_DOUBLE_EQ(*s.gpu_hours, 0.5 * n);
  ASSERT_TRUE(s.gpu_energy_kwh);  // every GPU reported energy (GPU 2 from its power)
  if (n <= 2) {                   // the second readings (GPU 2's energy depends on the time)
    EXPECT_DOUBLE_EQ(*s.gpu_energy_kwh * 3.6e6, n == 1 ? 2 : 2 + 4);
  }
}

TEST(SystemMonitor, RanksWithoutAGpuOrWithoutNvmlAreLeftOutAndNothingFails) {
  auto comm = host_communicator(MPI_COMM_WORLD, "test");
  const int r = world_rank(), n = world_size();
  // Rank 1 computes on the CPU; rank 0's NVML cannot be loaded; the others read their fake GPU.
  SystemMonitorOptions o = fake_gpu(r);
  if (r == 1) o.gpu_pci_bus_id = "";
  if (r == 0) o.nvml_library = "libhpctrain-no-such-nvml.so.1";
  SystemMonitor m(*comm, o);
  const std::string line = m.describe();
  const int with_gpu = n == 1 ? 1 : n - 1, read = with_gpu - 1;
  EXPECT_EQ(line.rfind("GPU telemetry (NVML): " + std::to_string(read) + " of " + std::to_string(with_gpu) +
                           " rank(s) with a GPU",
                       0),
            0u)
      << line;
  if (r == 0) {  // (the line rank 0 logs names its own reason)
    EXPECT_NE(line.find("the others show n/a (rank 0: cannot load libhpctrain-no-such-nvml.so.1"), std::string::npos)
        << line;
  }
  IntervalFigures f;
  m.interval(f, 1.0);
  if (read == 0) {
    EXPECT_FALSE(f.gpu_util_pct);
    EXPECT_EQ(RunReport::progress_line(f).find("gpu"), std::string::npos);
  } else {
    ASSERT_TRUE(f.gpu_util_pct);
    EXPECT_EQ(f.gpu_util_pct->min, 70);  // GPU 2 is the first that is read
  }
  RunSummary s;
  m.finish(s, 3600.0);
  EXPECT_DOUBLE_EQ(s.gpu_hours.value_or(-1), with_gpu);  // GPU-hours count every GPU ...
  EXPECT_FALSE(s.gpu_energy_kwh);                        // ... energy is all GPUs' or none
  EXPECT_NE(RunReport::summary_json(s).find("\"gpu_energy_kwh\": null"), std::string::npos);
}

TEST(SystemMonitor, ACpuRunHasNoGpuFigures) {
  auto comm = host_communicator(MPI_COMM_WORLD, "test");
  SystemMonitorOptions o;
  o.nvml_library = HPCTRAIN_FAKE_NVML;  // even with an NVML at hand
  SystemMonitor m(*comm, o);
  EXPECT_EQ(m.describe(), "");
  IntervalFigures f;
  m.interval(f, 1.0);
  EXPECT_FALSE(f.gpu_util_pct || f.gpu_mem_used_mib || f.gpu_power_w || f.gpu_temp_c || f.gpu_energy_j ||
               f.gpu_mem_total_mib);
  EXPECT_GT(f.rss_mib, 0);
  RunSummary s;
  m.finish(s, 3600.0);
  EXPECT_FALSE(s.gpu_hours);
  EXPECT_FALSE(s.gpu_energy_kwh);
  const std::string js = RunReport::summary_json(s);
  EXPECT_NE(js.find("\"gpu_hours\": null,\n  \"gpu_energy_kwh\": null"), std::string::npos) << js;
}
