// fuse-layernorm and fuse-gelu: the written forms of LayerNorm (Pow or Mul for the square, with
// and without scale and bias, eps on either side) and of the exact GELU ((x * a) * 0.5,
// (x * 0.5) * a, x * (a * 0.5), Div by sqrt(2) or Mul by 1/sqrt(2)), the near misses that must
// stay; fold-attention-scale; fuse-attention over the head split/merge forms, scales and masks
// exporters write, and its near misses; and the 13 LayerNorms, 6 GELUs, 6 attention scales and
// 6 attentions of minilm-l6-v2 with its outputs unchanged.
#include <cmath>
#include <string>
#include <vector>

#include "tests/passes/fuse_test_util.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

ir::Value* Scalar(ir::Graph& g, const std::string& name, float v) {
  return g.NewConstant(name, F32({}, {v}));
}

ir::Value* Node(ir::Graph& g, OpKind k, const std::string& name, std::vector<ir::Value*> in) {
  return g.AddNode(k, name, std::move(in), {name + "_out"})->output(0);
}

ir::Value* Axes(ir::Graph& g, const std::string& name, std::vector<int64_t> axes) {
  Tensor t(DType::kInt64, {static_cast<int64_t>(axes.size())});
  std::copy(axes.begin(), axes.end(), t.data<int64_t>());
  return g.NewConstant(name, std::move(t));
}

struct LnSpec {
  bool pow = true;         // Pow(d, 2), else Mul(d, d)
  bool affine = true;      // * gamma + beta
  bool eps_first = false;  // Add(eps, var)
  int64_t axis = -1;       // the reduced axis
  bool leak = false;       // the centred value is also a graph output
};

void BuildLayerNorm(ir::Graph& g, const LnSpec& s) {
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {2, 3, 8}));
  ir::Value* mean = Node(g, OpKind::kReduceMean, "mean", {x, Axes(g, "axes0", {s.axis})});
  ir::Value* d = Node(g, OpKind::kSub, "sub", {x, mean});
  ir::Value* sq = s.pow ? Node(g, OpKind::kPow, "pow", {d, Scalar(g, "two", 2)})
                        : Node(g, OpKind::kMul, "sq", {d, d});
  ir::Value* var = Node(g, OpKind::kReduceMean, "var", {sq, Axes(g, "axes1", {s.axis})});
  ir::Value* eps = Scalar(g, "eps", 1e-5f);
  ir::Value* sum =
      Node(g, OpKind::kAdd, "add_eps",
           s.eps_first ? std::vector<ir::Value*>{eps, var} : std::vector<ir::Value*>{var, eps});
  ir::Value* y = Node(g, OpKind::kDiv, "div", {d, Node(g, OpKind::kSqrt, "sqrt", {sum})});
  if (s.affine) {
    std::vector<float> gamma(8), beta(8);
    for (int i = 0; i < 8; ++i) gamma[i] = 1.0f + 0.1f * i, beta[i] = 0.05f * i - 0.2f;
    y = Node(g, OpKind::kMul, "scale", {g.NewConstant("gamma", F32({8}, gamma)), y});
    y = Node(g, OpKind::kAdd, "shift", {y, g.NewConstant("beta", F32({8}, beta))});
  }
  g.AddOutput(Node(g, OpKind::kNeg, "neg", {y}));
  if (s.leak) g.AddOutput(d);
}

TEST(PassesFuseLayerNormTest, EveryWrittenFormBecomesOneLayerNormalization) {
  const Tensor x = SeededUniform({2, 3, 8}, 3, -4, 4);
  for (bool pow : {true, false}) {
    for (bool affine : {true, false}) {
      for (bool eps_first : {false, true}) {
        SCOPED_TRACE(absl::StrCat("pow ", pow, " affine ", affine, " eps_first ", eps_first));
        FuseResult r = FuseAndCompare(
            [&](ir::Graph& g) {
              BuildLayerNorm(g, {pow, affine, eps_first});
            },
            passes::CreateFuseLayerNormPass(), {x}, 1e-5, 1e-5);
        EXPECT_TRUE(r.changed);
        ASSERT_EQ(r.graph->nodes().size(), 2u);  // LayerNormalization, Neg
        const ir::Node* ln = OnlyNode(*r.graph, OpKind::kLayerNormalization);
        ASSERT_NE(ln, nullptr);
        EXPECT_EQ(ln->input(0)->name(), "x");
        EXPECT_EQ(ln->attrs<ir::LayerNormAttrs>().axis, -1);
        EXPECT_FLOAT_EQ(ln->attrs<ir::LayerNormAttrs>().epsilon, 1e-5f);
      }
    }
  }
}

TEST(PassesFuseLayerNormTest, NearMissesStay) {
  const Tensor x = SeededUniform({2, 3, 8}, 3, -4, 4);
  // Over the middle axis (not the trailing one); the centred value also a graph output.
  for (const LnSpec& s : {LnSpec{true, true, false, 1}, LnSpec{true, true, false, -1, true}}) {
    FuseResult r = FuseAndCompare([&](ir::Graph& g) { BuildLayerNorm(g, s); },
                                  passes::CreateFuseLayerNormPass(), {x});
    EXPECT_FALSE(r.changed);
    EXPECT_EQ(CountOps(*r.graph, OpKind::kLayerNormalization), 0);
  }
}

enum class GeluForm { kProductThenHalf, kHalfFirst, kHalfInside };

void BuildGelu(ir::Graph& g, GeluForm form, bool mul_inverse, float half) {
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {4, 6}));
  ir::Value* scaled = mul_inverse
                          ? Node(g, OpKind::kMul, "scale", {Scalar(g, "inv", 0.70710678f), x})
                          : Node(g, OpKind::kDiv, "scale", {x, Scalar(g, "sqrt2", 1.4142135f)});
  ir::Value* a =
      Node(g, OpKind::kAdd, "plus1", {Scalar(g, "one", 1), Node(g, OpKind::kErf, "erf", {scaled})});
  ir::Value* y;
  switch (form) {
    case GeluForm::kProductThenHalf:
      y = Node(g, OpKind::kMul, "half",
               {Node(g, OpKind::kMul, "xa", {x, a}), Scalar(g, "h", half)});
      break;
    case GeluForm::kHalfFirst:
      y = Node(g, OpKind::kMul, "xa", {Node(g, OpKind::kMul, "xh", {Scalar(g, "h", half), x}), a});
      break;
    default:
      y = Node(g, OpKind::kMul, "xa", {x, Node(g, OpKind::kMul, "ah", {a, Scalar(g, "h", half)})});
      break;
  }
  g.AddOutput(Node(g, OpKind::kNeg, "neg", {y}));
}

TEST(PassesFuseGeluTest, EveryWrittenFormBecomesOneGelu) {
  const Tensor x = SeededUniform({4, 6}, 5, -5, 5);
  Tensor want(DType::kFloat32, {4, 6});
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.data<float>()[i];
    want.data<float>()[i] = static_cast<float>(-0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
  }
  for (GeluForm form : {GeluForm::kProductThenHalf, GeluForm::kHalfFirst, GeluForm::kHalfInside}) {
    for (bool inverse : {false, true}) {
      SCOPED_TRACE(absl::StrCat("form ", static_cast<int>(form), " inverse ", inverse));
      FuseResult r = FuseAndCompare([&](ir::Graph& g) { BuildGelu(g, form, inverse, 0.5f); },
                                    passes::CreateFuseGeluPass(), {x}, 1e-5, 1e-6);
      EXPECT_TRUE(r.changed);
      ASSERT_EQ(r.graph->nodes().size(), 2u);  // Gelu, Neg
      const ir::Node* gelu = OnlyNode(*r.graph, OpKind::kGelu);
      ASSERT_NE(gelu, nullptr);
      EXPECT_EQ(gelu->input(0)->name(), "x");
      auto got = RunGraph(*r.graph, {x});
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(CompareTensors((*got)[0], want, 1e-5, 1e-6), "");
    }
  }
}

TEST(PassesFuseGeluTest, NearMissesStay) {
  const Tensor x = SeededUniform({4, 6}, 5, -5, 5);
  FuseResult r =
      FuseAndCompare([&](ir::Graph& g) { BuildGelu(g, GeluForm::kProductThenHalf, false, 0.4f); },
                     passes::CreateFuseGeluPass(), {x});
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(CountOps(*r.graph, OpKind::kGelu), 0);
}

/// x [2, 4, 8] -> Q, K = Linear (MatMul + Add(bias, .)) -> Reshape [2, 4, 2, 4] -> Transpose
/// -> MatMul(Q, K^T) / 2 (or * 0.5) -> Softmax. `leak`: Q's Linear output is also an output.
void BuildAttentionScores(ir::Graph& g, bool mul, bool leak) {
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {2, 4, 8}));
  auto shape = [&](const std::string& name, std::vector<int64_t> dims) {
    Tensor t(DType::kInt64, {static_cast<int64_t>(dims.size())});
    std::copy(dims.begin(), dims.end(), t.data<int64_t>());
    return g.NewConstant(name, std::move(t));
  };
  auto linear = [&](const std::string& name, uint32_t seed) {
    ir::Value* w = g.NewConstant(name + "_w", SeededUniform({8, 8}, seed, -1, 1));
    ir::Value* b = g.NewConstant(name + "_b", SeededUniform({8}, seed + 1, -1, 1));
    return Node(g, OpKind::kAdd, name + "_add", {b, Node(g, OpKind::kMatMul, name, {x, w})});
  };
  auto heads = [&](ir::Value* v, const std::string& name, std::vector<int64_t> perm) {
    ir::Node* t = g.AddNode(
        OpKind::kTranspose, name + "_t",
        {Node(g, OpKind::kReshape, name + "_r", {v, shape(name + "_shape", {2, 4, 2, 4})})},
        {name + "_t_out"});
    t->mutable_attrs<ir::TransposeAttrs>().perm = std::move(perm);
    return t->output(0);
  };
  ir::Value* q_linear = linear("q", 11);
  ir::Value* q = heads(q_linear, "qh", {0, 2, 1, 3});
  ir::Value* k = heads(linear("k", 21), "kh", {0, 2, 3, 1});
  ir::Value* s = Node(g, OpKind::kMatMul, "scores", {q, k});
  s = mul ? Node(g, OpKind::kMul, "scale", {Scalar(g, "half", 0.5f), s})
          : Node(g, OpKind::kDiv, "scale", {s, Scalar(g, "two", 2.0f)});
  g.AddOutput(Node(g, OpKind::kSoftmax, "softmax", {s}));
  if (leak) g.AddOutput(q_linear);
}

TEST(PassesFoldAttentionScaleTest, TheScaleGoesIntoTheLinearLayerOfQ) {
  const Tensor x = SeededUniform({2, 4, 8}, 9, -2, 2);
  for (bool mul : {false, true}) {
    FuseResult r = FuseAndCompare([&](ir::Graph& g) { BuildAttentionScores(g, mul, false); },
                                  passes::CreateFoldAttentionScalePass(), {x}, 1e-5, 1e-6);
    EXPECT_TRUE(r.changed) << mul;
    EXPECT_EQ(CountOps(*r.graph, OpKind::kDiv) + CountOps(*r.graph, OpKind::kMul), 0) << mul;
    EXPECT_EQ(CountOps(*r.graph, OpKind::kMatMul), 3) << mul;
    // The Softmax reads the scores' MatMul directly.
    const ir::Node* softmax = OnlyNode(*r.graph, OpKind::kSoftmax);
    ASSERT_NE(softmax, nullptr);
    EXPECT_EQ(softmax->input(0)->producer()->kind(), OpKind::kMatMul);
  }
  // Q's Linear output is read elsewhere: K's layer takes the scale instead.
  FuseResult r = FuseAndCompare([&](ir::Graph& g) { BuildAttentionScores(g, false, true); },
                                passes::CreateFoldAttentionScalePass(), {x}, 1e-5, 1e-6);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOps(*r.graph, OpKind::kDiv), 0);
}

struct AttentionSpec {
  enum Scale { kNone, kDivAfter, kMulAfter, kBothSides } scale = kNone;
  bool mask = true;             // + mask [2, 1, 1, 6] (a graph input)
  bool two_transposes = false;  // K: [0, 2, 1, 3] then [0, 1, 3, 2] (HF's k.transpose(-1, -2))
  int64_t kv_heads = 2;         // 2, or 1 (one shared K/V head)
  bool leak = false;            // the probabilities are also a graph output
  bool scale_v = false;         // V's heads * 0.5 (it scales the result, not the scores)
  bool kv_batch1 = false;       // K and V of batch 1, broadcast by the MatMuls over Q's 2
};

/// q [2, 5, 8], k and v [2 (or 1), 6, 4 * kv_heads] split into heads of 4 -> attention -> [2, 5,
/// 8].
void BuildAttention(ir::Graph& g, const AttentionSpec& s) {
  const int64_t kv = 4 * s.kv_heads;
  ir::Value* q = g.AddInput("q", ir::TensorType(DType::kFloat32, {2, 5, 8}));
  const int64_t kv_batch = s.kv_batch1 ? 1 : 2;
  ir::Value* k = g.AddInput("k", ir::TensorType(DType::kFloat32, {kv_batch, 6, kv}));
  ir::Value* v = g.AddInput("v", ir::TensorType(DType::kFloat32, {kv_batch, 6, kv}));
  ir::Value* mask =
      s.mask ? g.AddInput("mask", ir::TensorType(DType::kFloat32, {2, 1, 1, 6})) : nullptr;
  auto transpose = [&](ir::Value* x, const std::string& name, std::vector<int64_t> perm) {
    ir::Node* t = g.AddNode(OpKind::kTranspose, name, {x}, {name + "_out"});
    t->mutable_attrs<ir::TransposeAttrs>().perm = std::move(perm);
    return t->output(0);
  };
  auto split = [&](ir::Value* x, const std::string& name, int64_t len, int64_t heads) {
    return Node(g, OpKind::kReshape, name, {x, Axes(g, name + "_shape", {-1, len, heads, 4})});
  };
  ir::Value* qh = transpose(split(q, "q_split", 5, 2), "q_t", {0, 2, 1, 3});
  ir::Value* kh =
      s.two_transposes
          ? transpose(transpose(split(k, "k_split", 6, s.kv_heads), "k_t0", {0, 2, 1, 3}), "k_t",
                      {0, 1, 3, 2})
          : transpose(split(k, "k_split", 6, s.kv_heads), "k_t", {0, 2, 3, 1});
  ir::Value* vh = transpose(split(v, "v_split", 6, s.kv_heads), "v_t", {0, 2, 1, 3});
  if (s.scale_v) vh = Node(g, OpKind::kMul, "v_scale", {vh, Scalar(g, "v_half", 0.5f)});
  if (s.scale == AttentionSpec::kBothSides) {  // scaled_dot_product_attention's export
    qh = Node(g, OpKind::kMul, "q_scale", {qh, Scalar(g, "q_root", 0.70710678f)});
    kh = Node(g, OpKind::kMul, "k_scale", {Scalar(g, "k_root", 0.70710678f), kh});
  }
  ir::Value* scores = Node(g, OpKind::kMatMul, "scores", {qh, kh});
  if (s.scale == AttentionSpec::kDivAfter) {
    scores = Node(g, OpKind::kDiv, "scale", {scores, Scalar(g, "two", 2.0f)});
  } else if (s.scale == AttentionSpec::kMulAfter) {
    scores = Node(g, OpKind::kMul, "scale", {Scalar(g, "half", 0.5f), scores});
  }
  if (mask != nullptr) scores = Node(g, OpKind::kAdd, "masked", {mask, scores});
  ir::Value* probs = Node(g, OpKind::kSoftmax, "softmax", {scores});
  ir::Value* o = Node(g, OpKind::kMatMul, "context", {probs, vh});
  ir::Value* y = Node(g, OpKind::kReshape, "merge",
                      {transpose(o, "o_t", {0, 2, 1, 3}), Axes(g, "merge_shape", {0, 5, 8})});
  g.AddOutput(Node(g, OpKind::kNeg, "neg", {y}));
  if (s.leak) g.AddOutput(probs);
}

std::vector<Tensor> AttentionInputs(const AttentionSpec& s) {
  std::vector<Tensor> in = {SeededUniform({2, 5, 8}, 41, -2, 2),
                            SeededUniform({s.kv_batch1 ? 1 : 2, 6, 4 * s.kv_heads}, 42, -2, 2),
                            SeededUniform({s.kv_batch1 ? 1 : 2, 6, 4 * s.kv_heads}, 43, -2, 2)};
  if (s.mask) {
    Tensor m(DType::kFloat32, {2, 1, 1, 6});
    for (int64_t i = 0; i < 12; ++i) m.data<float>()[i] = i % 6 >= 4 + i / 6 ? -10000.0f : 0.0f;
    in.push_back(m);
  }
  return in;
}

TEST(PassesFuseAttentionTest, EveryWrittenFormBecomesOneAttention) {
  using S = AttentionSpec;
  for (const S& s : {S{S::kNone}, S{S::kDivAfter}, S{S::kMulAfter, false}, S{S::kBothSides},
                     S{S::kDivAfter, true, true}, S{S::kNone, true, false, 1}}) {
    SCOPED_TRACE(absl::StrCat("scale ", s.scale, " mask ", s.mask, " two transposes ",
                              s.two_transposes, " kv heads ", s.kv_heads));
    FuseResult r =
        FuseAndCompare([&](ir::Graph& g) { BuildAttention(g, s); },
                       passes::CreateFuseAttentionPass(), AttentionInputs(s), 1e-5, 1e-6);
    EXPECT_TRUE(r.changed);
    ASSERT_EQ(r.graph->nodes().size(), 2u);  // qcc.Attention, Neg (the head splits are dead)
    const ir::Node* a = OnlyNode(*r.graph, OpKind::kAttention);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->input(0)->name(), "q");
    EXPECT_EQ(a->input(1)->name(), "k");
    EXPECT_EQ(a->input(2)->name(), "v");
    EXPECT_EQ(a->num_inputs(), s.mask ? 4 : 3);
    const auto& attrs = a->attrs<ir::AttentionAttrs>();
    EXPECT_EQ(attrs.q_num_heads, 2);
    EXPECT_EQ(attrs.kv_num_heads, s.kv_heads);
    EXPECT_NEAR(attrs.scale, s.scale == S::kNone ? 1.0f : 0.5f, 1e-6f);
    // The fused result keeps the merged tensor's name (calibration tables key on it).
    EXPECT_EQ(a->output(0)->name(), "merge_out");
  }
}

TEST(PassesFuseAttentionTest, NearMissesStay) {
  using S = AttentionSpec;
  // The probabilities also a graph output; V scaled (its factor is not a score scale); K and V
  // of batch 1 under Q's batch 2 (the fused step does not broadcast them).
  for (const S& s : {S{S::kNone, true, false, 2, true}, S{S::kNone, true, false, 2, false, true},
                     S{S::kNone, false, false, 2, false, false, true}}) {
    SCOPED_TRACE(absl::StrCat("leak ", s.leak, " scale_v ", s.scale_v, " kv_batch1 ", s.kv_batch1));
    FuseResult r = FuseAndCompare([&](ir::Graph& g) { BuildAttention(g, s); },
                                  passes::CreateFuseAttentionPass(), AttentionInputs(s));
    EXPECT_FALSE(r.changed);
    EXPECT_EQ(CountOps(*r.graph, OpKind::kAttention), 0);
  }
}

// minilm-l6-v2 (torch.onnx.export, opset 14) writes its 13 LayerNorms out and its 6 GELUs with
// Erf; the default pipeline fuses all of them and the embeddings stay the same.
TEST(PassesFuseTransformerTest, MiniLmLayerNormsGelusAndAttentionsFuseAndOutputsAgree) {
  auto before = LoadModel("minilm-l6-v2");
  auto g = LoadModel("minilm-l6-v2");
  ASSERT_TRUE(g && before);
  auto records = passes::RunPipeline(*g, passes::DefaultPipeline());
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_EQ(CountOps(*g, OpKind::kLayerNormalization), 13);
  EXPECT_EQ(CountOps(*g, OpKind::kGelu), 6);
  EXPECT_EQ(CountOps(*g, OpKind::kErf), 0);
  EXPECT_EQ(CountOps(*g, OpKind::kPow), 0);
  // The pooled mean's and the L2 normalisation's; the 6 attention scales fold.
  EXPECT_EQ(CountOps(*g, OpKind::kDiv), 2);
  // Each block's attention is one qcc.Attention: no Softmax, no head transposes left.
  EXPECT_EQ(CountOps(*g, OpKind::kAttention), 6);
  EXPECT_EQ(CountOps(*g, OpKind::kSoftmax), 0);
  EXPECT_EQ(CountOps(*g, OpKind::kTranspose), 0);
  Tensor ids(DType::kInt64, {2, 128}), mask(DType::kInt64, {2, 128}),
      types(DType::kInt64, {2, 128});
  for (int64_t i = 0; i < 256; ++i) {
    const int64_t pos = i % 128;
    ids.data<int64_t>()[i] = pos == 0    ? 101
                             : pos < 20  ? 1000 + 37 * i % 20000
                             : pos == 20 ? 102
                                         : 0;
    mask.data<int64_t>()[i] = pos <= 20 ? 1 : 0;
    types.data<int64_t>()[i] = 0;
  }
  auto y0 = RunGraph(*before, {ids, mask, types});
  auto y1 = RunGraph(*g, {ids, mask, types});
  ASSERT_TRUE(y0.ok() && y1.ok()) << y0.status() << y1.status();
  EXPECT_EQ(CompareTensors((*y1)[0], (*y0)[0], 1e-4, 1e-6), "");
}

}  // namespace
}  // namespace qcc::testing
