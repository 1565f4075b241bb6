// The lowering of elementwise ops (ops.def's Unary column), called directly on IR graphs: every
// op with a unary function becomes one Unary step holding that function's number and its
// attributes' constants, and the plan gives the CPU evaluator's values.
#include <memory>
#include <string>
#include <vector>

#include "backend_cpu/evaluator.h"
#include "backend_cpu/lowering.h"
#include "gtest/gtest.h"
#include "ir/op_kind.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "runtime/engine.h"
#include "runtime/steps.h"
#include "tests/lowering/lowering_test_util.h"
#include "tests/passes/cleanup_test_util.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

/// x:[N, 64] -> y = op(x), with `op`'s default attributes (Clip: bounds -0.5 and 0.75).
std::unique_ptr<ir::Graph> OneOp(OpKind kind) {
  auto g = std::make_unique<ir::Graph>();
  g->set_opset(17);
  const ir::Dim n = ir::SymbolDim(g->AddSymbol("N"));
  ir::Value* x = g->AddInput("x", ir::TensorType(DType::kFloat32, {n, 64}));
  std::vector<ir::Value*> inputs = {x};
  if (kind == OpKind::kClip) {
    inputs.push_back(g->NewConstant("lo", Tensor::FromVector<float>(DType::kFloat32, {}, {-0.5f})));
    inputs.push_back(g->NewConstant("hi", Tensor::FromVector<float>(DType::kFloat32, {}, {0.75f})));
  }
  ir::Value* y = g->AddNode(kind, "op", inputs, {"y"})->output(0);
  g->AddOutput(y);
  EXPECT_TRUE(ir::Verify(*g).ok());
  EXPECT_TRUE(ir::InferShapes(*g).ok());
  return g;
}

absl::StatusOr<runtime::Plan> Lower(const ir::Graph& g) {
  cpu::LowerOptions options;
  options.batch_min = 1;
  options.batch_max = 4;
  return cpu::LowerToCpuPlan(g, options);
}

TEST(LoweringUnaryTest, EveryUnaryOpIsOneUnaryStepWithTheEvaluatorsValues) {
  int lowered = 0;
  for (int i = 0; i < ir::kNumOpKinds; ++i) {
    const auto kind = static_cast<OpKind>(i);
    const std::optional<UnaryFn> fn = ir::UnaryFnOf(kind);
    if (!fn || kind == OpKind::kSelu) continue;  // Selu: the next test
    SCOPED_TRACE(std::string(ir::OpName(kind)));
    const std::unique_ptr<ir::Graph> g = OneOp(kind);
    absl::StatusOr<runtime::Plan> plan = Lower(*g);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(plan->steps.size(), 1u);
    ASSERT_EQ(CountSteps(*plan, runtime::StepKind::kUnary), 1);
    absl::StatusOr<runtime::UnaryStepParams> p =
        runtime::DecodeParams<runtime::UnaryStepParams>(plan->steps[0]);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->op, static_cast<int64_t>(*fn));
    if (kind == OpKind::kClip) {
      EXPECT_EQ(p->alpha, -0.5f);
      EXPECT_EQ(p->beta, 0.75f);
    }

    absl::StatusOr<std::shared_ptr<const runtime::Engine>> engine =
        runtime::Engine::Create(*plan, runtime::EngineOptions{1});
    ASSERT_TRUE(engine.ok()) << engine.status();
    auto reference = cpu::Evaluator::Create(*g);
    ASSERT_TRUE(reference.ok()) << reference.status();
    // Inside every function's domain (Acosh: from 1; Atanh, Asin, Acos: below 1 in magnitude).
    const float lo = kind == OpKind::kAcosh ? 1.0f : -0.95f;
    const float hi = kind == OpKind::kAcosh ? 4.0f : 0.95f;
    const Tensor x = SeededUniform({3, 64}, 7 + i, lo, hi);
    absl::StatusOr<std::vector<Tensor>> got = (*engine)->CreateContext()->Run({x});
    absl::StatusOr<std::vector<Tensor>> want = (*reference)->Run({x});
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_EQ(CompareTensors((*got)[0], (*want)[0], 0, 0), "");
    ++lowered;
  }
  EXPECT_EQ(lowered, kNumUnaryFns - 2);  // every function but Selu and GeluTanh (an attribute)
}

TEST(LoweringUnaryTest, AttributesGiveTheConstantsAndTheFunction) {
  {
    std::unique_ptr<ir::Graph> g = OneOp(OpKind::kHardSigmoid);
    ir::Node* node = g->nodes()[0].get();
    node->mutable_attrs<ir::HardSigmoidAttrs>() = {0.3f, 0.4f};
    absl::StatusOr<runtime::Plan> plan = Lower(*g);
    ASSERT_TRUE(plan.ok()) << plan.status();
    absl::StatusOr<runtime::UnaryStepParams> p =
        runtime::DecodeParams<runtime::UnaryStepParams>(plan->steps[0]);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->op, static_cast<int64_t>(UnaryFn::kHardSigmoid));
    EXPECT_EQ(p->alpha, 0.3f);
    EXPECT_EQ(p->beta, 0.4f);
  }
  {
    std::unique_ptr<ir::Graph> g = OneOp(OpKind::kGelu);
    g->nodes()[0]->mutable_attrs<ir::GeluAttrs>().approximate = ir::GeluApprox::kTanh;
    absl::StatusOr<runtime::Plan> plan = Lower(*g);
    ASSERT_TRUE(plan.ok()) << plan.status();
    absl::StatusOr<runtime::UnaryStepParams> p =
        runtime::DecodeParams<runtime::UnaryStepParams>(plan->steps[0]);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->op, static_cast<int64_t>(UnaryFn::kGeluTanh));
  }
}

TEST(LoweringUnaryTest, SeluIsRefusedByName) {
  // Selu has three constants (alpha, gamma); the plan's Unary step holds two.
  std::unique_ptr<ir::Graph> g = OneOp(OpKind::kSelu);
  absl::StatusOr<runtime::Plan> plan = Lower(*g);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(std::string(plan.status().message()).find("node 'op' (Selu)"), std::string::npos)
      << plan.status();
}

}  // namespace
}  // namespace qcc::testing
