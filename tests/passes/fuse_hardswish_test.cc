// fuse-hardswish: each written form of x * Clip(x + 3, 0, 6) / 6 and x * HardSigmoid(x), the
// near misses that must stay, and the 18 hard-swishes of ppocr-cls-mbv3 (Add, Clip, Mul, Div).
#include <string>
#include <vector>

#include "tests/passes/fuse_test_util.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

/// How the pattern is written.
enum class Form { kMulThenDiv, kMulThenMulSixth, kDivInside, kMulSixthInside, kHardSigmoid };

struct Spec {
  Form form;
  bool swap = false;      // operands of the Mul and Add in the other order
  float clip_max = 6.0f;  // 6 for a hard-swish
  float hs_alpha = 1.0f / 6;
  bool leak = false;  // an intermediate value is also a graph output
};

ir::Value* Scalar(ir::Graph& g, const std::string& name, float v) {
  return g.NewConstant(name, F32({}, {v}));
}

ir::Value* Binary(ir::Graph& g, OpKind k, const std::string& name, ir::Value* a, ir::Value* b,
                  bool swap) {
  return g
      .AddNode(k, name, swap ? std::vector<ir::Value*>{b, a} : std::vector<ir::Value*>{a, b},
               {name + "_out"})
      ->output(0);
}

void BuildPattern(ir::Graph& g, const Spec& s) {
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {2, 3, 4}));
  ir::Value* y;
  ir::Value* inner;
  if (s.form == Form::kHardSigmoid) {
    ir::Node* hs = g.AddNode(OpKind::kHardSigmoid, "hsig", {x}, {"hsig_out"});
    hs->mutable_attrs<ir::HardSigmoidAttrs>().alpha = s.hs_alpha;
    inner = hs->output(0);
    y = Binary(g, OpKind::kMul, "mul", x, inner, s.swap);
  } else {
    ir::Value* add = Binary(g, OpKind::kAdd, "add", x, Scalar(g, "three", 3), s.swap);
    inner = g.AddNode(OpKind::kClip, "clip",
                      {add, Scalar(g, "zero", 0), Scalar(g, "six", s.clip_max)}, {"clip_out"})
                ->output(0);
    switch (s.form) {
      case Form::kMulThenDiv:
        y = Binary(g, OpKind::kDiv, "div", Binary(g, OpKind::kMul, "mul", x, inner, s.swap),
                   Scalar(g, "six_d", 6), false);
        break;
      case Form::kMulThenMulSixth:
        y = Binary(g, OpKind::kMul, "mul6", Binary(g, OpKind::kMul, "mul", x, inner, s.swap),
                   Scalar(g, "sixth", 1.0f / 6), s.swap);
        break;
      case Form::kDivInside:
        y = Binary(g, OpKind::kMul, "mul", x,
                   Binary(g, OpKind::kDiv, "div", inner, Scalar(g, "six_d", 6), false), s.swap);
        break;
      default:
        y = Binary(g, OpKind::kMul, "mul", x,
                   Binary(g, OpKind::kMul, "mul6", inner, Scalar(g, "sixth", 1.0f / 6), s.swap),
                   s.swap);
        break;
    }
  }
  ir::Value* out = g.AddNode(OpKind::kNeg, "neg", {y}, {"out"})->output(0);
  g.AddOutput(out);
  if (s.leak) g.AddOutput(inner);
}

/// HardSwish written out: x * clip(x + 3, 0, 6) / 6.
float HardSwish(float x) { return x * std::min(6.0f, std::max(0.0f, x + 3.0f)) / 6.0f; }

TEST(PassesFuseHardSwishTest, EveryWrittenFormBecomesOneHardSwish) {
  const Tensor x = SeededUniform({2, 3, 4}, 1, -5, 5);
  Tensor want(DType::kFloat32, {2, 3, 4});
  for (int64_t i = 0; i < x.numel(); ++i) want.data<float>()[i] = -HardSwish(x.data<float>()[i]);
  for (Form form : {Form::kMulThenDiv, Form::kMulThenMulSixth, Form::kDivInside,
                    Form::kMulSixthInside, Form::kHardSigmoid}) {
    for (bool swap : {false, true}) {
      SCOPED_TRACE(static_cast<int>(form) * 2 + swap);
      FuseResult r = FuseAndCompare(
          [&](ir::Graph& g) {
            BuildPattern(g, {form, swap});
          },
          passes::CreateFuseHardSwishPass(), {x}, 1e-6, 1e-6);
      EXPECT_TRUE(r.changed);
      // HardSwish then the Neg, nothing else; the Neg reads the HardSwish.
      ASSERT_EQ(r.graph->nodes().size(), 2u);
      const ir::Node* hs = OnlyNode(*r.graph, OpKind::kHardSwish);
      EXPECT_EQ(hs->input(0)->name(), "x");
      EXPECT_EQ(r.graph->nodes()[1]->input(0), hs->output(0));
      auto got = RunGraph(*r.graph, {x});
      ASSERT_TRUE(got.ok());
      EXPECT_EQ(CompareTensors((*got)[0], want, 1e-6, 1e-6), "");
    }
  }
}

TEST(PassesFuseHardSwishTest, NearMissesStay) {
  const Tensor x = SeededUniform({2, 3, 4}, 1, -5, 5);
  for (const Spec& s : std::vector<Spec>{{Form::kMulThenDiv, false, 5.0f},
                                         {Form::kHardSigmoid, false, 6.0f, 0.2f},
                                         {Form::kMulThenDiv, false, 6.0f, 1.0f / 6, true},
                                         {Form::kHardSigmoid, true, 6.0f, 1.0f / 6, true}}) {
    FuseResult r = FuseAndCompare([&](ir::Graph& g) { BuildPattern(g, s); },
                                  passes::CreateFuseHardSwishPass(), {x});
    EXPECT_FALSE(r.changed);
    EXPECT_EQ(CountOps(*r.graph, OpKind::kHardSwish), 0);
  }
}

// ppocr-cls-mbv3 writes its 18 hard-swishes as Add(x, 3), Clip(0, 6), Mul(x, clip), Div(6); its
// 9 HardSigmoids (alpha 0.2, squeeze-excitation gates on another tensor) are not hard-swishes.
TEST(PassesFuseHardSwishTest, PpocrClsEighteenHardSwishesAndOutputsAgree) {
  auto before = LoadModel("ppocr-cls-mbv3");
  auto g = LoadModel("ppocr-cls-mbv3");
  ASSERT_TRUE(g && before);
  auto rec = RunOnePass(*g, passes::CreateFuseHardSwishPass());
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ(rec->summary, "-18 Clip, +18 HardSwish, -18 Add, -18 Mul, -18 Div");
  EXPECT_EQ(CountOps(*g, OpKind::kHardSwish), 18);
  EXPECT_EQ(CountOps(*g, OpKind::kDiv), 0);
  EXPECT_EQ(CountOps(*g, OpKind::kHardSigmoid), 9);
  EXPECT_NE(g->FindValue("hardswish_0.tmp_0"), nullptr);
  EXPECT_EQ(g->FindValue("hardswish_0.tmp_0")->producer()->kind(), OpKind::kHardSwish);
  const Tensor x = SeededUniform({2, 3, 48, 192}, 7, -1, 1);
  auto y0 = RunGraph(*before, {x});
  auto y1 = RunGraph(*g, {x});
  ASSERT_TRUE(y0.ok() && y1.ok());
  EXPECT_EQ(CompareTensors((*y1)[0], (*y0)[0], 1e-4, 1e-5), "");
}

}  // namespace
}  // namespace qcc::testing
