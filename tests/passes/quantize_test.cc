// Precision assignment and weight quantization (passes/quantize.h), on small graphs whose
// quantized values are computed by hand from the numerics contract (DESIGN.md s.2).
#include "passes/quantize.h"

#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "support/quantize.h"
#include "tests/passes/fuse_test_util.h"

namespace qcc::testing {
namespace {

using ir::OpKind;
using passes::TensorRange;

// x [1,1,2,2] -> Conv(w [2,1,1,1], b [2]) -> c -> Flatten -> f -> Softmax -> s
std::unique_ptr<ir::Graph> ConvGraph(float w0, float w1, float b0) {
  return BuildGraph([=](ir::Graph& g) {
    ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {1, 1, 2, 2}));
    ir::Value* w =
        g.NewConstant("w", Tensor::FromVector<float>(DType::kFloat32, {2, 1, 1, 1}, {w0, w1}));
    ir::Value* b = g.NewConstant("b", Tensor::FromVector<float>(DType::kFloat32, {2}, {b0, 0}));
    ir::Node* conv = g.AddNode(OpKind::kConv, "conv", {x, w, b}, {"c"});
    ir::Node* flat = g.AddNode(OpKind::kFlatten, "flatten", {conv->output(0)}, {"f"});
    ir::Node* soft = g.AddNode(OpKind::kSoftmax, "softmax", {flat->output(0)}, {"s"});
    g.AddOutput(soft->output(0));
  });
}

const ir::Node* NodeNamed(const ir::Graph& g, const std::string& name) {
  for (const auto& n : g.nodes()) {
    if (n->name() == name) return n.get();
  }
  return nullptr;
}

TEST(PassesQuantizeTest, ParamsForRange) {
  passes::QuantParams s = passes::ParamsForRange({-2.54f, 1.0f}, /*asymmetric=*/false);
  EXPECT_FLOAT_EQ(s.scale, 2.54f / 127.0f);
  EXPECT_EQ(s.zero_point, 0);
  passes::QuantParams a = passes::ParamsForRange({0.0f, 2.55f}, /*asymmetric=*/true);
  EXPECT_FLOAT_EQ(a.scale, 0.01f);
  EXPECT_EQ(a.zero_point, -128);  // real 0 is the lowest level
  passes::QuantParams b = passes::ParamsForRange({-1.0f, 1.55f}, /*asymmetric=*/true);
  EXPECT_FLOAT_EQ(b.scale, 0.01f);
  EXPECT_EQ(b.zero_point, -28);  // -128 + 100
  // Degenerate ranges still give a finite, positive scale.
  EXPECT_GT(passes::ParamsForRange({0.0f, 0.0f}, false).scale, 0.0f);
  EXPECT_GT(passes::ParamsForRange({0.0f, 0.0f}, true).scale, 0.0f);
}

TEST(PassesQuantizeTest, ConvWeightsBiasAndMultipliersPerChannel) {
  auto g = ConvGraph(0.5f, -0.25f, 0.1f);
  const std::map<std::string, TensorRange> ranges = {{"x", {-1, 1}}, {"c", {-2, 2}}};
  auto d = passes::AssignPrecision(*g, ranges, {});
  ASSERT_TRUE(d.ok()) << d.status();
  const ir::Node* conv = NodeNamed(*g, "conv");
  ASSERT_TRUE(d->runs_int8(conv));
  const passes::QuantizedWeights& q = d->weights.at(conv);
  EXPECT_EQ(q.weights.data<int8_t>()[0], 127);
  EXPECT_EQ(q.weights.data<int8_t>()[1], -127);
  const float s_in = 1.0f / 127.0f, s_out = 2.0f / 127.0f;
  const float s_w0 = 0.5f / 127.0f, s_w1 = 0.25f / 127.0f;
  EXPECT_FLOAT_EQ(q.weight_scales[0], s_w0);
  EXPECT_FLOAT_EQ(q.weight_scales[1], s_w1);
  // round(0.1 / (s_in * s_w0)) = round(0.1 * 127 * 127 / 0.5) = round(3225.8) = 3226.
  EXPECT_EQ(q.bias.data<int32_t>()[0], 3226);
  EXPECT_EQ(q.bias.data<int32_t>()[1], 0);
  EXPECT_EQ(q.multiplier.data<float>()[0], RequantMultiplier(s_in, s_w0, s_out));
  EXPECT_EQ(q.multiplier.data<float>()[1], RequantMultiplier(s_in, s_w1, s_out));
  // Flatten follows an int8 Conv: int8, with the Conv output's parameters; Softmax stays float.
  const ir::Node* flat = NodeNamed(*g, "flatten");
  EXPECT_TRUE(d->runs_int8(flat));
  EXPECT_EQ(d->params.at(flat->output(0)).scale, d->params.at(conv->output(0)).scale);
  EXPECT_FALSE(d->runs_int8(NodeNamed(*g, "softmax")));
}

TEST(PassesQuantizeTest, PerTensorWeightsShareOneScale) {
  auto g = ConvGraph(0.5f, -0.25f, 0.0f);
  passes::QuantizeOptions o;
  o.per_channel = false;
  auto d = passes::AssignPrecision(*g, {{"x", {-1, 1}}, {"c", {-2, 2}}}, o);
  ASSERT_TRUE(d.ok());
  const passes::QuantizedWeights& q = d->weights.at(NodeNamed(*g, "conv"));
  EXPECT_EQ(q.weight_scales[0], q.weight_scales[1]);
  EXPECT_EQ(q.weights.data<int8_t>()[0], 127);
  EXPECT_EQ(q.weights.data<int8_t>()[1], -64);  // -0.25 / (0.5/127) = -63.5 -> -64 (to even)
}

TEST(PassesQuantizeTest, AsymmetricInputZeroPointIsFoldedIntoTheBias) {
  auto g = ConvGraph(0.5f, -0.25f, 0.0f);
  passes::QuantizeOptions o;
  o.asymmetric = true;
  auto d = passes::AssignPrecision(*g, {{"x", {0.0f, 2.55f}}, {"c", {-2, 2}}}, o);
  ASSERT_TRUE(d.ok());
  const passes::QuantizedWeights& q = d->weights.at(NodeNamed(*g, "conv"));
  // zp_in = -128: bias = 0 - (-128) * w_q.
  EXPECT_EQ(q.bias.data<int32_t>()[0], 128 * 127);
  EXPECT_EQ(q.bias.data<int32_t>()[1], -128 * 127);
}

TEST(PassesQuantizeTest, OverflowingBiasWidensTheWeightScaleAndStaysInt8) {
  // A bias of 1e6 at scales 1/127 * (1e-3/127) would need ~1.6e13 levels: the weight scale of
  // channel 0 widens until round(b / (s_in * s_w)) fits the bias limit (int32 less room for the
  // accumulation); channel 1 (no bias) keeps amax / 127.
  auto g = ConvGraph(1e-3f, 1e-3f, 1e6f);
  auto d = passes::AssignPrecision(*g, {{"x", {-1, 1}}, {"c", {-2, 2}}}, {});
  ASSERT_TRUE(d.ok());
  const ir::Node* conv = NodeNamed(*g, "conv");
  ASSERT_TRUE(d->runs_int8(conv));
  EXPECT_TRUE(d->runs_int8(NodeNamed(*g, "flatten")));
  EXPECT_TRUE(d->notes.empty()) << d->notes[0];  // Softmax has no int8 form: no note either
  EXPECT_EQ(d->widened_channels, 1);
  EXPECT_EQ(d->widened_nodes, 1);
  const passes::QuantizedWeights& q = d->weights.at(conv);
  const float s_in = 1.0f / 127.0f;
  const double limit = 2147483647.0 - 2.0 * 128 * 127 * 1;  // one weight per row
  EXPECT_GT(q.weight_scales[0], 1e-3f / 127.0f);
  EXPECT_NEAR(q.weight_scales[0], 1e6 / (s_in * limit), 1e-5 * q.weight_scales[0]);
  EXPECT_FLOAT_EQ(q.weight_scales[1], 1e-3f / 127.0f);
  const int32_t b0 = q.bias.data<int32_t>()[0];
  EXPECT_LE(std::abs(static_cast<double>(b0)), limit);
  EXPECT_GT(b0, 0.99 * limit);
  // The bias still represents 1e6 (to the float rounding of its scale), and the weight of
  // channel 0 rounds to 0 levels at that scale.
  EXPECT_NEAR(static_cast<double>(b0) * s_in * q.weight_scales[0], 1e6, 1.0);
  EXPECT_EQ(q.weights.data<int8_t>()[0], 0);
  EXPECT_EQ(q.weights.data<int8_t>()[1], 127);

  // Per tensor, the one scale widens for both rows.
  passes::QuantizeOptions per_tensor;
  per_tensor.per_channel = false;
  d = passes::AssignPrecision(*g, {{"x", {-1, 1}}, {"c", {-2, 2}}}, per_tensor);
  ASSERT_TRUE(d.ok());
  const passes::QuantizedWeights& t = d->weights.at(conv);
  EXPECT_EQ(t.weight_scales[0], t.weight_scales[1]);
  EXPECT_GT(t.weight_scales[0], 1e-3f / 127.0f);
  EXPECT_EQ(d->widened_channels, 1);
}

TEST(PassesQuantizeTest, MissingRangesAndExcludesKeepNodesInFloat) {
  auto g = ConvGraph(0.5f, -0.25f, 0.0f);
  auto d = passes::AssignPrecision(*g, {{"x", {-1, 1}}}, {});
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->runs_int8(NodeNamed(*g, "conv")));
  EXPECT_NE(d->notes[0].find("no calibration range for 'c'"), std::string::npos) << d->notes[0];

  passes::QuantizeOptions by_op;
  by_op.exclude = {"Conv"};
  d = passes::AssignPrecision(*g, {{"x", {-1, 1}}, {"c", {-2, 2}}}, by_op);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->runs_int8(NodeNamed(*g, "conv")));
  EXPECT_NE(d->notes[0].find("excluded"), std::string::npos);

  passes::QuantizeOptions typo;
  typo.exclude = {"conf"};
  d = passes::AssignPrecision(*g, {}, typo);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("'conf' matches no node"), std::string::npos);
  EXPECT_NE(d.status().message().find("conv"), std::string::npos) << d.status();
}

// x [1,1,2,2] -> Conv(w = 1) -> c -> HardSwish -> h (output), and c -> HardSigmoid(alpha 0.25,
// beta 0.5: ramp over [-2, 2]) -> s (output) when `with_sigmoid`.
std::unique_ptr<ir::Graph> ConvHardSwishGraph(bool with_sigmoid) {
  return BuildGraph([=](ir::Graph& g) {
    ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {1, 1, 2, 2}));
    ir::Value* w =
        g.NewConstant("w", Tensor::FromVector<float>(DType::kFloat32, {1, 1, 1, 1}, {1}));
    ir::Node* conv = g.AddNode(OpKind::kConv, "conv", {x, w}, {"c"});
    ir::Node* swish = g.AddNode(OpKind::kHardSwish, "swish", {conv->output(0)}, {"h"});
    g.AddOutput(swish->output(0));
    if (with_sigmoid) {
      ir::Node* sig = g.AddNode(OpKind::kHardSigmoid, "sig", {conv->output(0)}, {"s"});
      sig->mutable_attrs<ir::HardSigmoidAttrs>().alpha = 0.25f;
      sig->mutable_attrs<ir::HardSigmoidAttrs>().beta = 0.5f;
      g.AddOutput(sig->output(0));
    }
  });
}

TEST(PassesQuantizeTest, SaturationIntervalIsWhereTheConsumersAreNotConstant) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  auto g = ConvHardSwishGraph(/*with_sigmoid=*/false);
  auto interval = passes::SaturationInterval(*g, *g->FindValue("c"));
  ASSERT_TRUE(interval.has_value());
  EXPECT_EQ(interval->first, -3.0f);  // HardSwish is 0 below -3
  EXPECT_EQ(interval->second, kInf);
  // The union over consumers: HardSigmoid's ramp [-2, 2] lies inside [-3, inf).
  g = ConvHardSwishGraph(/*with_sigmoid=*/true);
  interval = passes::SaturationInterval(*g, *g->FindValue("c"));
  ASSERT_TRUE(interval.has_value());
  EXPECT_EQ(interval->first, -3.0f);
  EXPECT_EQ(interval->second, kInf);
  // A graph output, a value a Conv reads, a value no node reads: no interval.
  EXPECT_FALSE(passes::SaturationInterval(*g, *g->FindValue("h")).has_value());
  EXPECT_FALSE(passes::SaturationInterval(*g, *g->FindValue("x")).has_value());
  auto conv = ConvGraph(1, 1, 0);
  EXPECT_FALSE(passes::SaturationInterval(*conv, *conv->FindValue("c")).has_value());  // Flatten
}

TEST(PassesQuantizeTest, AHardSwishInputSpendsNoLevelsBelowMinusThree) {
  auto g = ConvHardSwishGraph(/*with_sigmoid=*/false);
  const std::map<std::string, TensorRange> ranges = {
      {"x", {-12, 6}}, {"c", {-12, 6}}, {"h", {-0.375f, 6}}};
  passes::QuantizeOptions asym;
  asym.asymmetric = true;
  auto d = passes::AssignPrecision(*g, ranges, asym);
  ASSERT_TRUE(d.ok()) << d.status();
  const ir::Value* c = g->FindValue("c");
  // [-12, 6] clamped to [-3, 6]: scale 9 / 255, and q = -128 is exactly -3 (HardSwish 0).
  EXPECT_FLOAT_EQ(d->params.at(c).scale, 9.0f / 255.0f);
  EXPECT_EQ(d->params.at(c).zero_point, -43);  // -128 + 3 / (9 / 255)
  EXPECT_EQ(d->saturation.at(c).first, -3.0f);
  // The conv's input is read by the Conv, not clamped.
  EXPECT_FLOAT_EQ(d->params.at(g->FindValue("x")).scale, 18.0f / 255.0f);
  EXPECT_FALSE(d->saturation.contains(g->FindValue("x")));
  // Symmetric: max(3, 6) = 6, not 12.
  auto sym = passes::AssignPrecision(*g, ranges, {});
  ASSERT_TRUE(sym.ok()) << sym.status();
  EXPECT_FLOAT_EQ(sym->params.at(c).scale, 6.0f / 127.0f);
  // With the HardSigmoid too, the interval is still [-3, inf): the same parameters.
  auto both = ConvHardSwishGraph(/*with_sigmoid=*/true);
  std::map<std::string, TensorRange> both_ranges = ranges;
  both_ranges["s"] = {0, 1};
  auto d2 = passes::AssignPrecision(*both, both_ranges, asym);
  ASSERT_TRUE(d2.ok()) << d2.status();
  EXPECT_FLOAT_EQ(d2->params.at(both->FindValue("c")).scale, 9.0f / 255.0f);
}

// x [1,1,2,2] -> Conv(w = 1) -> a, x -> Conv(w = 2) -> b, Concat(a, b) on channels -> y
// (output); when `a_read_twice`, a is also a graph output.
std::unique_ptr<ir::Graph> ConcatOfConvsGraph(bool a_read_twice) {
  return BuildGraph([=](ir::Graph& g) {
    ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {1, 1, 2, 2}));
    ir::Value* w1 =
        g.NewConstant("w1", Tensor::FromVector<float>(DType::kFloat32, {1, 1, 1, 1}, {1}));
    ir::Value* w2 =
        g.NewConstant("w2", Tensor::FromVector<float>(DType::kFloat32, {1, 1, 1, 1}, {2}));
    ir::Node* a = g.AddNode(OpKind::kConv, "conv_a", {x, w1}, {"a"});
    ir::Node* b = g.AddNode(OpKind::kConv, "conv_b", {x, w2}, {"b"});
    ir::Node* cat = g.AddNode(OpKind::kConcat, "concat", {a->output(0), b->output(0)}, {"y"});
    cat->mutable_attrs<ir::AxisAttrs>().axis = 1;
    g.AddOutput(cat->output(0));
    if (a_read_twice) g.AddOutput(a->output(0));
  });
}

TEST(PassesQuantizeTest, AConcatsInputsTakeItsOutputParameters) {
  // Ranges as calibration gives them: the Concat's is the union of its inputs'.
  const std::map<std::string, TensorRange> ranges = {
      {"x", {-1, 1}}, {"a", {-1, 1}}, {"b", {-2, 2}}, {"y", {-2, 2}}};
  for (const bool asymmetric : {false, true}) {
    passes::QuantizeOptions options;
    options.asymmetric = asymmetric;
    auto g = ConcatOfConvsGraph(/*a_read_twice=*/false);
    auto d = passes::AssignPrecision(*g, ranges, options);
    ASSERT_TRUE(d.ok()) << d.status();
    const passes::QuantParams y = d->params.at(g->FindValue("y"));
    EXPECT_FLOAT_EQ(y.scale, asymmetric ? 4.0f / 255.0f : 2.0f / 127.0f);
    for (const char* in : {"a", "b"}) {
      const passes::QuantParams p = d->params.at(g->FindValue(in));
      EXPECT_EQ(p.scale, y.scale) << in;
      EXPECT_EQ(p.zero_point, y.zero_point) << in;
    }
    // conv_a requantizes straight to the Concat's grid: s_in * s_w / s_y.
    const passes::QuantizedWeights& qa = d->weights.at(NodeNamed(*g, "conv_a"));
    EXPECT_EQ(
        qa.multiplier.data<float>()[0],
        RequantMultiplier(d->params.at(g->FindValue("x")).scale, qa.weight_scales[0], y.scale));
  }
  // A tensor another reader needs keeps its own range.
  auto twice = ConcatOfConvsGraph(/*a_read_twice=*/true);
  auto d2 = passes::AssignPrecision(*twice, ranges, {});
  ASSERT_TRUE(d2.ok()) << d2.status();
  EXPECT_FLOAT_EQ(d2->params.at(twice->FindValue("a")).scale, 1.0f / 127.0f);
  EXPECT_FLOAT_EQ(d2->params.at(twice->FindValue("b")).scale, 2.0f / 127.0f);
  // So does every input of a Concat that stays in float.
  passes::QuantizeOptions excluded;
  excluded.exclude = {"Concat"};
  auto g3 = ConcatOfConvsGraph(/*a_read_twice=*/false);
  auto d3 = passes::AssignPrecision(*g3, ranges, excluded);
  ASSERT_TRUE(d3.ok()) << d3.status();
  EXPECT_FALSE(d3->runs_int8(NodeNamed(*g3, "concat")));
  EXPECT_FLOAT_EQ(d3->params.at(g3->FindValue("a")).scale, 1.0f / 127.0f);
}

}  // namespace
}  // namespace qcc::testing
