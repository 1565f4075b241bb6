// Symbolic shape inference of the movement ops: known constant inputs give exact shapes, a
// symbolic batch N survives where the op keeps it, unknown values degrade to unknown extents.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/graph.h"
#include "ir/shape_inference.h"
#include "tests/testing/op_test_util.h"

namespace qcc {
namespace {

using ir::Dim;
using ir::kUnknownDim;
using ir::OpKind;
using ir::TensorType;
using testing::I64;
using Dv = std::vector<ir::Dim>;

/// A graph with a symbolic batch N, for inferring one node at a time.
class ShapeCase {
 public:
  ShapeCase() : n_(ir::SymbolDim(g_.AddSymbol("N"))) {}
  Dim n() const { return n_; }
  ir::Value* In(TensorType t) { return g_.AddInput(Name(), std::move(t)); }
  ir::Value* In(std::vector<Dim> dims) { return In(TensorType(DType::kFloat32, std::move(dims))); }
  ir::Value* Const(Tensor t) { return g_.NewConstant(Name(), std::move(t)); }

  /// Infers the outputs of a new `kind` node over `inputs`.
  absl::StatusOr<std::vector<TensorType>> Infer(OpKind kind, ir::Attrs attrs,
                                                std::vector<ir::Value*> inputs,
                                                int num_outputs = 1) {
    std::vector<std::string> names(num_outputs);
    ir::Node* node = g_.AddNode(kind, Name(), inputs, names);
    node->set_attrs(std::move(attrs));
    std::vector<TensorType> types;
    std::vector<const Tensor*> values;
    for (ir::Value* v : inputs) {
      types.push_back(v != nullptr ? v->type() : TensorType());
      values.push_back(v != nullptr ? v->constant() : nullptr);
    }
    return ir::InferNode(*node, types, values);
  }
  /// The single output's dims; records a failure (and returns {}) on error or unknown rank.
  std::vector<Dim> Dims1(OpKind kind, ir::Attrs attrs, std::vector<ir::Value*> inputs) {
    auto out = Infer(kind, std::move(attrs), std::move(inputs));
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok() || !(*out)[0].has_rank()) {
      ADD_FAILURE() << "no rank";
      return {};
    }
    return *(*out)[0].dims;
  }

 private:
  std::string Name() { return "v" + std::to_string(counter_++); }
  ir::Graph g_;
  Dim n_;
  int counter_ = 0;
};

TEST(MovementShape, FlattenKeepsBatchSymbol) {
  ShapeCase s;
  ir::Value* x = s.In({s.n(), 3, 4, 5});
  EXPECT_EQ(s.Dims1(OpKind::kFlatten, ir::FlattenAttrs{1}, {x}), (Dv{s.n(), 60}));
  EXPECT_EQ(s.Dims1(OpKind::kFlatten, ir::FlattenAttrs{0}, {x}), (Dv{1, kUnknownDim}));
  EXPECT_EQ(s.Dims1(OpKind::kFlatten, ir::FlattenAttrs{-1}, {x}), (Dv{kUnknownDim, 5}));
  EXPECT_EQ(s.Dims1(OpKind::kFlatten, ir::FlattenAttrs{4}, {x}), (Dv{kUnknownDim, 1}));
  EXPECT_FALSE(s.Infer(OpKind::kFlatten, ir::FlattenAttrs{5}, {x}).ok());
}

TEST(MovementShape, ReshapeZeroAndMinusOneKeepBatch) {
  ShapeCase s;
  ir::Value* x = s.In({s.n(), 3, 4, 5});
  EXPECT_EQ(s.Dims1(OpKind::kReshape, ir::ReshapeAttrs{}, {x, s.Const(I64({2}, {0, -1}))}),
            (Dv{s.n(), 60}));
  EXPECT_EQ(s.Dims1(OpKind::kReshape, ir::ReshapeAttrs{}, {x, s.Const(I64({3}, {0, 12, -1}))}),
            (Dv{s.n(), 12, 5}));
  // -1 absorbing the batch: N * 60 / 60 = N.
  EXPECT_EQ(s.Dims1(OpKind::kReshape, ir::ReshapeAttrs{}, {x, s.Const(I64({2}, {-1, 60}))}),
            (Dv{s.n(), 60}));
  // N * 60 / 30 is not expressible: unknown.
  EXPECT_EQ(s.Dims1(OpKind::kReshape, ir::ReshapeAttrs{}, {x, s.Const(I64({2}, {-1, 30}))}),
            (Dv{kUnknownDim, 30}));
}

TEST(MovementShape, ReshapeErrorsAndUnknownShapeValue) {
  ShapeCase s;
  ir::Value* x = s.In({2, 3, 4});
  EXPECT_FALSE(
      s.Infer(OpKind::kReshape, ir::ReshapeAttrs{}, {x, s.Const(I64({2}, {-1, -1}))}).ok());
  EXPECT_FALSE(s.Infer(OpKind::kReshape, ir::ReshapeAttrs{}, {x, s.Const(I64({2}, {5, -1}))}).ok());
  EXPECT_FALSE(s.Infer(OpKind::kReshape, ir::ReshapeAttrs{}, {x, s.Const(I64({2}, {5, 5}))}).ok());
  EXPECT_FALSE(
      s.Infer(OpKind::kReshape, ir::ReshapeAttrs{1}, {x, s.Const(I64({2}, {0, -1}))}).ok());
  // allowzero: 0 is a real zero extent.
  ir::Value* empty = s.In({0, 3});
  EXPECT_EQ(s.Dims1(OpKind::kReshape, ir::ReshapeAttrs{1}, {empty, s.Const(I64({2}, {3, 0}))}),
            (Dv{3, 0}));
  // A shape computed at run time with a known length: rank known, extents not.
  ir::Value* shape = s.In(TensorType(DType::kInt64, {3}));
  EXPECT_EQ(s.Dims1(OpKind::kReshape, ir::ReshapeAttrs{}, {x, shape}),
            (Dv{kUnknownDim, kUnknownDim, kUnknownDim}));
  ir::Value* any_shape = s.In(TensorType(DType::kInt64, {kUnknownDim}));
  auto out = s.Infer(OpKind::kReshape, ir::ReshapeAttrs{}, {x, any_shape});
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE((*out)[0].has_rank());
}

TEST(MovementShape, TransposeSqueezeUnsqueeze) {
  ShapeCase s;
  ir::Value* x = s.In({s.n(), 1, 4, 1});
  EXPECT_EQ(s.Dims1(OpKind::kTranspose, ir::TransposeAttrs{{0, 2, 3, 1}}, {x}),
            (Dv{s.n(), 4, 1, 1}));
  EXPECT_EQ(s.Dims1(OpKind::kTranspose, ir::TransposeAttrs{}, {x}), (Dv{1, 4, 1, s.n()}));
  EXPECT_FALSE(s.Infer(OpKind::kTranspose, ir::TransposeAttrs{{0, 0, 1, 2}}, {x}).ok());
  EXPECT_EQ(s.Dims1(OpKind::kSqueeze, ir::NoAttrs{}, {x, s.Const(I64({2}, {1, -1}))}),
            (Dv{s.n(), 4}));
  EXPECT_FALSE(s.Infer(OpKind::kSqueeze, ir::NoAttrs{}, {x, s.Const(I64({1}, {2}))}).ok());
  // No axes: an unknown extent might be 1, so the rank is unknown; static shapes squeeze.
  auto all = s.Infer(OpKind::kSqueeze, ir::NoAttrs{}, {x});
  ASSERT_TRUE(all.ok());
  EXPECT_FALSE((*all)[0].has_rank());
  EXPECT_EQ(s.Dims1(OpKind::kSqueeze, ir::NoAttrs{}, {s.In({1, 3, 1, 2})}), (Dv{3, 2}));
  EXPECT_EQ(s.Dims1(OpKind::kUnsqueeze, ir::NoAttrs{}, {x, s.Const(I64({2}, {-1, 0}))}),
            (Dv{1, s.n(), 1, 4, 1, 1}));
  EXPECT_FALSE(s.Infer(OpKind::kUnsqueeze, ir::NoAttrs{}, {x, s.Const(I64({2}, {1, -5}))}).ok());
}

TEST(MovementShape, ConcatSplitSlice) {
  ShapeCase s;
  ir::Value* a = s.In({s.n(), 3, 8});
  ir::Value* b = s.In({s.n(), 5, 8});
  EXPECT_EQ(s.Dims1(OpKind::kConcat, ir::AxisAttrs{-2}, {a, b}), (Dv{s.n(), 8, 8}));
  EXPECT_EQ(s.Dims1(OpKind::kConcat, ir::AxisAttrs{0}, {a, a}), (Dv{kUnknownDim, 3, 8}));
  EXPECT_FALSE(s.Infer(OpKind::kConcat, ir::AxisAttrs{2}, {a, b}).ok());

  auto split = s.Infer(OpKind::kSplit, ir::SplitAttrs{2, 3}, {a}, 3);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(*(*split)[0].dims, (Dv{s.n(), 3, 3}));
  EXPECT_EQ(*(*split)[2].dims, (Dv{s.n(), 3, 2}));
  auto sized = s.Infer(OpKind::kSplit, ir::SplitAttrs{-1, 0}, {a, s.Const(I64({2}, {6, 2}))}, 2);
  ASSERT_TRUE(sized.ok()) << sized.status();
  EXPECT_EQ(*(*sized)[0].dims, (Dv{s.n(), 3, 6}));
  EXPECT_FALSE(
      s.Infer(OpKind::kSplit, ir::SplitAttrs{-1, 0}, {a, s.Const(I64({2}, {6, 3}))}, 2).ok());

  // x[:, 1:, ::-3] keeps N; slicing the batch itself with a bounded end does not.
  EXPECT_EQ(s.Dims1(OpKind::kSlice, ir::NoAttrs{},
                    {a, s.Const(I64({2}, {1, -1})), s.Const(I64({2}, {INT64_MAX, INT64_MIN})),
                     s.Const(I64({2}, {1, 2})), s.Const(I64({2}, {1, -3}))}),
            (Dv{s.n(), 2, 3}));
  EXPECT_EQ(s.Dims1(OpKind::kSlice, ir::NoAttrs{},
                    {a, s.Const(I64({1}, {0})), s.Const(I64({1}, {2})), s.Const(I64({1}, {0}))}),
            (Dv{kUnknownDim, 3, 8}));
  ir::Value* starts = s.In(TensorType(DType::kInt64, {1}));
  EXPECT_EQ(s.Dims1(OpKind::kSlice, ir::NoAttrs{},
                    {a, starts, s.Const(I64({1}, {2})), s.Const(I64({1}, {-1}))}),
            (Dv{s.n(), 3, kUnknownDim}));
}

TEST(MovementShape, PadGatherExpandTile) {
  ShapeCase s;
  ir::Value* x = s.In({s.n(), 3, 4});
  EXPECT_EQ(s.Dims1(OpKind::kPad, ir::PadAttrs{},
                    {x, s.Const(I64({4}, {1, -1, 2, 3})), nullptr, s.Const(I64({2}, {1, 2}))}),
            (Dv{s.n(), 6, 6}));
  EXPECT_EQ(s.Dims1(OpKind::kPad, ir::PadAttrs{}, {x, s.Const(I64({6}, {1, 0, 0, 0, 0, 0}))}),
            (Dv{kUnknownDim, 3, 4}));
  EXPECT_FALSE(
      s.Infer(OpKind::kPad, ir::PadAttrs{}, {x, s.Const(I64({6}, {0, -2, 0, 0, -2, 0}))}).ok());

  ir::Value* idx = s.In(TensorType(DType::kInt32, {2, 5}));
  EXPECT_EQ(s.Dims1(OpKind::kGather, ir::AxisAttrs{-1}, {x, idx}), (Dv{s.n(), 3, 2, 5}));
  EXPECT_EQ(s.Dims1(OpKind::kGather, ir::AxisAttrs{1}, {x, s.Const(I64({}, {0}))}), (Dv{s.n(), 4}));

  ir::Value* col = s.In({3, 1});
  EXPECT_EQ(s.Dims1(OpKind::kExpand, ir::NoAttrs{}, {col, s.Const(I64({3}, {2, 1, 6}))}),
            (Dv{2, 3, 6}));
  EXPECT_FALSE(s.Infer(OpKind::kExpand, ir::NoAttrs{}, {col, s.Const(I64({2}, {2, 6}))}).ok());
  EXPECT_EQ(s.Dims1(OpKind::kExpand, ir::NoAttrs{}, {col, s.In(TensorType(DType::kInt64, {2}))}),
            (Dv{3, kUnknownDim}));
  EXPECT_EQ(s.Dims1(OpKind::kTile, ir::NoAttrs{}, {x, s.Const(I64({3}, {1, 2, 0}))}),
            (Dv{s.n(), 6, 0}));
}

TEST(MovementShape, ShapeSizeCastConstantsRange) {
  ShapeCase s;
  ir::Value* x = s.In({s.n(), 3, 4, 5});
  EXPECT_EQ(s.Dims1(OpKind::kShape, ir::ShapeAttrs{}, {x}), (Dv{4}));
  EXPECT_EQ(s.Dims1(OpKind::kShape, ir::ShapeAttrs{-3, -1}, {x}), (Dv{2}));
  EXPECT_EQ(s.Dims1(OpKind::kShape, ir::ShapeAttrs{-10, 10}, {x}), (Dv{4}));
  EXPECT_EQ(s.Dims1(OpKind::kShape, ir::ShapeAttrs{3, 1}, {x}), (Dv{0}));
  EXPECT_EQ(s.Dims1(OpKind::kSize, ir::NoAttrs{}, {x}), (Dv{}));
  auto cast = s.Infer(OpKind::kCast, ir::CastAttrs{DType::kFloat16}, {x});
  ASSERT_TRUE(cast.ok());
  EXPECT_EQ((*cast)[0], TensorType(DType::kFloat16, {s.n(), 3, 4, 5}));

  ir::ConstantAttrs value;
  value.value = Tensor::FromVector(DType::kInt32, {1}, std::vector<int32_t>{7});
  auto cos = s.Infer(OpKind::kConstantOfShape, value, {s.Const(I64({2}, {2, 3}))});
  ASSERT_TRUE(cos.ok());
  EXPECT_EQ((*cos)[0], TensorType(DType::kInt32, {2, 3}));
  auto cos_default = s.Infer(OpKind::kConstantOfShape, ir::ConstantAttrs{},
                             {s.In(TensorType(DType::kInt64, {2}))});
  ASSERT_TRUE(cos_default.ok());
  EXPECT_EQ((*cos_default)[0], TensorType(DType::kFloat32, {kUnknownDim, kUnknownDim}));

  auto scalar = [&](float v) {
    return s.Const(Tensor::FromVector(DType::kFloat32, {}, std::vector<float>{v}));
  };
  // ceil((10 - 1) / 2.5) = 4: 1, 3.5, 6, 8.5.
  EXPECT_EQ(s.Dims1(OpKind::kRange, ir::NoAttrs{}, {scalar(1), scalar(10), scalar(2.5f)}), (Dv{4}));
  EXPECT_EQ(s.Dims1(OpKind::kRange, ir::NoAttrs{}, {scalar(1), scalar(10), scalar(-1)}), (Dv{0}));
  EXPECT_EQ(s.Dims1(OpKind::kRange, ir::NoAttrs{}, {scalar(1), s.In(Dv{}), scalar(1)}),
            (Dv{kUnknownDim}));
}

TEST(MovementShape, ResizeAndDepthToSpace) {
  ShapeCase s;
  ir::Value* x = s.In({s.n(), 3, 5, 7});
  auto scales =
      s.Const(Tensor::FromVector(DType::kFloat32, {4}, std::vector<float>{1.0f, 1.0f, 2.0f, 0.5f}));
  EXPECT_EQ(s.Dims1(OpKind::kResize, ir::ResizeAttrs{}, {x, nullptr, scales}),
            (Dv{s.n(), 3, 10, 3}));
  // Opset 11 form: empty scales, sizes given; axes attribute.
  auto empty = s.Const(Tensor(DType::kFloat32, {0}));
  ir::ResizeAttrs axes;
  axes.axes = {-2, -1};
  EXPECT_EQ(s.Dims1(OpKind::kResize, axes, {x, empty, empty, s.Const(I64({2}, {8, 9}))}),
            (Dv{s.n(), 3, 8, 9}));
  // not_larger: scale min(20/5, 14/7) = 2 on both axes.
  axes.keep_aspect_ratio_policy = ir::KeepAspectRatio::kNotLarger;
  EXPECT_EQ(s.Dims1(OpKind::kResize, axes, {x, empty, empty, s.Const(I64({2}, {20, 14}))}),
            (Dv{s.n(), 3, 10, 14}));
  ir::Value* sizes = s.In(TensorType(DType::kInt64, {4}));
  EXPECT_EQ(s.Dims1(OpKind::kResize, ir::ResizeAttrs{}, {x, empty, empty, sizes}),
            (Dv{kUnknownDim, kUnknownDim, kUnknownDim, kUnknownDim}));
  EXPECT_FALSE(s.Infer(OpKind::kResize, ir::ResizeAttrs{},
                       {x, empty, scales, s.Const(I64({4}, {1, 3, 4, 4}))})
                   .ok());

  ir::Value* d = s.In({s.n(), 8, 2, 3});
  EXPECT_EQ(s.Dims1(OpKind::kDepthToSpace, ir::DepthToSpaceAttrs{2}, {d}), (Dv{s.n(), 2, 4, 6}));
  EXPECT_FALSE(s.Infer(OpKind::kDepthToSpace, ir::DepthToSpaceAttrs{3}, {d}).ok());
  EXPECT_EQ(s.Dims1(OpKind::kSpaceToDepth, ir::DepthToSpaceAttrs{2}, {s.In({1, 3, 4, 6})}),
            (Dv{1, 12, 2, 3}));
}

}  // namespace
}  // namespace qcc
