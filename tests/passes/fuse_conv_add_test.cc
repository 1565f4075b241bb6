// fuse-conv-add: a per-channel constant Add after a Conv becomes the Conv's bias (mnist-8 writes
// its conv biases that way); shapes that vary along other axes, or a shared Conv output, stay.
#include <string>
#include <vector>

#include "tests/passes/fuse_test_util.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

// Conv(x [1,2,3,3], w [3,2,1,1], bias?) + constant of `bias_dims` (either operand order).
GraphBuilder ConvPlusConstant(Dims bias_dims, bool with_conv_bias, bool constant_first) {
  return [=](ir::Graph& g) {
    ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {1, 2, 3, 3}));
    std::vector<ir::Value*> ins = {x, g.NewConstant("w", SeededUniform({3, 2, 1, 1}, 1))};
    if (with_conv_bias) ins.push_back(g.NewConstant("b", SeededUniform({3}, 2)));
    ir::Value* y = g.AddNode(OpKind::kConv, "conv", ins, {"y"})->output(0);
    ir::Value* k = g.NewConstant("k", SeededUniform(bias_dims, 3));
    ir::Node* add = g.AddNode(
        OpKind::kAdd, "add",
        constant_first ? std::vector<ir::Value*>{k, y} : std::vector<ir::Value*>{y, k}, {"z"});
    g.AddOutput(add->output(0));
  };
}

TEST(PassesFuseConvAddTest, PerChannelConstantsBecomeTheBias) {
  const Tensor x = SeededUniform({1, 2, 3, 3}, 9);
  for (const Dims& dims : {Dims{3, 1, 1}, Dims{1, 3, 1, 1}, Dims{1}}) {
    for (bool conv_bias : {false, true}) {
      for (bool first : {false, true}) {
        FuseResult r = FuseAndCompare(ConvPlusConstant(dims, conv_bias, first),
                                      passes::CreateFuseConvAddPass(), {x});
        EXPECT_TRUE(r.changed);
        EXPECT_EQ(CountOps(*r.graph, OpKind::kAdd), 0);
        // The graph output keeps its name.
        EXPECT_EQ(r.graph->outputs()[0]->name(), "z");
      }
    }
  }
}

TEST(PassesFuseConvAddTest, ConstantsVaryingAlongOtherAxesStay) {
  const Tensor x = SeededUniform({1, 2, 3, 3}, 9);
  for (const Dims& dims : {Dims{1, 1, 3}, Dims{3, 3, 3}, Dims{3}}) {
    FuseResult r =
        FuseAndCompare(ConvPlusConstant(dims, false, false), passes::CreateFuseConvAddPass(), {x});
    EXPECT_FALSE(r.changed) << dims.size();
    EXPECT_EQ(CountOps(*r.graph, OpKind::kAdd), 1);
  }
}

// paddle2onnx's ConvTranspose bias: ConvTranspose(x [1,4,3,3], w [4,3,2,2], group 2: 6 output
// channels) + a [1, 6, 1, 1] constant.
TEST(PassesFuseConvAddTest, ConvTransposeBiasAddBecomesItsBias) {
  for (bool with_bias : {false, true}) {
    SCOPED_TRACE(with_bias ? "with a bias" : "without a bias");
    auto build = [&](ir::Graph& g) {
      ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {1, 4, 3, 3}));
      std::vector<ir::Value*> ins = {x, g.NewConstant("w", SeededUniform({4, 3, 2, 2}, 1))};
      if (with_bias) ins.push_back(g.NewConstant("b", SeededUniform({6}, 2)));
      ir::Node* up = g.AddNode(OpKind::kConvTranspose, "up", ins, {"y"});
      auto& a = up->mutable_attrs<ir::ConvTransposeAttrs>();
      a.group = 2;
      a.strides = {2, 2};
      ir::Value* k = g.NewConstant("k", SeededUniform({1, 6, 1, 1}, 3));
      g.AddOutput(g.AddNode(OpKind::kAdd, "add", {up->output(0), k}, {"z"})->output(0));
    };
    FuseResult r =
        FuseAndCompare(build, passes::CreateFuseConvAddPass(), {SeededUniform({1, 4, 3, 3}, 9)});
    EXPECT_TRUE(r.changed);
    EXPECT_EQ(CountOps(*r.graph, OpKind::kAdd), 0);
    EXPECT_EQ(r.graph->outputs()[0]->name(), "z");
  }
}

TEST(PassesFuseConvAddTest, Mnist8LosesItsBiasAdds) {
  auto g = LoadModel("mnist-8");
  ASSERT_TRUE(g);
  ASSERT_EQ(CountOps(*g, OpKind::kAdd), 3);
  auto rec = RunOnePass(*g, passes::CreateFuseConvAddPass());
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ(CountOps(*g, OpKind::kAdd), 1);  // the last one adds to a MatMul
}

}  // namespace
}  // namespace qcc::testing
