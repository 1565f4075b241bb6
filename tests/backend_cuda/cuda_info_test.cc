#include "backend_cuda/cuda_info.h"

#include "gtest/gtest.h"

namespace qcc::cuda {
namespace {

TEST(CudaInfo, ArchitecturesMatchTheBuild) {
  if (BuiltWithCuda()) {
    EXPECT_EQ(CompiledArchitectures(), "80,89,90");
  } else {
    EXPECT_EQ(CompiledArchitectures(), "");
    EXPECT_EQ(DeviceCount(), 0);
  }
}

TEST(CudaInfo, DeviceCountIsSafeWithoutADevice) {
  const int n = DeviceCount();  // must not abort on a machine without driver or GPU
  EXPECT_GE(n, 0);
  int result = 0;
  if (n == 0) EXPECT_FALSE(RunToolchainProbe(41, &result));
}

}  // namespace
}  // namespace qcc::cuda
