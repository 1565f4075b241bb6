// Symbolic shape arithmetic (ir/sym_int.h, ir/symbolic_values.h) and the shape functions that
// use it: the exporter patterns that compute shapes from a batch-N Shape.
#include "ir/symbolic_values.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/shape_inference.h"
#include "ir/sym_int.h"
#include "ir/verifier.h"

namespace qcc::ir {
namespace {

TEST(IrSymInt, AffineArithmeticAndWhatLeavesIt) {
  const SymInt n = *SymInt::OfDim(SymbolDim(0));
  const SymInt m = *SymInt::OfDim(SymbolDim(1));
  EXPECT_EQ(n.AsDim(), SymbolDim(0));
  EXPECT_EQ(SymInt(7).AsDim(), 7);
  EXPECT_EQ(SymInt(-1).AsDim(), kUnknownDim);
  EXPECT_FALSE(SymInt::OfDim(kUnknownDim).has_value());

  const SymInt three_n = *SymInt::Mul(n, SymInt(3));
  EXPECT_EQ(three_n.ToString({"N"}), "3*N");
  EXPECT_EQ(three_n.AsDim(), kUnknownDim);  // not an extent the types can name
  EXPECT_EQ(*SymInt::Div(three_n, SymInt(3)), n);
  EXPECT_FALSE(SymInt::Div(n, SymInt(2)).has_value());         // N / 2 is not affine
  EXPECT_EQ(*SymInt::Div(SymInt(-7), SymInt(2)), SymInt(-3));  // truncates, as ONNX/C
  EXPECT_FALSE(SymInt::Mul(n, m).has_value());                 // N * M is not affine
  const SymInt sum = *SymInt::Add(*SymInt::Add(n, m), SymInt(2));
  EXPECT_EQ(sum.ToString({"N", "M"}), "N+M+2");
  EXPECT_EQ(*SymInt::Sub(sum, m), *SymInt::Add(n, SymInt(2)));
  EXPECT_TRUE(SymInt::Sub(n, n)->is_constant());
  EXPECT_EQ(sum.Evaluate([](int s) { return s == 0 ? 5 : 10; }), 17);

  // Signs decided for every value of the symbols (>= 0), or not at all.
  EXPECT_EQ(SymInt::Compare(n, SymInt(-1)), 1);  // Equal(N, -1) is false
  EXPECT_EQ(SymInt::Compare(SymInt(-1), n), -1);
  EXPECT_EQ(SymInt::Compare(n, n), 0);
  EXPECT_FALSE(SymInt::Compare(n, SymInt(4)).has_value());
  EXPECT_FALSE(SymInt::Compare(n, m).has_value());
  EXPECT_FALSE(SymInt::Add(SymInt(INT64_MAX), SymInt(1)).has_value());
}

/// A graph with input x:[N, 3, 8, 8] and nodes added by the test.
struct ShapeGraph {
  Graph g;
  Value* x;
  Dim n;
  ShapeGraph() {
    g.set_opset(13);
    n = SymbolDim(g.AddSymbol("N"));
    x = g.AddInput("x", TensorType(DType::kFloat32, {n, 3, 8, 8}));
  }
  Value* I64(const std::string& name, std::vector<int64_t> v) {
    const int64_t len = static_cast<int64_t>(v.size());
    return g.NewConstant(name, Tensor::FromVector<int64_t>(DType::kInt64, {len}, v));
  }
  Value* Scalar(const std::string& name, int64_t v) {
    return g.NewConstant(name, Tensor::FromVector<int64_t>(DType::kInt64, {}, {v}));
  }
  Value* Op(OpKind kind, const std::string& name, std::vector<Value*> in) {
    return g.AddNode(kind, name, std::move(in), {name + "_out"})->output(0);
  }
  /// Infers shapes and returns the symbolic values.
  SymbolicValues Infer() {
    EXPECT_TRUE(Verify(g).ok());
    SymbolicValues values;
    const absl::Status s = InferShapes(g, &values);
    EXPECT_TRUE(s.ok()) << s;
    return values;
  }
};

std::string Show(const SymbolicValues& values, const Value* v) {
  auto it = values.find(v);
  if (it == values.end()) return "none";
  std::string s;
  for (const auto& e : it->second) s += (s.empty() ? "" : ",") + (e ? e->ToString({"N"}) : "?");
  return s;
}

TEST(IrSymbolicValues, TheExportersFlattenKeepsTheBatch) {
  // Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])): efficientnet-lite0's flatten.
  ShapeGraph s;
  Value* shape = s.Op(OpKind::kShape, "shape", {s.x});
  Value* batch = s.Op(OpKind::kGather, "gather", {shape, s.Scalar("zero", 0)});
  Value* dim = s.Op(OpKind::kUnsqueeze, "unsqueeze", {batch, s.I64("axes", {0})});
  Value* target = s.Op(OpKind::kConcat, "concat", {dim, s.I64("minus_one", {-1})});
  Value* y = s.Op(OpKind::kReshape, "reshape", {s.x, target});
  s.g.AddOutput(y);
  const SymbolicValues values = s.Infer();
  EXPECT_EQ(Show(values, shape), "N,3,8,8");
  EXPECT_EQ(Show(values, batch), "N");
  EXPECT_EQ(Show(values, target), "N,-1");
  EXPECT_EQ(y->type(), TensorType(DType::kFloat32, {s.n, 192}));
  // ComputeSymbolicValues gives the same without changing types.
  EXPECT_EQ(Show(ComputeSymbolicValues(s.g), target), "N,-1");
}

TEST(IrSymbolicValues, ArithmeticComparisonsAndWhere) {
  // The channel shuffle's C / g, 3 * N, and torch's Expand idiom
  // Where(Equal(shape, -1), ones, shape) with a batch in the shape.
  ShapeGraph s;
  Value* shape = s.Op(OpKind::kShape, "shape", {s.x});
  Value* c = s.Op(OpKind::kGather, "c", {shape, s.I64("one", {1})});
  Value* c_over_3 = s.Op(OpKind::kDiv, "div", {c, s.Scalar("three", 3)});
  Value* n = s.Op(OpKind::kSlice, "n", {shape, s.I64("s0", {0}), s.I64("e1", {1})});
  Value* three_n = s.Op(OpKind::kMul, "mul", {n, s.Scalar("three_b", 3)});
  Value* half_n = s.Op(OpKind::kDiv, "half", {n, s.Scalar("two", 2)});
  Value* is_minus_one = s.Op(OpKind::kEqual, "eq", {shape, s.Scalar("m1", -1)});
  Value* ones = s.I64("ones", {1, 1, 1, 1});
  Value* picked = s.Op(OpKind::kWhere, "where", {is_minus_one, ones, shape});
  Value* as_float = s.Op(OpKind::kCast, "cast", {n});
  s.g.nodes().back()->mutable_attrs<CastAttrs>().to = DType::kFloat32;
  Value* expanded = s.Op(OpKind::kExpand, "expand", {s.x, picked});
  s.g.AddOutput(expanded);
  const SymbolicValues values = s.Infer();
  EXPECT_EQ(Show(values, c_over_3), "1");
  EXPECT_EQ(Show(values, three_n), "3*N");
  EXPECT_EQ(Show(values, half_n), "none");  // N / 2 is not followed
  EXPECT_EQ(Show(values, is_minus_one), "0,0,0,0");
  EXPECT_EQ(Show(values, picked), "N,3,8,8");
  EXPECT_EQ(Show(values, as_float), "N");
  EXPECT_EQ(expanded->type(), TensorType(DType::kFloat32, {s.n, 3, 8, 8}));
}

TEST(IrSymbolicValues, ShapeInputsOfExpandConstantOfShapeAndResize) {
  ShapeGraph s;
  Value* shape = s.Op(OpKind::kShape, "shape", {s.x});
  Value* n = s.Op(OpKind::kSlice, "n", {shape, s.I64("s0", {0}), s.I64("e1", {1})});
  // Expand a [1, 3, 1, 1] constant to [N, 3, 8, 8] (a computed expand_as).
  Value* bias = s.g.NewConstant("bias", Tensor(DType::kFloat32, {1, 3, 1, 1}));
  Value* expanded = s.Op(OpKind::kExpand, "expand", {bias, shape});
  // ConstantOfShape([N, 5]).
  Value* fill = s.Op(OpKind::kConstantOfShape, "fill",
                     {s.Op(OpKind::kConcat, "fill_shape", {n, s.I64("five", {5})})});
  // Resize to sizes [N, 3, 16, 16] computed from the shape: the batch keeps scale 1.
  Value* hw = s.Op(OpKind::kSlice, "hw", {shape, s.I64("s2", {2}), s.I64("e4", {4})});
  Value* doubled = s.Op(OpKind::kMul, "double", {hw, s.Scalar("k2", 2)});
  Value* nc = s.Op(OpKind::kSlice, "nc", {shape, s.I64("s0b", {0}), s.I64("e2", {2})});
  Value* sizes = s.Op(OpKind::kConcat, "sizes", {nc, doubled});
  Value* empty = s.g.NewConstant("empty", Tensor(DType::kFloat32, {0}));
  Value* resized = s.Op(OpKind::kResize, "resize", {s.x, empty, empty, sizes});
  for (Value* v : {expanded, fill, resized}) s.g.AddOutput(v);
  s.Infer();
  EXPECT_EQ(expanded->type(), TensorType(DType::kFloat32, {s.n, 3, 8, 8}));
  EXPECT_EQ(fill->type(), TensorType(DType::kFloat32, {s.n, 5}));
  EXPECT_EQ(resized->type(), TensorType(DType::kFloat32, {s.n, 3, 16, 16}));
}

TEST(IrSymbolicValues, DataDependentValuesAreNotKnown) {
  // Cast(ReduceMax(x)) depends on the data: nothing is known, and a Reshape to it has an unknown
  // extent.
  ShapeGraph s;
  Value* max = s.Op(OpKind::kReduceMax, "max", {s.x});
  Value* k = s.Op(OpKind::kCast, "to_int", {max});
  s.g.nodes().back()->mutable_attrs<CastAttrs>().to = DType::kInt64;
  Value* flat = s.Op(OpKind::kReshape, "flat", {k, s.I64("one_elem", {1})});
  Value* target = s.Op(OpKind::kConcat, "target", {s.I64("lead", {0, 3}), flat});
  Value* y = s.Op(OpKind::kReshape, "reshape", {s.x, target});
  s.g.AddOutput(y);
  const SymbolicValues values = s.Infer();
  EXPECT_EQ(Show(values, k), "none");
  EXPECT_EQ(Show(values, target), "0,3,?");
  ASSERT_TRUE(y->type().has_rank());
  EXPECT_EQ(*y->type().dims, std::vector<Dim>({s.n, 3, kUnknownDim}));
}

}  // namespace
}  // namespace qcc::ir
