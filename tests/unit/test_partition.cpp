// Model-parallel layer groups: automatic balancing by parameters (optimal for
// contiguous groups, every group non-empty, ties towards later cuts),
// explicit ranges, and every start-up error of [model] groups.
#include <gtest/gtest.h>

#include "hpctrain/core/error.hpp"
#include "hpctrain/model/partition.hpp"

using namespace hpctrain;

namespace {
std::string ranges(const std::vector<LayerGroup>& g) {
  std::string s;
  for (const auto& r : g) s += (s.empty() ? "" : " ") + std::to_string(r.first) + "-" + std::to_string(r.last - 1);
  return s;
}
std::string error_of(const std::vector<std::int64_t>& params, int stages, const std::string& groups) {
  try {
    partition_layers(params, stages, groups);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Partition, AutoBalancesParametersOverContiguousGroups) {
  // The MNIST MLP: flatten, dense 803,840, relu, dense 1,049,600, relu, dense 10,250.
  const std::vector<std::int64_t> mlp{0, 803840, 0, 1049600, 0, 10250};
  EXPECT_EQ(ranges(partition_layers(mlp, 1, "auto")), "0-5");
  EXPECT_EQ(ranges(partition_layers(mlp, 2, "auto")), "0-2 3-5");  // largest group 1,059,850 (best possible)
  EXPECT_EQ(ranges(partition_layers(mlp, 3, "auto")), "0-2 3-4 5-5");
  EXPECT_EQ(ranges(partition_layers(mlp, 6, "auto")), "0-0 1-1 2-2 3-3 4-4 5-5");
  // Uneven layers: the heavy one alone, the rest split so the largest group is smallest.
  EXPECT_EQ(ranges(partition_layers({1, 1, 1, 9, 1, 1, 1}, 3, "auto")), "0-2 3-3 4-6");
  EXPECT_EQ(ranges(partition_layers({5, 5, 5, 5}, 2, "auto")), "0-1 2-3");
  for (int m = 1; m <= 4; ++m) {  // always M non-empty groups covering everything in order
    const auto g = partition_layers({0, 0, 7, 0, 3, 0, 0, 2}, m, "auto");
    ASSERT_EQ(g.size(), static_cast<std::size_t>(m));
    EXPECT_EQ(g.front().first, 0u);
    EXPECT_EQ(g.back().last, 8u);
    for (std::size_t i = 0; i < g.size(); ++i) {
      EXPECT_LT(g[i].first, g[i].last);
      if (i) {
        EXPECT_EQ(g[i].first, g[i - 1].last);
      }
    }
  }
  EXPECT_EQ(stage_of_layer(partition_layers(mlp, 2, "auto"), 4), 1);
}

TEST(Partition, ExplicitRanges) {
  const std::vector<std::int64_t> p(8, 1);
  EXPECT_EQ(ranges(partition_layers(p, 2, "0-2 3-7")), "0-2 3-7");
  EXPECT_EQ(ranges(partition_layers(p, 3, "0-3,4,5-7")), "0-3 4-4 5-7");
}

TEST(Partition, StartUpErrorsNameTheProblem) {
  const std::vector<std::int64_t> p(4, 1);
  EXPECT_NE(error_of(p, 5, "auto").find("pipeline_parallel = 5 stages but [model] layers has only 4 layer(s)"),
            std::string::npos);
  EXPECT_NE(error_of(p, 2, "0-1 3-2").find("group 1 ('3-2') is empty"), std::string::npos);
  EXPECT_NE(error_of(p, 2, "0-1 3-3").find("starts at layer 3 but must start at layer 2"), std::string::npos);
  EXPECT_NE(error_of(p, 2, "0-2 2-3").find("(groups overlap)"), std::string::npos);
  EXPECT_NE(error_of(p, 2, "0-1 2-2").find("leaves out layers 3-3"), std::string::npos);
  EXPECT_NE(error_of(p, 3, "0-1 2-3").find("gives 2 group(s); one per stage is needed"), std::string::npos);
  EXPECT_NE(error_of(p, 2, "0-1 2-9").find("names layer 9 but [model] layers has 4"), std::string::npos);
  EXPECT_NE(error_of(p, 2, "first half").find("'first' is not a layer range"), std::string::npos);
}
