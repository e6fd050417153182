// What the run report measures and writes besides its formats: TensorBoard's event records
// (io/event_file.hpp), the CPU packages' energy through RAPL (core/process_stats.hpp) against a
// fake powercap tree, and the GPU telemetry (core/gpu_telemetry.hpp) against a fake NVML.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "hpctrain/core/gpu_telemetry.hpp"
#include "hpctrain/core/process_stats.hpp"
#include "hpctrain/io/event_file.hpp"
#include "hpctrain/train/run_report.hpp"

using namespace hpctrain;
namespace fs = std::filesystem;

TEST(EventFile, Crc32cAndTensorFlowsMask) {
  const std::string check = "123456789";  // the CRC-32C check value (RFC 3720 / iSCSI)
  EXPECT_EQ(crc32c(check.data(), check.size()), 0xE3069283u);
  const std::uint32_t c = 0xE3069283u;
  EXPECT_EQ(masked_crc32c(check.data(), check.size()), ((c >> 15) | (c << 17)) + 0xa282ead8u);
}

TEST(EventFile, RecordsAreFramedAndWrittenAtFlush) {
  const std::string dir = ::testing::TempDir() + "hpct_events_" + std::to_string(::getpid());
  std::string path;
  std::uintmax_t after_open = 0;
  {
    EventFileWriter w(dir);
    path = w.path();
    EXPECT_NE(path.find("/events.out.tfevents."), std::string::npos);
    after_open = std::filesystem::file_size(path);  // the file_version event, flushed at once
    w.scalar("train/loss", 10, 0.5);
    EXPECT_EQ(std::filesystem::file_size(path), after_open);  // buffered
    w.flush();
  }
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t at = 0, records = 0;
  while (at + 12 <= bytes.size()) {  // length, masked CRC of it, data, masked CRC of the data
    std::uint64_t len = 0;
    std::uint32_t len_crc = 0, data_crc = 0;
    std::memcpy(&len, bytes.data() + at, 8);
    std::memcpy(&len_crc, bytes.data() + at + 8, 4);
    ASSERT_EQ(len_crc, masked_crc32c(bytes.data() + at, 8));
    ASSERT_LE(at + 16 + len, bytes.size());
    std::memcpy(&data_crc, bytes.data() + at + 12 + len, 4);
    EXPECT_EQ(data_crc, masked_crc32c(bytes.data() + at + 12, len));
    at += 16 + len;
    ++records;
  }
  EXPECT_EQ(at, bytes.size());
  EXPECT_EQ(records, 2u);
  EXPECT_NE(bytes.find("brain.Event:2"), std::string::npos);
  EXPECT_NE(bytes.find("train/loss"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(PackageEnergy, SumsPackagesAcrossWrapAroundAndIsAbsentWithoutRapl) {
  const fs::path root = fs::path(::testing::TempDir()) / ("hpct_rapl_" + std::to_string(::getpid()));
  fs::remove_all(root);
  auto put = [&](const std::string& domain, const std::string& file, long long v) {
    fs::create_directories(root / domain);
    std::ofstream(root / domain / file) << v << "\n";
  };
  EXPECT_FALSE(PackageEnergy(root.string()).available());  // no such tree: nothing, no error
  put("intel-rapl:0", "energy_uj", 1000000);
  put("intel-rapl:0", "max_energy_range_uj", 10000000);
  put("intel-rapl:1", "energy_uj", 500000);
  put("intel-rapl:1", "max_energy_range_uj", 10000000);
  put("intel-rapl:0:0", "energy_uj", 123);  // a sub-domain (cores): inside package 0, not added
  put("intel-rapl:0:0", "max_energy_range_uj", 10000000);
  PackageEnergy e(root.string());
  ASSERT_TRUE(e.available());
  put("intel-rapl:0", "energy_uj", 3000000);  // +2 J
  put("intel-rapl:1", "energy_uj", 1500000);  // +1 J
  put("intel-rapl:0:0", "energy_uj", 9999999);
  EXPECT_DOUBLE_EQ(e.joules_since_last(), 3.0);
  put("intel-rapl:0", "energy_uj", 1000000);  // wrapped: 3 -> 10 -> 1 J, +8 J
  EXPECT_DOUBLE_EQ(e.joules_since_last(), 8.0);
  fs::remove_all(root);
}

namespace {
// Runs `write` in a child process whose files may not grow past `bytes` (RLIMIT_FSIZE, SIGXFSZ
// ignored: writes fail with EFBIG as on a full disk), its stderr into `err` (if given) and its
// stdout to /dev/null: the child's exit code (3: `write` threw), or -1 when a signal ended it.
int with_file_limit(long bytes, const std::string& err, const std::function<int()>& write) {
  const pid_t child = ::fork();
  if (child < 0) return -2;
  if (child == 0) {
    std::freopen("/dev/null", "w", stdout);
    if (!err.empty()) std::freopen(err.c_str(), "w", stderr);
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{static_cast<rlim_t>(bytes), static_cast<rlim_t>(bytes)};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    int code = 0;
    try {
      code = write();
    } catch (...) {
      code = 3;
    }
    std::_Exit(code);
  }
  int status = 0;
  if (::waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}
}  // namespace

TEST(EventFile, AFailedWriteWarnsOnceAndTrainingGoesOn) {
  // A child process whose files may not grow past 4 KiB (RLIMIT_FSIZE, SIGXFSZ ignored: writes
  // fail with EFBIG as on a full disk) writes 1,000 scalars: no exception, a normal exit.
  const std::string dir = ::testing::TempDir() + "hpct_events_full_" + std::to_string(::getpid());
  const int code = with_file_limit(4096, "", [&] {
    EventFileWriter w(dir);
    for (int i = 0; i < 1000; ++i) {
      w.scalar("train/loss", i, 1.0 / (i + 1));
      if (i % 10 == 9) w.flush();
    }
    return 0;
  });
  EXPECT_EQ(code, 0) << "3: the failed write threw; -1: a signal ended the writer";
  std::uintmax_t bytes = 0;
  for (const auto& e : fs::directory_iterator(dir)) bytes += fs::file_size(e.path());
  EXPECT_LE(bytes, 4096u);
  fs::remove_all(dir);
}

// The metrics CSV on a disk that fills during the run: one warning, the run goes on, no exception
// (it stopped writing rows in silence). And a file that cannot take the header at the start is
// open()'s error, which stops the run before its first step.
TEST(RunReport, AMetricsFileThatStopsTakingRowsWarnsOnce) {
  const std::string dir = ::testing::TempDir() + "hpct_metrics_full_" + std::to_string(::getpid());
  const std::string err = dir + ".stderr";
  const int code = with_file_limit(8192, err, [&] {  // (the header fits; some hundred rows do not)
    RunReport r(dir, "metrics.csv", true);
    if (!r.open(0).empty()) return 4;
    IntervalFigures f;
    for (int i = 0; i < 1000; ++i) {
      f.step = i + 1;
      r.interval(f);
    }
    return 0;
  });
  EXPECT_EQ(code, 0) << "3: the failed write threw; 4: the header did not fit; -1: a signal ended the writer";
  std::ifstream in(err);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t warnings = 0;
  for (std::size_t at = text.find("cannot write the metrics file"); at != std::string::npos;
       at = text.find("cannot write the metrics file", at + 1))
    ++warnings;
  EXPECT_EQ(warnings, 1u) << text;
  EXPECT_LE(fs::file_size(dir + "/metrics.csv"), 8192u);
  RunReport full(dir, "/dev/full", true);
  EXPECT_EQ(full.open(0), "[log] metrics_file: cannot write /dev/full (disk full?)");
  fs::remove_all(dir);
  fs::remove(err);
}

// ---- GPU telemetry against the fake NVML (tests/unit/fake_nvml.cpp, path in HPCTRAIN_FAKE_NVML) ----

TEST(GpuTelemetry, ReadsTheGpuAtItsPciBusIdThroughTheLoadedLibrary) {
  GpuTelemetry t("00000000:0B:00.0", HPCTRAIN_FAKE_NVML);  // the fake's GPU 1
  ASSERT_TRUE(t.available()) << t.why_not();
  EXPECT_STREQ(t.energy_source(), "counter");
  const auto s = t.sample(1.0);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->util_pct, 60.0);
  EXPECT_EQ(s->mem_used_mib, 2048.0);
  EXPECT_EQ(s->mem_total_mib, 81920.0);
  EXPECT_EQ(s->power_w, 150.0);
  EXPECT_EQ(s->temp_c, 41.0);
  EXPECT_EQ(s->energy_j, 2.0);              // the counter advanced 2,000 mJ since the reading at construction
  EXPECT_EQ(t.sample(1.0)->energy_j, 4.0);  // since construction, not since the last sample
}

TEST(GpuTelemetry, SumsPowerOverTimeWhereTheEnergyCounterIsMissing) {
  GpuTelemetry t("00000000:0C:00.0", HPCTRAIN_FAKE_NVML);  // GPU 2: 200 W, no counter
  ASSERT_TRUE(t.available()) << t.why_not();
  EXPECT_STREQ(t.energy_source(), "power");
  EXPECT_EQ(t.sample(0.5)->energy_j, 100.0);
  EXPECT_EQ(t.sample(1.0)->energy_j, 300.0);
}

TEST(GpuTelemetry, AFigureTheGpuDoesNotReportIsEmpty) {
  GpuTelemetry t("00000000:0D:00.0", HPCTRAIN_FAKE_NVML);  // GPU 3: no power reading
  const auto s = t.sample(1.0);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->power_w);
  EXPECT_EQ(s->util_pct, 80.0);
  EXPECT_EQ(s->energy_j, 4.0);
}

TEST(GpuTelemetry, IsUnavailableWithAReasonAndNothingFails) {
  auto why = [](const std::string& bus, const std::string& lib) {
    GpuTelemetry t(bus, lib);
    EXPECT_FALSE(t.available());
    EXPECT_FALSE(t.sample(1.0));
    return t.why_not();
  };
  EXPECT_EQ(why("", HPCTRAIN_FAKE_NVML), "no GPU on this rank");
  EXPECT_NE(why("00000000:0A:00.0", "libhpctrain-no-such-nvml.so.1").find("cannot load libhpctrain-no-such-nvml.so.1"),
            std::string::npos);
  EXPECT_EQ(why("00000000:0A:00.0", "libz.so.1"), "libz.so.1 has no nvmlInit_v2");  // not NVML
  EXPECT_EQ(why("00000000:99:00.0", HPCTRAIN_FAKE_NVML),
            "NVML finds no GPU with PCI bus id 00000000:99:00.0: Not Found");
}

// The GPU figures in the progress line, the CSV, summary.json and the energy line: left out,
// empty and null without them.
TEST(RunReport, GpuFiguresAreShownWhenPresentAndNotApplicableOtherwise) {
  IntervalFigures f;
  f.step = 10;
  EXPECT_EQ(RunReport::progress_line(f).find("gpu"), std::string::npos) << RunReport::progress_line(f);
  const std::string header = RunReport::csv_header();
  EXPECT_NE(header.find(",gpu_util_pct_min,gpu_util_pct_mean,gpu_util_pct_max,gpu_mem_used_mib_min,"),
            std::string::npos);
  EXPECT_EQ(header.substr(header.size() - 70),
            "gpu_energy_j_max,model_flops_per_s,mfu_pct,eval_mae,eval_bits_per_byte");
  const std::string empty = RunReport::csv_row(f);
  // the 16 GPU columns, 2 FLOP ones, the evaluation's MAE and bits per byte: empty
  EXPECT_EQ(empty.substr(empty.size() - 20), std::string(20, ','));
  f.gpu_util_pct = Spread{50, 65, 80};
  f.gpu_mem_total_mib = 81920;
  f.gpu_energy_j = Spread{1, 2.5, 4};
  EXPECT_NE(RunReport::progress_line(f).find("| gpu 50-80% |"), std::string::npos) << RunReport::progress_line(f);
  const std::string row = RunReport::csv_row(f);
  EXPECT_NE(row.find(",50,65,80,,,,81920,"), std::string::npos) << row;
  EXPECT_EQ(row.substr(row.size() - 12), ",1,2.5,4,,,,");  // (then model FLOP/s, MFU, MAE and bpb: none)
  RunSummary s;
  EXPECT_NE(RunReport::summary_json(s).find("\"gpu_hours\": null,\n  \"gpu_energy_kwh\": null,\n"), std::string::npos);
  s.gpu_hours = 2.0;
  s.gpu_energy_kwh = 0.5;
  s.rank_hours = 4.0;  // four ranks sharing two GPUs: the price is per GPU-hour
  s.price_per_device_hour = 3.0;
  EXPECT_NE(RunReport::summary_json(s).find("\"gpu_hours\": 2,\n  \"gpu_energy_kwh\": 0.5,\n"), std::string::npos);
  EXPECT_EQ(s.cost(), 6.0);
  EXPECT_EQ(RunReport::energy_line(s), "energy: GPUs 0.500000 kWh over 2.000000 GPU-hours; CPU packages n/a");
  s.gpu_hours = 123456789.25;  // every digit kept (not the first 8 characters, "12345678")
  EXPECT_EQ(RunReport::energy_line(s), "energy: GPUs 0.500000 kWh over 123456789.250000 GPU-hours; CPU packages n/a");
}
