// The lowering's Conv + residual Add fusion (LowerOptions::fuse_steps): an fp32 Conv without an
// activation whose output only an Add reads, with the Add's other operand of the same dims,
// becomes one Conv step with that operand as its fourth input (the residual) and the Add's
// activation; its plan gives the unfused plan's bits at batch 1 and 3 on 1 and 2 threads, with
// the residual computed before or after the Conv and on either side of the Add. A Conv with an
// activation of its own, or whose output is read again, keeps its Add; the runtime refuses a
// residual that does not have the output's dims. The same blocks quantized: the QConv and its
// QAdd become one QConvAdd step (the residual its fifth input) with the same bits, a Relu on the
// conv included (a clamp of its int8 result); a conv output read again keeps its QAdd.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backend_cpu/lowering.h"
#include "gtest/gtest.h"
#include "ir/attrs.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "passes/passes.h"
#include "runtime/engine.h"
#include "runtime/steps.h"
#include "tests/lowering/lowering_test_util.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {
namespace {

using ir::OpKind;
using runtime::StepKind;

struct Block {
  bool residual_after = false;   // the shortcut computed after the Conv (a downsampling block's)
  bool conv_second = false;      // Add(shortcut, conv)
  bool conv_relu = false;        // a Relu on the Conv too (then nothing to fuse)
  bool conv_read_twice = false;  // the Conv's output is also a graph output
};

/// x:[N, 8, 6, 7] -> Conv 3x3 (8 -> 8, pads 1) -> Add(conv, shortcut) -> Relu, the shortcut x
/// itself or (residual_after) Neg(x) computed after the Conv; DefaultPipeline folds the Relu into
/// the Add.
std::unique_ptr<ir::Graph> ResidualBlock(const Block& b) {
  auto g = std::make_unique<ir::Graph>();
  g->set_opset(17);
  const ir::Dim n = ir::SymbolDim(g->AddSymbol("N"));
  ir::Value* x = g->AddInput("x", ir::TensorType(DType::kFloat32, {n, 8, 6, 7}));
  ir::Value* w = g->NewConstant("w", Seeded({8, 8, 3, 3}, 0.5f, 1));
  ir::Value* bias = g->NewConstant("b", Seeded({8}, 0.1f, 2));
  ir::Node* conv = g->AddNode(OpKind::kConv, "conv", {x, w, bias}, {"c"});
  ir::ConvAttrs a;
  a.pads = {1, 1, 1, 1};
  conv->set_attrs(a);
  ir::Value* c = conv->output(0);
  if (b.conv_relu) c = g->AddNode(OpKind::kRelu, "conv_relu", {c}, {"cr"})->output(0);
  ir::Value* shortcut = x;
  if (b.residual_after) shortcut = g->AddNode(OpKind::kNeg, "neg", {x}, {"nx"})->output(0);
  std::vector<ir::Value*> operands = {c, shortcut};
  if (b.conv_second) std::swap(operands[0], operands[1]);
  ir::Value* s = g->AddNode(OpKind::kAdd, "add", operands, {"s"})->output(0);
  g->AddOutput(g->AddNode(OpKind::kRelu, "relu", {s}, {"y"})->output(0));
  if (b.conv_read_twice) g->AddOutput(c);
  EXPECT_TRUE(ir::Verify(*g).ok());
  EXPECT_TRUE(ir::InferShapes(*g).ok());
  EXPECT_TRUE(passes::RunPipeline(*g, passes::DefaultPipeline()).ok());
  return g;
}

runtime::Plan Lower(const ir::Graph& g, bool fuse) {
  cpu::LowerOptions options;
  options.batch_min = 1;
  options.batch_max = 4;
  options.fuse_steps = fuse;
  absl::StatusOr<runtime::Plan> plan = cpu::LowerToCpuPlan(g, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *std::move(plan) : runtime::Plan{};
}

/// The plan of `g` with every activation in int8 (fixed ranges).
runtime::Plan LowerInt8(const ir::Graph& g, bool fuse) {
  std::map<std::string, passes::TensorRange> ranges;
  for (const auto& node : g.nodes()) {
    for (const ir::Value* v : node->outputs()) ranges[v->name()] = {-4.0f, 4.0f};
  }
  ranges["x"] = {-2.0f, 2.0f};
  cpu::LowerOptions options;
  options.batch_min = 1;
  options.batch_max = 4;
  options.fuse_steps = fuse;
  return LowerQuantized(g, ranges, options);
}

/// The fused plan's outputs equal the unfused plan's, bit for bit.
void ExpectSameOutputs(const runtime::Plan& fused, const runtime::Plan& unfused) {
  ExpectSamePlanOutputs(fused, unfused, {1, 3}, [](int64_t batch) {
    return Seeded({batch, 8, 6, 7}, 2.0f, static_cast<int>(batch));
  });
}

/// The one Conv step of `plan`.
const runtime::PlanStep& ConvStep(const runtime::Plan& plan) {
  for (const runtime::PlanStep& s : plan.steps) {
    if (s.kind == static_cast<uint32_t>(StepKind::kConv)) return s;
  }
  ADD_FAILURE() << "no Conv step";
  return plan.steps.at(0);
}

TEST(LoweringConvResidualTest, ConvAndShortcutAddBecomeOneConvStepWithTheSameBits) {
  for (bool after : {false, true}) {
    for (bool second : {false, true}) {
      SCOPED_TRACE(absl::StrCat("residual after ", after, ", conv second ", second));
      std::unique_ptr<ir::Graph> g = ResidualBlock({after, second});
      const runtime::Plan fused = Lower(*g, true);
      const runtime::Plan unfused = Lower(*g, false);
      EXPECT_EQ(CountSteps(unfused, StepKind::kBinary), 1);
      EXPECT_EQ(CountSteps(fused, StepKind::kBinary), 0);
      const runtime::PlanStep& conv = ConvStep(fused);
      ASSERT_EQ(conv.inputs.size(), 4u);
      // The residual is the shortcut: x, or the Neg step's output.
      const std::string& residual = fused.buffers[conv.inputs[3]].name;
      EXPECT_EQ(residual, after ? "nx" : "x");
      // Y is the Add's output, with the Add's Relu.
      EXPECT_EQ(fused.buffers[conv.outputs[0]].name, "y");
      absl::StatusOr<runtime::ConvStepParams> p =
          runtime::DecodeParams<runtime::ConvStepParams>(conv);
      ASSERT_TRUE(p.ok());
      EXPECT_EQ(p->activation.lo, 0.0f);
      ExpectSameOutputs(fused, unfused);
    }
  }
}

TEST(LoweringConvResidualTest, ConvWithItsOwnActivationOrAnotherReaderKeepsItsAdd) {
  for (const Block& b : {Block{false, false, true, false}, Block{false, false, false, true}}) {
    SCOPED_TRACE(absl::StrCat("conv relu ", b.conv_relu, ", read twice ", b.conv_read_twice));
    std::unique_ptr<ir::Graph> g = ResidualBlock(b);
    const runtime::Plan plan = Lower(*g, true);
    EXPECT_EQ(CountSteps(plan, StepKind::kBinary), 1);
    EXPECT_EQ(ConvStep(plan).inputs.size(), 3u);
  }
}

/// `plan`'s one `kind` step with its input `residual_at` (a fused residual) replaced by input
/// `other_at`, of other dims than Y: Engine::Create refuses it, naming the residual and the node.
void ExpectRuntimeRefusesResidual(runtime::Plan plan, StepKind kind, size_t residual_at,
                                  size_t other_at) {
  runtime::PlanStep* step = nullptr;
  for (runtime::PlanStep& s : plan.steps) {
    if (s.kind == static_cast<uint32_t>(kind)) step = &s;
  }
  ASSERT_NE(step, nullptr);
  ASSERT_EQ(step->inputs.size(), residual_at + 1);
  step->inputs[residual_at] = step->inputs[other_at];
  absl::StatusOr<std::shared_ptr<const runtime::Engine>> engine = runtime::Engine::Create(plan);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("residual"), std::string::npos) << engine.status();
  EXPECT_NE(engine.status().message().find("'conv'"), std::string::npos) << engine.status();
}

TEST(LoweringConvResidualTest, TheRuntimeRefusesAResidualOfOtherDims) {
  std::unique_ptr<ir::Graph> g = ResidualBlock({});
  // The bias [8] as the residual: not Y's dims.
  ExpectRuntimeRefusesResidual(Lower(*g, true), StepKind::kConv, 3, 2);
}

TEST(LoweringConvResidualTest, QConvAndShortcutQAddBecomeOneQConvAddStepWithTheSameBits) {
  for (bool after : {false, true}) {
    for (bool second : {false, true}) {
      for (bool relu : {false, true}) {
        SCOPED_TRACE(
            absl::StrCat("residual after ", after, ", conv second ", second, ", conv relu ", relu));
        std::unique_ptr<ir::Graph> g = ResidualBlock({after, second, relu});
        const runtime::Plan fused = LowerInt8(*g, true);
        const runtime::Plan unfused = LowerInt8(*g, false);
        ASSERT_EQ(CountSteps(unfused, StepKind::kQAdd), 1);
        ASSERT_EQ(CountSteps(unfused, StepKind::kQConv), 1);
        EXPECT_EQ(CountSteps(fused, StepKind::kQAdd), 0);
        EXPECT_EQ(CountSteps(fused, StepKind::kQConv), 0);
        ASSERT_EQ(CountSteps(fused, StepKind::kQConvAdd), 1);
        // One step and buffer (the conv's int8 result) fewer, and the Neg of a shortcut
        // computed after the conv with its Quantize one UnaryQuantize step.
        const size_t others = CountSteps(fused, StepKind::kUnaryQuantize);
        EXPECT_EQ(others, after ? 1u : 0u);
        EXPECT_EQ(fused.steps.size(), unfused.steps.size() - 1 - others);
        EXPECT_EQ(fused.buffers.size(), unfused.buffers.size() - 1 - others);
        for (const runtime::PlanStep& s : fused.steps) {
          if (s.kind != static_cast<uint32_t>(StepKind::kQConvAdd)) continue;
          ASSERT_EQ(s.inputs.size(), 5u);
          // The residual: the shortcut's int8 form, of Y's dims; Y: the Add's output.
          EXPECT_EQ(fused.buffers[s.inputs[4]].dims, fused.buffers[s.outputs[0]].dims);
          EXPECT_EQ(fused.buffers[s.inputs[4]].dtype, DType::kInt8);
          absl::StatusOr<runtime::QConvAddStepParams> p =
              runtime::DecodeParams<runtime::QConvAddStepParams>(s);
          ASSERT_TRUE(p.ok());
          EXPECT_EQ(p->add.lo, p->add.zp_out);  // the Add's Relu
          if (relu) {
            EXPECT_EQ(p->conv.lo, p->conv.zp_out);
          }
        }
        ExpectSameOutputs(fused, unfused);
      }
    }
  }
}

TEST(LoweringConvResidualTest, AQConvOutputReadAgainKeepsItsQAdd) {
  std::unique_ptr<ir::Graph> g = ResidualBlock({false, false, false, true});
  const runtime::Plan plan = LowerInt8(*g, true);
  EXPECT_EQ(CountSteps(plan, StepKind::kQAdd), 1);
  EXPECT_EQ(CountSteps(plan, StepKind::kQConvAdd), 0);
}

TEST(LoweringConvResidualTest, TheRuntimeRefusesAQConvAddResidualOfOtherDims) {
  std::unique_ptr<ir::Graph> g = ResidualBlock({});
  // The int8 weights [8, 8, 3, 3] as the residual.
  ExpectRuntimeRefusesResidual(LowerInt8(*g, true), StepKind::kQConvAdd, 4, 1);
}

}  // namespace
}  // namespace qcc::testing
