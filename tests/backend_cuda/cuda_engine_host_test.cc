// CudaEngine on a machine without a CUDA device (CI): Create and Load fail with a clear status,
// never a crash, and a corrupt plan is rejected as the CPU runtime rejects it, before any device
// question. The GPU side is tests/gpu/cuda_engine_gpu_test.cc.
#include <string>

#include "absl/status/status.h"
#include "backend_cuda/cuda_info.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cuda/cuda_engine.h"
#include "tests/runtime/engine_test_util.h"

namespace qcc::runtime {
namespace {

using ::testing::HasSubstr;
using namespace engine_testing;  // NOLINT: the plan builders

/// x f32 [-1,3,4,4] -Quantize-> q i8 -Dequantize-> y f32.
Plan SmallPlan() {
  PlanBuilder b(1, 4);
  const int32_t x = b.Input("x", DType::kFloat32, {-1, 3, 4, 4});
  const int32_t q = b.Arena("q", DType::kInt8, {-1, 3, 4, 4});
  const int32_t y = b.Output("y", DType::kFloat32, {-1, 3, 4, 4});
  b.Step(StepKind::kQuantize, "quant", {x}, {q}, QuantizeParams{0.05f, 3});
  b.Step(StepKind::kDequantize, "dequant", {q}, {y}, QuantizeParams{0.05f, 3});
  return b.plan();
}

void ExpectNoDeviceError(const absl::Status& status) {
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  if (!cuda::BuiltWithCuda()) {
    EXPECT_THAT(std::string(status.message()),
                HasSubstr("this qcc was built without CUDA (no nvcc at build time)"));
  } else {
    EXPECT_THAT(std::string(status.message()), HasSubstr("cudaGetDeviceCount returned"));
  }
  EXPECT_THAT(std::string(status.message()), HasSubstr("--device cpu"));
}

TEST(CudaEngineHostTest, CreateWithoutADeviceIsFailedPrecondition) {
  if (cuda::DeviceCount() > 0) GTEST_SKIP() << "a CUDA device is present (gpu tests cover it)";
  ExpectNoDeviceError(CudaEngine::Create(SmallPlan()).status());
  // Every option: still the same clear error.
  ExpectNoDeviceError(CudaEngine::Create(SmallPlan(), CudaEngineOptions{3, true}).status());
}

TEST(CudaEngineHostTest, LoadWithoutADeviceIsFailedPrecondition) {
  if (cuda::DeviceCount() > 0) GTEST_SKIP() << "a CUDA device is present (gpu tests cover it)";
  const std::string path = ::testing::TempDir() + "/cuda_engine_host_test.plan";
  ASSERT_TRUE(WritePlan(SmallPlan(), path).ok());
  ExpectNoDeviceError(CudaEngine::Load(path).status());
}

TEST(CudaEngineHostTest, ACorruptPlanIsRejectedAsTheCpuRuntimeRejectsIt) {
  // The plan is checked before the device: the same InvalidArgument on every machine.
  Plan plan = SmallPlan();
  plan.steps[1].ints.push_back(7);  // one parameter too many
  const absl::Status cpu = CreateError(plan);
  ASSERT_EQ(cpu.code(), absl::StatusCode::kInvalidArgument) << cpu;
  const absl::Status gpu = CudaEngine::Create(plan).status();
  EXPECT_EQ(gpu.code(), absl::StatusCode::kInvalidArgument) << gpu;
  EXPECT_EQ(gpu.message(), cpu.message());
  EXPECT_THAT(std::string(gpu.message()), HasSubstr("dequant"));
}

TEST(CudaEngineHostTest, LoadOfAMissingFileNamesThePath) {
  const std::string path = ::testing::TempDir() + "/no_such_dir/missing.plan";
  const absl::Status s = CudaEngine::Load(path).status();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("missing.plan"));
}

}  // namespace
}  // namespace qcc::runtime
