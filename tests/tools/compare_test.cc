// `qcc compare MODEL MODEL.plan DATA` end to end on the real ResNet-20 and CIFAR images: the
// machine-readable line, labelled accuracy, the per-layer ranking, metrics checked against
// separate `qcc run`s, and plan files that are damaged, from another model or fed wrong inputs.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontend/tensor_proto.h"
#include "gtest/gtest.h"
#include "runtime/plan_format.h"
#include "tests/tools/plan_helpers.h"
#include "tests/tools/qcc_runner.h"

namespace qcc::testing {
namespace {

namespace fs = std::filesystem;

using CompareTest = PlanTest;

// Checks the per-layer table: ranks 1..n, worst SQNR first, one row per tensor, as many rows as
// the header says, and every tensor an int8 output of the plan.
void ExpectRankedTable(const std::vector<PerLayerRow>& rows, const std::string& compare_out,
                       const std::vector<InspectStep>& steps) {
  EXPECT_NE(compare_out.find(
                absl::StrFormat("per layer (%d int8 tensors, worst SQNR first", rows.size())),
            std::string::npos)
      << compare_out;
  std::set<std::string> int8_outputs, tensors;
  for (const InspectStep& s : steps) {
    const std::string suffix = ":int8";
    if (s.output.size() > suffix.size() &&
        s.output.compare(s.output.size() - suffix.size(), suffix.size(), suffix) == 0) {
      int8_outputs.insert(s.output.substr(0, s.output.size() - suffix.size()));
    }
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].rank, static_cast<int>(i) + 1);
    if (i > 0) {
      EXPECT_LE(rows[i - 1].sqnr_db, rows[i].sqnr_db) << "row " << i + 1;
    }
    EXPECT_TRUE(tensors.insert(rows[i].tensor).second) << rows[i].tensor << " listed twice";
    EXPECT_TRUE(int8_outputs.count(rows[i].tensor)) << rows[i].tensor << " is no int8 output";
  }
}

TEST_F(CompareTest, Resnet20PlanAgreesWithFp32AndRanksItsLayers) {
  ASSERT_EQ(CalibratedResnet20Plan(Path("m.plan")).exit_code, 0);
  const std::string data = CifarSubset("images", 100, 7);  // not the calibration images
  const std::vector<std::string> labelled = {"--labels-from-folders", "--max-samples", "64"};
  const QccResult r = CompareResnet20(Path("m.plan"), data, labelled);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, double> f = MachineFields(r.out, "compare:");
  EXPECT_EQ(f["samples"], 64) << r.out;
  EXPECT_GE(f["agreement"], 0.85) << r.out;
  EXPECT_GE(f["fp32_top1"], 0.5) << r.out;  // 81% on all 5,000 images (DATA.md)
  EXPECT_LE(std::fabs(f["plan_top1"] - f["fp32_top1"]), 0.10) << r.out;
  ASSERT_TRUE(f.count("plan_top5")) << r.out;  // 10 classes: top-5 is reported
  EXPECT_GE(f["plan_top5"], f["plan_top1"]) << r.out;
  EXPECT_GT(f["sqnr_db"], 15) << r.out;
  EXPECT_GT(f["cosine"], 0.99) << r.out;
  EXPECT_LE(f["cosine"], 1.0) << r.out;
  EXPECT_GT(f["max_abs"], 0) << r.out;
  EXPECT_NE(r.out.find("labelled (64 samples with a label)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(absl::StrFormat("output 'logits': SQNR %.2f dB", f["sqnr_db"])),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.err.find("\r"), std::string::npos) << "progress bar drawn when piped";

  // --per-layer: the same numbers, plus a ranked table of every int8 tensor.
  std::vector<std::string> per_layer_flags = labelled;
  per_layer_flags.push_back("--per-layer");
  const QccResult p = CompareResnet20(Path("m.plan"), data, per_layer_flags);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(LineStartingWith(p.out, "compare:"), LineStartingWith(r.out, "compare:"));
  const std::vector<PerLayerRow> rows = PerLayerRows(p.out);
  ASSERT_GE(rows.size(), 20u) << p.out;
  const QccResult inspect = Qcc({"inspect", Path("m.plan")});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  const std::vector<InspectStep> steps = InspectSteps(inspect.out);
  ExpectRankedTable(rows, p.out, steps);
  // Every conv output is ranked, and the logits row is the output SQNR itself.
  std::set<std::string> ranked;
  for (const PerLayerRow& row : rows) ranked.insert(row.tensor);
  for (const InspectStep& s : steps) {
    if (s.kernel == "QConv") {
      EXPECT_TRUE(ranked.count(s.output.substr(0, s.output.size() - 5))) << s.output;
    }
  }
  bool found_logits = false;
  for (const PerLayerRow& row : rows) {
    if (row.tensor != "logits") continue;
    found_logits = true;
    EXPECT_EQ(row.kernel, "QGemm");
    EXPECT_NEAR(row.sqnr_db, f["sqnr_db"], 0.011);
  }
  EXPECT_TRUE(found_logits) << p.out;
  for (const PerLayerRow& row : rows) EXPECT_GT(row.sqnr_db, 10) << row.tensor;

  // Batch size and thread count change nothing.
  std::vector<std::string> other = labelled;
  other.insert(other.end(), {"--batch", "5", "--threads", "1"});
  const QccResult b = CompareResnet20(Path("m.plan"), data, other);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(LineStartingWith(b.out, "compare:"), LineStartingWith(r.out, "compare:"));
}

TEST_F(CompareTest, ShardsSplitTheSamplesAsCalibrateDoes) {
  // --shard i/N compares every N-th sample from the i-th on, so that a plan calibrated with
  // calibrate --shard 0/N can be measured on the samples its table did not see.
  ASSERT_EQ(CalibratedResnet20Plan(Path("m.plan")).exit_code, 0);
  const std::string data = CifarSubset("images", 30, 3);  // 3 per class, not calibrated on
  std::map<std::string, double> fields[3];
  const char* shards[3] = {"0/3", "1/3", "2/3"};
  for (int i = 0; i < 3; ++i) {
    const QccResult r = CompareResnet20(Path("m.plan"), data, {"--shard", shards[i]});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    fields[i] = MachineFields(r.out, "compare:");
    EXPECT_EQ(fields[i]["samples"], 10) << r.out;
  }
  const QccResult all = CompareResnet20(Path("m.plan"), data, {});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  const std::map<std::string, double> whole = MachineFields(all.out, "compare:");
  EXPECT_EQ(whole.at("samples"), 30);
  // Agreement over the whole set is the mean over its three equal shards.
  EXPECT_NEAR(whole.at("agreement"),
              (fields[0]["agreement"] + fields[1]["agreement"] + fields[2]["agreement"]) / 3, 1e-9);
  ExpectOneLineError(CompareResnet20(Path("m.plan"), data, {"--shard", "3/3"}),
                     {"--shard '3/3'", "i/N"});
}

TEST_F(CompareTest, AsymmetricPlanAgreesAndRanksWithZeroPoints) {
  ASSERT_EQ(CalibratedResnet20Plan(Path("a.plan"), {"--asymmetric"}).exit_code, 0);
  const std::string data = CifarSubset("images", 200, 4);
  const QccResult r =
      CompareResnet20(Path("a.plan"), data, {"--labels-from-folders", "--per-layer"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, double> f = MachineFields(r.out, "compare:");
  EXPECT_EQ(f["samples"], 40) << r.out;
  EXPECT_GE(f["agreement"], 0.85) << r.out;
  EXPECT_LE(std::fabs(f["plan_top1"] - f["fp32_top1"]), 0.10) << r.out;
  // A zero point dropped when dequantizing would push these far below 10 dB.
  const std::vector<PerLayerRow> rows = PerLayerRows(r.out);
  ASSERT_GE(rows.size(), 20u) << r.out;
  for (const PerLayerRow& row : rows) EXPECT_GT(row.sqnr_db, 10) << row.tensor;
  const QccResult inspect = Qcc({"inspect", Path("a.plan")});
  ExpectRankedTable(rows, r.out, InspectSteps(inspect.out));
}

TEST_F(CompareTest, MetricsMatchSeparateRunsOfModelAndPlan) {
  ASSERT_EQ(CalibratedResnet20Plan(Path("m.plan")).exit_code, 0);
  // Four samples: the model's three test images (set 1 holds a batch of 2, split here) and a
  // smooth synthetic image.
  fs::create_directories(Path("samples"));
  std::vector<std::string> files = {Path("samples/0.pb")};
  fs::copy_file(Resnet20TestSet(0) + "/input_0.pb", files.back());
  absl::StatusOr<Tensor> pair = frontend::ReadTensorProtoFile(Resnet20TestSet(1) + "/input_0.pb");
  ASSERT_TRUE(pair.ok()) << pair.status();
  ASSERT_EQ(pair->dims(), (Dims{2, 3, 32, 32}));
  const float* pixels = pair->data<float>();
  const size_t image = 3 * 32 * 32;
  for (int k = 1; k <= 2; ++k) {
    const float* first = pixels + (k - 1) * image;
    files.push_back(WriteFloatNpy("samples/" + std::to_string(k) + ".npy", {1, 3, 32, 32},
                                  std::vector<float>(first, first + image)));
  }
  std::vector<float> v(image);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 2 * std::sin(0.01f * i) - 0.5f;
  files.push_back(WriteFloatNpy("samples/3.npy", {1, 3, 32, 32}, v));
  const QccResult r = Qcc({"compare", Resnet20Model(), Path("m.plan"), Path("samples")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, double> f = MachineFields(r.out, "compare:");
  ASSERT_EQ(f["samples"], 4) << r.out;
  EXPECT_EQ(f.count("fp32_top1"), 0u) << "no labels were given: " << r.out;

  // The same numbers from `qcc run` of the model and of the plan, sample by sample.
  double signal = 0, noise = 0, dot = 0, got_energy = 0, max_abs = 0;
  int agree = 0;
  for (size_t k = 0; k < files.size(); ++k) {
    std::vector<Tensor> outs;
    for (const std::string& what : {Resnet20Model(), Path("m.plan")}) {
      const std::string dir = Path("out" + std::to_string(outs.size()));
      const QccResult run = Qcc({"run", what, "--input", "input=" + files[k], "--output-dir", dir});
      ASSERT_EQ(run.exit_code, 0) << run.err;
      absl::StatusOr<Tensor> t = frontend::ReadTensorProtoFile(dir + "/output_0.pb");
      ASSERT_TRUE(t.ok()) << t.status();
      ASSERT_EQ(t->numel(), 10);
      outs.push_back(*t);
    }
    int want_best = 0, got_best = 0;
    for (int c = 0; c < 10; ++c) {
      const double a = outs[0].GetAsDouble(c), b = outs[1].GetAsDouble(c);
      signal += a * a;
      noise += (a - b) * (a - b);
      dot += a * b;
      got_energy += b * b;
      max_abs = std::max(max_abs, std::fabs(a - b));
      if (a > outs[0].GetAsDouble(want_best)) want_best = c;
      if (b > outs[1].GetAsDouble(got_best)) got_best = c;
    }
    agree += want_best == got_best;
  }
  ASSERT_GT(noise, 0) << "an int8 plan equal to fp32 everywhere is suspicious";
  EXPECT_NEAR(f["sqnr_db"], 10 * std::log10(signal / noise), 0.006) << r.out;
  EXPECT_NEAR(f["cosine"], dot / std::sqrt(signal * got_energy), 6e-6) << r.out;
  EXPECT_NEAR(f["max_abs"], max_abs, 1e-3 * max_abs) << r.out;
  EXPECT_NEAR(f["agreement"], agree / 4.0, 1e-4) << r.out;
}

// --- plans that are from another model, damaged, or fed the wrong input ---

TEST_F(CompareTest, PlanOfAnotherModelIsRefused) {
  ReluModelWithPlan();
  ASSERT_TRUE(fs::exists(Path("relu.plan")));
  const std::string data = CifarSubset("images", 0, 1);
  ExpectOneLineError(CompareResnet20(Path("relu.plan"), data), {"relu.plan", "another model"});
}

TEST_F(CompareTest, DamagedPlansAreOneLineErrorsNamingTheFile) {
  ASSERT_EQ(CalibratedResnet20Plan(Path("m.plan")).exit_code, 0);
  const std::string plan = ReadWholeFile(Path("m.plan"));
  ASSERT_GT(plan.size(), runtime::kPlanHeaderBytes);
  WriteBytes("cut.plan", plan.substr(0, plan.size() / 2));
  WriteBytes("tiny.plan", plan.substr(0, 20));
  std::string version = plan;
  version[runtime::kPlanVersionOffset] = static_cast<char>(runtime::kPlanFormatVersion + 1);
  WriteBytes("version.plan", version);  // nothing recomputed: the checksum no longer holds
  fs::copy_file(Resnet20Model(), Path("onnx.plan"));
  const std::string data = CifarSubset("images", 0, 1);
  const std::vector<std::pair<std::string, std::string>> cases = {{"cut.plan", "truncated"},
                                                                  {"tiny.plan", "truncated"},
                                                                  {"version.plan", "version"},
                                                                  {"onnx.plan", "not a qcc plan"}};
  for (const auto& [name, why] : cases) {
    SCOPED_TRACE(name);
    ExpectOneLineError(Qcc({"inspect", Path(name)}), {name, why});
    const QccResult run = Qcc({"run", Path(name), "--test-data", Resnet20TestSet(0)});
    ExpectOneLineError(run, {name, why});
    EXPECT_EQ(run.out, "");
    ExpectOneLineError(CompareResnet20(Path(name), data), {name, why});
  }
  ExpectOneLineError(Qcc({"inspect", Path("none.plan")}), {"none.plan", "not found"});
}

TEST_F(CompareTest, WrongInputShapeNamesTheInputBothShapesAndTheFile) {
  ASSERT_EQ(CalibratedResnet20Plan(Path("m.plan")).exit_code, 0);
  const std::string x = WriteFloatNpy("digit.npy", {1, 1, 28, 28}, std::vector<float>(784, 0.5f));
  const QccResult r = Qcc({"run", Path("m.plan"), "--input", "input=" + x});
  ExpectOneLineError(r, {"'input'", "[N,3,32,32]", "[1,1,28,28]", "digit.npy"});
  EXPECT_EQ(r.out, "");
  ExpectOneLineError(Qcc({"run", Path("m.plan"), "--input", "image=" + x}), {"'image'", "'input'"});
}

TEST_F(CompareTest, InspectOfAPlanWhoseModelHasNoWeights) {
  ReluModelWithPlan();
  const QccResult r = Qcc({"inspect", Path("relu.plan")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("QLut"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("against 0 B in the source model"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("0x smaller"), std::string::npos) << r.out;
}

TEST_F(CompareTest, PerLayerRanksTheQuantizedModelInputToo) {
  const std::string model = ReluModelWithPlan();
  const QccResult r = Qcc({"compare", model, Path("relu.plan"), Path("relu_data"), "--per-layer"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<PerLayerRow> rows = PerLayerRows(r.out);
  ASSERT_FALSE(rows.empty()) << r.out;
  std::map<std::string, PerLayerRow> by_tensor;
  for (const PerLayerRow& row : rows) by_tensor[row.tensor] = row;
  ASSERT_TRUE(by_tensor.count("y")) << r.out;
  EXPECT_EQ(by_tensor["y"].kernel, "QLut");
  EXPECT_NEAR(by_tensor["y"].sqnr_db, MachineFields(r.out, "compare:")["sqnr_db"], 0.011);
  EXPECT_TRUE(by_tensor.count("x")) << r.out;
  EXPECT_EQ(by_tensor["x"].kernel, "Quantize");
}

TEST_F(CompareTest, PerLayerMeasuresASaturatingInputAgainstWhatItsConsumerCanTellApart) {
  // x -> HardSigmoid (alpha 0.2, beta 0.5: constant outside [-2.5, 2.5]) -> y. The plan
  // quantizes x over [-2.5, 2.5] only, so -6 becomes -2.5, which HardSigmoid maps to 0 as it
  // maps -6: per layer, x is measured against its values clamped to [-2.5, 2.5].
  const std::string model =
      WriteBytes("hsig.onnx", OneNodeModel("HardSigmoid", {{"x", {-1, 4}}}, {{"y", {-1, 4}}}));
  fs::create_directories(Path("hsig_data"));
  WriteFloatNpy("hsig_data/0.npy", {1, 4}, {-6, -1, 0.5f, 2});
  WriteFloatNpy("hsig_data/1.npy", {1, 4}, {-4, 1, 1.5f, 5});
  ASSERT_EQ(Qcc({"calibrate", model, Path("hsig_data"), "-o", Path("hsig.json")}).exit_code, 0);
  const QccResult p = Qcc({"compile", model, "--int8", "--calib", Path("hsig.json"),
                           "--calib-method", "minmax", "-o", Path("hsig.plan")});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const QccResult r = Qcc({"compare", model, Path("hsig.plan"), Path("hsig_data"), "--per-layer"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, PerLayerRow> by_tensor;
  for (const PerLayerRow& row : PerLayerRows(r.out)) by_tensor[row.tensor] = row;
  ASSERT_TRUE(by_tensor.count("x")) << r.out;
  // Step 2.5 / 127: errors below 0.01 on values of rms 1.9 (against the unclamped values, -6 and
  // -4 would cost 3.5 and 1.5 and the SQNR would be about 6 dB).
  EXPECT_GT(by_tensor["x"].sqnr_db, 35.0) << r.out;
  // The output is exact up to its own rounding: HardSigmoid saw every value it could use.
  EXPECT_GT(MachineFields(r.out, "compare:")["sqnr_db"], 35.0) << r.out;
}

}  // namespace
}  // namespace qcc::testing
