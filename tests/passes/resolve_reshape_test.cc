// resolve-reshape: "flatten, keeping the batch" written with Shape/Slice/Cast/Concat gets a
// constant target [0, -1] with a dynamic batch; targets it cannot express stay computed.
#include <string>
#include <vector>

#include "tests/passes/fuse_test_util.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

Tensor I64(std::vector<int64_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::FromVector<int64_t>(DType::kInt64, {n}, v);
}

// x [N, 4, 1, 1] -> Reshape(x, Concat(Cast(Cast(Slice(Shape(src), b, e))), [-1])).
// `from_y` takes the shape of another input y [M, 4] instead of x.
GraphBuilder FlattenKeepingBatch(int64_t begin, int64_t end, bool from_y) {
  return [=](ir::Graph& g) {
    const ir::Dim n = ir::SymbolDim(g.AddSymbol("N"));
    const ir::Dim m = ir::SymbolDim(g.AddSymbol("M"));
    ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {n, 4, 1, 1}));
    ir::Value* y = g.AddInput("y", ir::TensorType(DType::kFloat32, {m, 4}));
    ir::Value* shape = g.AddNode(OpKind::kShape, "shape", {from_y ? y : x}, {"s"})->output(0);
    ir::Value* slice = g.AddNode(OpKind::kSlice, "slice",
                                 {shape, g.NewConstant("b", I64({begin})),
                                  g.NewConstant("e", I64({end})), g.NewConstant("a", I64({0}))},
                                 {"s0"})
                           ->output(0);
    ir::Node* to32 = g.AddNode(OpKind::kCast, "to32", {slice}, {"s32"});
    to32->mutable_attrs<ir::CastAttrs>().to = DType::kInt32;
    ir::Node* to64 = g.AddNode(OpKind::kCast, "to64", {to32->output(0)}, {"s64"});
    to64->mutable_attrs<ir::CastAttrs>().to = DType::kInt64;
    ir::Value* target = g.AddNode(OpKind::kConcat, "concat",
                                  {to64->output(0), g.NewConstant("m1", I64({-1}))}, {"target"})
                            ->output(0);
    g.AddOutput(g.AddNode(OpKind::kReshape, "reshape", {x, target}, {"z"})->output(0));
  };
}

TEST(PassesResolveReshapeTest, BatchKeepingFlattenGetsAConstantTarget) {
  const Tensor x = SeededUniform({3, 4, 1, 1}, 1), y = SeededUniform({3, 4}, 2);
  FuseResult r =
      FuseAndCompare(FlattenKeepingBatch(0, 1, false), passes::CreateResolveReshapePass(), {x, y});
  ASSERT_TRUE(r.changed);
  const ir::Node* reshape = OnlyNode(*r.graph, OpKind::kReshape);
  const Tensor* target = reshape->input(1)->constant();
  ASSERT_NE(target, nullptr);
  EXPECT_EQ(target->GetAsInt64(0), 0);  // copy the batch
  EXPECT_EQ(target->GetAsInt64(1), -1);
  // The output keeps the symbolic batch and a known width.
  const auto& dims = *reshape->output(0)->type().dims;
  EXPECT_TRUE(ir::IsSymbol(dims[0]));
  EXPECT_EQ(dims[1], 4);
  // Dead-code elimination then removes the whole Shape chain.
  ASSERT_TRUE(RunOnePass(*r.graph, passes::CreateEliminateDeadCodePass()).ok());
  EXPECT_EQ(CountOps(*r.graph, OpKind::kShape), 0);
  EXPECT_EQ(CountOps(*r.graph, OpKind::kConcat), 0);
}

TEST(PassesResolveReshapeTest, KnownExtentsBecomeTheirValues) {
  // Shape(x)[1:2] is the known 4: target [4, -1].
  const Tensor x = SeededUniform({3, 4, 1, 1}, 1), y = SeededUniform({3, 4}, 2);
  FuseResult r =
      FuseAndCompare(FlattenKeepingBatch(1, 2, false), passes::CreateResolveReshapePass(), {x, y});
  ASSERT_TRUE(r.changed);
  const Tensor* target = OnlyNode(*r.graph, OpKind::kReshape)->input(1)->constant();
  ASSERT_NE(target, nullptr);
  EXPECT_EQ(target->GetAsInt64(0), 4);
}

TEST(PassesResolveReshapeTest, AnotherTensorsDynamicExtentStaysComputed) {
  // y's batch M is not x's batch N: nothing constant says what it is.
  const Tensor x = SeededUniform({3, 4, 1, 1}, 1), y = SeededUniform({3, 4}, 2);
  FuseResult r =
      FuseAndCompare(FlattenKeepingBatch(0, 1, true), passes::CreateResolveReshapePass(), {x, y});
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(OnlyNode(*r.graph, OpKind::kReshape)->input(1)->constant(), nullptr);
}

TEST(PassesResolveReshapeTest, PpocrClsLosesItsShapeChain) {
  auto g = LoadModel("ppocr-cls-mbv3");
  ASSERT_TRUE(g);
  ASSERT_TRUE(passes::RunPipeline(*g, passes::DefaultPipeline()).ok());
  EXPECT_EQ(CountOps(*g, OpKind::kShape), 0);
  EXPECT_EQ(CountOps(*g, OpKind::kCast), 0);
  EXPECT_EQ(CountOps(*g, OpKind::kReshape), 1);
}

}  // namespace
}  // namespace qcc::testing
