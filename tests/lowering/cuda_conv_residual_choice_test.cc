// The CUDA kernel choice (backend_cuda/lowering.h, RecordCudaKernelChoices) refuses an fp32 Conv
// step with a fused residual input (the CPU lowering's Conv + shortcut Add fusion, which the
// CUDA target does not make): a clear Unimplemented naming the step, never a kernel that would
// drop the residual. The same Conv without it gets its kernel.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "backend_cuda/lowering.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/runtime/engine_test_util.h"

namespace qcc::runtime {
namespace {

using ::testing::HasSubstr;
using namespace engine_testing;  // NOLINT: the plan builders

/// x f32 [-1,4,5,5] -Conv 3x3 (pads 1)-> y, with `residual` a fourth input r of y's dims.
Plan ConvPlan(bool residual) {
  PlanBuilder b(1, 2);
  const int32_t x = b.Input("x", DType::kFloat32, {-1, 4, 5, 5});
  const std::vector<float> w_data(4 * 4 * 9, 0.25f);
  const int32_t w = b.Weight("w", DType::kFloat32, {4, 4, 3, 3}, w_data);
  const int32_t y = b.Output("y", DType::kFloat32, {-1, 4, 5, 5});
  std::vector<int32_t> inputs = {x, w, -1};
  if (residual) inputs.push_back(b.Input("r", DType::kFloat32, {-1, 4, 5, 5}));
  ConvStepParams p;
  p.geometry.pad_top = p.geometry.pad_left = p.geometry.pad_bottom = p.geometry.pad_right = 1;
  b.Step(StepKind::kConv, "block.conv2", inputs, {y}, p);
  return b.plan();
}

TEST(ConvResidualChoiceTest, AConvWithAFusedResidualHasNoCudaKernel) {
  Plan fused = ConvPlan(true);
  const absl::Status status = cuda::RecordCudaKernelChoices(fused);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("'block.conv2'"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("fused residual"));
  Plan plain = ConvPlan(false);
  EXPECT_TRUE(cuda::RecordCudaKernelChoices(plain).ok());
  EXPECT_EQ(plain.steps[0].cuda_kernel, CudaKernel::kIm2colGemm);
}

}  // namespace
}  // namespace qcc::runtime
