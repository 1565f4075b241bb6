// `qcc compile --int8`, `qcc inspect MODEL.plan` and `qcc run MODEL.plan` end to end on the real
// ResNet-20: the plan's steps, memory and header for every option, default paths, and every bad
// input the issue lists (each a one-line error that leaves no plan file).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "frontend/tensor_proto.h"
#include "gtest/gtest.h"
#include "tests/tools/plan_helpers.h"
#include "tests/tools/qcc_runner.h"

namespace qcc::testing {
namespace {

namespace fs = std::filesystem;

using CompileTest = PlanTest;

// ResNet-20: one stem conv and 3 stages of 3 basic blocks with 2 convs each.
constexpr int kResnet20Convs = 19;
constexpr int kResnet20Adds = 9;
// Weights: stem 16x3x3x3; stage 1: 6 convs 16x16x3x3; stage 2: 32x16x3x3 and 5 of 32x32x3x3;
// stage 3: 64x32x3x3 and 5 of 64x64x3x3; the classifier 10x64.
constexpr double kResnet20ConvAndGemmWeights = 16 * 3 * 9 + 6 * 16 * 16 * 9 + 32 * 16 * 9 +
                                               5 * 32 * 32 * 9 + 64 * 32 * 9 + 5 * 64 * 64 * 9 +
                                               10 * 64;
// One bias per output channel (the folded BatchNormalizations) and 10 for the classifier.
constexpr double kResnet20Biases = 7 * 16 + 6 * 32 + 6 * 64 + 10;

TEST_F(CompileTest, Resnet20PlanInspectsAndRuns) {
  const QccResult calib = CalibrateResnet20(Path("t.json"));
  ASSERT_EQ(calib.exit_code, 0) << calib.err;
  EXPECT_NE(calib.out.find("calibrated 64 samples"), std::string::npos) << calib.out;
  const QccResult compile = CompileResnet20(Path("t.json"), Path("m.plan"));
  ASSERT_EQ(compile.exit_code, 0) << compile.err;
  ASSERT_TRUE(fs::exists(Path("m.plan")));
  EXPECT_NE(compile.out.find("plan -> " + Path("m.plan")), std::string::npos) << compile.out;
  EXPECT_FALSE(HasPlanOrTemp(".tmp")) << "temporary file left beside the plan";

  const QccResult inspect = Qcc({"inspect", Path("m.plan")});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  const std::string& out = inspect.out;
  EXPECT_NE(out.find("target cpu, batch 1..32, int8 (per-channel weights, symmetric "
                     "activations, mse), from model.onnx"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("input input: f32[N,3,32,32]"), std::string::npos) << out;
  EXPECT_NE(out.find("output logits: f32[N,10]"), std::string::npos) << out;
  const std::vector<InspectStep> steps = InspectSteps(out);
  ASSERT_FALSE(steps.empty()) << out;
  EXPECT_EQ(CountQConvs(steps), kResnet20Convs) << out;
  // Every shortcut Add runs in its conv's epilogue.
  EXPECT_EQ(CountKernel(steps, "QConvAdd"), kResnet20Adds) << out;
  EXPECT_EQ(CountKernel(steps, "QAdd"), 0) << out;
  EXPECT_EQ(CountKernel(steps, "QGemm"), 1) << out;
  for (const InspectStep& s : steps) {
    if (s.kernel[0] == 'Q' && s.kernel != "Quantize") {
      EXPECT_EQ(s.precision, "int8") << s.node;
    }
  }
  EXPECT_EQ(steps.front().kernel, "Quantize");
  EXPECT_EQ(steps.front().output, "input:int8");
  EXPECT_EQ(steps.back().kernel, "Dequantize");
  EXPECT_EQ(steps.back().output, "logits");
  EXPECT_NE(out.find(absl::StrFormat("steps: %d (", steps.size())), std::string::npos) << out;

  // Memory: the fp32 model holds 4 bytes per parameter; int8 weights are about 4x smaller.
  const double parameters = NumberAfter(out, "parameters: ");
  const std::string weights = LineStartingWith(out, "  weights: ");
  const double plan_bytes = NumberAfter(weights, "weights: ");
  const double model_bytes = NumberAfter(weights, "against ");
  EXPECT_GT(parameters, 250000) << out;  // ResNet-20 has about 0.27 M parameters
  EXPECT_EQ(model_bytes, 4 * parameters) << weights;
  EXPECT_LT(plan_bytes, model_bytes / 3) << weights;
  EXPECT_EQ(WeightBytes(out, "i8"), kResnet20ConvAndGemmWeights) << weights;
  EXPECT_EQ(WeightBytes(out, "i32"), 4 * kResnet20Biases) << weights;
  EXPECT_EQ(plan_bytes, WeightBytes(out, "i8") + WeightBytes(out, "i32") + WeightBytes(out, "f32"))
      << weights;
  for (const char* batch : {"activations at batch 1: ", "activations at batch 32: "}) {
    const std::string line = LineStartingWith(out, std::string("  ") + batch);
    const double arena = NumberAfter(line, "arena ");
    const double no_reuse = NumberAfter(line, "no-reuse sum ");
    EXPECT_GT(arena, 0) << out;
    EXPECT_LT(arena, no_reuse) << line;
  }
  EXPECT_LT(NumberAfter(out, "activations at batch 1: arena "),
            NumberAfter(out, "activations at batch 32: arena "));
  // Compute: each conv's weights times its output positions (32x32, 16x16, 8x8 by stage), and
  // the classifier's 10x64.
  constexpr double kResnet20MultiplyAdds = 16 * 3 * 9 * 1024 + 6 * 16 * 16 * 9 * 1024 +
                                           (32 * 16 * 9 + 5 * 32 * 32 * 9) * 256 +
                                           (64 * 32 * 9 + 5 * 64 * 64 * 9) * 64 + 10 * 64;
  EXPECT_EQ(NumberAfter(out, "multiply-adds at batch 1: "), kResnet20MultiplyAdds) << out;

  // qcc run on the model's test data: the same top-1 class as the fp32 reference output, and
  // logits close to it.
  const QccResult run = Qcc({"run", Path("m.plan"), "--test-data", Resnet20TestSet(0)});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  absl::StatusOr<Tensor> want = frontend::ReadTensorProtoFile(Resnet20TestSet(0) + "/output_0.pb");
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(want->numel(), 10);
  int best = 0;
  double best_abs = 0;
  for (int c = 0; c < 10; ++c) {
    if (want->GetAsDouble(c) > want->GetAsDouble(best)) best = c;
    best_abs = std::max(best_abs, std::fabs(want->GetAsDouble(c)));
  }
  EXPECT_NE(run.out.find(absl::StrFormat("top-1: class %d ", best)), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("output 0 'logits': f32[1,10]"), std::string::npos) << run.out;
  const double err = NumberAfter(run.out, "vs output_0.pb: max abs error ");
  EXPECT_LT(err, 0.15 * best_abs) << run.out;
}

TEST_F(CompileTest, PerTensorWeightsAreRecordedAndChangeThePlan) {
  ASSERT_EQ(CalibratedResnet20Plan(Path("pc.plan")).exit_code, 0);
  const QccResult r = CalibratedResnet20Plan(Path("pt.plan"), {"--per-tensor"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("per-tensor weights"), std::string::npos) << r.out;
  const QccResult inspect = Qcc({"inspect", Path("pt.plan")});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("int8 (per-tensor weights, symmetric activations"), std::string::npos)
      << inspect.out;
  EXPECT_EQ(CountQConvs(InspectSteps(inspect.out)), kResnet20Convs);
  EXPECT_NE(ReadWholeFile(Path("pt.plan")), ReadWholeFile(Path("pc.plan")));
  // Both flags at once is a usage error.
  const QccResult both =
      CalibratedResnet20Plan(Path("both.plan"), {"--per-tensor", "--per-channel"});
  ExpectOneLineError(both, {"--per-channel", "--per-tensor"}, 2);
  EXPECT_FALSE(fs::exists(Path("both.plan")));
}

TEST_F(CompileTest, EveryCalibrationMethodCompilesToADifferentPlan) {
  std::vector<std::string> plans;
  for (const char* method : {"minmax", "percentile=99.9", "mse"}) {
    const std::string plan = Path(std::string(method).substr(0, 3) + ".plan");
    const QccResult r = CalibratedResnet20Plan(plan, {"--calib-method", method});
    ASSERT_EQ(r.exit_code, 0) << method << ": " << r.err;
    const QccResult inspect = Qcc({"inspect", plan});
    ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
    EXPECT_NE(inspect.out.find(std::string("symmetric activations, ") + method + "), from"),
              std::string::npos)
        << inspect.out;
    plans.push_back(ReadWholeFile(plan));
  }
  EXPECT_NE(plans[0], plans[1]);
  EXPECT_NE(plans[0], plans[2]);
  EXPECT_NE(plans[1], plans[2]);
  ExpectOneLineError(CalibratedResnet20Plan(Path("kl.plan"), {"--calib-method", "kl"}), {"kl"});
  EXPECT_FALSE(fs::exists(Path("kl.plan")));
}

TEST_F(CompileTest, AsymmetricActivationsAreRecorded) {
  const QccResult r = CalibratedResnet20Plan(Path("a.plan"), {"--asymmetric"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const QccResult inspect = Qcc({"inspect", Path("a.plan")});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("(per-channel weights, asymmetric activations, mse)"),
            std::string::npos)
      << inspect.out;
  EXPECT_EQ(CountQConvs(InspectSteps(inspect.out)), kResnet20Convs);
  const QccResult run = Qcc({"run", Path("a.plan"), "--test-data", Resnet20TestSet(1)});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("top-1: class "), std::string::npos) << run.out;
}

TEST_F(CompileTest, ExcludedAddsStayInFloat) {
  ASSERT_EQ(CalibratedResnet20Plan(Path("all.plan")).exit_code, 0);
  const QccResult r = CalibratedResnet20Plan(Path("x.plan"), {"--exclude", "Add"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int notes = 0;
  for (const std::string& line : Lines(r.out)) {
    notes += line.find("(Add) stays in float: excluded by --exclude") != std::string::npos;
  }
  EXPECT_EQ(notes, kResnet20Adds) << r.out;
  const QccResult inspect = Qcc({"inspect", Path("x.plan")});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  const std::vector<InspectStep> steps = InspectSteps(inspect.out);
  EXPECT_EQ(CountKernel(steps, "QAdd"), 0) << inspect.out;
  EXPECT_EQ(CountKernel(steps, "QConv"), kResnet20Convs);  // no int8 Add to fuse
  int float_adds = 0;
  for (const InspectStep& s : steps) {
    if (s.kernel == "Binary") {
      EXPECT_EQ(s.precision, "fp32") << s.node;
      EXPECT_EQ(s.node.substr(s.node.size() - 4), "/Add") << s.node;
      ++float_adds;
    }
  }
  EXPECT_EQ(float_adds, kResnet20Adds) << inspect.out;
  // The convs still carry every int8 weight.
  const QccResult all = Qcc({"inspect", Path("all.plan")});
  EXPECT_EQ(WeightBytes(inspect.out, "i8"), WeightBytes(all.out, "i8"));
}

TEST_F(CompileTest, ExcludedConvKeepsItsWeightsInFloat) {
  ASSERT_EQ(CalibratedResnet20Plan(Path("all.plan")).exit_code, 0);
  const std::string node = "/layer3/layer3.2/conv1/Conv";  // 64 -> 64 channels, 3x3
  const QccResult r = CalibratedResnet20Plan(Path("x.plan"), {"--exclude", node});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("node '" + node + "' (Conv) stays in float"), std::string::npos) << r.out;
  const QccResult inspect = Qcc({"inspect", Path("x.plan")});
  const QccResult all = Qcc({"inspect", Path("all.plan")});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  int float_convs = 0;
  for (const InspectStep& s : InspectSteps(inspect.out)) {
    if (s.node == node && s.kernel != "Quantize" && s.kernel != "Dequantize") {
      EXPECT_EQ(s.kernel, "Conv");
      EXPECT_EQ(s.precision, "fp32");
      ++float_convs;
    }
  }
  EXPECT_EQ(float_convs, 1) << inspect.out;
  EXPECT_EQ(CountQConvs(InspectSteps(inspect.out)), kResnet20Convs - 1);
  // Its 64*64*3*3 weights move from int8 to fp32, and its int32 bias goes.
  const double w = 64 * 64 * 3 * 3;
  EXPECT_EQ(WeightBytes(all.out, "i8") - WeightBytes(inspect.out, "i8"), w) << inspect.out;
  EXPECT_EQ(WeightBytes(inspect.out, "f32") - WeightBytes(all.out, "f32"), 4 * w) << inspect.out;
  EXPECT_EQ(WeightBytes(all.out, "i32") - WeightBytes(inspect.out, "i32"), 4 * 64) << inspect.out;
}

TEST_F(CompileTest, BatchRangeIsRecordedAndEnforcedAtRunTime) {
  const QccResult r = CalibratedResnet20Plan(Path("b.plan"), {"--batch", "1:8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const QccResult inspect = Qcc({"inspect", Path("b.plan")});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("target cpu, batch 1..8, int8"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("activations at batch 8: "), std::string::npos) << inspect.out;

  std::vector<float> values(9 * 3 * 32 * 32);
  for (size_t i = 0; i < values.size(); ++i) values[i] = std::sin(0.01f * i);
  const std::string x9 = WriteFloatNpy("x9.npy", {9, 3, 32, 32}, values);
  values.resize(8 * 3 * 32 * 32);
  const std::string x8 = WriteFloatNpy("x8.npy", {8, 3, 32, 32}, values);
  const QccResult ok = Qcc({"run", Path("b.plan"), "--input", "input=" + x8});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("output 0 'logits': f32[8,10]"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("row 7 top-1: class "), std::string::npos) << ok.out;
  const QccResult nine = Qcc({"run", Path("b.plan"), "--input", "input=" + x9});
  ExpectOneLineError(nine, {"'input'", "batch 9", "[1, 8]", "x9.npy"});
  EXPECT_EQ(nine.out.find("output 0"), std::string::npos) << nine.out;
}

TEST_F(CompileTest, DefaultTableAndPlanPathsAreBesideTheModel) {
  fs::copy_file(Resnet20Model(), Path("resnet20.onnx"));
  const QccResult calib = CalibrateResnet20("", Path("resnet20.onnx"));
  ASSERT_EQ(calib.exit_code, 0) << calib.err;
  ASSERT_TRUE(fs::exists(Path("resnet20.calib.json"))) << calib.out;
  const QccResult r = Qcc({"compile", Path("resnet20.onnx"), "--int8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("plan -> " + Path("resnet20.plan")), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(Path("resnet20.plan")));
  const QccResult inspect = Qcc({"inspect", Path("resnet20.plan")});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("mse), from resnet20.onnx"), std::string::npos) << inspect.out;
  // The default table gives the same plan as naming it.
  ASSERT_EQ(CompileResnet20(Path("resnet20.calib.json"), Path("named.plan")).exit_code, 0);
  const QccResult named = Qcc({"inspect", Path("named.plan")});
  EXPECT_EQ(InspectSteps(named.out).size(), InspectSteps(inspect.out).size());
  EXPECT_EQ(WeightBytes(named.out, "i8"), WeightBytes(inspect.out, "i8"));
}

// --- bad input: one line "qcc: error: ...", exit 1, and no plan file ---

TEST_F(CompileTest, Int8WithoutATableSaysToCalibrate) {
  fs::copy_file(Resnet20Model(), Path("resnet20.onnx"));
  ExpectOneLineError(Qcc({"compile", Path("resnet20.onnx"), "--int8"}),
                     {"qcc calibrate", Path("resnet20.calib.json"), "--calib"});
  ExpectOneLineError(Qcc({"compile", Path("resnet20.onnx"), "--int8", "--calib", Path("no.json")}),
                     {Path("no.json"), "qcc calibrate"});
  EXPECT_FALSE(HasPlanOrTemp());
}

TEST_F(CompileTest, TableOfAnotherModelIsRefused) {
  ReluModelWithPlan();
  ASSERT_TRUE(fs::exists(Path("relu.json")));
  ExpectOneLineError(CompileResnet20(Path("relu.json"), Path("m.plan")),
                     {"relu.json", "another model"});
  EXPECT_FALSE(fs::exists(Path("m.plan")));
  EXPECT_FALSE(HasPlanOrTemp(".tmp"));
}

TEST_F(CompileTest, UnknownExcludeListsTheClosestNodeNames) {
  ASSERT_EQ(CalibrateResnet20(Path("t.json")).exit_code, 0);
  ExpectOneLineError(CompileResnet20(Path("t.json"), Path("m.plan"), {"--exclude", "nosuchnode"}),
                     {"'nosuchnode'", "closest node names: /"});
  // A typo of a real name: that name is among the closest.
  ExpectOneLineError(
      CompileResnet20(Path("t.json"), Path("m.plan"), {"--exclude", "/layer3/layer3.2/conv1/Cov"}),
      {"'/layer3/layer3.2/conv1/Cov'", "/layer3/layer3.2/conv1/Conv"});
  // One good and one bad name in a list: still refused.
  ExpectOneLineError(
      CompileResnet20(Path("t.json"), Path("m.plan"), {"--exclude", "Add,/conv1/Conv,Addd"}),
      {"'Addd'"});
  EXPECT_FALSE(HasPlanOrTemp());
}

TEST_F(CompileTest, PrecisionAndTargetFlagsAreChecked) {
  ASSERT_EQ(CalibrateResnet20(Path("t.json")).exit_code, 0);
  const std::string m = Resnet20Model();
  const std::string t = Path("t.json");
  const std::string plan = Path("m.plan");
  ExpectOneLineError(Qcc({"compile", m, "--calib", t, "-o", plan}),
                     {"exactly one of --int8, --fp16 and --fp32"});
  ExpectOneLineError(Qcc({"compile", m, "--int8", "--fp16", "--calib", t, "-o", plan}),
                     {"exactly one of --int8, --fp16 and --fp32"});
  ExpectOneLineError(Qcc({"compile", m, "--fp16", "--exclude", "Add", "-o", plan}),
                     {"--exclude", "--int8"});
  ExpectOneLineError(Qcc({"compile", m, "--fp16", "--per-tensor", "-o", plan}),
                     {"--per-tensor applies to --int8"});
  ExpectOneLineError(Qcc({"compile", m, "--fp32", "--asymmetric", "-o", plan}),
                     {"--asymmetric applies to --int8"});
  ExpectOneLineError(Qcc({"compile", m, "--int8", "--target", "gpu", "--calib", t, "-o", plan}),
                     {"--target gpu", "cpu and cuda"});
  EXPECT_FALSE(HasPlanOrTemp());
}

TEST_F(CompileTest, Fp16PlanNeedsNoTableHalvesTheWeightsAndTracksFp32) {
  const std::string plan = Path("h.plan");
  const QccResult c = Qcc({"compile", Resnet20Model(), "--fp16", "-o", plan});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("35 nodes in fp16"), std::string::npos) << c.out;
  const QccResult inspect = Qcc({"inspect", plan});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  // Every weight is f16 (the fused weights: 269,034 values, 2 bytes each), half the fp32 bytes.
  EXPECT_NE(inspect.out.find("weights: 538068 B (f16 538068 B) against 1084392 B"),
            std::string::npos)
      << inspect.out;
  EXPECT_EQ(inspect.out.find("QConv"), std::string::npos);
  const std::string data = CifarSubset("eval_images", 100, 4);
  const QccResult r = CompareResnet20(plan, data);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, double> f = MachineFields(r.out, "compare:");
  EXPECT_GT(f["sqnr_db"], 45.0) << r.out;  // fp16 storage: ~11 bits, far above int8's ~25 dB
  EXPECT_GE(f["agreement"], 0.97) << r.out;
}

TEST_F(CompileTest, Fp32PlanIsTheUnquantizedModel) {
  const std::string plan = Path("f.plan");
  const QccResult c = Qcc({"compile", Resnet20Model(), "--fp32", "-o", plan});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("35 nodes in fp32"), std::string::npos) << c.out;
  const QccResult inspect = Qcc({"inspect", plan});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  // The fused fp32 weights: 269,034 values of 4 bytes, no int8 step.
  EXPECT_NE(inspect.out.find("weights: 1076136 B (f32 1076136 B)"), std::string::npos)
      << inspect.out;
  EXPECT_EQ(inspect.out.find("QConv"), std::string::npos);
  const QccResult run = Qcc({"run", plan, "--test-data", Resnet20TestSet(0)});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_LT(NumberAfter(run.out, "vs output_0.pb: max abs error "), 1e-3) << run.out;
}

TEST_F(CompileTest, BadBatchRangesAreRefused) {
  ASSERT_EQ(CalibrateResnet20(Path("t.json")).exit_code, 0);
  for (const char* batch : {"0:8", "8:1", "x", "1:2:3"}) {
    ExpectOneLineError(CompileResnet20(Path("t.json"), Path("m.plan"), {"--batch", batch}),
                       {"--batch", "MIN:MAX"});
  }
  EXPECT_FALSE(HasPlanOrTemp());
}

}  // namespace
}  // namespace qcc::testing
