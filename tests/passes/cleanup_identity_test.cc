// remove-identity: Identity and inference Dropout are forwarded; graph outputs keep their names.
#include <vector>

#include "frontend/tensor_proto.h"
#include "gtest/gtest.h"
#include "ir/shape_inference.h"
#include "tests/passes/cleanup_test_util.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

TEST(PassesIdentityTest, ForwardsIdentityAndDropoutAndKeepsOutputNames) {
  ir::Graph g;
  g.set_opset(17);
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {2, 2}));
  ir::Value* a = g.AddNode(OpKind::kIdentity, "id0", {x}, {"a"})->output(0);
  ir::Value* r = g.AddNode(OpKind::kRelu, "relu", {a}, {"r"})->output(0);
  ir::Value* d = g.AddNode(OpKind::kDropout, "drop", {r}, {"d", "mask"})->output(0);
  g.AddOutput(g.AddNode(OpKind::kIdentity, "id_out", {d}, {"y"})->output(0));
  // Identity straight from the graph input to a graph output cannot be removed: two names.
  g.AddOutput(g.AddNode(OpKind::kIdentity, "id_in_out", {x}, {"x_copy"})->output(0));
  ASSERT_TRUE(ir::InferShapes(g).ok());

  auto record = RunOnePass(g, passes::CreateRemoveIdentityPass());
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_TRUE(record->changed);
  EXPECT_EQ(record->summary, "-2 Identity, -1 Dropout");
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0]->kind(), OpKind::kRelu);
  EXPECT_EQ(g.nodes()[0]->input(0), x);
  EXPECT_EQ(g.nodes()[1]->name(), "id_in_out");
  // Relu's output took the graph output's name.
  EXPECT_EQ(g.outputs()[0], g.nodes()[0]->output(0));
  EXPECT_EQ(g.outputs()[0]->name(), "y");
  EXPECT_EQ(g.outputs()[1]->name(), "x_copy");

  const Tensor in = Tensor::FromVector<float>(DType::kFloat32, {2, 2}, {-1.f, 2.f, 0.5f, -3.f});
  auto got = RunGraph(g, {in});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)[0].ToFloatVector(), std::vector<float>({0.f, 2.f, 0.5f, 0.f}));
  EXPECT_EQ((*got)[1].ToFloatVector(), in.ToFloatVector());
}

TEST(PassesIdentityTest, KeepsTrainingDropoutAndDropoutWhoseMaskIsRead) {
  ir::Graph g;
  g.set_opset(17);
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {4}));
  ir::Value* ratio = g.NewConstant("ratio", Tensor::FromVector<float>(DType::kFloat32, {}, {.5f}));
  ir::Value* on = g.NewConstant("on", Tensor::FromVector<uint8_t>(DType::kBool, {}, {1}));
  g.AddOutput(g.AddNode(OpKind::kDropout, "train", {x, ratio, on}, {"t"})->output(0));
  ir::Node* masked = g.AddNode(OpKind::kDropout, "masked", {x}, {"m", "mask"});
  g.AddOutput(masked->output(0));
  g.AddOutput(masked->output(1));
  ASSERT_TRUE(ir::InferShapes(g).ok());
  auto record = RunOnePass(g, passes::CreateRemoveIdentityPass());
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_FALSE(record->changed);
  EXPECT_EQ(g.nodes().size(), 2u);
}

TEST(PassesIdentityTest, SqueezenetFp16DropoutIsRemoved) {
  const std::string model = ModelPath("squeezenet1.1", "model-fp16.onnx");
  auto before = frontend::ImportOnnxFile(model);
  auto after = frontend::ImportOnnxFile(model);
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(CountOps(**before, OpKind::kDropout), 1);
  auto records = passes::RunPipeline(**after, CleanupPipeline());
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_EQ((*records)[0].name, "remove-identity");
  EXPECT_EQ((*records)[0].summary, "-1 Dropout");
  EXPECT_EQ(CountOps(**after, OpKind::kDropout), 0);
  EXPECT_EQ(CountOps(**after, OpKind::kIdentity), 0);
  EXPECT_EQ((*after)->nodes().size() + 1, (*before)->nodes().size());
  EXPECT_EQ((*after)->outputs()[0]->name(), (*before)->outputs()[0]->name());

  auto input =
      frontend::ReadTensorProtoFile(ModelPath("squeezenet1.1", "test_data_set_0") + "/input_0.pb");
  ASSERT_TRUE(input.ok()) << input.status();
  auto want = RunGraph(**before, {*input});
  auto got = RunGraph(**after, {*input});
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(CompareTensors((*got)[0], (*want)[0], 0, 0), "");
}

}  // namespace
}  // namespace qcc::testing
