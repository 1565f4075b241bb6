#include "ir/graph.h"

#include "gtest/gtest.h"
#include "ir/printer.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"

namespace qcc::ir {
namespace {

/// x -> Relu -> Add(., x) -> out, with a symbolic batch.
struct SmallGraph {
  Graph g;
  Value* x;
  Node* relu;
  Node* add;
  SmallGraph() {
    g.set_name("small");
    g.set_opset(13);
    const Dim n = SymbolDim(g.AddSymbol("N"));
    x = g.AddInput("x", TensorType(DType::kFloat32, {n, 4}));
    relu = g.AddNode(OpKind::kRelu, "relu", {x}, {"r"});
    add = g.AddNode(OpKind::kAdd, "add", {relu->output(0), x}, {"y"});
    g.AddOutput(add->output(0));
  }
};

// EmptyLike keeps what a rewritten graph must share with its source (name, opset, the symbols
// in order, so a Dim index means the same symbol) and nothing else.
TEST(IrGraph, EmptyLikeKeepsNameOpsetAndSymbols) {
  Graph g;
  g.set_name("net");
  g.set_opset(17);
  g.AddSymbol("N");
  g.AddSymbol("T");
  g.AddInput("x", TensorType(DType::kFloat32, {SymbolDim(1), 4}));
  const std::unique_ptr<Graph> e = g.EmptyLike();
  EXPECT_EQ(e->name(), "net");
  EXPECT_EQ(e->opset(), 17);
  EXPECT_EQ(e->symbols(), (std::vector<std::string>{"N", "T"}));
  EXPECT_EQ(e->AddSymbol("T"), 1);
  EXPECT_TRUE(e->inputs().empty());
  EXPECT_TRUE(e->nodes().empty());
  EXPECT_TRUE(e->values().empty());
}

TEST(IrGraph, UseListsFollowEdges) {
  SmallGraph s;
  ASSERT_EQ(s.x->uses().size(), 2u);
  EXPECT_EQ(s.x->uses()[0].node, s.relu);
  EXPECT_EQ(s.x->uses()[1].node, s.add);
  EXPECT_EQ(s.x->uses()[1].index, 1);
  EXPECT_EQ(s.relu->output(0)->producer(), s.relu);
  EXPECT_TRUE(Verify(s.g).ok());
}

TEST(IrGraph, ReplaceAllUsesWithRewiresNodesAndOutputs) {
  SmallGraph s;
  Value* r = s.relu->output(0);
  s.g.ReplaceAllUsesWith(r, s.x);
  EXPECT_TRUE(r->uses().empty());
  EXPECT_EQ(s.add->input(0), s.x);
  EXPECT_EQ(s.x->uses().size(), 3u);  // relu, add#0, add#1
  s.g.RemoveNode(s.relu);
  s.g.RemoveDeadValues();
  EXPECT_EQ(s.g.nodes().size(), 1u);
  EXPECT_EQ(s.g.FindValue("r"), nullptr);
  EXPECT_TRUE(Verify(s.g).ok());
}

TEST(IrGraph, TopologicalSortRepairsOrderAndFindsCycles) {
  Graph g;
  Value* x = g.AddInput("x", TensorType(DType::kFloat32, {2}));
  Value* late = g.NewValue("late");
  Node* second = g.AddNode(OpKind::kNeg, "second", {late}, {"y"});
  Node* first = g.AddNode(OpKind::kRelu, "first", {x}, {"tmp"});
  g.ReplaceAllUsesWith(late, first->output(0));
  g.AddOutput(second->output(0));
  EXPECT_FALSE(Verify(g).ok());  // 'second' uses a value defined after it
  ASSERT_TRUE(g.TopologicalSort().ok());
  EXPECT_EQ(g.nodes()[0].get(), first);
  EXPECT_TRUE(Verify(g).ok());

  first->SetInput(0, second->output(0));  // first <- second <- first
  absl::Status s = g.TopologicalSort();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("cycle"), absl::string_view::npos);
}

TEST(IrVerifier, RejectsWrongInputCountAndAttrs) {
  Graph g;
  Value* x = g.AddInput("x", TensorType(DType::kFloat32, {2}));
  Node* n = g.AddNode(OpKind::kAdd, "add", {x}, {"y"});
  g.AddOutput(n->output(0));
  absl::Status s = Verify(g);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'add' (Add)"), absl::string_view::npos) << s;
  n->AddInput(x);
  EXPECT_TRUE(Verify(g).ok());
  n->set_attrs(ConvAttrs{});
  EXPECT_NE(Verify(g).message().find("attributes of another op kind"), absl::string_view::npos);
}

TEST(IrShapeInference, BroadcastKeepsSymbolicBatch) {
  SmallGraph s;
  ASSERT_TRUE(InferShapes(s.g).ok());
  EXPECT_EQ(TypeToString(s.g, s.add->output(0)->type()), "f32[N,4]");
}

TEST(IrShapeInference, BroadcastMismatchNamesTheNode) {
  Graph g;
  Value* a = g.AddInput("a", TensorType(DType::kFloat32, {2, 3}));
  Value* b = g.AddInput("b", TensorType(DType::kFloat32, {4}));
  Node* n = g.AddNode(OpKind::kMul, "mul7", {a, b}, {"y"});
  g.AddOutput(n->output(0));
  absl::Status s = InferShapes(g);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("node 'mul7' (Mul)"), absl::string_view::npos) << s;
}

TEST(IrPrinter, PrintsTypesAttrsAndNames) {
  SmallGraph s;
  ASSERT_TRUE(InferShapes(s.g).ok());
  s.relu->set_name("relu");
  const std::string text = PrintGraph(s.g);
  EXPECT_NE(text.find("graph small (opset 13)"), std::string::npos) << text;
  EXPECT_NE(text.find("input  %x : f32[N,4]"), std::string::npos) << text;
  EXPECT_NE(text.find("%y = Add(%r, %x) : f32[N,4]  # add"), std::string::npos) << text;
  Graph g;
  Value* x = g.AddInput("x", TensorType(DType::kFloat32, {1, 3, 8, 8}));
  Value* w = g.NewConstant("w", Tensor(DType::kFloat32, {4, 3, 3, 3}));
  Node* conv = g.AddNode(OpKind::kConv, "conv", {x, w}, {"c"});
  conv->mutable_attrs<ConvAttrs>().strides = {2, 2};
  conv->mutable_attrs<ConvAttrs>().auto_pad = AutoPad::kSameUpper;
  const std::string attrs = AttrsToString(*conv);
  EXPECT_NE(attrs.find("auto_pad=SAME_UPPER"), std::string::npos) << attrs;
  EXPECT_NE(attrs.find("strides=[2,2]"), std::string::npos) << attrs;
}

TEST(IrOpTable, NamesRoundTrip) {
  for (int i = 0; i < kNumOpKinds; ++i) {
    const OpKind k = static_cast<OpKind>(i);
    ASSERT_EQ(OpKindFromName(OpName(k)), k) << OpName(k);
  }
  EXPECT_FALSE(OpKindFromName("NotAnOp").has_value());
}

}  // namespace
}  // namespace qcc::ir
