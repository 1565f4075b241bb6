// eliminate-dead-code: unused branches and constants go, graph outputs and Observe nodes stay.
#include <algorithm>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/shape_inference.h"
#include "tests/passes/cleanup_test_util.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

// y = Relu(x) + b; a dead branch Exp(Neg(x)) * w (w used nowhere else), an unused constant, and
// with `observe`, an Observe node on Relu(x) that must survive although it has no outputs (the
// CPU evaluator has no kernel for it, so the numeric check runs without).
void BuildGraph(ir::Graph& g, bool observe) {
  g.set_opset(17);
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {2, 3}));
  ir::Value* b = g.NewConstant("b", Tensor::FromVector<float>(DType::kFloat32, {3}, {1, 2, 3}));
  ir::Value* w = g.NewConstant("w", Tensor::FromVector<float>(DType::kFloat32, {3}, {4, 5, 6}));
  g.NewConstant("unused", Tensor::FromVector<float>(DType::kFloat32, {1}, {7}));
  ir::Value* r = g.AddNode(OpKind::kRelu, "relu", {x}, {"r"})->output(0);
  ir::Value* neg = g.AddNode(OpKind::kNeg, "neg", {x}, {"neg"})->output(0);
  ir::Value* e = g.AddNode(OpKind::kExp, "exp", {neg}, {"e"})->output(0);
  g.AddNode(OpKind::kMul, "dead_mul", {e, w}, {"dead"});
  if (observe) g.AddNode(OpKind::kObserve, "observe", {r}, {});
  g.AddOutput(g.AddNode(OpKind::kAdd, "add", {r, b}, {"y"})->output(0));
  ASSERT_TRUE(ir::InferShapes(g).ok());
}

TEST(PassesDceTest, RemovesAnUnusedBranchAndItsConstantsButNotObserve) {
  ir::Graph g;
  BuildGraph(g, /*observe=*/true);
  auto record = RunOnePass(g, passes::CreateEliminateDeadCodePass());
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_TRUE(record->changed);
  EXPECT_EQ(record->nodes_before, 6);
  EXPECT_EQ(record->nodes_after, 3);
  EXPECT_EQ(record->summary, "-1 Exp, -1 Neg, -1 Mul");  // in op-table order
  std::vector<std::string> names;
  for (const auto& n : g.nodes()) names.push_back(n->name());
  EXPECT_EQ(names, std::vector<std::string>({"relu", "observe", "add"}));
  EXPECT_EQ(g.FindValue("w"), nullptr);
  EXPECT_EQ(g.FindValue("unused"), nullptr);
  EXPECT_NE(g.FindValue("b"), nullptr);
}

TEST(PassesDceTest, OutputsAgreeAfterRemovingTheDeadBranch) {
  ir::Graph before, after;
  BuildGraph(before, /*observe=*/false);
  BuildGraph(after, /*observe=*/false);
  auto record = RunOnePass(after, passes::CreateEliminateDeadCodePass());
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->nodes_after, 2);

  const Tensor x = SeededUniform({2, 3}, 3);
  auto want = RunGraph(before, {x});
  auto got = RunGraph(after, {x});
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  // y = max(x, 0) + b, written out.
  std::vector<float> expect;
  for (int i = 0; i < 6; ++i) expect.push_back(std::max(x.data<float>()[i], 0.f) + 1.f + i % 3);
  EXPECT_EQ((*got)[0].ToFloatVector(), expect);
  EXPECT_EQ(CompareTensors((*got)[0], (*want)[0], 0, 0), "");

  auto again = RunOnePass(after, passes::CreateEliminateDeadCodePass());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->changed);
}

TEST(PassesDceTest, KeepsNodesWhoseOutputIsAGraphOutputOnly) {
  ir::Graph g;
  g.set_opset(17);
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {4}));
  g.AddOutput(g.AddNode(OpKind::kRelu, "relu", {x}, {"y"})->output(0));
  ir::Node* split = g.AddNode(OpKind::kDropout, "dropout", {x}, {"z", "mask"});
  g.AddOutput(split->output(0));  // the mask is unused, the node stays for its first output
  ASSERT_TRUE(ir::InferShapes(g).ok());
  auto record = RunOnePass(g, passes::CreateEliminateDeadCodePass());
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_FALSE(record->changed);
  EXPECT_EQ(g.nodes().size(), 2u);
}

}  // namespace
}  // namespace qcc::testing
