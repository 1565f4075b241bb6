// Imports the five real models in shared/models and checks their structure and output types.
#include <filesystem>
#include <map>

#include "backend_cpu/evaluator.h"
#include "frontend/onnx_importer.h"
#include "frontend/tensor_proto.h"
#include "gtest/gtest.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "support/float16.h"

namespace qcc::frontend {
namespace {

std::string ModelPath(const std::string& folder, const std::string& file = "model.onnx") {
  return std::string(QCC_SHARED_DIR) + "/models/" + folder + "/" + file;
}

std::map<ir::OpKind, int> CountOps(const ir::Graph& g) {
  std::map<ir::OpKind, int> counts;
  for (const auto& n : g.nodes()) ++counts[n->kind()];
  return counts;
}

/// The printed type of graph output `i`, e.g. "f32[batch,10]".
std::string OutputType(const ir::Graph& g, int i) {
  return ir::TypeToString(g, g.outputs()[i]->type());
}

#define IMPORT_OR_SKIP(graph, path)                                    \
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << (path); \
  auto graph##_or = ImportOnnxFile(path);                              \
  ASSERT_TRUE(graph##_or.ok()) << graph##_or.status();                 \
  const ir::Graph& graph = **graph##_or;                               \
  ASSERT_TRUE(ir::Verify(graph).ok())

TEST(FrontendRealModels, Mnist) {
  IMPORT_OR_SKIP(g, ModelPath("mnist-8"));
  EXPECT_EQ(g.opset(), 7);
  ASSERT_EQ(g.inputs().size(), 1u);  // the initializers listed as inputs are constants
  EXPECT_EQ(g.inputs()[0]->name(), "Input3");
  EXPECT_EQ(ir::TypeToString(g, g.inputs()[0]->type()), "f32[1,1,28,28]");
  auto ops = CountOps(g);
  EXPECT_EQ(ops[ir::OpKind::kConv], 2);
  EXPECT_EQ(ops[ir::OpKind::kMaxPool], 2);
  EXPECT_EQ(ops[ir::OpKind::kMatMul], 1);
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(OutputType(g, 0), "f32[1,10]");
  for (const auto& n : g.nodes()) {
    if (n->kind() == ir::OpKind::kConv) {
      EXPECT_EQ(n->attrs<ir::ConvAttrs>().auto_pad, ir::AutoPad::kSameUpper) << n->name();
    }
  }
}

TEST(FrontendRealModels, Resnet20) {
  IMPORT_OR_SKIP(g, ModelPath("resnet20-cifar10"));
  EXPECT_EQ(g.opset(), 13);
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(ir::TypeToString(g, g.inputs()[0]->type()), "f32[batch,3,32,32]");
  auto ops = CountOps(g);
  EXPECT_EQ(ops[ir::OpKind::kConv], 19);
  EXPECT_EQ(ops[ir::OpKind::kBatchNormalization], 19);
  EXPECT_EQ(ops[ir::OpKind::kGemm], 1);
  EXPECT_EQ(ops[ir::OpKind::kConstant], 32);
  EXPECT_EQ(OutputType(g, 0), "f32[batch,10]");
}

TEST(FrontendRealModels, SqueezenetFp16) {
  IMPORT_OR_SKIP(g, ModelPath("squeezenet1.1", "model-fp16.onnx"));
  EXPECT_EQ(g.opset(), 7);
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(ir::TypeToString(g, g.inputs()[0]->type()), "f16[1,3,224,224]");
  int fp16_weights = 0;
  for (const auto& v : g.values()) {
    if (v->constant() != nullptr && v->constant()->dtype() == DType::kFloat16) ++fp16_weights;
  }
  EXPECT_EQ(fp16_weights, 52);  // 26 convolutions, weight and bias each
  auto ops = CountOps(g);
  EXPECT_EQ(ops[ir::OpKind::kConcat], 8);
  EXPECT_EQ(ops[ir::OpKind::kDropout], 1);
  for (const auto& n : g.nodes()) {
    if (n->kind() == ir::OpKind::kSoftmax) {
      EXPECT_EQ(n->attrs<ir::SoftmaxAttrs>().axis, 1);  // opset 7 default
      EXPECT_EQ(n->attrs<ir::SoftmaxAttrs>().coerce_2d, 1);
    }
  }
  EXPECT_EQ(OutputType(g, 0), "f16[1,1000,1,1]");
}

TEST(FrontendRealModels, PpocrClassifier) {
  IMPORT_OR_SKIP(g, ModelPath("ppocr-cls-mbv3"));
  EXPECT_EQ(g.opset(), 9);
  auto ops = CountOps(g);
  EXPECT_EQ(ops[ir::OpKind::kConv], 53);
  EXPECT_EQ(ops[ir::OpKind::kBatchNormalization], 35);
  EXPECT_EQ(ops[ir::OpKind::kConstant], 250);
  // Clip-6 min/max attributes became constant inputs.
  ASSERT_EQ(ops[ir::OpKind::kClip], 18);
  for (const auto& n : g.nodes()) {
    if (n->kind() != ir::OpKind::kClip) continue;
    ASSERT_EQ(n->num_inputs(), 3) << n->name();
    ASSERT_NE(n->input(1)->constant(), nullptr);
    EXPECT_EQ(n->input(1)->constant()->GetAsDouble(0), 0.0);
    EXPECT_EQ(n->input(2)->constant()->GetAsDouble(0), 6.0);
  }
  ASSERT_EQ(g.outputs().size(), 1u);
  const ir::TensorType& out = g.outputs()[0]->type();
  ASSERT_TRUE(out.has_rank());
  ASSERT_EQ(out.rank(), 2);
  EXPECT_TRUE(ir::IsSymbol((*out.dims)[0]));
  EXPECT_EQ((*out.dims)[1], 2);
}

TEST(FrontendRealModels, PpocrDetector) {
  IMPORT_OR_SKIP(g, ModelPath("ppocr-det-v3"));
  EXPECT_EQ(g.opset(), 12);
  auto ops = CountOps(g);
  EXPECT_EQ(ops[ir::OpKind::kConvTranspose], 2);
  ASSERT_EQ(ops[ir::OpKind::kResize], 6);
  for (const auto& n : g.nodes()) {
    if (n->kind() != ir::OpKind::kResize) continue;
    // Opset 12 passes an unused roi; it is dropped. Scales or sizes remain.
    EXPECT_EQ(n->input(1), nullptr) << n->name();
    EXPECT_TRUE(n->input(2) != nullptr || n->input(3) != nullptr) << n->name();
  }
  ASSERT_EQ(g.outputs().size(), 1u);
  const ir::TensorType& out = g.outputs()[0]->type();
  EXPECT_EQ(out.dtype, DType::kFloat32);
  ASSERT_EQ(out.rank(), 4);
  EXPECT_EQ((*out.dims)[1], 1);
}

TEST(FrontendRealModels, MnistRunsOnReferenceData) {
  const std::string dir = std::string(QCC_SHARED_DIR) + "/models/mnist-8/test_data_set_0";
  IMPORT_OR_SKIP(g, ModelPath("mnist-8"));
  auto input = ReadTensorProtoFile(dir + "/input_0.pb");
  auto expected = ReadTensorProtoFile(dir + "/output_0.pb");
  ASSERT_TRUE(input.ok() && expected.ok());
  auto ev = cpu::Evaluator::Create(g);
  ASSERT_TRUE(ev.ok()) << ev.status();
  auto out = (*ev)->Run({*input});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  ASSERT_EQ((*out)[0].dims(), expected->dims());
  const std::vector<float> got = (*out)[0].ToFloatVector();
  const std::vector<float> want = expected->ToFloatVector();
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-4 + 1e-3 * std::abs(want[i])) << i;
  }
}

}  // namespace
}  // namespace qcc::frontend
