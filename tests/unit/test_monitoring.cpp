// What the run report measures and writes besides its formats: TensorBoard's event records
// (io/event_file.hpp) and the CPU packages' energy through RAPL (core/process_stats.hpp),
// against a fake powercap tree.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "hpctrain/core/process_stats.hpp"
#include "hpctrain/io/event_file.hpp"

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

TEST(EventFile, AFailedWriteWarnsOnceAndTrainingGoesOn) {
  // A child process whose files may not grow past 4 KiB (RLIMIT_FSIZE, SIGXFSZ ignored: writes
  // fail with EFBIG as on a full disk) writes 1,000 scalars: no exception, a normal exit.
  const std::string dir = ::testing::TempDir() + "hpct_events_full_" + std::to_string(::getpid());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    int code = 0;
    try {
      EventFileWriter w(dir);
      for (int i = 0; i < 1000; ++i) {
        w.scalar("train/loss", i, 1.0 / (i + 1));
        if (i % 10 == 9) w.flush();
      }
    } catch (...) {
      code = 3;
    }
    std::_Exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the writer died (signal " << WTERMSIG(status) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the failed write threw";
  std::uintmax_t bytes = 0;
  for (const auto& e : fs::directory_iterator(dir)) bytes += fs::file_size(e.path());
  EXPECT_LE(bytes, 4096u);
  fs::remove_all(dir);
}
