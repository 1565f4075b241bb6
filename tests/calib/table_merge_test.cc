// Merging shard tables, and the model fingerprint that ties a table to its model.
#include <memory>
#include <string>

#include "calib/calib_table.h"
#include "frontend/onnx_importer.h"
#include "gtest/gtest.h"
#include "ir/fingerprint.h"
#include "tests/calib/table_test_util.h"

namespace qcc::calib {
namespace {

using testing::MakeTable;

TEST(CalibTableMergeTest, MergedShardsEqualOneRunByteForByte) {
  const std::string all = *CalibTableToJson(MakeTable(0, 20));
  const CalibTable even = MakeTable(0, 20, 2, {0});
  const CalibTable odd = MakeTable(0, 20, 2, {1});
  EXPECT_EQ(ShardToString(even.settings), "0/2");
  auto merged = MergeCalibTables(even, odd);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->samples, 20);
  EXPECT_EQ(ShardToString(merged->settings), "0/1");
  EXPECT_EQ(*CalibTableToJson(*merged), all);
  auto reversed = MergeCalibTables(odd, even);
  ASSERT_TRUE(reversed.ok());
  EXPECT_EQ(*CalibTableToJson(*reversed), all);
}

TEST(CalibTableMergeTest, PartialMergesThroughFiles) {
  std::vector<std::string> paths;
  for (int i = 0; i < 3; ++i) {
    paths.push_back(testing::TempPath(absl::StrCat("shard", i, ".json")));
    ASSERT_TRUE(WriteCalibTable(paths[i], MakeTable(0, 15, 3, {i})).ok());
  }
  auto t0 = ReadCalibTable(paths[0]);
  auto t2 = ReadCalibTable(paths[2]);
  auto t1 = ReadCalibTable(paths[1]);
  ASSERT_TRUE(t0.ok() && t1.ok() && t2.ok());
  auto partial = MergeCalibTables(*t0, *t2);
  ASSERT_TRUE(partial.ok()) << partial.status();
  EXPECT_EQ(ShardToString(partial->settings), "0,2/3");
  // The partial merge survives a round trip through a file.
  const std::string ppath = testing::TempPath("partial.json");
  ASSERT_TRUE(WriteCalibTable(ppath, *partial).ok());
  auto partial_back = ReadCalibTable(ppath);
  ASSERT_TRUE(partial_back.ok()) << partial_back.status();
  auto full = MergeCalibTables(*partial_back, *t1);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(*CalibTableToJson(*full), *CalibTableToJson(MakeTable(0, 15)));
  // Merging a shard twice would count its samples twice.
  auto twice = MergeCalibTables(*partial_back, *t2);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("both hold shard 2/3"), std::string::npos)
      << twice.status();
  EXPECT_NE(twice.status().message().find(paths[2]), std::string::npos) << twice.status();
  for (const std::string& p : paths) std::remove(p.c_str());
  std::remove(ppath.c_str());
}

TEST(CalibTableMergeTest, RefusesTablesOfDifferentModelsOrPreprocessing) {
  CalibTable a = MakeTable(0, 4, 2, {0});
  CalibTable b = MakeTable(0, 4, 2, {1});
  a.source = "a.json";
  b.source = "b.json";
  b.fingerprint = "fedcba9876543210";
  auto r = MergeCalibTables(a, b);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  for (const char* needle :
       {"a.json and b.json", "different models", "0123456789abcdef", "fedcba9876543210"}) {
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status();
  }
  b.fingerprint = a.fingerprint;
  b.preprocessing = R"({"resize": 40})";
  r = MergeCalibTables(a, b);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("preprocessing differs"), std::string::npos) << r.status();
  r = MergeCalibTables(a, MakeTable(0, 4, 3, {1}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("different --shard splits"), std::string::npos) << r.status();
}

// x -> Conv(w, b) -> LeakyRelu -> y.
std::unique_ptr<ir::Graph> SmallGraph(float w0 = 0.5f, float alpha = 0.1f,
                                      const char* conv_name = "conv") {
  auto g = std::make_unique<ir::Graph>();
  g->set_opset(17);
  ir::Value* x = g->AddInput("x", ir::TensorType(DType::kFloat32, {1, 2, 4, 4}));
  ir::Value* w =
      g->NewConstant("w", Tensor::FromVector<float>(DType::kFloat32, {1, 2, 1, 1}, {w0, -0.25f}));
  ir::Value* b = g->NewConstant("b", Tensor::FromVector<float>(DType::kFloat32, {1}, {1.0f}));
  ir::Node* conv = g->AddNode(ir::OpKind::kConv, conv_name, {x, w, b}, {"c"});
  ir::Node* act = g->AddNode(ir::OpKind::kLeakyRelu, "act", {conv->output(0)}, {"y"});
  act->mutable_attrs<ir::LeakyReluAttrs>().alpha = alpha;
  g->AddOutput(act->output(0));
  return g;
}

TEST(CalibTableFingerprintTest, StableAndSensitive) {
  const std::string fp = ir::Fingerprint(*SmallGraph());
  EXPECT_EQ(fp.size(), 16u);
  EXPECT_EQ(fp.find_first_not_of("0123456789abcdef"), std::string::npos) << fp;
  EXPECT_EQ(ir::Fingerprint(*SmallGraph()), fp);
  // Pinned: the hash must not change across runs, builds or machines.
  EXPECT_EQ(fp, "17939f5d7099220a");
  EXPECT_NE(ir::Fingerprint(*SmallGraph(0.5000001f)), fp);             // one weight, one ulp
  EXPECT_NE(ir::Fingerprint(*SmallGraph(0.5f, 0.1000001f)), fp);       // an attribute
  EXPECT_EQ(ir::Fingerprint(*SmallGraph(0.5f, 0.1f, "renamed")), fp);  // node names do not count
  auto renamed = SmallGraph();
  renamed->FindValue("c")->set_name("c2");
  EXPECT_NE(ir::Fingerprint(*renamed), fp);  // tensor names do
}

TEST(CalibTableFingerprintTest, CheckFingerprintNamesBothModels) {
  auto g = SmallGraph();
  CalibTable t = MakeTable(0, 1);
  t.source = "model.calib.json";
  absl::Status s = CheckFingerprint(t, *g);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  const std::string want = absl::StrCat(
      "calibration table model.calib.json was made for another model (fingerprint ", t.fingerprint,
      ", this model ", ir::Fingerprint(*g), "): run qcc calibrate again");
  EXPECT_EQ(s.message(), want);
  t.fingerprint = ir::Fingerprint(*g);
  EXPECT_TRUE(CheckFingerprint(t, *g).ok());
}

TEST(CalibTableFingerprintTest, RealModelImportsHashTheSame) {
  const std::string model = std::string(QCC_SHARED_DIR) + "/models/resnet20-cifar10/model.onnx";
  auto a = frontend::ImportOnnxFile(model);
  auto b = frontend::ImportOnnxFile(model);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  const std::string fp = ir::Fingerprint(**a);
  EXPECT_EQ(ir::Fingerprint(**b), fp);
  // Changing one weight of the last constant changes it.
  for (auto it = (*b)->values().rbegin(); it != (*b)->values().rend(); ++it) {
    const Tensor* c = (*it)->constant();
    if (c == nullptr || c->dtype() != DType::kFloat32 || c->numel() == 0) continue;
    Tensor changed = c->Clone();
    changed.data<float>()[c->numel() - 1] += 1.0f;
    (*it)->set_constant(changed);
    break;
  }
  EXPECT_NE(ir::Fingerprint(**b), fp);
}

}  // namespace
}  // namespace qcc::calib
