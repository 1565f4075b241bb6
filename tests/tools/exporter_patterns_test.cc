// Issue 12: the shape arithmetic torch.onnx.export writes for a model with a dynamic batch (a
// flatten to [N, -1], TF-style pads computed from a constant list, Resize sizes computed from
// Shape, a channel shuffle whose Reshape targets hold 0, -1 and Div on shape values, a
// batch-dependent Expand). Each pattern compiles to int8 with no --shape flag, every Conv and Gemm
// in int8, and runs at batch 1 and 7 against ONNX Runtime's fp32 outputs; a shape that only the
// data decides is a one-line error. tests/exporter_patterns/make_models.py writes the models,
// their calibration samples, inputs and ONNX Runtime references.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "frontend/tensor_proto.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "support/npy.h"
#include "tests/tools/plan_helpers.h"
#include "tests/tools/qcc_runner.h"

namespace qcc::testing {
namespace {

namespace fs = std::filesystem;

// The int8 bar against ONNX Runtime's fp32 output. The models have He-normal weights rescaled
// per channel as a folded BatchNormalization leaves them; their plans reach 24 to 39 dB.
constexpr double kMinInt8SqnrDb = 20.0;

// The node of unresolvable_shape whose Reshape target holds Cast(ReduceMax(...)): a value only
// the data decides.
constexpr char kUnresolvableNode[] = "/Reshape";

/// The folder make_models.py writes: one folder per pattern.
std::string PatternsRoot() { return std::string(QCC_BINARY_DIR) + "/exporter_patterns"; }

/// Runs make_models.py once per process (it returns at once when its output is up to date, and
/// takes a lock, so that test processes can run it side by side); returns its exit code.
int MakePatternModels() {
  static const int exit_code = [] {
    const std::string cmd =
        ShellQuote(std::string(QCC_SOURCE_DIR) + "/.venv/bin/python") + " " +
        ShellQuote(std::string(QCC_SOURCE_DIR) + "/tests/exporter_patterns/make_models.py") +
        " --out " + ShellQuote(PatternsRoot()) + " >/dev/null";
    const int status = std::system(cmd.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }();
  return exit_code;
}

const char kMakeFailed[] =
    "tests/exporter_patterns/make_models.py failed (run scripts/setup for the venv)";

/// Output 0 of a `qcc run ... --output-dir dir` (an undefined tensor, and a failure, when it
/// cannot be read).
Tensor ReadOutput(const std::string& dir) {
  absl::StatusOr<Tensor> t = frontend::ReadTensorProtoFile(dir + "/output_0.pb");
  if (!t.ok()) {
    ADD_FAILURE() << t.status();
    return Tensor();
  }
  return *std::move(t);
}

/// A .npy file of the pattern data (an undefined tensor, and a failure, when it cannot be read).
Tensor ReadPatternNpy(const std::string& path) {
  absl::StatusOr<Tensor> t = ReadNpy(path);
  if (!t.ok()) {
    ADD_FAILURE() << t.status();
    return Tensor();
  }
  return *std::move(t);
}

// Every element within |got - want| <= atol + rtol * |want| (rtol 1e-3, atol 1e-4); one failure
// naming the count and the worst element rather than one per element.
void ExpectClose(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.dims(), want.dims());
  int64_t outside = 0, worst = 0;
  double worst_excess = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.GetAsDouble(i);
    const double w = want.GetAsDouble(i);
    const double excess = std::fabs(g - w) - (1e-4 + 1e-3 * std::fabs(w));  // NaN: outside
    if (excess <= 0) continue;
    if (outside++ == 0 || excess > worst_excess || std::isnan(excess)) {
      worst_excess = excess;
      worst = i;
    }
  }
  EXPECT_EQ(outside, 0) << outside << " of " << got.numel() << " elements outside rtol 1e-3/atol "
                        << "1e-4; worst: element " << worst << " " << got.GetAsDouble(worst)
                        << " against " << want.GetAsDouble(worst);
}

/// 10 log10(sum want^2 / sum (want - got)^2); infinite when they are equal.
double SqnrDb(const Tensor& got, const Tensor& want) {
  double signal = 0, noise = 0;
  for (int64_t i = 0; i < std::min(got.numel(), want.numel()); ++i) {
    const double w = want.GetAsDouble(i);
    const double d = w - got.GetAsDouble(i);
    signal += w * w;
    noise += d * d;
  }
  return noise == 0 ? std::numeric_limits<double>::infinity() : 10 * std::log10(signal / noise);
}

/// The number of nodes of type `op` in the ONNX model at `path` (-1 when it cannot be parsed).
int CountOnnxNodes(const std::string& path, const std::string& op) {
  onnx::ModelProto model;
  if (!model.ParseFromString(ReadWholeFile(path))) return -1;
  int n = 0;
  for (const auto& node : model.graph().node()) n += node.op_type() == op;
  return n;
}

/// One exporter pattern (the parameter: its folder name under PatternsRoot()).
class ExporterPatternTest : public QccTest, public ::testing::WithParamInterface<std::string> {
 protected:
  static void SetUpTestSuite() { MakePatternModels(); }

  void SetUp() override {
    // QccTest's scratch folder, its name without the '/' of a parameterized test's names (one
    // folder, so that TearDown removes all of it).
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string("qcc_tools_") + info->test_suite_name() + "_" + info->name();
    std::replace(name.begin(), name.end(), '/', '_');
    dir_ = fs::temp_directory_path() / (name + "_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ASSERT_TRUE(fs::exists(QccBinary())) << QccBinary() << " is missing: build the qcc target";
    ASSERT_EQ(MakePatternModels(), 0) << kMakeFailed;
  }

  /// A file of this pattern's folder.
  std::string Pattern(const std::string& file) const {
    return PatternsRoot() + "/" + GetParam() + "/" + file;
  }

  /// qcc run of `model` (a model or a plan) on the pattern's `input` (.npy), written to scratch
  /// folder `out`; returns output 0.
  Tensor Run(const std::string& model, const std::string& input, const std::string& out) const {
    const QccResult r =
        Qcc({"run", model, "--input", "x=" + Pattern(input), "--output-dir", Path(out)});
    EXPECT_EQ(r.exit_code, 0) << "qcc run " << model << " on " << input << ": " << r.err;
    return ReadOutput(Path(out));
  }
};

TEST_P(ExporterPatternTest, CompilesToInt8WithoutAShapeAndMatchesOnnxRuntimeAtBatch1And7) {
  const std::string model = Pattern("model.onnx");
  const Tensor ref1 = ReadPatternNpy(Pattern("ref_batch1.npy"));
  const Tensor ref7 = ReadPatternNpy(Pattern("ref_batch7.npy"));
  ASSERT_TRUE(ref1.defined() && ref7.defined());
  ASSERT_EQ(ref7.dim(0), 7);

  // The fp32 evaluator agrees with ONNX Runtime on the model itself.
  {
    SCOPED_TRACE("qcc run model.onnx, batch 7");
    ExpectClose(Run(model, "batch7.npy", "fp32_model"), ref7);
  }

  // Calibrated, the model compiles to int8 with its batch left dynamic: no --shape flag.
  const QccResult calib = Qcc({"calibrate", model, Pattern("calib"), "-o", Path("t.json")});
  ASSERT_EQ(calib.exit_code, 0) << calib.err;
  const QccResult compile =
      Qcc({"compile", model, "--int8", "--calib", Path("t.json"), "-o", Path("m.plan")});
  ASSERT_EQ(compile.exit_code, 0) << compile.err;
  const std::string summary = LineStartingWith(compile.out, "compiled ");
  EXPECT_NE(summary.find(" nodes in int8 "), std::string::npos) << compile.out;
  std::printf("%s: %s\n", GetParam().c_str(), summary.c_str());

  // Every Conv and Gemm of the model is an int8 step: none stayed in fp32.
  const QccResult inspect = Qcc({"inspect", Path("m.plan")});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("input x: f32[N,"), std::string::npos) << inspect.out;
  const std::vector<InspectStep> steps = InspectSteps(inspect.out);
  ASSERT_FALSE(steps.empty()) << inspect.out;
  EXPECT_EQ(CountKernel(steps, "Conv"), 0) << inspect.out;
  EXPECT_EQ(CountKernel(steps, "Gemm"), 0) << inspect.out;
  EXPECT_EQ(CountQConvs(steps), CountOnnxNodes(model, "Conv")) << inspect.out;
  EXPECT_EQ(CountKernel(steps, "QGemm"), CountOnnxNodes(model, "Gemm")) << inspect.out;
  for (const InspectStep& s : steps) {
    if (s.kernel == "QConv" || s.kernel == "QConvAdd" || s.kernel == "QGemm") {
      EXPECT_EQ(s.precision, "int8") << s.node;
    }
  }

  // The int8 plan at batch 1 and 7: the reference shapes, close to ONNX Runtime, and sample 0 of
  // the batch of 7 bit for bit the batch of 1 (each sample is computed on its own).
  const Tensor q1 = Run(Path("m.plan"), "batch1.npy", "int8_b1");
  const Tensor q7 = Run(Path("m.plan"), "batch7.npy", "int8_b7");
  ASSERT_TRUE(q1.defined() && q7.defined());
  ASSERT_EQ(q1.dims(), ref1.dims());
  ASSERT_EQ(q7.dims(), ref7.dims());
  EXPECT_GE(SqnrDb(q1, ref1), kMinInt8SqnrDb) << "batch 1";
  EXPECT_GE(SqnrDb(q7, ref7), kMinInt8SqnrDb) << "batch 7";
  std::printf("%s: int8 SQNR %.1f dB at batch 1, %.1f dB at batch 7\n", GetParam().c_str(),
              SqnrDb(q1, ref1), SqnrDb(q7, ref7));
  const std::vector<float> one = q1.ToFloatVector();
  const std::vector<float> seven = q7.ToFloatVector();
  ASSERT_EQ(seven.size(), 7 * one.size());
  const auto diff = std::mismatch(one.begin(), one.end(), seven.begin());
  EXPECT_TRUE(diff.first == one.end())
      << "sample 0 differs at element " << (diff.first - one.begin()) << ": " << *diff.first
      << " at batch 1, " << *diff.second << " at batch 7";

  // The fp32 plan of the same model agrees with ONNX Runtime too.
  const QccResult fp32 = Qcc({"compile", model, "--fp32", "-o", Path("f.plan")});
  ASSERT_EQ(fp32.exit_code, 0) << fp32.err;
  SCOPED_TRACE("qcc run f.plan, batch 7");
  ExpectClose(Run(Path("f.plan"), "batch7.npy", "fp32_plan"), ref7);
}

INSTANTIATE_TEST_SUITE_P(TorchExport, ExporterPatternTest,
                         ::testing::Values("dynamic_flatten", "computed_pads", "computed_resize",
                                           "reshape_shape_math", "batch_dependent_shape"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });
// paddle2onnx: the detector head of ppocr-det-v3 (ConvTranspose, a BatchNormalization after an
// Add, Sigmoid).
INSTANTIATE_TEST_SUITE_P(Paddle2Onnx, ExporterPatternTest, ::testing::Values("paddle_det_head"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

class PatternModelsTest : public QccTest {
 protected:
  static void SetUpTestSuite() { MakePatternModels(); }
  void SetUp() override {
    QccTest::SetUp();
    ASSERT_EQ(MakePatternModels(), 0) << kMakeFailed;
  }
};

TEST_F(PatternModelsTest, DataDependentReshapeTargetIsAOneLineErrorAndNoPlan) {
  const std::string folder = PatternsRoot() + "/unresolvable_shape";
  const std::string model = folder + "/model.onnx";
  // The fp32 evaluator runs it (it computes the value from the data) ...
  const QccResult run =
      Qcc({"run", model, "--input", "x=" + folder + "/batch1.npy", "--output-dir", Path("out")});
  EXPECT_EQ(run.exit_code, 0) << run.err;

  // ... but no plan can hold it: the Reshape's output shape is known only at run time.
  // The error names the node, what its extent depends on, and that the data decides it.
  ExpectOneLineError(Qcc({"compile", model, "--fp32", "-o", Path("f.plan")}),
                     {kUnresolvableNode, "'/Cast_output_0'", "node '/Cast' (Cast)",
                      "from tensor data at run time"});
  EXPECT_FALSE(fs::exists(Path("f.plan")));

  // The same with --int8, calibrated on its one sample (the folder's batch1.npy).
  const QccResult calib = Qcc({"calibrate", model, folder, "-o", Path("t.json")});
  ASSERT_EQ(calib.exit_code, 0) << calib.err;
  ExpectOneLineError(
      Qcc({"compile", model, "--int8", "--calib", Path("t.json"), "-o", Path("m.plan")}),
      {kUnresolvableNode});
  EXPECT_FALSE(fs::exists(Path("m.plan")));
  for (const std::string& f : FilesIn("")) {
    EXPECT_EQ(f.find(".tmp"), std::string::npos) << "temporary file " << f << " left behind";
  }
}

// qcc compare on a detector's probability map [N, 1, H, W]: SQNR, cosine and max error, but no
// top-1 agreement (an argmax over the map's pixels would report ~1% "agreement" for a good plan,
// as it did for ppocr-det-v3). A classifier's scores still get it (compare_test.cc).
TEST_F(PatternModelsTest, CompareOfAMapReportsNoTopOneAgreement) {
  const std::string dir = PatternsRoot() + "/paddle_det_head";
  const std::string model = dir + "/model.onnx";
  ASSERT_EQ(Qcc({"calibrate", model, dir + "/calib", "-o", Path("t.json")}).exit_code, 0);
  ASSERT_EQ(
      Qcc({"compile", model, "--int8", "--calib", Path("t.json"), "-o", Path("m.plan")}).exit_code,
      0);
  const QccResult r = Qcc({"compare", model, Path("m.plan"), dir + "/calib"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("output 'y': SQNR "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("agreement"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("compare: samples=32 sqnr_db="), std::string::npos) << r.out;
}

// The Resize, Expand and BatchAffine steps these patterns need have no CUDA kernel yet (no GPU
// was lent to build them on): --target cuda says so instead of recording a kernel it lacks.
TEST_F(PatternModelsTest, CudaTargetRefusesStepsWithoutACudaKernel) {
  const std::string model = PatternsRoot() + "/computed_resize/model.onnx";
  ExpectOneLineError(Qcc({"compile", model, "--fp32", "--target", "cuda", "-o", Path("c.plan")}),
                     {"(Resize)", "no CUDA kernel yet", "--target cpu"});
  EXPECT_FALSE(fs::exists(Path("c.plan")));
}

}  // namespace
}  // namespace qcc::testing
