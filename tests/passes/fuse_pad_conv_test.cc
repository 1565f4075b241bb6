// fuse-pad-conv: a zero constant Pad of the spatial axes before a Conv becomes the Conv's pads
// (TF-style "same" padding as exporters write it); every other Pad stays. Outputs before and
// after agree on the CPU evaluator.
#include <vector>

#include "tests/passes/fuse_test_util.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

struct PadCase {
  std::vector<int64_t> pads;  // ONNX order for rank 4: [n, c, h, w] begins, then ends
  float value = 0.0f;
  ir::PadMode mode = ir::PadMode::kConstant;
  std::vector<int64_t> conv_pads;  // the Conv's own pads (empty: none)
  int64_t stride = 1;
  int64_t group = 1;
  bool second_reader = false;  // the padded tensor is also a graph output
};

PadCase Case(std::vector<int64_t> pads, float value = 0.0f,
             ir::PadMode mode = ir::PadMode::kConstant, std::vector<int64_t> conv_pads = {},
             int64_t stride = 1, int64_t group = 1, bool second_reader = false) {
  return PadCase{std::move(pads), value, mode, std::move(conv_pads), stride, group, second_reader};
}

// x [1, 4, 7, 6] -> Pad -> Conv(w [4, 4/g, 3, 3], b) -> y
GraphBuilder PadThenConv(const PadCase& c) {
  return [=](ir::Graph& g) {
    ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {1, 4, 7, 6}));
    ir::Value* pads =
        g.NewConstant("pads", Tensor::FromVector<int64_t>(DType::kInt64, {8}, c.pads));
    ir::Value* value =
        g.NewConstant("value", Tensor::FromVector<float>(DType::kFloat32, {}, {c.value}));
    ir::Node* pad = g.AddNode(OpKind::kPad, "pad", {x, pads, value}, {"p"});
    pad->mutable_attrs<ir::PadAttrs>().mode = c.mode;
    ir::Value* w = g.NewConstant("w", SeededUniform({4, 4 / c.group, 3, 3}, 1));
    ir::Value* b = g.NewConstant("b", SeededUniform({4}, 2));
    ir::Node* conv = g.AddNode(OpKind::kConv, "conv", {pad->output(0), w, b}, {"y"});
    auto& attrs = conv->mutable_attrs<ir::ConvAttrs>();
    attrs.pads = c.conv_pads;
    attrs.strides = {c.stride, c.stride};
    attrs.group = c.group;
    g.AddOutput(conv->output(0));
    if (c.second_reader) g.AddOutput(pad->output(0));
  };
}

TEST(PassesFusePadConvTest, ZeroSpatialPadsBecomeTheConvPads) {
  const Tensor x = SeededUniform({1, 4, 7, 6}, 9);
  const std::vector<PadCase> cases = {
      Case({0, 0, 0, 0, 0, 0, 1, 1}, 0.0f, ir::PadMode::kConstant, {}, 2),     // TF same
      Case({0, 0, 2, 1, 0, 0, 2, 3}, 0.0f, ir::PadMode::kConstant, {}, 1, 4),  // depthwise
      Case({0, 0, 1, 0, 0, 0, 0, 1}, 0.0f, ir::PadMode::kConstant, {1, 1, 1, 1}, 1, 2),  // sum
  };
  for (const PadCase& c : cases) {
    FuseResult r = FuseAndCompare(PadThenConv(c), passes::CreateFusePadConvPass(), {x});
    EXPECT_TRUE(r.changed);
    EXPECT_EQ(CountOps(*r.graph, OpKind::kPad), 0);
    const ir::Node* conv = OnlyNode(*r.graph, OpKind::kConv);
    ASSERT_NE(conv, nullptr);
    const ir::Ints& got = conv->attrs<ir::ConvAttrs>().pads;
    const int64_t own = c.conv_pads.empty() ? 0 : 1;
    EXPECT_EQ(got, ir::Ints({c.pads[2] + own, c.pads[3] + own, c.pads[6] + own, c.pads[7] + own}));
    EXPECT_EQ(conv->input(0)->name(), "x");
  }
}

TEST(PassesFusePadConvTest, OtherPadsStay) {
  const Tensor x = SeededUniform({1, 4, 7, 6}, 9);
  const std::vector<PadCase> cases = {
      Case({0, 0, 1, 1, 0, 0, 1, 1}, 0.5f),                         // another value
      Case({0, 0, 1, 1, 0, 0, 1, 1}, 0.0f, ir::PadMode::kReflect),  // another mode
      Case({0, 0, -1, 0, 0, 0, 1, 1}),                              // crops
      Case({0, 0, 1, 1, 0, 0, 1, 1}, 0.0f, ir::PadMode::kConstant, {}, 1, 1, true),  // twice
  };
  for (const PadCase& c : cases) {
    FuseResult r = FuseAndCompare(PadThenConv(c), passes::CreateFusePadConvPass(), {x});
    EXPECT_FALSE(r.changed);
    EXPECT_EQ(CountOps(*r.graph, OpKind::kPad), 1);
  }
}

TEST(PassesFusePadConvTest, EfficientNetLite0LosesEveryPad) {
  auto g = LoadFoldedModel("efficientnet-lite0");
  ASSERT_TRUE(g);
  ASSERT_EQ(CountOps(*g, OpKind::kPad), 17);
  auto rec = RunOnePass(*g, passes::CreateFusePadConvPass());
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ(CountOps(*g, OpKind::kPad), 0);
}

}  // namespace
}  // namespace qcc::testing
