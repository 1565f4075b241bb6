// builder::Build (builder/build.h), called as an embedder would: an IR graph and options in, a
// plan out, for each precision and both targets; the options it refuses, by name.
#include "builder/build.h"

#include <map>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "runtime/engine.h"
#include "runtime/plan_format.h"
#include "runtime/steps.h"
#include "support/tensor.h"

namespace qcc::builder {
namespace {

using ir::OpKind;

/// x:[N, 4, 8, 8] -> Conv 3x3 (8 channels, pad 1) -> Relu -> y; batch fixed at `fixed_batch`
/// when it is not 0.
std::unique_ptr<ir::Graph> ConvRelu(int64_t fixed_batch = 0) {
  auto g = std::make_unique<ir::Graph>();
  g->set_opset(17);
  const ir::Dim n = fixed_batch > 0 ? ir::Dim(fixed_batch) : ir::SymbolDim(g->AddSymbol("N"));
  ir::Value* x = g->AddInput("x", ir::TensorType(DType::kFloat32, {n, 4, 8, 8}));
  Tensor w(DType::kFloat32, {8, 4, 3, 3});
  for (int64_t i = 0; i < w.numel(); ++i)
    w.data<float>()[i] = 0.01f * static_cast<float>(i % 17 - 8);
  ir::Node* conv = g->AddNode(OpKind::kConv, "conv", {x, g->NewConstant("w", w)}, {"c"});
  conv->mutable_attrs<ir::ConvAttrs>().pads = {1, 1, 1, 1};
  ir::Value* y = g->AddNode(OpKind::kRelu, "relu", {conv->output(0)}, {"y"})->output(0);
  g->AddOutput(y);
  EXPECT_TRUE(ir::Verify(*g).ok());
  EXPECT_TRUE(ir::InferShapes(*g).ok());
  return g;
}

BuildOptions Int8Options() {
  BuildOptions o;
  o.precision = Precision::kInt8;
  o.ranges = {{"x", {-1.0f, 1.0f}}, {"c", {-0.5f, 0.5f}}, {"y", {-0.5f, 0.5f}}};
  o.calib_method = "minmax";
  return o;
}

TEST(BuildTest, EveryPrecisionAndTargetGivesAPlanWithItsMetadata) {
  for (Precision precision : {Precision::kFp32, Precision::kFp16, Precision::kInt8}) {
    for (Target target : {Target::kCpu, Target::kCuda}) {
      SCOPED_TRACE(static_cast<int>(precision) * 2 + static_cast<int>(target));
      BuildOptions o = precision == Precision::kInt8 ? Int8Options() : BuildOptions{};
      o.precision = precision;
      o.target = target;
      absl::StatusOr<BuildResult> r = Build(ConvRelu(), "conv_relu.onnx", o);
      ASSERT_TRUE(r.ok()) << r.status();
      const std::map<std::string, std::string>& meta = r->plan.metadata;
      const char* name = precision == Precision::kInt8   ? "int8"
                         : precision == Precision::kFp16 ? "fp16"
                                                         : "fp32";
      EXPECT_EQ(meta.at("precision"), name);
      EXPECT_EQ(meta.at("source"), "conv_relu.onnx");
      EXPECT_EQ(meta.at("parameters"), "288");  // 8 * 4 * 3 * 3
      EXPECT_EQ(meta.at("calib_method"), precision == Precision::kInt8 ? "minmax" : "none");
      EXPECT_EQ(r->plan.batch_min, 1);  // a dynamic batch: 1 to 32
      EXPECT_EQ(r->plan.batch_max, 32);
      EXPECT_EQ(r->plan.metadata.count("cuda.kernel.0"), target == Target::kCuda ? 1u : 0u);
      // The CUDA kernel choices are typed fields of the steps: the conv's, by precision.
      const runtime::CudaKernel conv_kernel =
          precision == Precision::kInt8   ? runtime::CudaKernel::kIm2colImma
          : precision == Precision::kFp16 ? runtime::CudaKernel::kIm2colHalfGemm
                                          : runtime::CudaKernel::kIm2colGemm;
      int convs = 0;
      for (const runtime::PlanStep& s : r->plan.steps) {
        const auto kind = static_cast<runtime::StepKind>(s.kind);
        if (kind != runtime::StepKind::kConv && kind != runtime::StepKind::kQConv) continue;
        ++convs;
        EXPECT_EQ(s.cuda_kernel,
                  target == Target::kCuda ? conv_kernel : runtime::CudaKernel::kNone);
      }
      EXPECT_EQ(convs, 1);
      ASSERT_NE(r->graph, nullptr);
      // The conv and its relu fused, in int8 when asked.
      const int int8 = precision == Precision::kInt8 ? 1 : 0;
      EXPECT_EQ(r->precision.Count(passes::NodePrecision::kInt8), int8);
      EXPECT_EQ(r->counts.nodes, 1);
      EXPECT_EQ(r->counts.int8, int8);
      // An int8 plan is lowered from the quantized graph: the conv is a qcc.QConv there.
      int qconvs = 0;
      for (const auto& n : r->graph->nodes()) qconvs += n->kind() == ir::OpKind::kQConv ? 1 : 0;
      EXPECT_EQ(qconvs, int8);
      // The CPU runtime runs what Build made.
      absl::StatusOr<std::shared_ptr<const runtime::Engine>> engine =
          runtime::Engine::Create(r->plan, runtime::EngineOptions{1});
      EXPECT_TRUE(engine.ok()) << engine.status();
    }
  }
}

TEST(BuildTest, ACudaPlanRefusesAUnaryFunctionWithoutAKernelNamingIt) {
  auto g = std::make_unique<ir::Graph>();
  g->set_opset(17);
  ir::Value* x = g->AddInput("x", ir::TensorType(DType::kFloat32, {1, 8}));
  g->AddOutput(g->AddNode(OpKind::kExp, "the_exp", {x}, {"y"})->output(0));
  ASSERT_TRUE(ir::InferShapes(*g).ok());
  BuildOptions o;
  o.target = Target::kCuda;
  absl::StatusOr<BuildResult> r = Build(std::move(g), "exp.onnx", o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
  for (const char* part :
       {"'the_exp'", "the unary function Exp has no CUDA kernel", "--target cpu"}) {
    EXPECT_NE(r.status().message().find(part), std::string::npos) << r.status();
  }
  o.target = Target::kCpu;  // the CPU runs every function
  auto cpu = std::make_unique<ir::Graph>();
  cpu->set_opset(17);
  x = cpu->AddInput("x", ir::TensorType(DType::kFloat32, {1, 8}));
  cpu->AddOutput(cpu->AddNode(OpKind::kExp, "the_exp", {x}, {"y"})->output(0));
  ASSERT_TRUE(ir::InferShapes(*cpu).ok());
  EXPECT_TRUE(Build(std::move(cpu), "exp.onnx", o).ok());
}

TEST(BuildTest, AGivenBatchRangeAndAFixedBatch) {
  BuildOptions o;
  o.batch_min = 2;
  o.batch_max = 8;
  absl::StatusOr<BuildResult> r = Build(ConvRelu(), "m.onnx", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->plan.batch_min, 2);
  EXPECT_EQ(r->plan.batch_max, 8);

  EXPECT_EQ(FixedBatch(*ConvRelu(3)), 3);
  EXPECT_EQ(FixedBatch(*ConvRelu()), std::nullopt);
  r = Build(ConvRelu(3), "m.onnx", BuildOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->plan.batch_min, 3);
  EXPECT_EQ(r->plan.batch_max, 3);
  r = Build(ConvRelu(3), "m.onnx", o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(r.status().message()).find("the model's batch is fixed at 3"),
            std::string::npos)
      << r.status();
}

TEST(BuildTest, Int8OptionsOnAFloatPlanAreRefused) {
  BuildOptions o;
  o.precision = Precision::kFp16;
  o.per_tensor = true;
  absl::StatusOr<BuildResult> r = Build(ConvRelu(), "m.onnx", o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(r.status().message()).find("apply to int8"), std::string::npos)
      << r.status();
}

TEST(BuildTest, TheFingerprintIsTheOneGivenOrTheGraphs) {
  BuildOptions o;
  o.fingerprint = "given";
  absl::StatusOr<BuildResult> r = Build(ConvRelu(), "m.onnx", o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->plan.metadata.at("fingerprint"), "given");
  r = Build(ConvRelu(), "m.onnx", BuildOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->plan.metadata.at("fingerprint").empty());
  EXPECT_NE(r->plan.metadata.at("fingerprint"), "given");
}

}  // namespace
}  // namespace qcc::builder
