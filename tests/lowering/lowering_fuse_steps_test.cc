// The lowering's step fusions (LowerOptions::fuse_steps, backend_cpu/lowering.cc FuseSteps) on a
// transformer feed-forward block, called directly on an IR graph: GELU and the Quantize of the
// int8 GEMM it feeds become one UnaryQuantize step, each fp32-result GEMM and the residual Add
// after it one GEMM step with a residual input, dynamic GEMMs of one input one DynamicQGemms
// step; the plan gives the unfused plan's bits at every
// batch, static and dynamic, on 1 and 2 threads.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backend_cpu/lowering.h"
#include "gtest/gtest.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "passes/passes.h"
#include "passes/quantize.h"
#include "passes/realize_int8.h"
#include "runtime/engine.h"
#include "runtime/steps.h"
#include "tests/lowering/lowering_test_util.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

/// x:[N, 4, 8] -> h = Gelu(x W1 + b1) -> y = h W2 + b2 + x: a BERT feed-forward block with its
/// residual, the MatMul + Add pairs the Linear layers export as.
std::unique_ptr<ir::Graph> FeedForward() {
  auto g = std::make_unique<ir::Graph>();
  g->set_opset(17);
  const ir::Dim n = ir::SymbolDim(g->AddSymbol("N"));
  ir::Value* x = g->AddInput("x", ir::TensorType(DType::kFloat32, {n, 4, 8}));
  ir::Value* w1 = g->NewConstant("w1", Seeded({8, 16}, 0.5f, 1));
  ir::Value* b1 = g->NewConstant("b1", Seeded({16}, 0.1f, 2));
  ir::Value* w2 = g->NewConstant("w2", Seeded({16, 8}, 0.5f, 3));
  ir::Value* b2 = g->NewConstant("b2", Seeded({8}, 0.1f, 4));
  ir::Value* m1 = g->AddNode(OpKind::kMatMul, "mm1", {x, w1}, {"m1"})->output(0);
  ir::Value* a1 = g->AddNode(OpKind::kAdd, "add1", {m1, b1}, {"a1"})->output(0);
  ir::Value* h = g->AddNode(OpKind::kGelu, "gelu", {a1}, {"h"})->output(0);
  ir::Value* m2 = g->AddNode(OpKind::kMatMul, "mm2", {h, w2}, {"m2"})->output(0);
  ir::Value* a2 = g->AddNode(OpKind::kAdd, "add2", {m2, b2}, {"a2"})->output(0);
  ir::Value* y = g->AddNode(OpKind::kAdd, "residual", {a2, x}, {"y"})->output(0);
  g->AddOutput(y);
  EXPECT_TRUE(ir::Verify(*g).ok());
  EXPECT_TRUE(ir::InferShapes(*g).ok());
  return g;
}

/// A graph with input x:[N, 4, 8] and z = x W + b (one Linear layer); `build` adds the rest
/// from x and z and names the outputs. Verified, shapes inferred, DefaultPipeline run.
template <typename Build>
std::unique_ptr<ir::Graph> LinearThen(int seed, Build build) {
  auto g = std::make_unique<ir::Graph>();
  g->set_opset(17);
  const ir::Dim n = ir::SymbolDim(g->AddSymbol("N"));
  ir::Value* x = g->AddInput("x", ir::TensorType(DType::kFloat32, {n, 4, 8}));
  ir::Value* w = g->NewConstant("w", Seeded({8, 8}, 0.5f, seed));
  ir::Value* b = g->NewConstant("b", Seeded({8}, 0.1f, seed + 1));
  ir::Value* m = g->AddNode(OpKind::kMatMul, "mm", {x, w}, {"m"})->output(0);
  ir::Value* z = g->AddNode(OpKind::kAdd, "bias", {m, b}, {"z"})->output(0);
  build(*g, x, z);
  EXPECT_TRUE(ir::Verify(*g).ok());
  EXPECT_TRUE(ir::InferShapes(*g).ok());
  EXPECT_TRUE(passes::RunPipeline(*g, passes::DefaultPipeline()).ok());
  return g;
}

/// The plan of `g`'s quantized graph for decision `d`.
runtime::Plan Lower(const ir::Graph& g, const passes::QuantDecision& d, bool fuse) {
  cpu::LowerOptions options;
  options.batch_min = 1;
  options.batch_max = 4;
  options.fuse_steps = fuse;
  absl::StatusOr<std::unique_ptr<ir::Graph>> quantized = passes::RealizeInt8(g, d);
  EXPECT_TRUE(quantized.ok()) << quantized.status();
  if (!quantized.ok()) return runtime::Plan{};
  absl::StatusOr<runtime::Plan> plan = cpu::LowerToCpuPlan(**quantized, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *std::move(plan) : runtime::Plan{};
}

/// The fused plan's outputs equal the unfused plan's, bit for bit.
void ExpectSameOutputs(const runtime::Plan& fused, const runtime::Plan& unfused) {
  ExpectSamePlanOutputs(fused, unfused, {1, 4}, [](int64_t batch) {
    return Seeded({batch, 4, 8}, 2.0f, static_cast<int>(batch));
  });
}

TEST(LoweringFuseStepsTest, StaticGeluQuantizeAndResidualFuseWithTheSameBits) {
  std::unique_ptr<ir::Graph> g = FeedForward();
  ASSERT_TRUE(passes::RunPipeline(*g, passes::DefaultPipeline()).ok());
  std::map<std::string, passes::TensorRange> ranges;
  for (const auto& node : g->nodes()) {
    for (const ir::Value* v : node->outputs()) ranges[v->name()] = {-3.0f, 3.0f};
  }
  ranges["x"] = {-2.0f, 2.0f};
  absl::StatusOr<passes::QuantDecision> d = passes::AssignPrecision(*g, ranges, {});
  ASSERT_TRUE(d.ok()) << d.status();
  const runtime::Plan fused = Lower(*g, *d, true);
  const runtime::Plan unfused = Lower(*g, *d, false);
  using runtime::StepKind;
  // Unfused: the GELU is a Unary step, then a Quantize for the second GEMM; the residual is a
  // Binary Add after it.
  ASSERT_EQ(CountSteps(unfused, StepKind::kUnary), 1);
  ASSERT_EQ(CountSteps(unfused, StepKind::kBinary), 1);
  EXPECT_EQ(CountSteps(fused, StepKind::kUnaryQuantize), 1);
  EXPECT_EQ(CountSteps(fused, StepKind::kUnary), 0);
  EXPECT_EQ(CountSteps(fused, StepKind::kBinary), 0);
  EXPECT_EQ(CountSteps(fused, StepKind::kQGemm), 2);
  EXPECT_EQ(fused.steps.size(), unfused.steps.size() - 2);
  EXPECT_EQ(fused.buffers.size(), unfused.buffers.size() - 2);  // h (f32) and the GEMM's result
  EXPECT_LE(fused.arena_bytes, unfused.arena_bytes);
  ExpectSameOutputs(fused, unfused);
}

TEST(LoweringFuseStepsTest, DynamicResidualFusesWithTheSameBits) {
  std::unique_ptr<ir::Graph> g = FeedForward();
  ASSERT_TRUE(passes::RunPipeline(*g, passes::DefaultPipeline()).ok());
  absl::StatusOr<passes::QuantDecision> d = passes::AssignDynamic(*g, {});
  ASSERT_TRUE(d.ok()) << d.status();
  const runtime::Plan fused = Lower(*g, *d, true);
  const runtime::Plan unfused = Lower(*g, *d, false);
  using runtime::StepKind;
  ASSERT_EQ(CountSteps(unfused, StepKind::kDynamicQGemm), 2);
  ASSERT_EQ(CountSteps(unfused, StepKind::kBinary), 1);
  EXPECT_EQ(CountSteps(fused, StepKind::kBinary), 0);
  EXPECT_EQ(CountSteps(fused, StepKind::kDynamicQGemm), 2);
  EXPECT_EQ(fused.steps.size(), unfused.steps.size() - 1);
  ExpectSameOutputs(fused, unfused);
}

TEST(LoweringFuseStepsTest, DynamicGemmsOfOneInputQuantizeItOnceWithTheSameBits) {
  // z = x W + b, m2 = x W2 and z3 = x W3 + b3 (a transformer's Q, K and V projections of one
  // tensor, one without a bias) become one DynamicQGemms step where the first was; z4 = relu(x)
  // W4 + b4 reads another X and stays a DynamicQGemm.
  std::unique_ptr<ir::Graph> g = LinearThen(3, [](ir::Graph& g, ir::Value* x, ir::Value* z) {
    ir::Value* w2 = g.NewConstant("w2", Seeded({8, 6}, 0.5f, 5));
    ir::Value* w3 = g.NewConstant("w3", Seeded({8, 8}, 0.5f, 6));
    ir::Value* b3 = g.NewConstant("b3", Seeded({8}, 0.1f, 7));
    ir::Value* w4 = g.NewConstant("w4", Seeded({8, 8}, 0.5f, 8));
    ir::Value* b4 = g.NewConstant("b4", Seeded({8}, 0.1f, 9));
    ir::Value* m2 = g.AddNode(OpKind::kMatMul, "mm2", {x, w2}, {"m2"})->output(0);
    ir::Value* m3 = g.AddNode(OpKind::kMatMul, "mm3", {x, w3}, {"m3"})->output(0);
    ir::Value* z3 = g.AddNode(OpKind::kAdd, "bias3", {m3, b3}, {"z3"})->output(0);
    ir::Value* r = g.AddNode(OpKind::kRelu, "relu", {x}, {"r"})->output(0);
    ir::Value* m4 = g.AddNode(OpKind::kMatMul, "mm4", {r, w4}, {"m4"})->output(0);
    ir::Value* z4 = g.AddNode(OpKind::kAdd, "bias4", {m4, b4}, {"z4"})->output(0);
    for (ir::Value* y : {z, m2, z3, z4}) g.AddOutput(y);
  });
  absl::StatusOr<passes::QuantDecision> d = passes::AssignDynamic(*g, {});
  ASSERT_TRUE(d.ok()) << d.status();
  const runtime::Plan fused = Lower(*g, *d, true);
  const runtime::Plan unfused = Lower(*g, *d, false);
  using runtime::StepKind;
  ASSERT_EQ(CountSteps(unfused, StepKind::kDynamicQGemm), 4);
  ASSERT_EQ(CountSteps(fused, StepKind::kDynamicQGemms), 1);
  EXPECT_EQ(CountSteps(fused, StepKind::kDynamicQGemm), 1);
  EXPECT_EQ(fused.steps.size(), unfused.steps.size() - 2);
  for (const runtime::PlanStep& step : fused.steps) {
    if (step.kind != static_cast<uint32_t>(StepKind::kDynamicQGemms)) continue;
    EXPECT_EQ(step.name, "mm");
    ASSERT_EQ(step.outputs.size(), 3u);
    ASSERT_EQ(step.inputs.size(), 10u);  // x, then (W, scales, bias) three times
    EXPECT_EQ(fused.buffers[step.inputs[0]].name, "x");
    EXPECT_EQ(step.inputs[6], -1);  // m2 has no bias
    EXPECT_EQ(fused.buffers[step.outputs[1]].name, "m2");
  }
  ExpectSameOutputs(fused, unfused);
}

TEST(LoweringFuseStepsTest, TheResidualMayComeSecondAndAfterTheGemm) {
  // y = Relu(x) + (x W + b), the Relu's step after the GEMM's: the fused GEMM runs where the Add
  // did, once its residual exists, and adds it as the Add did (the sum commutes exactly).
  std::unique_ptr<ir::Graph> g = LinearThen(7, [](ir::Graph& g, ir::Value* x, ir::Value* z) {
    ir::Value* r = g.AddNode(OpKind::kRelu, "relu", {x}, {"r"})->output(0);
    g.AddOutput(g.AddNode(OpKind::kAdd, "residual", {r, z}, {"y"})->output(0));
  });
  absl::StatusOr<passes::QuantDecision> d = passes::AssignDynamic(*g, {});
  ASSERT_TRUE(d.ok()) << d.status();
  const runtime::Plan fused = Lower(*g, *d, true);
  const runtime::Plan unfused = Lower(*g, *d, false);
  ASSERT_EQ(CountSteps(unfused, runtime::StepKind::kBinary), 1);
  EXPECT_EQ(CountSteps(fused, runtime::StepKind::kBinary), 0);
  ASSERT_EQ(fused.steps.size(), 2u);
  EXPECT_EQ(fused.steps[1].kind, static_cast<uint32_t>(runtime::StepKind::kDynamicQGemm));
  ExpectSameOutputs(fused, unfused);
}

TEST(LoweringFuseStepsTest, AGemmResultAnotherStepReadsIsNotFused) {
  // y = (x W2 + b2) + x and z = x W2 + b2 both outputs: the GEMM's result is a graph output, so
  // the Add stays a step of its own.
  std::unique_ptr<ir::Graph> g = LinearThen(5, [](ir::Graph& g, ir::Value* x, ir::Value* z) {
    g.AddOutput(g.AddNode(OpKind::kAdd, "residual", {z, x}, {"y"})->output(0));
    g.AddOutput(z);
  });
  absl::StatusOr<passes::QuantDecision> d = passes::AssignDynamic(*g, {});
  ASSERT_TRUE(d.ok()) << d.status();
  const runtime::Plan fused = Lower(*g, *d, true);
  EXPECT_EQ(CountSteps(fused, runtime::StepKind::kBinary), 1);
  ExpectSameOutputs(fused, Lower(*g, *d, false));
}

}  // namespace
}  // namespace qcc::testing
