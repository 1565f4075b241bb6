#include "backend_cuda/cuda_info.h"

#include <filesystem>

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
  // Must not abort on a machine without driver or GPU, and must say 0 there: no NVIDIA device
  // node means no device. Where there is one (a lent GPU machine), a CUDA build sees it.
  const int n = DeviceCount();
  const bool device_node = std::filesystem::exists("/dev/nvidia0");
  if (!device_node || !BuiltWithCuda()) {
    EXPECT_EQ(n, 0);
  } else {
    EXPECT_GE(n, 1);
  }
  int result = 0;
  if (n == 0) {
    EXPECT_FALSE(RunToolchainProbe(41, &result));
  }
}

}  // namespace
}  // namespace qcc::cuda
