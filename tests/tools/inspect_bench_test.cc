// `qcc inspect` and `qcc bench` on real models, and their error paths.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "tests/tools/onnx_models.h"
#include "tests/tools/qcc_runner.h"

namespace qcc::testing {
namespace {

using ToolsInspectTest = QccTest;
using ToolsBenchTest = QccTest;

std::string Mnist() { return SharedModelDir("mnist-8") + "/model.onnx"; }

TEST_F(ToolsInspectTest, MnistSummaryCountsOpsAndWeights) {
  const QccResult r = Qcc({"inspect", Mnist()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");

  // Independent counts from the ModelProto: nodes per op type, initializer elements and bytes.
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(ReadWholeFile(Mnist())));
  std::map<std::string, int> ops;
  for (const auto& n : model.graph().node()) ++ops[n.op_type()];
  int64_t params = 0;
  int64_t f32_bytes = 0;
  for (const auto& t : model.graph().initializer()) {
    int64_t n = 1;
    for (int64_t d : t.dims()) n *= d;
    params += n;
    if (t.data_type() == onnx::TensorProto::FLOAT) f32_bytes += 4 * n;
  }
  EXPECT_EQ(params, 5998);  // mnist-8: 5,994 fp32 weights and two 2-element Reshape shapes

  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_FALSE(lines.empty());
  const std::string& summary = lines.back();
  EXPECT_EQ(summary.rfind("summary: " + std::to_string(model.graph().node_size()) + " nodes (", 0),
            0u)
      << summary;
  for (const auto& [op, count] : ops) {
    EXPECT_NE(summary.find(op + " x" + std::to_string(count)), std::string::npos)
        << op << " in " << summary;
  }
  EXPECT_NE(summary.find(std::to_string(params) + " parameters"), std::string::npos) << summary;
  EXPECT_NE(summary.find("f32 " + std::to_string(f32_bytes) + " B"), std::string::npos) << summary;
  int64_t opset = 0;
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty()) opset = o.version();
  }
  EXPECT_NE(summary.find("opset " + std::to_string(opset)), std::string::npos) << summary;
  // The IR itself: the graph input and a Conv node appear above the summary.
  EXPECT_NE(r.out.find("Input3"), std::string::npos);
  EXPECT_NE(r.out.find("Conv("), std::string::npos);
}

TEST_F(ToolsInspectTest, BadModelsGiveOneLineErrors) {
  ExpectOneLineError(Qcc({"inspect", Path("none.onnx")}), {"none.onnx", "no such file"});
  ExpectOneLineError(Qcc({"inspect", dir_.string()}), {dir_.string(), "directory"});
  const std::string model = ReadWholeFile(Mnist());
  const std::string cut = WriteBytes("cut.onnx", model.substr(0, 300));
  ExpectOneLineError(Qcc({"inspect", cut}), {cut});
  const std::string empty = WriteBytes("empty.onnx", "");
  ExpectOneLineError(Qcc({"inspect", empty}), {empty});
  const std::string foo =
      WriteBytes("foo.onnx", OneNodeModel("FrobnicateV9", {{"x", {2}}}, {{"y", {2}}}));
  ExpectOneLineError(Qcc({"inspect", foo}), {"FrobnicateV9"});
}

// Parses the last line "bench: model=... batch=... threads=... median_ms=... ...".
std::map<std::string, std::string> BenchFields(const std::string& out) {
  std::map<std::string, std::string> fields;
  const std::vector<std::string> lines = Lines(out);
  if (lines.empty() || lines.back().rfind("bench: ", 0) != 0) return fields;
  for (absl::string_view kv : absl::StrSplit(lines.back().substr(7), ' ')) {
    const size_t eq = kv.find('=');
    if (eq != absl::string_view::npos) {
      fields[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
    }
  }
  return fields;
}

TEST_F(ToolsBenchTest, MnistPrintsConsistentTimings) {
  const QccResult r =
      Qcc({"bench", Mnist(), "--threads", "1", "--warmup", "1", "--iters", "5", "--batch", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");  // stderr is a file here: no progress line
  std::map<std::string, std::string> f = BenchFields(r.out);
  ASSERT_EQ(f.size(), 7u) << r.out;
  EXPECT_EQ(f["model"], Mnist());
  EXPECT_EQ(f["device"], "cpu");  // an ONNX model runs on the CPU evaluator
  EXPECT_EQ(f["batch"], "1");
  EXPECT_EQ(f["threads"], "1");
  double median = 0, p90 = 0, throughput = 0;
  ASSERT_TRUE(absl::SimpleAtod(f["median_ms"], &median));
  ASSERT_TRUE(absl::SimpleAtod(f["p90_ms"], &p90));
  ASSERT_TRUE(absl::SimpleAtod(f["throughput"], &throughput));
  EXPECT_GT(median, 0);
  EXPECT_GE(p90, median);
  EXPECT_NEAR(throughput, 1000.0 / median, 0.01 * throughput);
}

TEST_F(ToolsBenchTest, FixedBatchIsKeptAndSaid) {
  // mnist-8 pins its batch to 1: --batch 4 is reported as ignored.
  const QccResult r = Qcc({"bench", Mnist(), "--batch", "4", "--warmup", "0", "--iters", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--batch 4 ignored"), std::string::npos) << r.err;
  EXPECT_EQ(BenchFields(r.out)["batch"], "1");
}

TEST_F(ToolsBenchTest, DynamicBatchTakesTheBatchFlag) {
  // y = Relu(x) with x: f32[N,3]; throughput counts N samples per run.
  const std::string model =
      WriteBytes("relu.onnx", OneNodeModel("Relu", {{"x", {-1, 3}}}, {{"y", {-1, 3}}}));
  const QccResult r = Qcc({"bench", model, "--batch", "8", "--iters", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("input 'x': f32[8,3]"), std::string::npos) << r.out;
  std::map<std::string, std::string> f = BenchFields(r.out);
  EXPECT_EQ(f["batch"], "8");
  double median = 0, throughput = 0;
  ASSERT_TRUE(absl::SimpleAtod(f["median_ms"], &median));
  ASSERT_TRUE(absl::SimpleAtod(f["throughput"], &throughput));
  EXPECT_NEAR(throughput, 8 * 1000.0 / median, 0.01 * throughput);
}

TEST_F(ToolsBenchTest, OtherDynamicExtentsNeedAShape) {
  const std::string model =
      WriteBytes("relu.onnx", OneNodeModel("Relu", {{"x", {1, -1}}}, {{"y", {1, -1}}}));
  ExpectOneLineError(Qcc({"bench", model, "--iters", "1"}), {"'x'", "axis 1", "--shape"});
  const QccResult r = Qcc({"bench", model, "--iters", "1", "--shape", "x=1,5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("input 'x': f32[1,5]"), std::string::npos) << r.out;
  ExpectOneLineError(Qcc({"bench", model, "--shape", "z=1,5"}), {"'z'", "'x'"});
  ExpectOneLineError(Qcc({"bench", model, "--shape", "x=1,five"}), {"--shape", "x=1,five"});
}

// --profile: one row per step (a node of the fused graph, or a plan step) and one per step kind,
// above the usual summary lines.
void ExpectProfile(const QccResult& r, int iters, const std::string& step_kind) {
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = Lines(r.out);
  size_t head = 0;
  while (head < lines.size() && lines[head].rfind("profile: ", 0) != 0) ++head;
  ASSERT_LT(head, lines.size()) << r.out;
  int runs = 0, steps = 0;
  ASSERT_EQ(std::sscanf(lines[head].c_str(), "profile: %d runs, %d steps", &runs, &steps), 2);
  EXPECT_EQ(runs, iters);
  ASSERT_GT(steps, 0);
  // Step rows: "  INDEX  MS  SHARE%  KIND  NAME"; each index once, shares summing to 100%.
  std::vector<bool> seen(static_cast<size_t>(steps), false);
  double share_sum = 0;
  bool kind_seen = false;
  size_t i = head + 2;
  for (; i < lines.size() && i < head + 2 + static_cast<size_t>(steps); ++i) {
    std::vector<std::string> f = absl::StrSplit(lines[i], ' ', absl::SkipEmpty());
    ASSERT_GE(f.size(), 4u) << lines[i];
    int index = -1;
    double ms = -1, share = -1;
    ASSERT_TRUE(absl::SimpleAtoi(f[0], &index)) << lines[i];
    ASSERT_TRUE(absl::SimpleAtod(f[1], &ms)) << lines[i];
    ASSERT_TRUE(absl::SimpleAtod(f[2].substr(0, f[2].size() - 1), &share)) << lines[i];
    ASSERT_GE(index, 0);
    ASSERT_LT(index, steps);
    EXPECT_FALSE(seen[static_cast<size_t>(index)]) << "step " << index << " twice";
    seen[static_cast<size_t>(index)] = true;
    EXPECT_GE(ms, 0);
    share_sum += share;
    kind_seen |= f[3] == step_kind;
  }
  EXPECT_EQ(i, head + 2 + static_cast<size_t>(steps)) << r.out;
  EXPECT_NEAR(share_sum, 100.0, 0.1 * steps);
  EXPECT_TRUE(kind_seen) << step_kind << " in\n" << r.out;
  ASSERT_LT(i, lines.size());
  EXPECT_EQ(lines[i].rfind("  by kind", 0), 0u) << lines[i];
  EXPECT_NE(r.out.find("  " + step_kind + " "), std::string::npos);
  EXPECT_EQ(Lines(r.out).back().rfind("bench: ", 0), 0u);  // still the last line
}

TEST_F(ToolsBenchTest, ProfileTimesEveryStep) {
  // mnist-8's fused graph on the evaluator, then its fp32 plan on the runtime.
  ExpectProfile(Qcc({"bench", Mnist(), "--iters", "3", "--profile"}), 3, "Conv");
  const std::string plan = Path("mnist.plan");
  ASSERT_EQ(Qcc({"compile", Mnist(), "--fp32", "-o", plan}).exit_code, 0);
  ExpectProfile(Qcc({"bench", plan, "--iters", "2", "--profile"}), 2, "Conv");
}

TEST_F(ToolsBenchTest, BadModelIsAnError) {
  ExpectOneLineError(Qcc({"bench", Path("none.onnx")}), {"none.onnx", "no such file"});
}

}  // namespace
}  // namespace qcc::testing
