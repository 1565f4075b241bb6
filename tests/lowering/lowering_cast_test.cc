// The lowering of Cast between float types, called directly on IR graphs: a Cast to f16 inside
// the graph rounds, as ONNX's does (into an f16 buffer its fp32 readers read back through a
// Cast), and one that is a graph output is the Cast step into the output's f16 buffer (as a QDQ
// export of an fp16 model ends: fp32 inside, Cast to f16 at the output).
#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "backend_cpu/lowering.h"
#include "gtest/gtest.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "runtime/engine.h"
#include "tests/lowering/lowering_test_util.h"
#include "tests/passes/cleanup_test_util.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

TEST(LoweringCastTest, ACastToF16RoundsInsideAndIsTheOutputsCast) {
  // x:f32[N, 8] -> Relu -> Cast(to f16) = h -> Cast(to f32) -> Neg = m (f32 output), and
  // h -> Cast(to f16) = y (an f16 output).
  ir::Graph g;
  g.set_opset(17);
  const ir::Dim n = ir::SymbolDim(g.AddSymbol("N"));
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {n, 8}));
  ir::Value* r = g.AddNode(OpKind::kRelu, "relu", {x}, {"r"})->output(0);
  ir::Node* to_h = g.AddNode(OpKind::kCast, "to_h", {r}, {"h"});
  to_h->mutable_attrs<ir::CastAttrs>().to = DType::kFloat16;
  ir::Node* back = g.AddNode(OpKind::kCast, "back", {to_h->output(0)}, {"f"});
  back->mutable_attrs<ir::CastAttrs>().to = DType::kFloat32;
  ir::Value* m = g.AddNode(OpKind::kNeg, "neg", {back->output(0)}, {"m"})->output(0);
  ir::Node* out = g.AddNode(OpKind::kCast, "out", {to_h->output(0)}, {"y"});
  out->mutable_attrs<ir::CastAttrs>().to = DType::kFloat16;
  g.AddOutput(m);
  g.AddOutput(out->output(0));
  ASSERT_TRUE(ir::Verify(g).ok());
  ASSERT_TRUE(ir::InferShapes(g).ok());

  cpu::LowerOptions options;
  options.batch_min = 1;
  options.batch_max = 4;
  absl::StatusOr<runtime::Plan> plan = cpu::LowerToCpuPlan(g, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Relu, the rounding to f16, its reading back for Neg, Neg, and the Cast into y's buffer.
  EXPECT_EQ(plan->steps.size(), 5u);
  EXPECT_EQ(CountSteps(*plan, runtime::StepKind::kCast), 3);

  absl::StatusOr<std::shared_ptr<const runtime::Engine>> engine =
      runtime::Engine::Create(*plan, runtime::EngineOptions{1});
  ASSERT_TRUE(engine.ok()) << engine.status();
  Tensor input = SeededUniform({2, 8}, 5, -2.0f, 2.0f);
  input.data<float>()[3] = 70000.0f;  // past f16's largest, 65504: inf after the round trip
  absl::StatusOr<std::vector<Tensor>> got = (*engine)->CreateContext()->Run({input});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 2u);
  ASSERT_EQ((*got)[1].dtype(), DType::kFloat16);
  const Tensor y = CastTensor((*got)[1], DType::kFloat32);
  int inexact = 0;  // outputs f16 rounding changed
  for (int64_t i = 0; i < input.numel(); ++i) {
    const float r = std::max(0.0f, input.data<float>()[i]);
    const Tensor one = Tensor::FromVector<float>(DType::kFloat32, {1}, {r});
    const float rounded =
        CastTensor(CastTensor(one, DType::kFloat16), DType::kFloat32).data<float>()[0];
    EXPECT_EQ(y.data<float>()[i], rounded) << i;
    EXPECT_EQ((*got)[0].data<float>()[i], -rounded) << i;  // Neg read the rounded values
    inexact += rounded != r;
  }
  EXPECT_EQ(y.data<float>()[3], std::numeric_limits<float>::infinity());
  EXPECT_GT(inexact, 1) << "the input should have values f16 cannot hold exactly";
}

}  // namespace
}  // namespace qcc::testing
