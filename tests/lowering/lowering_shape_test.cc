// The lowering of shape arithmetic (backend_cpu/lowering_shape.cc), called directly on IR graphs
// with a symbolic batch: shape nodes emit no step, a value computed from the batch that a step
// reads as data becomes a BatchAffine step, and the plan agrees with the CPU evaluator at every
// batch of its range.
#include <string>
#include <vector>

#include "backend_cpu/evaluator.h"
#include "backend_cpu/lowering.h"
#include "gtest/gtest.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "passes/passes.h"
#include "runtime/engine.h"
#include "runtime/steps.h"
#include "tests/lowering/lowering_test_util.h"
#include "tests/passes/cleanup_test_util.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

/// x:[N, 4] -> y = x / Cast(Shape(x)[0], f32) (a mean over the batch written out), and the
/// batch itself as a float output `n` (Cast(Shape(x)[0])).
std::unique_ptr<ir::Graph> DivideByTheBatch() {
  auto g = std::make_unique<ir::Graph>();
  g->set_opset(13);
  const ir::Dim n = ir::SymbolDim(g->AddSymbol("N"));
  ir::Value* x = g->AddInput("x", ir::TensorType(DType::kFloat32, {n, 4}));
  ir::Value* shape = g->AddNode(OpKind::kShape, "shape", {x}, {"s"})->output(0);
  ir::Value* zero = g->NewConstant("zero", Tensor::FromVector<int64_t>(DType::kInt64, {}, {0}));
  ir::Value* batch = g->AddNode(OpKind::kGather, "batch", {shape, zero}, {"b"})->output(0);
  ir::Node* cast = g->AddNode(OpKind::kCast, "to_float", {batch}, {"n"});
  cast->mutable_attrs<ir::CastAttrs>().to = DType::kFloat32;
  ir::Value* y = g->AddNode(OpKind::kDiv, "div", {x, cast->output(0)}, {"y"})->output(0);
  g->AddOutput(y);
  g->AddOutput(cast->output(0));
  EXPECT_TRUE(ir::Verify(*g).ok());
  EXPECT_TRUE(ir::InferShapes(*g).ok());
  return g;
}

TEST(LoweringShapeTest, AValueOfTheBatchReadAsDataIsABatchAffineStep) {
  std::unique_ptr<ir::Graph> g = DivideByTheBatch();
  ASSERT_TRUE(passes::RunPipeline(*g, passes::DefaultPipeline()).ok());
  cpu::LowerOptions options;
  options.batch_min = 1;
  options.batch_max = 8;
  absl::StatusOr<runtime::Plan> plan = cpu::LowerToCpuPlan(*g, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Shape, Gather and Cast emit nothing; one BatchAffine step writes the output `n`, which the
  // Div then reads as its divisor.
  EXPECT_EQ(CountSteps(*plan, runtime::StepKind::kBatchAffine), 1);
  EXPECT_EQ(CountSteps(*plan, runtime::StepKind::kBinary), 1);
  EXPECT_EQ(plan->steps.size(), 2u);

  absl::StatusOr<std::shared_ptr<const runtime::Engine>> engine =
      runtime::Engine::Create(*plan, runtime::EngineOptions{1});
  ASSERT_TRUE(engine.ok()) << engine.status();
  const std::unique_ptr<ir::Graph> unfused = DivideByTheBatch();  // the evaluator keeps a reference
  auto reference = cpu::Evaluator::Create(*unfused);
  ASSERT_TRUE(reference.ok()) << reference.status();
  for (int64_t batch : {1, 3, 8}) {
    SCOPED_TRACE(batch);
    const Tensor x = SeededUniform({batch, 4}, 5);
    absl::StatusOr<std::vector<Tensor>> got = (*engine)->CreateContext()->Run({x});
    absl::StatusOr<std::vector<Tensor>> want = (*reference)->Run({x});
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_EQ(got->size(), 2u);
    EXPECT_EQ(CompareTensors((*got)[0], (*want)[0], 0, 0), "");
    EXPECT_EQ(CompareTensors((*got)[1], (*want)[1], 0, 0), "");
    EXPECT_EQ((*got)[1].data<float>()[0], static_cast<float>(batch));
  }
}

TEST(LoweringShapeTest, AnExtentOnlyTheDataKnowsIsAnErrorNamingItsSource) {
  // Reshape(x, [0, Cast(ReduceMax(x))]): the second extent is data.
  auto g = std::make_unique<ir::Graph>();
  g->set_opset(13);
  const ir::Dim n = ir::SymbolDim(g->AddSymbol("N"));
  ir::Value* x = g->AddInput("x", ir::TensorType(DType::kFloat32, {n, 4}));
  ir::Value* max = g->AddNode(OpKind::kReduceMax, "max", {x}, {"m"})->output(0);
  ir::Node* cast = g->AddNode(OpKind::kCast, "extent", {max}, {"k"});
  cast->mutable_attrs<ir::CastAttrs>().to = DType::kInt64;
  ir::Value* k =
      g->AddNode(OpKind::kReshape, "flat",
                 {cast->output(0),
                  g->NewConstant("one", Tensor::FromVector<int64_t>(DType::kInt64, {1}, {1}))},
                 {"k1"})
          ->output(0);
  ir::Value* lead = g->NewConstant("lead", Tensor::FromVector<int64_t>(DType::kInt64, {1}, {0}));
  ir::Value* target = g->AddNode(OpKind::kConcat, "target", {lead, k}, {"t"})->output(0);
  ir::Value* y = g->AddNode(OpKind::kReshape, "reshape", {x, target}, {"y"})->output(0);
  g->AddOutput(y);
  ASSERT_TRUE(ir::InferShapes(*g).ok());
  cpu::LowerOptions options;
  options.batch_max = 4;
  absl::StatusOr<runtime::Plan> plan = cpu::LowerToCpuPlan(*g, options);
  ASSERT_FALSE(plan.ok());
  const std::string message(plan.status().message());
  EXPECT_NE(message.find("node 'reshape' (Reshape): extent 1 of 'y'"), std::string::npos)
      << message;
  EXPECT_NE(message.find("depends on 'k' (through 't'), which node 'extent' (Cast) computes from "
                         "tensor data"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace qcc::testing
