// Tests that need a CUDA device. They carry the ctest label `gpu` and report as skipped, by
// name, on machines without one.
#include "backend_cuda/cuda_info.h"
#include "gtest/gtest.h"

namespace qcc::cuda {
namespace {

TEST(Gpu, ToolchainProbeRunsAKernel) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  int result = 0;
  ASSERT_TRUE(RunToolchainProbe(41, &result));
  EXPECT_EQ(result, 42);
}

}  // namespace
}  // namespace qcc::cuda
