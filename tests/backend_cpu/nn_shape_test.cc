// Shape functions of the nn ops over symbolic shapes: a named batch passes through, unknown
// spatial extents give unknown output extents, and bad shapes are named in the error.
#include <gtest/gtest.h>

#include "ir/graph.h"
#include "ir/shape_inference.h"

namespace qcc::ir {
namespace {

const Dim kN = SymbolDim(0);  // the batch symbol
constexpr Dim kU = kUnknownDim;

absl::StatusOr<std::vector<TensorType>> Infer(OpKind kind, Attrs attrs,
                                              const std::vector<TensorType>& in,
                                              int num_outputs = 1) {
  Graph g;
  g.AddSymbol("N");
  std::vector<Value*> values;
  for (size_t i = 0; i < in.size(); ++i) {
    values.push_back(
        in[i].dtype == DType::kUndefined ? nullptr : g.AddInput("in" + std::to_string(i), in[i]));
  }
  Node* n = g.AddNode(kind, "node", values, std::vector<std::string>(num_outputs));
  n->set_attrs(std::move(attrs));
  return InferNode(*n, in, std::vector<const Tensor*>(in.size(), nullptr));
}

TensorType F(std::vector<Dim> d) { return TensorType(DType::kFloat32, std::move(d)); }

TEST(NnShapeTest, ConvKeepsSymbolicBatchAndUnknownSpatial) {
  ConvAttrs a;
  a.pads = {1, 1, 1, 1};
  auto out = Infer(OpKind::kConv, a, {F({kN, 3, 32, kU}), F({16, 3, 3, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], F({kN, 16, 32, kU}));
  // Unranked weights: channel and spatial extents unknown, the batch still known.
  out = Infer(OpKind::kConv, ConvAttrs{},
              {F({kN, 3, 8, 8}), TensorType::UnknownShape(DType::kFloat32)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], F({kN, kU, kU, kU}));
  // kernel_shape given: spatial known even with unknown weight extents.
  a = ConvAttrs{};
  a.kernel_shape = {3, 3};
  a.strides = {2, 2};
  a.auto_pad = AutoPad::kSameUpper;
  out = Infer(OpKind::kConv, a, {F({kN, 4, 9, 10}), F({kU, 2, kU, kU})});
  ASSERT_FALSE(out.ok());  // 4 channels vs 2 x group 1
  a.group = 2;
  out = Infer(OpKind::kConv, a, {F({kN, 4, 9, 10}), F({kU, 2, kU, kU})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], F({kN, kU, 5, 5}));
}

TEST(NnShapeTest, ConvErrorsNameTheProblem) {
  struct Case {
    std::vector<TensorType> in;
    int64_t group;
    const char* what;
  };
  for (const Case& c : {Case{{F({kN, 3}), F({8, 3, 3, 3})}, 1, "rank >= 3"},
                        Case{{F({kN, 3, 8, 8}), F({8, 3, 3})}, 1, "rank"},
                        Case{{F({kN, 6, 8, 8}), F({8, 3, 3, 3})}, 3, "channels"},
                        Case{{F({kN, 6, 8, 8}), F({7, 3, 3, 3})}, 2, "multiple of group"},
                        Case{{F({kN, 6, 8, 8}), F({8, 6, 3, 3}), F({7})}, 1, "bias"},
                        Case{{F({kN, 6, 2, 8}), F({8, 6, 3, 3})}, 1, "larger than the input"}}) {
    ConvAttrs a;
    a.group = c.group;
    auto out = Infer(OpKind::kConv, a, c.in);
    ASSERT_FALSE(out.ok()) << c.what;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(out.status().message().find(c.what), absl::string_view::npos) << out.status();
    EXPECT_NE(out.status().message().find("node 'node' (Conv)"), absl::string_view::npos)
        << out.status();
  }
}

TEST(NnShapeTest, ConvTranspose) {
  ConvTransposeAttrs a;
  a.strides = {2, 2};
  a.group = 2;
  auto out = Infer(OpKind::kConvTranspose, a, {F({kN, 4, 5, kU}), F({4, 3, 3, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], F({kN, 6, 11, kU}));
  a.output_shape = {20, 30};
  out = Infer(OpKind::kConvTranspose, a, {F({kN, 4, kU, kU}), F({4, 3, 3, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], F({kN, 6, 20, 30}));
  a = ConvTransposeAttrs{};
  a.output_padding = {1, 1, 1};
  out = Infer(OpKind::kConvTranspose, a, {F({kN, 4, 5, 5}), F({4, 3, 3, 3})});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("output_padding"), absl::string_view::npos);
}

TEST(NnShapeTest, Pools) {
  PoolAttrs a;
  a.kernel_shape = {3, 3};
  a.strides = {2, 2};
  a.pads = {1, 1, 1, 1};
  auto out = Infer(OpKind::kMaxPool, a, {F({kN, 8, 32, kU})}, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], F({kN, 8, 16, kU}));
  EXPECT_EQ((*out)[1], TensorType(DType::kInt64, {kN, 8, 16, kU}));
  a.ceil_mode = 1;
  a.pads = {};
  out = Infer(OpKind::kAveragePool, a, {F({kN, kU, 8, 9})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], F({kN, kU, 4, 4}));
  out = Infer(OpKind::kGlobalAveragePool, NoAttrs{}, {F({kN, 8, kU, kU})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], F({kN, 8, 1, 1}));
  out = Infer(OpKind::kGlobalMaxPool, NoAttrs{}, {F({kN})});
  EXPECT_FALSE(out.ok());
}

TEST(NnShapeTest, NormalizationsKeepShapes) {
  auto out = Infer(OpKind::kBatchNormalization, BatchNormAttrs{},
                   {F({kN, 8, kU, kU}), F({8}), F({8}), F({8}), F({8})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], F({kN, 8, kU, kU}));
  out = Infer(OpKind::kBatchNormalization, BatchNormAttrs{},
              {F({kN, 8, 4}), F({8}), F({8}), F({8}), F({7})});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("input_var"), absl::string_view::npos);
  LayerNormAttrs ln;
  ln.axis = -1;
  out = Infer(OpKind::kLayerNormalization, ln, {F({kN, 7, 16}), F({16}), F({16})}, 3);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], F({kN, 7, 16}));
  EXPECT_EQ((*out)[1], F({kN, 7, 1}));
  EXPECT_EQ((*out)[2], F({kN, 7, 1}));
}

TEST(NnShapeTest, GemmAndMatMul) {
  GemmAttrs g;
  g.transB = 1;
  auto out = Infer(OpKind::kGemm, g, {F({kN, 64}), F({10, 64}), F({10})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0], F({kN, 10}));
  out = Infer(OpKind::kGemm, g, {F({kN, 64, 1}), F({10, 64})});
  EXPECT_FALSE(out.ok());

  struct Case {
    std::vector<Dim> a, b, y;
  };
  for (const Case& c : {Case{{kN, kU, 4}, {4, 5}, {kN, kU, 5}}, Case{{4}, {kN, 4, 5}, {kN, 5}},
                        Case{{kN, 3, 4}, {4}, {kN, 3}}, Case{{4}, {4}, {}},
                        Case{{2, 1, 3, 4}, {kN, 4, 6}, {2, kN, 3, 6}}}) {
    out = Infer(OpKind::kMatMul, NoAttrs{}, {F(c.a), F(c.b)});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0], F(c.y));
  }
  out = Infer(OpKind::kMatMul, NoAttrs{}, {F({2, 3}), F({4, 5})});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("inner"), absl::string_view::npos);
}

}  // namespace
}  // namespace qcc::ir
