// Calibration on the GPU gives the CPU's table (calib/runner_cuda.cc). Skips without a device.
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "backend_cuda/cuda_info.h"
#include "calib/dataset.h"
#include "calib/runner.h"
#include "gtest/gtest.h"
#include "ir/shape_inference.h"
#include "support/npy.h"
#include "tests/testing/temp_dir.h"

namespace qcc::calib {
namespace {

namespace fs = std::filesystem;

// x [N,4] of `dtype` -> Relu -> y -> Softmax -> z: x and y are observed.
std::unique_ptr<ir::Graph> ReluSoftmaxGraph(DType dtype) {
  auto g = std::make_unique<ir::Graph>();
  g->set_opset(13);
  g->AddSymbol("N");
  ir::Value* x = g->AddInput("x", ir::TensorType(dtype, {ir::SymbolDim(0), 4}));
  ir::Node* relu = g->AddNode(ir::OpKind::kRelu, "relu", {x}, {"y"});
  g->AddOutput(g->AddNode(ir::OpKind::kSoftmax, "softmax", {relu->output(0)}, {"z"})->output(0));
  EXPECT_TRUE(ir::InferShapes(*g).ok());
  return g;
}

CalibrationRun Calibrate(DType input_dtype, const std::string& dir, Device device) {
  auto graph = ReluSoftmaxGraph(input_dtype);
  EXPECT_TRUE(InstrumentForCalibration(*graph).ok());
  auto data = Dataset::Open(dir, GraphDataInputs(*graph), {});
  EXPECT_TRUE(data.ok()) << data.status();
  RunnerOptions options;
  options.batch = 4;
  options.device = device;
  absl::StatusOr<CalibrationRun> run = RunCalibration(*graph, **data, options);
  EXPECT_TRUE(run.ok()) << run.status();
  return run.ok() ? *std::move(run) : CalibrationRun{};
}

// An fp16 model's input (squeezenet1.1's model-fp16.onnx) is observed on the GPU too: it was
// left out there (count 0 against the CPU's 15,052,800 on an H200), so its scale was missing.
TEST(CalibGpu, Fp32AndFp16InputsObservedAsOnTheCpu) {
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  const std::string dir = qcc::testing::NewTestDir("qcc_calib_gpu");
  for (int i = 0; i < 10; ++i) {
    std::vector<float> v;
    for (int k = 0; k < 4; ++k) v.push_back(0.37f * static_cast<float>((i * 4 + k) * 7 % 23 - 11));
    ASSERT_TRUE(WriteNpy(absl::StrFormat("%s/%03d.npy", dir, i),
                         Tensor::FromVector<float>(DType::kFloat32, {1, 4}, v))
                    .ok());
  }
  for (DType dtype : {DType::kFloat32, DType::kFloat16}) {
    const CalibrationRun cpu = Calibrate(dtype, dir, Device::kCpu);
    const CalibrationRun gpu = Calibrate(dtype, dir, Device::kCuda);
    ASSERT_EQ(gpu.device, Device::kCuda);
    for (const char* name : {"x", "y"}) {
      ASSERT_TRUE(cpu.tensors.count(name) && gpu.tensors.count(name)) << name;
      EXPECT_EQ(cpu.tensors.at(name).count(), 40) << name << " " << DTypeName(dtype);
      EXPECT_TRUE(cpu.tensors.at(name) == gpu.tensors.at(name)) << name << " " << DTypeName(dtype);
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace qcc::calib
