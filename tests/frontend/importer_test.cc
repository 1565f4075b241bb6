// Graph-level import: values, types, symbols, names, ordering, and every error path.
#include <filesystem>

#include "backend_cpu/evaluator.h"
#include "frontend/onnx_importer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/printer.h"
#include "tests/frontend/model_builder.h"

namespace qcc::frontend {
namespace {

using ::testing::AllOf;
using testing::AttrFloat;
using testing::AttrInt;
using testing::AttrString;
using testing::FindNode;
using ::testing::HasSubstr;
using testing::MakeTempDir;
using testing::ModelBuilder;
using testing::WriteBytes;

Tensor F32(Dims dims, const std::vector<float>& v) {
  return Tensor::FromVector(DType::kFloat32, std::move(dims), v);
}

TEST(FrontendImporter, InputsSymbolsAndOutputTypes) {
  ModelBuilder b(13);
  b.Input("x", {"N", 3, "?", -1}).Input("y", {"N", 3, 1, 1});
  b.Node("Add", {"x", "y"}, {"z"}, "add");
  b.Node("Relu", {"z"}, {"r"});  // unnamed
  b.Output("r");
  auto g = b.Import();
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ((*g)->inputs().size(), 2u);
  EXPECT_EQ((*g)->symbols(), std::vector<std::string>{"N"});
  // "?" and a negative dim_value mean unknown; "N" is one symbol shared by both inputs.
  EXPECT_EQ(ir::TypeToString(**g, (*g)->inputs()[0]->type()), "f32[N,3,?,?]");
  EXPECT_EQ(ir::TypeToString(**g, (*g)->outputs()[0]->type()), "f32[N,3,?,?]");
  ASSERT_NE(FindNode(**g, "add"), nullptr);
  const ir::Node* relu = FindNode(**g, "Relu_1");
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->kind(), ir::OpKind::kRelu);
  EXPECT_EQ((*g)->opset(), 13);
}

TEST(FrontendImporter, SortsNodesAndRunsThem) {
  ModelBuilder b(13);
  b.Input("x", {2, 2});
  b.Initializer("w", F32({2, 2}, {1, 2, 3, 4}));
  // Listed consumer-first: the importer must sort.
  b.Node("Relu", {"s"}, {"y"}, "relu");
  b.Node("Sub", {"x", "w"}, {"s"}, "sub");
  b.Output("y");
  auto g = b.Import();
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ((*g)->nodes().size(), 2u);
  EXPECT_EQ((*g)->nodes()[0]->name(), "sub");
  EXPECT_EQ((*g)->nodes()[1]->name(), "relu");
  EXPECT_EQ(ir::TypeToString(**g, (*g)->outputs()[0]->type()), "f32[2,2]");
  auto ev = cpu::Evaluator::Create(**g);
  ASSERT_TRUE(ev.ok()) << ev.status();
  auto out = (*ev)->Run({F32({2, 2}, {5, 1, 2, 10})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].ToFloatVector(), (std::vector<float>{4, 0, 0, 6}));
}

TEST(FrontendImporter, InitializerListedAsInputIsConstant) {
  ModelBuilder b(8);
  b.Input("x", {3}).Input("bias", {3});
  b.Initializer("bias", F32({3}, {1, 2, 3}));
  b.Node("Add", {"x", "bias"}, {"y"});
  b.Output("y");
  auto g = b.Import();
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ((*g)->inputs().size(), 1u);
  EXPECT_EQ((*g)->inputs()[0]->name(), "x");
  const ir::Value* bias = (*g)->nodes()[0]->input(1);
  ASSERT_NE(bias->constant(), nullptr);
  EXPECT_EQ(bias->constant()->ToFloatVector(), (std::vector<float>{1, 2, 3}));
}

TEST(FrontendImporter, OutputsThatAreInputsOrInitializers) {
  ModelBuilder b(13);
  b.Input("x", {2});
  b.Initializer("c", F32({1}, {7}));
  b.Node("Neg", {"x"}, {"n"});
  b.Output("x").Output("c").Output("n");
  auto g = b.Import();
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ((*g)->outputs().size(), 3u);
  EXPECT_TRUE((*g)->outputs()[0]->is_graph_input());
  EXPECT_NE((*g)->outputs()[1]->constant(), nullptr);
  auto ev = cpu::Evaluator::Create(**g);
  ASSERT_TRUE(ev.ok()) << ev.status();
  auto out = (*ev)->Run({F32({2}, {1, -2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].ToFloatVector(), (std::vector<float>{1, -2}));
  EXPECT_EQ((*out)[1].ToFloatVector(), (std::vector<float>{7}));
  EXPECT_EQ((*out)[2].ToFloatVector(), (std::vector<float>{-1, 2}));
}

TEST(FrontendImporter, ValueInfoDeclaresIntermediateTypes) {
  ModelBuilder b(13);
  b.Input("x", {"N", 4});
  b.Node("Relu", {"x"}, {"h"});
  b.Node("Sigmoid", {"h"}, {"y"});
  b.Output("y");
  testing::SetTensorType(b.graph()->add_value_info(), "h", onnx::TensorProto::FLOAT, {"N", 4});
  auto g = b.Import();
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(ir::TypeToString(**g, (*g)->FindValue("h")->type()), "f32[N,4]");

  // A declared extent that contradicts inference is an error naming the node.
  ModelBuilder bad(13);
  bad.Input("x", {2, 4});
  bad.Node("Relu", {"x"}, {"y"}, "relu");
  bad.Output("y", {2, 5});
  auto e = bad.Import();
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().ToString(), HasSubstr("relu"));
}

TEST(FrontendImporter, OmittedOptionalInputs) {
  ModelBuilder b(13);
  b.Input("x", {4});
  b.Initializer("hi", F32({}, {1.5f}));
  b.Node("Clip", {"x", "", "hi"}, {"y"}, "clip");
  b.Node("Clip", {"y", "", ""}, {"z"}, "clip2");  // trailing empty inputs drop
  b.Output("z");
  auto g = b.Import();
  ASSERT_TRUE(g.ok()) << g.status();
  const ir::Node* clip = FindNode(**g, "clip");
  ASSERT_EQ(clip->num_inputs(), 3);
  EXPECT_EQ(clip->input(1), nullptr);
  EXPECT_EQ(clip->input(2)->name(), "hi");
  EXPECT_EQ(FindNode(**g, "clip2")->num_inputs(), 1);
  auto ev = cpu::Evaluator::Create(**g);
  ASSERT_TRUE(ev.ok()) << ev.status();
  auto out = (*ev)->Run({F32({4}, {-3, 0.5f, 1.5f, 9})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].ToFloatVector(), (std::vector<float>{-3, 0.5f, 1.5f, 1.5f}));
}

TEST(FrontendImporter, OptionalOutputsWithEmptyNames) {
  ModelBuilder b(12);
  b.Input("x", {1, 1, 4, 4});
  auto* pool = b.Node("MaxPool", {"x"}, {"y", ""}, "pool");
  testing::AttrInts(pool, "kernel_shape", {2, 2});
  testing::AttrInts(pool, "strides", {2, 2});
  b.Output("y");
  auto g = b.Import();
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(FindNode(**g, "pool")->num_outputs(), 1);
  EXPECT_EQ(ir::TypeToString(**g, (*g)->outputs()[0]->type()), "f32[1,1,2,2]");
}

TEST(FrontendImporter, GenericAttributesFillTypedStructs) {
  ModelBuilder b(13);
  b.Input("x", {1, 2, 5, 5});
  b.Initializer("w", Tensor(DType::kFloat32, {4, 1, 3, 3}));
  auto* conv = b.Node("Conv", {"x", "w"}, {"c"}, "conv");
  AttrString(conv, "auto_pad", "NOTSET");
  testing::AttrInts(conv, "dilations", {1, 2});
  AttrInt(conv, "group", 2);
  testing::AttrInts(conv, "kernel_shape", {3, 3});
  testing::AttrInts(conv, "pads", {1, 2, 1, 2});
  testing::AttrInts(conv, "strides", {2, 1});
  AttrString(conv, "not_an_onnx_attribute", "ignored");
  b.Node("Flatten", {"c"}, {"f"}, "flat");
  b.Initializer("g", Tensor(DType::kFloat32, {7, 60}));
  auto* gemm = b.Node("Gemm", {"f", "g"}, {"y"}, "gemm");
  AttrFloat(gemm, "alpha", 0.5f);
  AttrInt(gemm, "transB", 1);
  // IR version 1 models leave AttributeProto.type unset; the value field says the type.
  auto* untyped = gemm->add_attribute();
  untyped->set_name("beta");
  untyped->set_f(0.25f);
  b.Output("y");
  auto g = b.Import();
  ASSERT_TRUE(g.ok()) << g.status();
  const auto& c = FindNode(**g, "conv")->attrs<ir::ConvAttrs>();
  EXPECT_EQ(c.auto_pad, ir::AutoPad::kNotSet);
  EXPECT_EQ(c.dilations, (ir::Ints{1, 2}));
  EXPECT_EQ(c.group, 2);
  EXPECT_EQ(c.kernel_shape, (ir::Ints{3, 3}));
  EXPECT_EQ(c.pads, (ir::Ints{1, 2, 1, 2}));
  EXPECT_EQ(c.strides, (ir::Ints{2, 1}));
  const auto& gm = FindNode(**g, "gemm")->attrs<ir::GemmAttrs>();
  EXPECT_EQ(gm.alpha, 0.5f);
  EXPECT_EQ(gm.beta, 0.25f);
  EXPECT_EQ(gm.transA, 0);
  EXPECT_EQ(gm.transB, 1);
  // H: (5 + 2 - 3) / 2 + 1 = 3; W (dilated kernel 5): (5 + 4 - 5) / 1 + 1 = 5.
  EXPECT_EQ(ir::TypeToString(**g, (*g)->FindValue("c")->type()), "f32[1,4,3,5]");
  EXPECT_EQ(ir::TypeToString(**g, (*g)->outputs()[0]->type()), "f32[1,7]");
}

TEST(FrontendImporter, LargeModelOver64MiB) {
  const std::string dir = MakeTempDir();
  const int64_t n = 20 * 1000 * 1000;  // 80 MB of fp32, past protobuf's old 64 MiB default
  Tensor big(DType::kFloat32, {n});
  big.data<float>()[n - 1] = 3.0f;
  ModelBuilder b(13);
  b.Input("x", {n});
  b.Initializer("big", big);
  b.Node("Add", {"x", "big"}, {"y"});
  b.Output("y");
  auto g = b.SaveAndImport(dir);
  ASSERT_TRUE(g.ok()) << g.status();
  const Tensor* c = (*g)->FindValue("big")->constant();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->numel(), n);
  EXPECT_EQ(c->data<float>()[n - 1], 3.0f);
  std::filesystem::remove_all(dir);
}

// ---- Errors ---------------------------------------------------------------------------------

TEST(FrontendImporter, UndefinedInputNamesNodeAndValue) {
  ModelBuilder b(13);
  b.Input("x", {2});
  b.Node("Add", {"x", "ghost"}, {"y"}, "adder");
  b.Output("y");
  auto g = b.Import();
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(g.status().ToString(), AllOf(HasSubstr("adder"), HasSubstr("ghost")));

  ModelBuilder out(13);
  out.Input("x", {2});
  out.Output("nowhere");
  EXPECT_THAT(out.Import().status().ToString(), HasSubstr("nowhere"));
}

TEST(FrontendImporter, DuplicateDefinitionAndCycle) {
  ModelBuilder dup(13);
  dup.Input("x", {2});
  dup.Node("Relu", {"x"}, {"y"});
  dup.Node("Neg", {"x"}, {"y"});
  dup.Output("y");
  auto d = dup.Import();
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().ToString(), HasSubstr("'y'"));

  ModelBuilder cyc(13);
  cyc.Input("x", {2});
  cyc.Node("Add", {"x", "b"}, {"a"}, "first");
  cyc.Node("Relu", {"a"}, {"b"}, "second");
  cyc.Output("b");
  EXPECT_EQ(cyc.Import().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FrontendImporter, UnsupportedOpNamesNodeOpAndOpset) {
  ModelBuilder b(17);
  b.Input("x", {2});
  b.Node("Relu", {"x"}, {"a"});
  b.Node("FancyOp", {"a"}, {"y"});  // unnamed: index 1
  b.Output("y");
  auto g = b.Import();
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(g.status().message(), "node #1: op 'FancyOp' (opset 17) is not supported");

  ModelBuilder named(17);
  named.Input("x", {2});
  named.Node("NonMaxSuppression", {"x"}, {"y"}, "nms");
  named.Output("y");
  EXPECT_EQ(named.Import().status().message(),
            "node 'nms': op 'NonMaxSuppression' (opset 17) is not supported");
}

TEST(FrontendImporter, QccInternalOpsAreNotReadFromModels) {
  // qcc.Observe and qcc.Attention are made by passes; a model naming them is refused.
  for (const char* op : {"qcc.Attention", "qcc.Observe"}) {
    ModelBuilder b(13);
    b.Input("x", {2, 3, 4});
    b.Node(op, {"x", "x", "x"}, {"y"}, "internal");
    b.Output("y");
    auto g = b.Import();
    EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented) << op;
    EXPECT_THAT(g.status().ToString(), AllOf(HasSubstr("internal"), HasSubstr(op)));
  }
}

TEST(FrontendImporter, OtherDomainIsUnimplemented) {
  for (const char* domain : {"com.microsoft", "ai.onnx.ml"}) {
    ModelBuilder b(13);
    auto* imp = b.model().add_opset_import();
    imp->set_domain(domain);
    imp->set_version(1);
    b.Input("x", {2});
    b.Node("Gelu", {"x"}, {"y"}, "gelu")->set_domain(domain);
    b.Output("y");
    auto g = b.Import();
    EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(g.status().ToString(),
                AllOf(HasSubstr("gelu"), HasSubstr(domain), HasSubstr("Gelu")));
  }
  // "ai.onnx" is the default domain spelled out.
  ModelBuilder b(13);
  b.model().mutable_opset_import(0)->set_domain("ai.onnx");
  b.Input("x", {2});
  b.Node("Relu", {"x"}, {"y"})->set_domain("ai.onnx");
  b.Output("y");
  EXPECT_TRUE(b.Import().ok());
}

TEST(FrontendImporter, OpsetOutOfRange) {
  for (int opset : {6, 22}) {
    ModelBuilder b(opset);
    b.Input("x", {2});
    b.Node("Relu", {"x"}, {"y"});
    b.Output("y");
    auto g = b.Import();
    EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(g.status().ToString(),
                AllOf(HasSubstr("opset " + std::to_string(opset)), HasSubstr("7 to 21")));
  }
}

TEST(FrontendImporter, NoDefaultDomainOpset) {
  ModelBuilder b(13);
  b.model().mutable_opset_import(0)->set_domain("ai.onnx.preview.training");
  b.Input("x", {2});
  b.Output("x");
  auto g = b.Import();
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(g.status().ToString(),
              AllOf(HasSubstr("ai.onnx.preview.training"), HasSubstr("7 to 21")));
}

TEST(FrontendImporter, AttributeOfWrongTypeOrBadEnum) {
  ModelBuilder b(13);
  b.Input("x", {2, 3});
  auto* n = b.Node("Flatten", {"x"}, {"y"}, "flat");
  AttrFloat(n, "axis", 1.0f);
  b.Output("y");
  auto g = b.Import();
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(g.status().ToString(), AllOf(HasSubstr("flat"), HasSubstr("axis"), HasSubstr("INT")));

  ModelBuilder e(13);
  e.Input("x", {1, 1, 4, 4});
  e.Initializer("w", F32({1, 1, 1, 1}, {1}));
  auto* conv = e.Node("Conv", {"x", "w"}, {"y"}, "conv");
  AttrString(conv, "auto_pad", "SAME_MIDDLE");
  e.Output("y");
  auto ge = e.Import();
  EXPECT_EQ(ge.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ge.status().ToString(),
              AllOf(HasSubstr("conv"), HasSubstr("auto_pad"), HasSubstr("SAME_MIDDLE"),
                    HasSubstr("NOTSET, SAME_UPPER, SAME_LOWER, VALID")));
}

TEST(FrontendImporter, WrongInputCount) {
  ModelBuilder b(13);
  b.Input("x", {2});
  b.Node("Add", {"x"}, {"y"}, "half_add");
  b.Output("y");
  auto g = b.Import();
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(g.status().ToString(), AllOf(HasSubstr("half_add"), HasSubstr("1 inputs")));
}

TEST(FrontendImporter, FileErrorsNameTheFile) {
  const std::string dir = MakeTempDir();
  auto missing = ImportOnnxFile(dir + "/nope.onnx");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().ToString(), HasSubstr("nope.onnx"));

  WriteBytes(dir + "/empty.onnx", "");
  auto empty = ImportOnnxFile(dir + "/empty.onnx");
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().ToString(), AllOf(HasSubstr("empty.onnx"), HasSubstr("empty")));

  WriteBytes(dir + "/text.onnx", "this is not a model at all\n");
  auto text = ImportOnnxFile(dir + "/text.onnx");
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(text.status().ToString(),
              AllOf(HasSubstr("text.onnx"), HasSubstr("not an ONNX model")));

  EXPECT_EQ(ImportOnnxFile(dir).status().code(), absl::StatusCode::kInvalidArgument);

  // Every truncation of a real model fails cleanly (or, cut at a field boundary, imports a
  // smaller graph or reports a graph error); none crashes.
  ModelBuilder b(13);
  b.Input("x", {2, 2});
  b.Initializer("w", F32({2, 2}, {1, 2, 3, 4}));
  b.Node("MatMul", {"x", "w"}, {"y"}, "mm");
  b.Output("y");
  const std::string bytes = b.model().SerializeAsString();
  int failures = 0;
  for (size_t len = 1; len < bytes.size(); ++len) {
    WriteBytes(dir + "/cut.onnx", bytes.substr(0, len));
    auto cut = ImportOnnxFile(dir + "/cut.onnx");
    if (!cut.ok()) {
      ++failures;
      EXPECT_THAT(cut.status().ToString(), HasSubstr("cut.onnx"));
    }
  }
  EXPECT_GT(failures, static_cast<int>(bytes.size()) / 2);
  auto parse = ImportOnnxFile(dir + "/cut.onnx");  // the last, one byte short
  EXPECT_THAT(parse.status().ToString(), HasSubstr("failed to parse ModelProto"));
}

TEST(FrontendImporter, GraphErrorsFromFilesNameTheFile) {
  const std::string dir = MakeTempDir();
  ModelBuilder b(13);
  b.Input("x", {2});
  b.Node("Mystery", {"x"}, {"y"}, "m");
  b.Output("y");
  auto g = b.SaveAndImport(dir);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(g.status().ToString(),
              AllOf(HasSubstr("model.onnx"), HasSubstr("'m'"), HasSubstr("Mystery")));
}

TEST(FrontendImporter, ExternalInitializerFromFile) {
  const std::string dir = MakeTempDir();
  const float w[] = {2.0f, -1.0f};
  WriteBytes(dir + "/model.weights", std::string(reinterpret_cast<const char*>(w), sizeof(w)));
  ModelBuilder b(13);
  b.Input("x", {2});
  auto* init = b.graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(2);
  init->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* loc = init->add_external_data();
  loc->set_key("location");
  loc->set_value("model.weights");
  b.Node("Mul", {"x", "w"}, {"y"});
  b.Output("y");
  auto g = b.SaveAndImport(dir);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->FindValue("w")->constant()->ToFloatVector(), (std::vector<float>{2, -1}));

  std::filesystem::remove(dir + "/model.weights");
  auto missing = b.SaveAndImport(dir);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().ToString(), AllOf(HasSubstr("'w'"), HasSubstr("model.weights")));
}

}  // namespace
}  // namespace qcc::frontend
