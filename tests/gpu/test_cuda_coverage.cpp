// Runs last (linked last): every operation in backend_operations() was compared with the CPU
// backend by the operation tests (gpu_test_util.hpp compared()).
#include <gtest/gtest.h>

#include "gpu_test_util.hpp"
#include "hpctrain/backend/ops.hpp"

using gputest::CudaOps;

namespace {
using namespace hpctrain;
using gputest::compared;

TEST_F(CudaOps, ZzEveryOperationWasCompared) {
  std::vector<std::string> missing;
  for (const auto& op : backend_operations())
    if (!compared().count(op)) missing.push_back(op);
  EXPECT_TRUE(missing.empty()) << "not compared on the GPU: " << ::testing::PrintToString(missing);
}
}  // namespace
