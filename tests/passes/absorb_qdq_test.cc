// absorb-qdq writes a QDQ model's quantization into the IR: an activation's Q -> DQ pair becomes
// its tensor's given_quant, a weight's DequantizeLinear the float constant's
// given_weight_scales; both move with the tensor's name through the fusion passes, and the
// printer shows them.
#include "passes/absorb_qdq.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "ir/printer.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "passes/pass.h"
#include "passes/passes.h"
#include "tests/passes/cleanup_test_util.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

ir::Value* Scalar(ir::Graph& g, const std::string& name, float v) {
  return g.NewConstant(name, Tensor::FromVector<float>(DType::kFloat32, {}, {v}));
}

ir::Value* ZeroPoint(ir::Graph& g, const std::string& name, int8_t z) {
  return g.NewConstant(name, Tensor::FromVector<int8_t>(DType::kInt8, {}, {z}));
}

/// `x` through QuantizeLinear -> DequantizeLinear on (scale, zero point): the DQ's output.
ir::Value* Pair(ir::Graph& g, ir::Value* x, const std::string& stem, float scale, int8_t zp) {
  ir::Value* s = Scalar(g, stem + "_scale", scale);
  ir::Value* z = ZeroPoint(g, stem + "_zp", zp);
  ir::Value* q =
      g.AddNode(OpKind::kQuantizeLinear, stem + "_q", {x, s, z}, {stem + "_q"})->output(0);
  return g.AddNode(OpKind::kDequantizeLinear, stem + "_dq", {q, s, z}, {stem + "_dq"})->output(0);
}

/// x:[1,2,4,4] -> Q/DQ (0.05, 0) -> Conv (weights: DQ of int8 [3,2,1,1], one scale per output
/// channel) -> Relu = r -> Q/DQ (0.03, -128) = y.
std::unique_ptr<ir::Graph> QdqConvRelu() {
  auto g = std::make_unique<ir::Graph>();
  g->set_opset(13);
  ir::Value* x = g->AddInput("x", ir::TensorType(DType::kFloat32, {1, 2, 4, 4}));
  ir::Value* xq = Pair(*g, x, "x", 0.05f, 0);
  ir::Value* wq = g->NewConstant(
      "w_int8", Tensor::FromVector<int8_t>(DType::kInt8, {3, 2, 1, 1}, {1, -2, 3, -4, 5, -6}));
  ir::Value* ws = g->NewConstant(
      "w_scale", Tensor::FromVector<float>(DType::kFloat32, {3}, {0.01f, 0.02f, 0.04f}));
  ir::Value* wz = g->NewConstant("w_zp", Tensor::FromVector<int8_t>(DType::kInt8, {3}, {0, 0, 0}));
  ir::Node* wdq = g->AddNode(OpKind::kDequantizeLinear, "w_dq", {wq, ws, wz}, {"w"});
  wdq->mutable_attrs<ir::DequantizeLinearAttrs>().axis = 0;
  ir::Value* c = g->AddNode(OpKind::kConv, "conv", {xq, wdq->output(0)}, {"c"})->output(0);
  ir::Value* r = g->AddNode(OpKind::kRelu, "relu", {c}, {"r"})->output(0);
  g->AddOutput(Pair(*g, r, "r", 0.03f, -128));
  EXPECT_TRUE(ir::Verify(*g).ok());
  EXPECT_TRUE(ir::InferShapes(*g).ok());
  return g;
}

TEST(AbsorbQdqTest, TheModelsParametersAreOnItsTensorsAndFollowTheirNames) {
  std::unique_ptr<ir::Graph> g = QdqConvRelu();
  passes::QdqImport report;
  absl::StatusOr<std::vector<passes::PassRecord>> records =
      passes::RunPipeline(*g, passes::QdqModelPipeline(&report));
  ASSERT_TRUE(records.ok()) << records.status();
  const std::string printed = ir::PrintGraph(*g);
  SCOPED_TRACE(printed);
  EXPECT_EQ(report.pairs, 2);
  EXPECT_EQ(report.folded_constants, 1);
  EXPECT_EQ(report.weights, 1);
  EXPECT_TRUE(report.asymmetric);
  EXPECT_EQ(CountOps(*g, OpKind::kQuantizeLinear) + CountOps(*g, OpKind::kDequantizeLinear), 0);
  // fuse-activation took the Relu into the Conv: the Conv's output now goes by the Relu's
  // output's name, and the pair's parameters went with the name.
  ASSERT_EQ(CountOps(*g, OpKind::kConv), 1);
  ASSERT_EQ(CountOps(*g, OpKind::kRelu), 0);
  const ir::Node* conv = nullptr;
  for (const auto& n : g->nodes()) {
    if (n->kind() == OpKind::kConv) conv = n.get();
  }
  ASSERT_NE(conv, nullptr);
  const ir::Value* y = conv->output(0);
  ASSERT_NE(y->given_quant(), nullptr) << y->name();
  EXPECT_EQ(y->given_quant()->scale, 0.03f);
  EXPECT_EQ(y->given_quant()->zero_point, -128);
  const ir::Value* x = g->inputs()[0];
  ASSERT_NE(x->given_quant(), nullptr);
  EXPECT_EQ(x->given_quant()->scale, 0.05f);
  EXPECT_EQ(x->given_quant()->zero_point, 0);
  const ir::Value* w = conv->input(1);
  ASSERT_NE(w->given_weight_scales(), nullptr);
  EXPECT_EQ(*w->given_weight_scales(), (std::vector<float>{0.01f, 0.02f, 0.04f}));
  EXPECT_EQ(w->given_quant(), nullptr);
  // The printer shows both.
  EXPECT_TRUE(absl::StrContains(printed, "f32[1,2,4,4] given q(0.05, 0)"));
  EXPECT_TRUE(absl::StrContains(printed, "given q(0.03, -128)"));
  EXPECT_TRUE(absl::StrContains(printed, "given q(3 scales, 0.01 to 0.04)"));
  EXPECT_TRUE(ir::Verify(*g).ok());
}

TEST(AbsorbQdqTest, SwapNamesMovesWhatTheModelGaveWithTheName) {
  ir::Graph g;
  ir::Value* a = g.NewValue("a", ir::TensorType(DType::kFloat32, {2}));
  ir::Value* b = g.NewValue("b", ir::TensorType(DType::kFloat32, {2}));
  a->set_given_quant({0.5f, 3});
  ir::SwapNames(*a, *b);
  EXPECT_EQ(a->name(), "b");
  EXPECT_EQ(b->name(), "a");
  EXPECT_EQ(a->given_quant(), nullptr);
  ASSERT_NE(b->given_quant(), nullptr);
  EXPECT_EQ(b->given_quant()->scale, 0.5f);
  EXPECT_EQ(b->given_quant()->zero_point, 3);
}

TEST(AbsorbQdqTest, TheVerifierRefusesGivenParametersOnAnIntegerTensor) {
  ir::Graph g;
  ir::Value* x = g.AddInput("ids", ir::TensorType(DType::kInt64, {2}));
  g.AddOutput(x);
  x->set_given_quant({0.5f, 0});
  const absl::Status s = ir::Verify(g);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.message(), "'ids' has given int8 parameters")) << s;
}

TEST(AbsorbQdqTest, RemoveIdentityAndConstantFoldingKeepTheParametersWithTheOutputsName) {
  // r = Relu(x) -> Identity = y (a graph output, given q(0.25, 1)); and k = Neg(c) of a constant,
  // a graph output given q(0.5, 0): remove-identity gives y's name to r, fold-constants to the
  // folded constant, and the parameters go along.
  ir::Graph g;
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {2}));
  ir::Value* r = g.AddNode(OpKind::kRelu, "relu", {x}, {"r"})->output(0);
  ir::Value* y = g.AddNode(OpKind::kIdentity, "id", {r}, {"y"})->output(0);
  ir::Value* c = g.NewConstant("c", Tensor::FromVector<float>(DType::kFloat32, {2}, {1, -2}));
  ir::Value* k = g.AddNode(OpKind::kNeg, "neg", {c}, {"k"})->output(0);
  g.AddOutput(y);
  g.AddOutput(k);
  y->set_given_quant({0.25f, 1});
  k->set_given_quant({0.5f, 0});
  ASSERT_TRUE(ir::InferShapes(g).ok());
  passes::Pipeline pipeline;
  pipeline.push_back(passes::CreateRemoveIdentityPass());
  pipeline.push_back(passes::CreateFoldConstantsPass());
  absl::StatusOr<std::vector<passes::PassRecord>> records = passes::RunPipeline(g, pipeline);
  ASSERT_TRUE(records.ok()) << records.status();
  SCOPED_TRACE(ir::PrintGraph(g));
  ASSERT_EQ(g.outputs().size(), 2u);
  const ir::Value* out0 = g.outputs()[0];
  const ir::Value* out1 = g.outputs()[1];
  EXPECT_EQ(out0, r);
  EXPECT_EQ(out0->name(), "y");
  ASSERT_NE(out0->given_quant(), nullptr);
  EXPECT_EQ(out0->given_quant()->scale, 0.25f);
  EXPECT_EQ(out0->given_quant()->zero_point, 1);
  EXPECT_NE(out1->constant(), nullptr);
  EXPECT_EQ(out1->name(), "k");
  ASSERT_NE(out1->given_quant(), nullptr);
  EXPECT_EQ(out1->given_quant()->scale, 0.5f);
}

TEST(AbsorbQdqTest, FoldingTheAttentionScaleScalesWhatTheModelGaveTheQPath) {
  // q = x Wq + bq (given q(0.1, 0); Wq given 0.02 per channel), k = x Wk + bk, scores =
  // MatMul(q, Transpose(k)) / 2: fold-attention-scale puts the 1/2 into Wq and bq, so q holds
  // half the values and its grid and Wq's scales halve too.
  ir::Graph g;
  g.set_opset(17);
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {1, 4, 8}));
  auto linear = [&](const std::string& name) {
    ir::Value* w = g.NewConstant(name + "_w", SeededUniform({8, 8}, 3));
    ir::Value* b = g.NewConstant(name + "_b", SeededUniform({8}, 4));
    ir::Value* m = g.AddNode(OpKind::kMatMul, name + "_mm", {x, w}, {name + "_m"})->output(0);
    return std::make_pair(g.AddNode(OpKind::kAdd, name + "_add", {m, b}, {name})->output(0), w);
  };
  auto [q, wq] = linear("q");
  auto [k, wk] = linear("k");
  ir::Node* kt = g.AddNode(OpKind::kTranspose, "kt", {k}, {"kt"});
  kt->mutable_attrs<ir::TransposeAttrs>().perm = {0, 2, 1};
  ir::Value* s = g.AddNode(OpKind::kMatMul, "scores", {q, kt->output(0)}, {"s"})->output(0);
  ir::Value* two = g.NewConstant("two", Tensor::FromVector<float>(DType::kFloat32, {}, {2}));
  g.AddOutput(g.AddNode(OpKind::kDiv, "scale", {s, two}, {"y"})->output(0));
  q->set_given_quant({0.1f, 0});
  wq->set_given_weight_scales(std::vector<float>(8, 0.02f));
  ASSERT_TRUE(ir::InferShapes(g).ok());
  passes::Pipeline pipeline;
  pipeline.push_back(passes::CreateFoldAttentionScalePass());
  absl::StatusOr<std::vector<passes::PassRecord>> records = passes::RunPipeline(g, pipeline);
  ASSERT_TRUE(records.ok()) << records.status();
  SCOPED_TRACE(ir::PrintGraph(g));
  ASSERT_EQ(CountOps(g, OpKind::kDiv), 0);  // folded
  ASSERT_NE(q->given_quant(), nullptr);
  EXPECT_FLOAT_EQ(q->given_quant()->scale, 0.05f);
  const ir::Value* w = q->producer()->input(0)->producer()->input(1);
  ASSERT_NE(w, wq);
  ASSERT_NE(w->given_weight_scales(), nullptr);
  for (float scale : *w->given_weight_scales()) EXPECT_FLOAT_EQ(scale, 0.01f);
  EXPECT_EQ(k->given_quant(), nullptr);
}

}  // namespace
}  // namespace qcc::testing
