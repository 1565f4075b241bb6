// The op table (ir/ops.def): its Int8 and Unary columns agree with each other and with the
// attributes that give a function's constants (ir::UnaryCallOf).
#include <limits>
#include <optional>
#include <string>

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/op_kind.h"

namespace qcc::ir {
namespace {

TEST(OpTableTest, EveryLutOpHasAUnaryFunction) {
  // passes/quantize.cc builds a Lut op's int8 table from its function.
  int luts = 0;
  for (int i = 0; i < kNumOpKinds; ++i) {
    const auto kind = static_cast<OpKind>(i);
    if (Int8FormOf(kind) != Int8Form::kLut) continue;
    ++luts;
    EXPECT_TRUE(UnaryFnOf(kind).has_value()) << OpName(kind);
  }
  EXPECT_EQ(luts, 6);  // Relu, Clip, Sigmoid, HardSigmoid, HardSwish, Tanh
}

TEST(OpTableTest, UnaryCallsTakeTheirConstantsFromTheAttributes) {
  Graph g;
  Value* x = g.AddInput("x", TensorType(DType::kFloat32, {4}));
  Node* hs = g.AddNode(OpKind::kHardSigmoid, "hs", {x}, {"a"});
  hs->mutable_attrs<HardSigmoidAttrs>() = {0.3f, 0.4f};
  std::optional<UnaryCall> c = UnaryCallOf(*hs);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->fn, UnaryFn::kHardSigmoid);
  EXPECT_EQ(c->alpha, 0.3f);
  EXPECT_EQ(c->beta, 0.4f);

  Node* selu = g.AddNode(OpKind::kSelu, "selu", {x}, {"b"});
  c = UnaryCallOf(*selu);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->alpha, SeluAttrs{}.alpha);
  EXPECT_EQ(c->gamma, SeluAttrs{}.gamma);

  Node* shrink = g.AddNode(OpKind::kShrink, "shrink", {x}, {"c"});
  shrink->mutable_attrs<ShrinkAttrs>().lambd = 0.75f;
  c = UnaryCallOf(*shrink);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->alpha, 0.75f);  // lambd
  EXPECT_EQ(c->beta, 0.0f);    // bias

  Node* gelu = g.AddNode(OpKind::kGelu, "gelu", {x}, {"d"});
  EXPECT_EQ(UnaryCallOf(*gelu)->fn, UnaryFn::kGelu);
  gelu->mutable_attrs<GeluAttrs>().approximate = GeluApprox::kTanh;
  EXPECT_EQ(UnaryCallOf(*gelu)->fn, UnaryFn::kGeluTanh);

  // Clip's bounds are inputs: no bound until the caller reads them.
  Node* clip = g.AddNode(OpKind::kClip, "clip", {x}, {"e"});
  c = UnaryCallOf(*clip);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->alpha, -std::numeric_limits<float>::max());
  EXPECT_EQ(c->beta, std::numeric_limits<float>::max());

  Node* add = g.AddNode(OpKind::kAdd, "add", {x, x}, {"f"});
  EXPECT_FALSE(UnaryCallOf(*add).has_value());
}

}  // namespace
}  // namespace qcc::ir
