// Older-opset attribute forms become the newest input form; results are checked by running them.
#include "backend_cpu/evaluator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/printer.h"
#include "support/float16.h"
#include "tests/frontend/model_builder.h"

namespace qcc::frontend {
namespace {

using ::testing::AllOf;
using testing::AttrFloat;
using testing::AttrFloats;
using testing::AttrInt;
using testing::AttrInts;
using testing::AttrString;
using testing::ConstInput;
using ::testing::ElementsAre;
using testing::FindNode;
using ::testing::HasSubstr;
using testing::ModelBuilder;

Tensor F32(Dims dims, const std::vector<float>& v) {
  return Tensor::FromVector(DType::kFloat32, std::move(dims), v);
}
Tensor I64(Dims dims, const std::vector<int64_t>& v) {
  return Tensor::FromVector(DType::kInt64, std::move(dims), v);
}

/// Imports `b` (which must succeed) and runs it on `inputs`; returns the first output.
Tensor ImportAndRun(const ModelBuilder& b, const std::vector<Tensor>& inputs,
                    std::unique_ptr<ir::Graph>* graph = nullptr) {
  auto g = b.Import();
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return Tensor();
  auto ev = cpu::Evaluator::Create(**g);
  EXPECT_TRUE(ev.ok()) << ev.status();
  if (!ev.ok()) return Tensor();
  auto out = (*ev)->Run(inputs);
  EXPECT_TRUE(out.ok()) << out.status();
  if (graph != nullptr) *graph = *std::move(g);
  return out.ok() ? (*out)[0] : Tensor();
}

std::string OutType(const ir::Graph& g, int i = 0) {
  return ir::TypeToString(g, g.outputs()[i]->type());
}

TEST(FrontendOpVersions, ClipAttributesBecomeInputs) {
  ModelBuilder b(9);
  b.Input("x", {4});
  auto* n = b.Node("Clip", {"x"}, {"y"}, "clip");
  AttrFloat(n, "min", -1.0f);
  AttrFloat(n, "max", 2.0f);
  b.Output("y");
  std::unique_ptr<ir::Graph> g;
  Tensor y = ImportAndRun(b, {F32({4}, {-5, 0.5f, 1, 7})}, &g);
  ASSERT_TRUE(g);
  const ir::Node* clip = FindNode(*g, "clip");
  EXPECT_EQ(ConstInput(*clip, 1).ToFloatVector(), std::vector<float>{-1});
  EXPECT_EQ(ConstInput(*clip, 2).ToFloatVector(), std::vector<float>{2});
  EXPECT_EQ(y.ToFloatVector(), (std::vector<float>{-1, 0.5f, 1, 2}));

  // Only max: min stays omitted. An fp16 input makes the bound fp16.
  ModelBuilder h(10);
  h.Input("x", {3}, onnx::TensorProto::FLOAT16);
  AttrFloat(h.Node("Clip", {"x"}, {"y"}, "clip"), "max", 0.5f);
  h.Output("y", onnx::TensorProto::FLOAT16);
  auto gh = h.Import();
  ASSERT_TRUE(gh.ok()) << gh.status();
  const ir::Node* hc = FindNode(**gh, "clip");
  EXPECT_EQ(hc->input(1), nullptr);
  EXPECT_EQ(ConstInput(*hc, 2).dtype(), DType::kFloat16);
  EXPECT_EQ(HalfToFloat(ConstInput(*hc, 2).data<uint16_t>()[0]), 0.5f);
}

TEST(FrontendOpVersions, PadAttributesBecomeInputs) {
  ModelBuilder b(10);
  b.Input("x", {2, 2});
  auto* n = b.Node("Pad", {"x"}, {"y"}, "pad");
  AttrInts(n, "pads", {0, 1, 1, 0});  // [begin0, begin1, end0, end1]
  AttrFloat(n, "value", 9.0f);
  b.Output("y");
  std::unique_ptr<ir::Graph> g;
  Tensor y = ImportAndRun(b, {F32({2, 2}, {1, 2, 3, 4})}, &g);
  ASSERT_TRUE(g);
  const ir::Node* pad = FindNode(*g, "pad");
  EXPECT_EQ(ConstInput(*pad, 1).ToInt64Vector(), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(ConstInput(*pad, 2).ToFloatVector(), std::vector<float>{9});
  EXPECT_EQ(OutType(*g), "f32[3,3]");
  EXPECT_EQ(y.ToFloatVector(), (std::vector<float>{9, 1, 2, 9, 3, 4, 9, 9, 9}));

  ModelBuilder r(11);  // inputs already; mode is an enum attribute
  r.Input("x", {3});
  r.Initializer("p", I64({2}, {2, 1}));
  AttrString(r.Node("Pad", {"x", "p"}, {"y"}, "pad"), "mode", "reflect");
  r.Output("y");
  std::unique_ptr<ir::Graph> gr;
  Tensor yr = ImportAndRun(r, {F32({3}, {1, 2, 3})}, &gr);
  ASSERT_TRUE(gr);
  EXPECT_EQ(FindNode(*gr, "pad")->attrs<ir::PadAttrs>().mode, ir::PadMode::kReflect);
  EXPECT_EQ(yr.ToFloatVector(), (std::vector<float>{3, 2, 1, 2, 3, 2}));
}

TEST(FrontendOpVersions, SliceAttributesBecomeInputs) {
  ModelBuilder b(9);
  b.Input("x", {2, 4});
  auto* n = b.Node("Slice", {"x"}, {"y"}, "slice");
  AttrInts(n, "starts", {1});
  AttrInts(n, "ends", {100});
  AttrInts(n, "axes", {1});
  b.Output("y");
  std::unique_ptr<ir::Graph> g;
  Tensor y = ImportAndRun(b, {F32({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7})}, &g);
  ASSERT_TRUE(g);
  const ir::Node* s = FindNode(*g, "slice");
  ASSERT_EQ(s->num_inputs(), 4);
  EXPECT_EQ(ConstInput(*s, 1).ToInt64Vector(), std::vector<int64_t>{1});
  EXPECT_EQ(ConstInput(*s, 2).ToInt64Vector(), std::vector<int64_t>{100});
  EXPECT_EQ(ConstInput(*s, 3).ToInt64Vector(), std::vector<int64_t>{1});
  EXPECT_EQ(OutType(*g), "f32[2,3]");
  EXPECT_EQ(y.ToFloatVector(), (std::vector<float>{1, 2, 3, 5, 6, 7}));

  ModelBuilder missing(9);
  missing.Input("x", {4});
  AttrInts(missing.Node("Slice", {"x"}, {"y"}, "s"), "ends", {2});
  missing.Output("y");
  auto e = missing.Import();
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().ToString(),
              AllOf(HasSubstr("'s'"), HasSubstr("starts"), HasSubstr("opset 9")));
}

TEST(FrontendOpVersions, SqueezeAndUnsqueezeAxes) {
  ModelBuilder b(11);
  b.Input("x", {1, 3, 1});
  AttrInts(b.Node("Squeeze", {"x"}, {"s"}, "sq"), "axes", {0, 2});
  AttrInts(b.Node("Unsqueeze", {"s"}, {"y"}, "unsq"), "axes", {1});
  b.Output("y");
  auto g = b.Import();
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(ConstInput(*FindNode(**g, "sq"), 1).ToInt64Vector(), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(ConstInput(*FindNode(**g, "unsq"), 1).ToInt64Vector(), std::vector<int64_t>{1});
  EXPECT_EQ(OutType(**g), "f32[3,1]");

  // Squeeze without axes keeps one input; opset 13 takes axes as an input already.
  ModelBuilder n(13);
  n.Input("x", {1, 3, 1});
  n.Initializer("ax", I64({1}, {0}));
  n.Node("Squeeze", {"x"}, {"s"}, "sq");
  n.Node("Unsqueeze", {"s", "ax"}, {"y"}, "unsq");
  n.Output("y");
  auto gn = n.Import();
  ASSERT_TRUE(gn.ok()) << gn.status();
  EXPECT_EQ(FindNode(**gn, "sq")->num_inputs(), 1);
  EXPECT_EQ(OutType(**gn), "f32[1,3]");
}

TEST(FrontendOpVersions, SplitSizesBecomeInput) {
  ModelBuilder b(11);
  b.Input("x", {5, 2});
  auto* n = b.Node("Split", {"x"}, {"a", "b"}, "split");
  AttrInt(n, "axis", 0);
  AttrInts(n, "split", {2, 3});
  b.Output("a").Output("b");
  auto g = b.Import();
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(ConstInput(*FindNode(**g, "split"), 1).ToInt64Vector(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(OutType(**g, 0), "f32[2,2]");
  EXPECT_EQ(OutType(**g, 1), "f32[3,2]");
}

TEST(FrontendOpVersions, ReduceAxesBecomeInput) {
  // ReduceSum takes axes as an input from opset 13, the other reductions from 18.
  struct Case {
    const char* op;
    int opset;
    bool attr_form;
  };
  for (const Case& c :
       {Case{"ReduceSum", 11, true}, Case{"ReduceMean", 13, true}, Case{"ReduceMax", 17, true},
        Case{"ReduceSum", 13, false}, Case{"ReduceMean", 18, false}}) {
    SCOPED_TRACE(std::string(c.op) + " opset " + std::to_string(c.opset));
    ModelBuilder b(c.opset);
    b.Input("x", {2, 3});
    onnx::NodeProto* n;
    if (c.attr_form) {
      n = b.Node(c.op, {"x"}, {"y"}, "r");
      AttrInts(n, "axes", {1});
    } else {
      b.Initializer("axes", I64({1}, {1}));
      n = b.Node(c.op, {"x", "axes"}, {"y"}, "r");
    }
    AttrInt(n, "keepdims", 0);
    b.Output("y");
    std::unique_ptr<ir::Graph> g;
    Tensor y = ImportAndRun(b, {F32({2, 3}, {1, 2, 3, 4, 5, 9})}, &g);
    ASSERT_TRUE(g);
    EXPECT_EQ(ConstInput(*FindNode(*g, "r"), 1).ToInt64Vector(), std::vector<int64_t>{1});
    EXPECT_EQ(FindNode(*g, "r")->attrs<ir::ReduceAttrs>().keepdims, 0);
    EXPECT_EQ(OutType(*g), "f32[2]");
    const std::string op = c.op;
    const std::vector<float> want = op == "ReduceSum"    ? std::vector<float>{6, 18}
                                    : op == "ReduceMean" ? std::vector<float>{2, 6}
                                                         : std::vector<float>{3, 9};
    EXPECT_EQ(y.ToFloatVector(), want);
  }
}

TEST(FrontendOpVersions, SoftmaxBeforeOpset13CoercesTo2D) {
  ModelBuilder b(11);
  b.Input("x", {1, 2, 2});
  b.Node("Softmax", {"x"}, {"y"}, "sm");
  b.Output("y");
  std::unique_ptr<ir::Graph> g;
  Tensor y = ImportAndRun(b, {F32({1, 2, 2}, {0, 0, 0, 0})}, &g);
  ASSERT_TRUE(g);
  const auto& a = FindNode(*g, "sm")->attrs<ir::SoftmaxAttrs>();
  EXPECT_EQ(a.axis, 1);
  EXPECT_EQ(a.coerce_2d, 1);
  // Normalised over the 4 trailing elements, not over axis 1 alone.
  EXPECT_THAT(y.ToFloatVector(), ElementsAre(0.25f, 0.25f, 0.25f, 0.25f));

  ModelBuilder e(12);
  e.Input("x", {1, 2, 2});
  AttrInt(e.Node("LogSoftmax", {"x"}, {"y"}, "lsm"), "axis", 2);
  e.Output("y");
  auto ge = e.Import();
  ASSERT_TRUE(ge.ok()) << ge.status();
  EXPECT_EQ(FindNode(**ge, "lsm")->attrs<ir::SoftmaxAttrs>().axis, 2);
  EXPECT_EQ(FindNode(**ge, "lsm")->attrs<ir::SoftmaxAttrs>().coerce_2d, 1);

  ModelBuilder n(13);
  n.Input("x", {1, 2, 2});
  n.Node("Softmax", {"x"}, {"y"}, "sm");
  n.Output("y");
  std::unique_ptr<ir::Graph> gn;
  Tensor yn = ImportAndRun(n, {F32({1, 2, 2}, {0, 0, 0, 0})}, &gn);
  ASSERT_TRUE(gn);
  EXPECT_EQ(FindNode(*gn, "sm")->attrs<ir::SoftmaxAttrs>().axis, -1);
  EXPECT_EQ(FindNode(*gn, "sm")->attrs<ir::SoftmaxAttrs>().coerce_2d, 0);
  EXPECT_THAT(yn.ToFloatVector(), ElementsAre(0.5f, 0.5f, 0.5f, 0.5f));
}

/// A BatchNormalization over [1,2,1,1] with scale (2,3), bias (1,0), mean (0,1), var (1,4).
ModelBuilder BatchNormModel(int opset, const std::vector<std::string>& outputs) {
  ModelBuilder b(opset);
  b.Input("x", {1, 2, 1, 1});
  b.Initializer("s", F32({2}, {2, 3})).Initializer("b", F32({2}, {1, 0}));
  b.Initializer("m", F32({2}, {0, 1})).Initializer("v", F32({2}, {1, 4}));
  auto* n = b.Node("BatchNormalization", {"x", "s", "b", "m", "v"}, outputs, "bn");
  AttrFloat(n, "epsilon", 0.0f);
  b.Output("y");
  return b;
}

TEST(FrontendOpVersions, BatchNormalizationVariants) {
  for (int opset : {7, 9, 14, 15}) {
    SCOPED_TRACE(opset);
    std::vector<std::string> outputs = {"y"};
    if (opset < 14) outputs = {"y", "mean", "var", "saved_mean", "saved_var"};
    ModelBuilder b = BatchNormModel(opset, outputs);
    if (opset == 7) AttrInt(b.graph()->mutable_node(0), "spatial", 1);
    if (opset >= 14) AttrInt(b.graph()->mutable_node(0), "training_mode", 0);
    std::unique_ptr<ir::Graph> g;
    // y = s * (x - m) / sqrt(v) + b
    Tensor y = ImportAndRun(b, {F32({1, 2, 1, 1}, {3, 5})}, &g);
    ASSERT_TRUE(g);
    EXPECT_EQ(FindNode(*g, "bn")->num_outputs(), 1);
    EXPECT_EQ(y.ToFloatVector(), (std::vector<float>{7, 6}));
  }
  ModelBuilder spatial0 = BatchNormModel(7, {"y"});
  AttrInt(spatial0.graph()->mutable_node(0), "spatial", 0);
  auto e = spatial0.Import();
  EXPECT_EQ(e.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(e.status().ToString(), AllOf(HasSubstr("'bn'"), HasSubstr("spatial")));

  ModelBuilder uses_mean = BatchNormModel(9, {"y", "mean"});
  uses_mean.Node("Relu", {"mean"}, {"r"}, "consumer");
  auto um = uses_mean.Import();
  EXPECT_EQ(um.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(um.status().ToString(), AllOf(HasSubstr("consumer"), HasSubstr("mean")));
}

TEST(FrontendOpVersions, DropoutVariants) {
  ModelBuilder old(10);
  old.Input("x", {3});
  AttrFloat(old.Node("Dropout", {"x"}, {"y", "mask"}, "drop"), "ratio", 0.5f);
  old.Output("y");
  std::unique_ptr<ir::Graph> g;
  Tensor y = ImportAndRun(old, {F32({3}, {1, -2, 3})}, &g);
  ASSERT_TRUE(g);
  EXPECT_EQ(FindNode(*g, "drop")->num_inputs(), 1);
  EXPECT_EQ(y.ToFloatVector(), (std::vector<float>{1, -2, 3}));  // inference: identity

  ModelBuilder now(13);
  now.Input("x", {3});
  now.Initializer("ratio", F32({}, {0.25f}));
  now.Node("Dropout", {"x", "ratio"}, {"y"}, "drop");
  now.Output("y");
  std::unique_ptr<ir::Graph> gn;
  Tensor yn = ImportAndRun(now, {F32({3}, {4, 5, 6})}, &gn);
  ASSERT_TRUE(gn);
  EXPECT_EQ(FindNode(*gn, "drop")->num_inputs(), 2);
  EXPECT_EQ(yn.ToFloatVector(), (std::vector<float>{4, 5, 6}));
}

TEST(FrontendOpVersions, UpsampleBecomesResize) {
  for (int opset : {7, 9}) {
    SCOPED_TRACE(opset);
    ModelBuilder b(opset);
    b.Input("x", {1, 1, 2, 2});
    onnx::NodeProto* n;
    if (opset == 7) {
      n = b.Node("Upsample", {"x"}, {"y"}, "up");
      AttrFloats(n, "scales", {1, 1, 2, 2});
    } else {
      b.Initializer("scales", F32({4}, {1, 1, 2, 2}));
      n = b.Node("Upsample", {"x", "scales"}, {"y"}, "up");
    }
    AttrString(n, "mode", "nearest");
    b.Output("y");
    std::unique_ptr<ir::Graph> g;
    Tensor y = ImportAndRun(b, {F32({1, 1, 2, 2}, {1, 2, 3, 4})}, &g);
    ASSERT_TRUE(g);
    const ir::Node* up = FindNode(*g, "up");
    EXPECT_EQ(up->kind(), ir::OpKind::kResize);
    EXPECT_EQ(up->input(1), nullptr);
    EXPECT_EQ(ConstInput(*up, 2).ToFloatVector(), (std::vector<float>{1, 1, 2, 2}));
    const auto& a = up->attrs<ir::ResizeAttrs>();
    EXPECT_EQ(a.mode, ir::ResizeMode::kNearest);
    EXPECT_EQ(a.coordinate_transformation_mode, ir::CoordTransform::kAsymmetric);
    EXPECT_EQ(a.nearest_mode, ir::NearestMode::kFloor);
    EXPECT_EQ(OutType(*g), "f32[1,1,4,4]");
    EXPECT_EQ(y.ToFloatVector(),
              (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  }
  ModelBuilder bad(9);
  bad.Input("x", {1, 1, 2, 2});
  bad.Initializer("scales", F32({4}, {1, 1, 2, 2}));
  AttrString(bad.Node("Upsample", {"x", "scales"}, {"y"}, "up"), "mode", "cubic");
  bad.Output("y");
  auto e = bad.Import();
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().ToString(), AllOf(HasSubstr("'up'"), HasSubstr("cubic")));
}

TEST(FrontendOpVersions, ResizeOpset10And11) {
  ModelBuilder r10(10);
  r10.Input("x", {1, 1, 1, 2});
  r10.Initializer("scales", F32({4}, {1, 1, 2, 2}));
  AttrString(r10.Node("Resize", {"x", "scales"}, {"y"}, "rs"), "mode", "linear");
  r10.Output("y");
  auto g10 = r10.Import();
  ASSERT_TRUE(g10.ok()) << g10.status();
  const ir::Node* rs = FindNode(**g10, "rs");
  EXPECT_EQ(rs->input(1), nullptr);
  EXPECT_EQ(ConstInput(*rs, 2).numel(), 4);
  EXPECT_EQ(rs->attrs<ir::ResizeAttrs>().mode, ir::ResizeMode::kLinear);
  EXPECT_EQ(rs->attrs<ir::ResizeAttrs>().coordinate_transformation_mode,
            ir::CoordTransform::kAsymmetric);
  EXPECT_EQ(OutType(**g10), "f32[1,1,2,4]");

  // Opset 11: empty roi and scales (one as a Constant node) with sizes.
  ModelBuilder r11(11);
  r11.Input("x", {1, 1, 2, 2});
  r11.Initializer("roi", Tensor(DType::kFloat32, {0}));
  testing::AttrTensor(r11.Node("Constant", {}, {"scales"}), "value", Tensor(DType::kFloat32, {0}));
  r11.Initializer("sizes", I64({4}, {1, 1, 3, 3}));
  auto* n = r11.Node("Resize", {"x", "roi", "scales", "sizes"}, {"y"}, "rs");
  AttrString(n, "coordinate_transformation_mode", "align_corners");
  AttrString(n, "mode", "linear");
  r11.Output("y");
  std::unique_ptr<ir::Graph> g11;
  Tensor y = ImportAndRun(r11, {F32({1, 1, 2, 2}, {0, 2, 4, 6})}, &g11);
  ASSERT_TRUE(g11);
  const ir::Node* rs11 = FindNode(*g11, "rs");
  EXPECT_EQ(rs11->input(1), nullptr);
  EXPECT_EQ(rs11->input(2), nullptr);
  EXPECT_EQ(rs11->input(3)->name(), "sizes");
  EXPECT_EQ(rs11->attrs<ir::ResizeAttrs>().coordinate_transformation_mode,
            ir::CoordTransform::kAlignCorners);
  EXPECT_EQ(y.ToFloatVector(), (std::vector<float>{0, 1, 2, 2, 3, 4, 4, 5, 6}));
}

TEST(FrontendOpVersions, ConstantForms) {
  struct Case {
    const char* attr;
    DType dtype;
    Dims dims;
    std::vector<double> values;
  };
  const Case cases[] = {{"value", DType::kInt32, {2}, {7, -8}},
                        {"value_float", DType::kFloat32, {}, {2.5}},
                        {"value_floats", DType::kFloat32, {3}, {1, 2, 3}},
                        {"value_int", DType::kInt64, {}, {-4}},
                        {"value_ints", DType::kInt64, {2}, {5, 6}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.attr);
    ModelBuilder b(13);
    auto* n = b.Node("Constant", {}, {"c"}, "const");
    const std::string attr = c.attr;
    if (attr == "value") {
      testing::AttrTensor(n, "value",
                          Tensor::FromVector(DType::kInt32, {2}, std::vector<int32_t>{7, -8}));
    } else if (attr == "value_float") {
      AttrFloat(n, attr, 2.5f);
    } else if (attr == "value_floats") {
      AttrFloats(n, attr, {1, 2, 3});
    } else if (attr == "value_int") {
      AttrInt(n, attr, -4);
    } else {
      AttrInts(n, attr, {5, 6});
    }
    b.Output("c");
    auto g = b.Import();
    ASSERT_TRUE(g.ok()) << g.status();
    const Tensor& v = FindNode(**g, "const")->attrs<ir::ConstantAttrs>().value;
    EXPECT_EQ(v.dtype(), c.dtype);
    EXPECT_EQ(v.dims(), c.dims);
    for (size_t i = 0; i < c.values.size(); ++i) EXPECT_EQ(v.GetAsDouble(i), c.values[i]);
  }
  ModelBuilder s(13);
  AttrString(s.Node("Constant", {}, {"c"}, "label"), "value_string", "cat");
  s.Output("c");
  auto es = s.Import();
  EXPECT_EQ(es.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(es.status().ToString(), AllOf(HasSubstr("'label'"), HasSubstr("value_string")));

  ModelBuilder none(13);
  none.Node("Constant", {}, {"c"}, "empty");
  none.Output("c");
  EXPECT_EQ(none.Import().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FrontendOpVersions, CastAndConstantOfShape) {
  ModelBuilder b(13);
  b.Input("x", {2});
  AttrInt(b.Node("Cast", {"x"}, {"h"}, "cast"), "to", onnx::TensorProto::FLOAT16);
  b.Initializer("shape", I64({1}, {3}));
  b.Node("ConstantOfShape", {"shape"}, {"z"}, "zeros");
  b.Output("h", onnx::TensorProto::FLOAT16).Output("z");
  auto g = b.Import();
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(FindNode(**g, "cast")->attrs<ir::CastAttrs>().to, DType::kFloat16);
  EXPECT_EQ(OutType(**g, 0), "f16[2]");
  const Tensor& fill = FindNode(**g, "zeros")->attrs<ir::ConstantAttrs>().value;
  EXPECT_EQ(fill.dtype(), DType::kFloat32);
  EXPECT_EQ(fill.ToFloatVector(), std::vector<float>{0});
  EXPECT_EQ(OutType(**g, 1), "f32[3]");

  ModelBuilder s(13);
  s.Input("x", {2});
  AttrInt(s.Node("Cast", {"x"}, {"y"}, "to_string"), "to", onnx::TensorProto::STRING);
  s.Output("y");
  auto e = s.Import();
  EXPECT_EQ(e.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(e.status().ToString(), AllOf(HasSubstr("to_string"), HasSubstr("'to'")));
}

}  // namespace
}  // namespace qcc::frontend
