// Helpers shared by the unit tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "hpctrain/core/error.hpp"

namespace unittest {

// The message of the error `f` throws, checked to be bad input in one line; "" when it throws none.
template <class F>
std::string one_line_refusal(F&& f) {
  try {
    f();
  } catch (const hpctrain::Error& e) {
    EXPECT_EQ(e.code(), hpctrain::ExitCode::bad_input);
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    return e.what();
  }
  return "";
}

// n values uniform in [-1, 1) from `seed`; away_from_zero moves |x| < 0.1 out by 0.1.
inline std::vector<float> random_values(std::int64_t n, std::uint32_t seed, bool away_from_zero = false) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) {
    x = u(rng);
    if (away_from_zero && std::fabs(x) < 0.1f) x += x < 0 ? -0.1f : 0.1f;
  }
  return v;
}

// A path in the test's TMPDIR (GoogleTest's TempDir) named for this process: two suites run at
// once with the same TMPDIR (a developer's ctest beside CI) never write each other's files.
inline std::string temp_path(const std::string& name) {
  return (std::filesystem::path(testing::TempDir()) / ("hpct_" + std::to_string(::getpid()) + "_" + name)).string();
}

// Removes the paths it names when it goes out of scope (a test's files in $TMPDIR: tools/test.sh
// fails the suite when a test leaves any behind), also when the test fails or throws.
struct RemovedAtExit {
  std::vector<std::string> paths;
  RemovedAtExit(std::initializer_list<std::string> p) : paths(p) {}
  RemovedAtExit(const RemovedAtExit&) = delete;
  RemovedAtExit& operator=(const RemovedAtExit&) = delete;
  ~RemovedAtExit() {
    std::error_code ignored;
    for (const std::string& p : paths) std::filesystem::remove_all(p, ignored);
  }
};

}  // namespace unittest
