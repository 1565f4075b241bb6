// fuse-activation: Relu, Clip and LeakyRelu into Conv, Gemm and Add (fields set, the
// activation's name kept, numbers unchanged), the cases that must stay, and resnet20-cifar10's
// 19 Relus (10 into Convs, 9 into residual Adds) after the BatchNormalization fold.
#include <limits>
#include <string>
#include <vector>

#include "frontend/tensor_proto.h"
#include "tests/passes/fuse_test_util.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

/// Appends activation `kind` on `y` (Clip with bounds [lo, hi], LeakyRelu with alpha 0.1).
ir::Value* AddActivation(ir::Graph& g, OpKind kind, ir::Value* y, float lo = 0, float hi = 6) {
  std::vector<ir::Value*> in = {y};
  if (kind == OpKind::kClip) {
    in.push_back(g.NewConstant("lo", F32({}, {lo})));
    in.push_back(g.NewConstant("hi", F32({}, {hi})));
  }
  ir::Node* act = g.AddNode(kind, "act", in, {"act_out"});
  if (kind == OpKind::kLeakyRelu) act->mutable_attrs<ir::LeakyReluAttrs>().alpha = 0.1f;
  return act->output(0);
}

/// x [2, 3, 6, 6] -> producer -> activation -> output, for producer Conv, Gemm (on x flattened
/// to [2, 108] by the graph input's shape) or Add (of two inputs).
void BuildProducerAct(ir::Graph& g, OpKind producer, OpKind act) {
  ir::Value* y;
  if (producer == OpKind::kConv) {
    ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {2, 3, 6, 6}));
    ir::Node* conv = g.AddNode(OpKind::kConv, "conv",
                               {x, g.NewConstant("w", SeededUniform({4, 3, 3, 3}, 1)),
                                g.NewConstant("b", SeededUniform({4}, 2))},
                               {"y"});
    conv->mutable_attrs<ir::ConvAttrs>().pads = {1, 1, 1, 1};
    y = conv->output(0);
  } else if (producer == OpKind::kGemm) {
    ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {2, 108}));
    y = g.AddNode(OpKind::kGemm, "gemm",
                  {x, g.NewConstant("w", SeededUniform({108, 7}, 1)),
                   g.NewConstant("c", SeededUniform({7}, 2))},
                  {"y"})
            ->output(0);
  } else {
    ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {2, 3, 6, 6}));
    y = g.AddNode(OpKind::kAdd, "add", {x, g.NewConstant("r", SeededUniform({3, 1, 1}, 2))}, {"y"})
            ->output(0);
  }
  g.AddOutput(AddActivation(g, act, y, -0.5f, 2.0f));
}

TEST(PassesFuseActivationTest, EveryActivationIntoEveryProducer) {
  for (OpKind producer : {OpKind::kConv, OpKind::kGemm, OpKind::kAdd}) {
    for (OpKind act : {OpKind::kRelu, OpKind::kClip, OpKind::kLeakyRelu}) {
      SCOPED_TRACE(std::string(ir::OpName(producer)) + "+" + std::string(ir::OpName(act)));
      const Tensor x = producer == OpKind::kGemm ? SeededUniform({2, 108}, 5, -1, 1)
                                                 : SeededUniform({2, 3, 6, 6}, 5, -2, 2);
      FuseResult r = FuseAndCompare([&](ir::Graph& g) { BuildProducerAct(g, producer, act); },
                                    passes::CreateFuseActivationPass(), {x}, 1e-6, 1e-6);
      EXPECT_TRUE(r.changed);
      ASSERT_EQ(r.graph->nodes().size(), 1u);
      const ir::Node* n = r.graph->nodes()[0].get();
      EXPECT_EQ(n->kind(), producer);
      EXPECT_EQ(n->output(0)->name(), "act_out");
      ir::Activation a;
      float lo, hi, alpha;
      if (producer == OpKind::kConv) {
        const auto& at = n->attrs<ir::ConvAttrs>();
        a = at.activation, lo = at.activation_min, hi = at.activation_max;
        alpha = at.activation_alpha;
      } else if (producer == OpKind::kGemm) {
        const auto& at = n->attrs<ir::GemmAttrs>();
        a = at.activation, lo = at.activation_min, hi = at.activation_max;
        alpha = at.activation_alpha;
      } else {
        const auto& at = n->attrs<ir::AddAttrs>();
        a = at.activation, lo = at.activation_min, hi = at.activation_max;
        alpha = at.activation_alpha;
      }
      if (act == OpKind::kRelu) {
        EXPECT_EQ(a, ir::Activation::kRelu);
      }
      if (act == OpKind::kLeakyRelu) {
        EXPECT_EQ(a, ir::Activation::kLeakyRelu);
        EXPECT_FLOAT_EQ(alpha, 0.1f);
      }
      if (act == OpKind::kClip) {
        EXPECT_EQ(a, ir::Activation::kClip);
        EXPECT_EQ(lo, -0.5f);
        EXPECT_EQ(hi, 2.0f);
      }
    }
  }
}

TEST(PassesFuseActivationTest, SharedOutputsRuntimeBoundsAndOtherProducersStay) {
  auto g = BuildGraph([](ir::Graph& g) {
    ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {1, 2, 3, 3}));
    ir::Value* hi = g.AddInput("hi", ir::TensorType(DType::kFloat32, {}));
    ir::Value* w = g.NewConstant("w", SeededUniform({2, 2, 1, 1}, 1));
    // A Conv output read twice.
    ir::Value* y1 = g.AddNode(OpKind::kConv, "c1", {x, w}, {"y1"})->output(0);
    g.AddOutput(g.AddNode(OpKind::kRelu, "r1", {y1}, {"r1"})->output(0));
    g.AddOutput(g.AddNode(OpKind::kNeg, "n1", {y1}, {"n1"})->output(0));
    // Clip with a runtime bound.
    ir::Value* y2 = g.AddNode(OpKind::kConv, "c2", {x, w}, {"y2"})->output(0);
    g.AddOutput(
        g.AddNode(OpKind::kClip, "clip", {y2, g.NewConstant("z", F32({}, {0})), hi}, {"clip"})
            ->output(0));
    // A Relu after an op that cannot carry one, and after an integer Add.
    g.AddOutput(g.AddNode(OpKind::kRelu, "r3",
                          {g.AddNode(OpKind::kMul, "mul", {x, x}, {"m"})->output(0)}, {"r3"})
                    ->output(0));
    ir::Value* i = g.AddInput("i", ir::TensorType(DType::kInt32, {4}));
    g.AddOutput(g.AddNode(OpKind::kRelu, "r4",
                          {g.AddNode(OpKind::kAdd, "iadd", {i, i}, {"ia"})->output(0)}, {"r4"})
                    ->output(0));
  });
  auto rec = RunOnePass(*g, passes::CreateFuseActivationPass());
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_FALSE(rec->changed);
}

// After the BatchNormalization fold every Relu of resnet20 follows a Conv (the stem and the
// first conv of each of the 9 blocks) or a residual Add (the end of each block).
TEST(PassesFuseActivationTest, Resnet20ReluIntoConvsAndResidualAdds) {
  auto before = LoadModel("resnet20-cifar10");
  auto g = LoadModel("resnet20-cifar10");
  ASSERT_TRUE(g && before);
  passes::Pipeline p;
  p.push_back(passes::CreateFuseConvBatchNormPass());
  p.push_back(passes::CreateFuseActivationPass());
  auto recs = passes::RunPipeline(*g, p);
  ASSERT_TRUE(recs.ok()) << recs.status();
  EXPECT_EQ((*recs)[1].summary, "-19 Relu");
  int conv_relu = 0, add_relu = 0;
  for (const auto& n : g->nodes()) {
    if (n->kind() == OpKind::kConv) {
      conv_relu += n->attrs<ir::ConvAttrs>().activation == ir::Activation::kRelu;
    }
    if (n->kind() == OpKind::kAdd) {
      add_relu += n->attrs<ir::AddAttrs>().activation == ir::Activation::kRelu;
    }
  }
  EXPECT_EQ(conv_relu, 10);
  EXPECT_EQ(add_relu, 9);
  auto x =
      frontend::ReadTensorProtoFile(ModelPath("resnet20-cifar10", "test_data_set_0/input_0.pb"));
  auto want =
      frontend::ReadTensorProtoFile(ModelPath("resnet20-cifar10", "test_data_set_0/output_0.pb"));
  ASSERT_TRUE(x.ok() && want.ok());
  auto y0 = RunGraph(*before, {*x});
  auto y1 = RunGraph(*g, {*x});
  ASSERT_TRUE(y0.ok() && y1.ok()) << y1.status();
  EXPECT_EQ(CompareTensors((*y1)[0], (*y0)[0], 1e-3, 1e-4), "");
  EXPECT_EQ(CompareTensors((*y1)[0], *want, 1e-3, 1e-4), "");
}

}  // namespace
}  // namespace qcc::testing
