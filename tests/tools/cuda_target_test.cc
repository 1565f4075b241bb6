// `qcc compile --target cuda`: the plan records a CUDA kernel for every step (backend_cuda/
// lowering.h), and the CPU runtime, the oracle, runs it with exactly the results of the cpu plan.
// `--device cuda` on a machine without a GPU (or a qcc built without CUDA) is a clear error.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "backend_cuda/cuda_info.h"
#include "gtest/gtest.h"
#include "tests/tools/plan_helpers.h"
#include "tests/tools/qcc_runner.h"

namespace qcc::testing {
namespace {

namespace fs = std::filesystem;

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Lines of `inspect` that record a CUDA kernel whose token is `token`.
int CountCudaKernel(const std::string& inspect, const std::string& token) {
  int n = 0;
  for (const std::string& line : Lines(inspect)) {
    if (line.find("cuda: " + token + " ") != std::string::npos) ++n;
  }
  return n;
}

class CudaTargetTest : public PlanTest {
 protected:
  // Runs `plan` on the CPU runtime on ResNet-20's test set `k`; returns output_0.pb's bytes.
  std::string RunOutput(const std::string& plan, int k, const std::string& dir) const {
    const QccResult r = Qcc({"run", plan, "--test-data", Resnet20TestSet(k), "--output-dir", dir});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return FileBytes(dir + "/output_0.pb");
  }
};

TEST_F(CudaTargetTest, Int8PlanRecordsKernelsAndRunsLikeTheCpuPlanOnTheCpuRuntime) {
  ASSERT_EQ(CalibrateResnet20(Path("t.json")).exit_code, 0);
  const QccResult cpu = CompileResnet20(Path("t.json"), Path("cpu.plan"));
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  const QccResult cuda = CompileResnet20(Path("t.json"), Path("cuda.plan"), {"--target", "cuda"});
  ASSERT_EQ(cuda.exit_code, 0) << cuda.err;

  const QccResult inspect = Qcc({"inspect", Path("cuda.plan")});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("target cuda, batch 1..32, int8"), std::string::npos) << inspect.out;
  const std::vector<InspectStep> steps = InspectSteps(inspect.out);
  // ResNet-20: 19 convs (group 1: im2col + IMMA), 1 classifier Gemm (IMMA), and every other
  // step on our own kernels; one recorded choice per step.
  EXPECT_EQ(CountCudaKernel(inspect.out, "im2col-imma"), 19) << inspect.out;
  EXPECT_EQ(CountCudaKernel(inspect.out, "imma"), 1) << inspect.out;
  EXPECT_EQ(CountCudaKernel(inspect.out, "im2col-imma") + CountCudaKernel(inspect.out, "imma") +
                CountCudaKernel(inspect.out, "index") + CountCudaKernel(inspect.out, "alias"),
            static_cast<int>(steps.size()))
      << inspect.out;
  // The stem conv: 3x3x3 = 27 products padded to 28 for IMMA, 16 filters.
  EXPECT_NE(inspect.out.find("n=16 k=28 (Kred 27, weights packed [16, 28]"), std::string::npos)
      << inspect.out;
  // A cpu plan records none.
  const QccResult inspect_cpu = Qcc({"inspect", Path("cpu.plan")});
  EXPECT_EQ(inspect_cpu.out.find("cuda: "), std::string::npos) << inspect_cpu.out;

  for (int k = 0; k < 2; ++k) {  // the model ships test_data_set_0 and _1
    const std::string want = RunOutput(Path("cpu.plan"), k, Path("out_cpu"));
    const std::string got = RunOutput(Path("cuda.plan"), k, Path("out_cuda"));
    ASSERT_FALSE(want.empty());
    EXPECT_EQ(got, want) << "test set " << k;
  }
}

TEST_F(CudaTargetTest, Fp16PlanRunsLikeTheCpuPlanOnTheCpuRuntime) {
  ASSERT_EQ(Qcc({"compile", Resnet20Model(), "--fp16", "-o", Path("cpu.plan")}).exit_code, 0);
  const QccResult cuda =
      Qcc({"compile", Resnet20Model(), "--fp16", "--target", "cuda", "-o", Path("cuda.plan")});
  ASSERT_EQ(cuda.exit_code, 0) << cuda.err;
  const QccResult inspect = Qcc({"inspect", Path("cuda.plan")});
  EXPECT_EQ(CountCudaKernel(inspect.out, "im2col-gemm-fp16"), 19) << inspect.out;
  EXPECT_NE(inspect.out.find("cuBLASLt fp16 GEMM with fp32 accumulation"), std::string::npos)
      << inspect.out;
  const std::string want = RunOutput(Path("cpu.plan"), 0, Path("out_cpu"));
  const std::string got = RunOutput(Path("cuda.plan"), 0, Path("out_cuda"));
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(got, want);
}

TEST_F(CudaTargetTest, DepthwiseConvsRecordTheDirectKernel) {
  // ppocr-cls-mbv3 (MobileNetV3): its 11 depthwise convs run on the direct kernel, the other 42
  // on im2col + GEMM, the classifier on a GEMM.
  const std::string model = SharedModelDir("ppocr-cls-mbv3") + "/model.onnx";
  const QccResult c = Qcc({"compile", model, "--fp16", "--target", "cuda", "--shape",
                           "x=N,3,48,192", "-o", Path("p.plan")});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const QccResult inspect = Qcc({"inspect", Path("p.plan")});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_EQ(CountCudaKernel(inspect.out, "direct-conv"), 11) << inspect.out;
  EXPECT_EQ(CountCudaKernel(inspect.out, "im2col-gemm-fp16"), 42) << inspect.out;
  EXPECT_EQ(CountCudaKernel(inspect.out, "gemm"), 1) << inspect.out;
  EXPECT_NE(inspect.out.find("direct-conv fp32 (fp16 weights widened at load) NCHW, group 8:"),
            std::string::npos)
      << inspect.out;
}

TEST_F(CudaTargetTest, DeviceCudaWithoutAGpuIsAClearError) {
  if (cuda::DeviceCount() > 0) GTEST_SKIP() << "a CUDA device is present";
  ASSERT_EQ(CalibrateResnet20(Path("t.json")).exit_code, 0);
  ASSERT_EQ(CompileResnet20(Path("t.json"), Path("cuda.plan"), {"--target", "cuda"}).exit_code, 0);
  const std::vector<std::string> mentions = {
      "cuda.plan", cuda::BuiltWithCuda() ? "no usable CUDA device" : "built without CUDA",
      "--device cpu"};
  ExpectOneLineError(Qcc({"run", Path("cuda.plan"), "--device", "cuda", "--test-data",
                          Resnet20TestSet(0), "--output-dir", Path("out")}),
                     mentions);
  EXPECT_FALSE(fs::exists(Path("out/output_0.pb")));
  ExpectOneLineError(Qcc({"bench", Path("cuda.plan"), "--device", "cuda"}), mentions);
  // auto falls back to the CPU without a device.
  const QccResult r = Qcc({"bench", Path("cuda.plan"), "--device", "auto", "--iters", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("device=cpu"), std::string::npos) << r.out;
  ExpectOneLineError(Qcc({"bench", Path("cuda.plan"), "--device", "tpu"}),
                     {"--device 'tpu'", "auto, cpu and cuda"});
}

}  // namespace
}  // namespace qcc::testing
