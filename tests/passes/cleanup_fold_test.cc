// fold-constants: partial shapes, size limits, graph outputs, and the real exporter patterns of
// resnet20-cifar10 (ConstantOfShape/Cast/Concat/Pad shortcut) and ppocr-cls-mbv3 (Constant-node
// weights), each checked for structure and for unchanged outputs.
#include <string>
#include <vector>

#include "frontend/tensor_proto.h"
#include "gtest/gtest.h"
#include "ir/shape_inference.h"
#include "tests/passes/cleanup_test_util.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

Tensor Int64s(Dims dims, const std::vector<int64_t>& v) {
  return Tensor::FromVector(DType::kInt64, std::move(dims), v);
}

std::vector<int64_t> ConstantOf(const ir::Value* v) {
  return v != nullptr && v->constant() != nullptr ? v->constant()->ToInt64Vector()
                                                  : std::vector<int64_t>{-999};
}

// x:[N,3,4,5]. Shape(x)[1] and Shape(x)[[2,3]] and Shape(x)[1:4] are known although Shape(x) is
// not; Shape(x)[0] is the symbolic batch and stays. Outputs: x reshaped to [N,3,4,5] and to
// [N,60] through Concat chains, and "chw" = C * [H,W] = [12,15], which folds completely.
void BuildPartialShapeGraph(ir::Graph& g) {
  g.set_opset(17);
  const ir::Dim n = ir::SymbolDim(g.AddSymbol("N"));
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {n, 3, 4, 5}));
  ir::Value* s = g.AddNode(OpKind::kShape, "shape", {x}, {"s"})->output(0);
  ir::Value* axes0 = g.NewConstant("axes0", Int64s({1}, {0}));
  ir::Value* c =
      g.AddNode(OpKind::kGather, "gather_c", {s, g.NewConstant("one", Int64s({}, {1}))}, {"c"})
          ->output(0);
  ir::Value* hw = g.AddNode(OpKind::kGather, "gather_hw",
                            {s, g.NewConstant("hw_idx", Int64s({2}, {2, 3}))}, {"hw"})
                      ->output(0);
  ir::Value* nb =
      g.AddNode(OpKind::kGather, "gather_n", {s, g.NewConstant("zero", Int64s({}, {0}))}, {"nb"})
          ->output(0);
  ir::Value* uc = g.AddNode(OpKind::kUnsqueeze, "unsq_c", {c, axes0}, {"uc"})->output(0);
  ir::Value* un = g.AddNode(OpKind::kUnsqueeze, "unsq_n", {nb, axes0}, {"un"})->output(0);
  ir::Value* tail =
      g.AddNode(OpKind::kSlice, "slice_tail",
                {s, g.NewConstant("st", Int64s({1}, {1})), g.NewConstant("en", Int64s({1}, {4}))},
                {"tail"})
          ->output(0);
  ir::Value* target = g.AddNode(OpKind::kConcat, "cat", {un, uc, hw}, {"target"})->output(0);
  ir::Value* tail_prod =
      g.AddNode(OpKind::kConcat, "cat2", {un, g.NewConstant("minus1", Int64s({1}, {-1}))}, {"flat"})
          ->output(0);
  g.AddOutput(g.AddNode(OpKind::kReshape, "reshape", {x, target}, {"y1"})->output(0));
  g.AddOutput(g.AddNode(OpKind::kReshape, "flatten", {x, tail_prod}, {"y2"})->output(0));
  g.AddOutput(g.AddNode(OpKind::kMul, "mul", {c, hw}, {"chw"})->output(0));
  g.AddOutput(g.AddNode(OpKind::kIdentity, "tail_out", {tail}, {"tail_out"})->output(0));
  // Through an int32 Cast as paddle2onnx writes it: Cast(Shape(x), i32)[3] is 5.
  ir::Node* cast = g.AddNode(OpKind::kCast, "cast32", {s}, {"s32"});
  cast->mutable_attrs<ir::CastAttrs>().to = DType::kInt32;
  ir::Value* three = g.NewConstant("three", Int64s({}, {3}));
  g.AddOutput(
      g.AddNode(OpKind::kGather, "gather_w32", {cast->output(0), three}, {"w32"})->output(0));
  ASSERT_TRUE(ir::InferShapes(g).ok());
}

TEST(PassesFoldTest, PartialShapeGathersFoldButTheBatchStays) {
  ir::Graph before, after;
  BuildPartialShapeGraph(before);
  BuildPartialShapeGraph(after);
  auto record = RunOnePass(after, passes::CreateFoldConstantsPass());
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_TRUE(record->changed);
  EXPECT_EQ(record->name, "fold-constants");

  // Left: Shape, Gather of index 0, its Unsqueeze, the two Concats, two Reshapes, Identity.
  EXPECT_EQ(CountOps(after, OpKind::kShape), 1);
  EXPECT_EQ(CountOps(after, OpKind::kGather), 1);
  EXPECT_EQ(CountOps(after, OpKind::kUnsqueeze), 1);
  EXPECT_EQ(CountOps(after, OpKind::kSlice), 0);
  EXPECT_EQ(CountOps(after, OpKind::kMul), 0);
  EXPECT_EQ(CountOps(after, OpKind::kConcat), 2);
  for (const auto& node : after.nodes()) {
    if (node->name() == "cat") {
      EXPECT_EQ(ConstantOf(node->input(1)), std::vector<int64_t>({3}));
      EXPECT_EQ(ConstantOf(node->input(2)), std::vector<int64_t>({4, 5}));
    }
  }
  // The folded graph output is a constant that kept its name.
  ASSERT_EQ(after.outputs().size(), 5u);
  EXPECT_EQ(after.outputs()[2]->name(), "chw");
  EXPECT_EQ(ConstantOf(after.outputs()[2]), std::vector<int64_t>({12, 15}));
  EXPECT_EQ(after.outputs()[3]->name(), "tail_out");
  EXPECT_EQ(ConstantOf(after.outputs()[3]), std::vector<int64_t>({3, 4, 5}));
  ASSERT_NE(after.outputs()[4]->constant(), nullptr);
  EXPECT_EQ(after.outputs()[4]->constant()->dtype(), DType::kInt32);
  EXPECT_EQ(ConstantOf(after.outputs()[4]), std::vector<int64_t>({5}));
  EXPECT_EQ(CountOps(after, OpKind::kCast), 1);  // of the whole shape: dead now, for DCE

  const Tensor x = SeededUniform({2, 3, 4, 5}, 7);
  auto want = RunGraph(before, {x});
  auto got = RunGraph(after, {x});
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < want->size(); ++i) {
    EXPECT_EQ(CompareTensors((*got)[i], (*want)[i], 0, 0), "") << "output " << i;
  }
  EXPECT_EQ((*got)[1].dims(), Dims({2, 60}));
}

TEST(PassesFoldTest, HugeOutputsStayUnfoldedAndNothingToDoIsUnchanged) {
  ir::Graph g;
  g.set_opset(17);
  ir::Value* one = g.NewConstant("one", Tensor::FromVector<float>(DType::kFloat32, {1}, {1.f}));
  ir::Value* big = g.NewConstant("big_shape", Int64s({2}, {2048, 1024}));  // 2M elements
  ir::Value* small = g.NewConstant("small_shape", Int64s({2}, {2, 3}));
  g.AddOutput(g.AddNode(OpKind::kExpand, "expand_big", {one, big}, {"b"})->output(0));
  g.AddOutput(g.AddNode(OpKind::kExpand, "expand_small", {one, small}, {"s"})->output(0));
  ASSERT_TRUE(ir::InferShapes(g).ok());
  auto record = RunOnePass(g, passes::CreateFoldConstantsPass());
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_TRUE(record->changed);
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0]->name(), "expand_big");
  ASSERT_NE(g.outputs()[1]->constant(), nullptr);
  EXPECT_EQ(g.outputs()[1]->name(), "s");
  EXPECT_EQ(g.outputs()[1]->constant()->ToFloatVector(), std::vector<float>(6, 1.f));

  auto again = RunOnePass(g, passes::CreateFoldConstantsPass());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->changed);
  EXPECT_EQ(again->summary, "");
}

// Imports `model` twice, runs the clean-up passes on one copy and returns both.
void ImportBoth(const std::string& model, std::unique_ptr<ir::Graph>& before,
                std::unique_ptr<ir::Graph>& after) {
  auto b = frontend::ImportOnnxFile(model);
  auto a = frontend::ImportOnnxFile(model);
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_TRUE(a.ok()) << a.status();
  before = *std::move(b);
  after = *std::move(a);
  auto records = passes::RunPipeline(*after, CleanupPipeline());
  ASSERT_TRUE(records.ok()) << records.status();
}

void ExpectSameOutputs(const ir::Graph& before, const ir::Graph& after, const Tensor& input) {
  auto want = RunGraph(before, {input});
  auto got = RunGraph(after, {input});
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < want->size(); ++i) {
    EXPECT_EQ(CompareTensors((*got)[i], (*want)[i], 1e-6, 1e-6), "") << "output " << i;
  }
}

TEST(PassesFoldTest, Resnet20ShortcutPadsBecomeConstant) {
  std::unique_ptr<ir::Graph> before, after;
  ASSERT_NO_FATAL_FAILURE(ImportBoth(ModelPath("resnet20-cifar10"), before, after));
  for (OpKind k : {OpKind::kConstant, OpKind::kShape, OpKind::kGather, OpKind::kConstantOfShape,
                   OpKind::kCast, OpKind::kConcat}) {
    EXPECT_EQ(CountOps(*after, k), 0) << ir::OpName(k);
  }
  EXPECT_EQ(CountOps(*after, OpKind::kPad), 2);
  for (const auto& node : after->nodes()) {
    if (node->kind() != OpKind::kPad) continue;
    ASSERT_NE(node->input(1), nullptr);
    ASSERT_NE(node->input(1)->constant(), nullptr) << node->name();
    EXPECT_EQ(node->input(1)->constant()->dtype(), DType::kInt64);
  }
  // The compute is untouched: 19 Conv, 19 BatchNormalization, 19 Relu, 9 Add.
  EXPECT_EQ(CountOps(*after, OpKind::kConv), 19);
  EXPECT_EQ(CountOps(*after, OpKind::kBatchNormalization), 19);
  const auto& out = after->outputs()[0]->type();
  ASSERT_TRUE(out.has_rank());
  ASSERT_EQ(out.rank(), 2);
  EXPECT_TRUE(ir::IsSymbol((*out.dims)[0]));
  EXPECT_EQ(after->symbols()[ir::SymbolIndex((*out.dims)[0])], "batch");
  EXPECT_EQ((*out.dims)[1], 10);

  auto input = frontend::ReadTensorProtoFile(ModelPath("resnet20-cifar10", "test_data_set_0") +
                                             "/input_0.pb");
  ASSERT_TRUE(input.ok()) << input.status();
  ExpectSameOutputs(*before, *after, *input);
}

TEST(PassesFoldTest, PpocrClsConstantNodesBecomeConstantValues) {
  std::unique_ptr<ir::Graph> before, after;
  ASSERT_NO_FATAL_FAILURE(ImportBoth(ModelPath("ppocr-cls-mbv3"), before, after));
  EXPECT_EQ(CountOps(*before, OpKind::kConstant), 250);
  EXPECT_EQ(CountOps(*after, OpKind::kConstant), 0);
  EXPECT_EQ(CountOps(*after, OpKind::kConv), 53);
  // The weights now feed the Convs as constant values.
  for (const auto& node : after->nodes()) {
    if (node->kind() == OpKind::kConv) {
      EXPECT_NE(node->input(1)->constant(), nullptr) << node->name();
    }
  }
  ExpectSameOutputs(*before, *after, SeededUniform({1, 3, 48, 192}, 2024));
}

}  // namespace
}  // namespace qcc::testing
