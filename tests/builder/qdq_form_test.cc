// The QDQ form of an int8 compile (passes/qdq_form.h), written op for op from the quantized graph
// Build lowers: its structure against that graph, and the plan compiled back from it against
// the plan itself, bit for bit.
#include "passes/qdq_form.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "builder/build.h"
#include "gtest/gtest.h"
#include "ir/printer.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "passes/quantize.h"
#include "passes/realize_int8.h"
#include "runtime/engine.h"
#include "support/tensor.h"
#include "tests/passes/cleanup_test_util.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

ir::Value* Scalar(ir::Graph& g, const std::string& name, float v) {
  return g.NewConstant(name, Tensor::FromVector<float>(DType::kFloat32, {}, {v}));
}

/// x:[N,3,8,8] -> Conv 3x3 -> Relu -> MaxPool 2x2 = `pooled` (also a graph output) -> Conv 1x1
/// -> Add (residual from the pool) -> HardSigmoid -> Clip -> Concat with the pool ->
/// GlobalAveragePool -> Flatten -> Gemm -> y:[N,4].
std::unique_ptr<ir::Graph> ImageNet() {
  auto g = std::make_unique<ir::Graph>();
  const auto [p, sum] = ResidualStem(*g);
  ir::Node* hs = g->AddNode(OpKind::kHardSigmoid, "hardsigmoid", {sum}, {"hs"});
  hs->mutable_attrs<ir::HardSigmoidAttrs>() = {0.25f, 0.375f};
  ir::Value* cl =
      g->AddNode(OpKind::kClip, "clip",
                 {hs->output(0), Scalar(*g, "lo", 0.125f), Scalar(*g, "hi", 0.75f)}, {"cl"})
          ->output(0);
  ir::Node* cat = g->AddNode(OpKind::kConcat, "concat", {cl, p}, {"cat"});
  cat->mutable_attrs<ir::AxisAttrs>().axis = 1;
  g->AddOutput(ClassifierHead(*g, cat->output(0), 16));
  g->AddOutput(p);
  EXPECT_TRUE(ir::Verify(*g).ok());
  EXPECT_TRUE(ir::InferShapes(*g).ok());
  return g;
}

/// x:[N,5,8] -> MatMul [8,6] -> Add bias -> y (a transformer's Linear layer: an int8 GEMM with an
/// fp32 result, the bias folded in).
std::unique_ptr<ir::Graph> LinearLayer() {
  auto g = std::make_unique<ir::Graph>();
  g->set_opset(17);
  const ir::Dim n = ir::SymbolDim(g->AddSymbol("N"));
  ir::Value* x = g->AddInput("x", ir::TensorType(DType::kFloat32, {n, 5, 8}));
  ir::Value* m = g->AddNode(OpKind::kMatMul, "matmul",
                            {x, g->NewConstant("w", SeededUniform({8, 6}, 7, -0.5f, 0.5f))}, {"m"})
                     ->output(0);
  ir::Value* y = g->AddNode(OpKind::kAdd, "bias",
                            {m, g->NewConstant("b", SeededUniform({6}, 8, -0.2f, 0.2f))}, {"y"})
                     ->output(0);
  g->AddOutput(y);
  EXPECT_TRUE(ir::Verify(*g).ok());
  EXPECT_TRUE(ir::InferShapes(*g).ok());
  return g;
}

builder::BuildOptions Int8Options(const ir::Graph& g, bool asymmetric) {
  builder::BuildOptions o;
  o.precision = builder::Precision::kInt8;
  o.asymmetric = asymmetric;
  o.calib_method = "minmax";
  for (const ir::Value* v : g.inputs()) o.ranges[v->name()] = {-1.0f, 1.0f};
  for (const auto& node : g.nodes()) {
    for (const ir::Value* v : node->outputs()) o.ranges[v->name()] = {-1.5f, 2.0f};
  }
  o.gemm_input_ranges = o.ranges;
  return o;
}

/// Build's plan for the graph `make` gives, and the same graph quantized as Build does, in
/// `form`.
struct Compiled {
  builder::BuildResult build;
  std::unique_ptr<ir::Graph> quantized;
};
Compiled Compile(std::unique_ptr<ir::Graph> (*make)(), bool asymmetric,
                 passes::QuantizedForm form) {
  std::unique_ptr<ir::Graph> g = make();
  const builder::BuildOptions o = Int8Options(*g, asymmetric);
  absl::StatusOr<builder::BuildResult> b = builder::Build(std::move(g), "m.onnx", o);
  EXPECT_TRUE(b.ok()) << b.status();
  if (!b.ok()) return {};
  std::unique_ptr<ir::Graph> q = make();
  absl::Status s = passes::RunPipeline(*q, passes::DefaultPipeline()).status();
  if (s.ok()) {
    s = passes::RunPipeline(
            *q, passes::QuantizePipeline(builder::PrecisionSetupFor(o, false), nullptr, form))
            .status();
  }
  EXPECT_TRUE(s.ok()) << s;
  if (!s.ok()) return {};
  return {*std::move(b), std::move(q)};
}

const ir::Node* NodeNamed(const ir::Graph& g, const std::string& name) {
  for (const auto& node : g.nodes()) {
    if (node->name() == name) return node.get();
  }
  return nullptr;
}

const ir::Value* ValueNamed(const ir::Graph& g, const std::string& name) {
  for (const auto& v : g.values()) {
    if (v->name() == name) return v.get();
  }
  return nullptr;
}

/// The float scalars or vector of a constant.
std::vector<float> Floats(const ir::Value* v) {
  std::vector<float> out;
  if (v == nullptr || v->constant() == nullptr) return out;
  for (int64_t i = 0; i < v->constant()->numel(); ++i) {
    out.push_back(static_cast<float>(v->constant()->GetAsDouble(i)));
  }
  return out;
}

std::vector<Tensor> RunPlan(const runtime::Plan& plan, const std::vector<Tensor>& inputs) {
  absl::StatusOr<std::shared_ptr<const runtime::Engine>> engine =
      runtime::Engine::Create(plan, runtime::EngineOptions{1});
  EXPECT_TRUE(engine.ok()) << engine.status();
  if (!engine.ok()) return {};
  absl::StatusOr<std::vector<Tensor>> out = (*engine)->CreateContext()->Run(inputs);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *std::move(out) : std::vector<Tensor>{};
}

TEST(QdqFormTest, EachQuantizedOpIsItsOnnxOpBetweenDequantizeAndQuantize) {
  for (const bool uint8 : {false, true}) {
    SCOPED_TRACE(uint8 ? "uint8 asymmetric" : "int8 symmetric");
    const Compiled c = Compile(ImageNet, uint8, passes::QuantizedForm::kScale);
    ASSERT_NE(c.quantized, nullptr);
    const Compiled folded = Compile(ImageNet, uint8, passes::QuantizedForm::kInteger);
    ASSERT_NE(folded.quantized, nullptr);
    passes::QdqOptions options;
    options.uint8_activations = uint8;
    absl::StatusOr<passes::QdqModel> m = passes::QdqForm(*c.quantized, options);
    ASSERT_TRUE(m.ok()) << m.status();
    const ir::Graph& g = *m->graph;
    ASSERT_TRUE(ir::Verify(g).ok()) << ir::PrintGraph(g);
    EXPECT_EQ(m->widened, 0);
    SCOPED_TRACE(ir::PrintGraph(g));

    // One QuantizeLinear per int8 tensor of the quantized graph, on that tensor's grid.
    int int8_values = 0;
    for (const auto& v : c.quantized->values()) int8_values += v->quant() != nullptr;
    EXPECT_EQ(CountOps(g, OpKind::kQuantizeLinear), int8_values);
    for (const auto& node : g.nodes()) {
      EXPECT_FALSE(absl::StartsWith(ir::OpName(node->kind()), "qcc.")) << node->name();
      if (node->kind() != OpKind::kQuantizeLinear) continue;
      const ir::Value* q = node->output(0);
      const std::string stem = q->name().substr(0, q->name().rfind("_quantized"));
      const ir::Value* v = ValueNamed(*c.quantized, stem + ":int8");
      ASSERT_NE(v, nullptr) << q->name();
      EXPECT_EQ(Floats(node->input(1)), std::vector<float>{v->quant()->scale}) << q->name();
      const Tensor& zp = *node->input(2)->constant();
      EXPECT_EQ(zp.dtype(), uint8 ? DType::kUInt8 : DType::kInt8);
      EXPECT_EQ(zp.GetAsDouble(0), v->quant()->zero_point + (uint8 ? 128 : 0)) << q->name();
    }

    // Convs and the Gemm: DQ(x), DQ(int8 weights, per channel on axis 0), DQ(int32 bias), and a
    // QuantizeLinear after; the bias is the plan's (fold-scales') less its zero-point correction.
    for (const std::string name : {"conv1", "conv2", "fc"}) {
      SCOPED_TRACE(name);
      const ir::Node* n = NodeNamed(g, name);
      ASSERT_NE(n, nullptr);
      EXPECT_EQ(n->kind(), name == "fc" ? OpKind::kGemm : OpKind::kConv);
      ASSERT_EQ(n->num_inputs(), 3);
      for (int i = 0; i < 3; ++i) {
        ASSERT_NE(n->input(i)->producer(), nullptr) << i;
        EXPECT_EQ(n->input(i)->producer()->kind(), OpKind::kDequantizeLinear) << i;
      }
      const ir::Node* wdq = n->input(1)->producer();
      const ir::Node* q_node = NodeNamed(*c.quantized, name);
      ASSERT_NE(q_node, nullptr);
      EXPECT_EQ(wdq->attrs<ir::DequantizeLinearAttrs>().axis, 0);
      EXPECT_EQ(wdq->input(0)->constant()->dtype(), DType::kInt8);
      EXPECT_EQ(Floats(wdq->input(0)), Floats(q_node->input(1)));
      EXPECT_EQ(Floats(wdq->input(1)), q_node->input(1)->channel_scales()->scales);
      const ir::Node* bdq = n->input(2)->producer();
      const Tensor& bias = *bdq->input(0)->constant();
      ASSERT_EQ(bias.dtype(), DType::kInt32);
      const ir::Node* f_node = NodeNamed(*folded.quantized, name);
      ASSERT_NE(f_node, nullptr);
      const Tensor& plan_bias = *f_node->input(2)->constant();
      const Tensor& w = *f_node->input(1)->constant();
      const int64_t k = w.dim(0), per_row = w.numel() / k;
      const int32_t zp = f_node->input(0)->quant()->zero_point;
      const float s_x = f_node->input(0)->quant()->scale;
      const std::vector<float> s_w = f_node->input(1)->channel_scales()->scales;
      const std::vector<float> bias_scales = Floats(bdq->input(1));
      ASSERT_EQ(bias.numel(), k);
      ASSERT_EQ(static_cast<int64_t>(bias_scales.size()), k);
      for (int64_t r = 0; r < k; ++r) {
        int64_t wsum = 0;
        for (int64_t j = 0; j < per_row; ++j) wsum += w.data<int8_t>()[r * per_row + j];
        EXPECT_EQ(bias.data<int32_t>()[r], plan_bias.data<int32_t>()[r] + zp * wsum) << r;
        EXPECT_EQ(bias_scales[r], s_x * s_w[r]) << r;
      }
      ASSERT_EQ(n->output(0)->uses().size(), 1u);
      EXPECT_EQ(n->output(0)->uses()[0].node->kind(), OpKind::kQuantizeLinear);
    }
    // The tables are their ops again, with their constants.
    const ir::Node* hs = NodeNamed(g, "hardsigmoid");
    ASSERT_NE(hs, nullptr);
    ASSERT_EQ(hs->kind(), OpKind::kHardSigmoid);
    EXPECT_EQ(hs->attrs<ir::HardSigmoidAttrs>().alpha, 0.25f);
    EXPECT_EQ(hs->attrs<ir::HardSigmoidAttrs>().beta, 0.375f);
    const ir::Node* clip = NodeNamed(g, "clip");
    ASSERT_NE(clip, nullptr);
    ASSERT_EQ(clip->kind(), OpKind::kClip);
    ASSERT_EQ(clip->num_inputs(), 3);
    EXPECT_EQ(Floats(clip->input(1)), std::vector<float>{0.125f});
    EXPECT_EQ(Floats(clip->input(2)), std::vector<float>{0.75f});
    for (const ir::Node* n : {hs, clip, NodeNamed(g, "pool"), NodeNamed(g, "concat")}) {
      ASSERT_NE(n, nullptr);
      EXPECT_EQ(n->input(0)->producer()->kind(), OpKind::kDequantizeLinear) << n->name();
      EXPECT_EQ(n->output(0)->uses()[0].node->kind(), OpKind::kQuantizeLinear) << n->name();
    }
    // A graph output made in int8 keeps its name on the DequantizeLinear; the pool's own float
    // result is NAME_float.
    ASSERT_EQ(g.outputs().size(), 2u);
    EXPECT_EQ(g.outputs()[1]->name(), "pooled");
    EXPECT_EQ(g.outputs()[1]->producer()->kind(), OpKind::kDequantizeLinear);
    EXPECT_EQ(NodeNamed(g, "pool")->output(0)->name(), "pooled_float");
  }
}

TEST(QdqFormTest, ALinearLayerWithAnFp32ResultIsAMatMulAndItsBias) {
  const Compiled c = Compile(LinearLayer, false, passes::QuantizedForm::kScale);
  ASSERT_NE(c.quantized, nullptr);
  ASSERT_EQ(CountOps(*c.quantized, OpKind::kQGemm), 1) << ir::PrintGraph(*c.quantized);
  absl::StatusOr<passes::QdqModel> m = passes::QdqForm(*c.quantized, {});
  ASSERT_TRUE(m.ok()) << m.status();
  const ir::Graph& g = *m->graph;
  SCOPED_TRACE(ir::PrintGraph(g));
  ASSERT_EQ(CountOps(g, OpKind::kMatMul), 1);
  ASSERT_EQ(CountOps(g, OpKind::kQuantizeLinear), 1);  // x only: the result is fp32
  const ir::Node* add = NodeNamed(g, "matmul");
  ASSERT_NE(add, nullptr);
  ASSERT_EQ(add->kind(), OpKind::kAdd);
  EXPECT_EQ(add->output(0)->name(), "y");
  const ir::Node* mm = add->input(0)->producer();
  ASSERT_EQ(mm->kind(), OpKind::kMatMul);
  EXPECT_EQ(mm->input(0)->producer()->kind(), OpKind::kDequantizeLinear);
  const ir::Node* wdq = mm->input(1)->producer();
  ASSERT_EQ(wdq->kind(), OpKind::kDequantizeLinear);
  EXPECT_EQ(wdq->attrs<ir::DequantizeLinearAttrs>().axis, 1);  // [K, N], scales per column
  EXPECT_EQ(wdq->input(0)->constant()->dims(), (Dims{8, 6}));
  EXPECT_EQ(Floats(add->input(1)), Floats(ValueNamed(*LinearLayer(), "b")));
}

// Compiling the QDQ form again (its Q/DQ pairs as the tensors' parameters) gives the plan the
// table gave: the same outputs, bit for bit.
TEST(QdqFormTest, CompilingTheQdqFormGivesThePlansOutputsBitForBit) {
  struct Case {
    const char* name;
    std::unique_ptr<ir::Graph> (*make)();
    Dims input;
    bool asymmetric;
  };
  const Case cases[] = {{"image", ImageNet, {2, 3, 8, 8}, false},
                        {"image asymmetric", ImageNet, {2, 3, 8, 8}, true},
                        {"linear", LinearLayer, {2, 5, 8}, false}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    Compiled c = Compile(k.make, k.asymmetric, passes::QuantizedForm::kScale);
    ASSERT_NE(c.quantized, nullptr);
    passes::QdqOptions options;
    options.uint8_activations = k.asymmetric;
    absl::StatusOr<passes::QdqModel> m = passes::QdqForm(*c.quantized, options);
    ASSERT_TRUE(m.ok()) << m.status();
    builder::BuildOptions o;
    o.precision = builder::Precision::kInt8;
    absl::StatusOr<builder::BuildResult> back = builder::Build(std::move(m->graph), "q.onnx", o);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE(back->qdq_model);
    // The same nodes in int8, the Linear layer's with its fp32 result.
    EXPECT_EQ(back->precision.Count(passes::NodePrecision::kInt8),
              c.build.precision.Count(passes::NodePrecision::kInt8));
    EXPECT_EQ(back->counts.float_results, c.build.counts.float_results);

    const std::vector<Tensor> input = {SeededUniform(k.input, 11, -1.2f, 1.2f)};
    const std::vector<Tensor> want = RunPlan(c.build.plan, input);
    const std::vector<Tensor> got = RunPlan(back->plan, input);
    ASSERT_EQ(got.size(), want.size());
    ASSERT_FALSE(want.empty());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i].numel(), want[i].numel()) << i;
      int differ = 0;
      for (int64_t j = 0; j < want[i].numel(); ++j) {
        differ += got[i].GetAsDouble(j) != want[i].GetAsDouble(j);
      }
      EXPECT_EQ(differ, 0) << "output " << i << " of " << want[i].numel() << ": first "
                           << got[i].GetAsDouble(0) << " against " << want[i].GetAsDouble(0);
    }
  }
}

TEST(QdqFormTest, TheIntegerFormAndDynamicGemmsAreRefusedByName) {
  const Compiled c = Compile(ImageNet, false, passes::QuantizedForm::kInteger);
  ASSERT_NE(c.quantized, nullptr);
  absl::StatusOr<passes::QdqModel> m = passes::QdqForm(*c.quantized, {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(m.status().message(), "'conv1'")) << m.status();
  EXPECT_TRUE(absl::StrContains(m.status().message(), "QuantizedForm::kScale")) << m.status();

  builder::BuildOptions o;
  o.precision = builder::Precision::kInt8;
  o.dynamic = true;
  std::unique_ptr<ir::Graph> q = LinearLayer();
  ASSERT_TRUE(passes::RunPipeline(*q, passes::DefaultPipeline()).ok());
  ASSERT_TRUE(
      passes::RunPipeline(*q, passes::QuantizePipeline(builder::PrecisionSetupFor(o, false),
                                                       nullptr, passes::QuantizedForm::kScale))
          .ok());
  m = passes::QdqForm(*q, {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(absl::StrContains(m.status().message(), "'matmul'")) << m.status();
  EXPECT_TRUE(absl::StrContains(m.status().message(), "dynamic")) << m.status();
}

TEST(QdqFormTest, WideningToFp32KeepsAnFp16ModelsInputsAndOutputs) {
  // x:f16[2,3] -> Add (an f16 constant) = y:f16, also read by Relu = r:f16; and a constant
  // output. Inside, everything becomes fp32; x and y stay f16, each with a Cast at its edge.
  ir::Graph g;
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat16, {2, 3}));
  ir::Value* c = g.NewConstant("c", Tensor::FromVector<float>(DType::kFloat32, {3}, {1, 2, 3}));
  c->set_constant(CastTensor(*c->constant(), DType::kFloat16));
  ir::Value* y = g.AddNode(OpKind::kAdd, "add", {x, c}, {"y"})->output(0);
  ir::Value* r = g.AddNode(OpKind::kRelu, "relu", {y}, {"r"})->output(0);
  g.AddOutput(y);
  g.AddOutput(r);
  ASSERT_TRUE(ir::InferShapes(g).ok());
  absl::StatusOr<int> widened = passes::WidenReducedFloats(g);
  ASSERT_TRUE(widened.ok()) << widened.status();
  SCOPED_TRACE(ir::PrintGraph(g));
  EXPECT_EQ(*widened, 3);  // c and the fp32 values of y and r (x keeps its type)
  ASSERT_TRUE(ir::Verify(g).ok());
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.inputs()[0], x);
  EXPECT_EQ(x->dtype(), DType::kFloat16);
  ASSERT_EQ(x->uses().size(), 1u);
  const ir::Node* in_cast = x->uses()[0].node;
  EXPECT_EQ(in_cast->kind(), OpKind::kCast);
  EXPECT_EQ(in_cast->output(0)->dtype(), DType::kFloat32);
  for (int i = 0; i < 2; ++i) {
    const ir::Value* out = g.outputs()[i];
    EXPECT_EQ(out->name(), i == 0 ? "y" : "r");
    EXPECT_EQ(out->dtype(), DType::kFloat16) << out->name();
    ASSERT_NE(out->producer(), nullptr);
    EXPECT_EQ(out->producer()->kind(), OpKind::kCast) << out->name();
    EXPECT_EQ(out->producer()->input(0)->dtype(), DType::kFloat32) << out->name();
  }
  EXPECT_EQ(CountOps(g, OpKind::kCast), 3);
  const ir::Node* add = g.outputs()[0]->producer()->input(0)->producer();
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->kind(), OpKind::kAdd);
  EXPECT_EQ(add->input(0), in_cast->output(0));
  EXPECT_EQ(add->input(1)->constant()->dtype(), DType::kFloat32);
}

TEST(QdqFormTest, WideningKeepsTheModelsOutputTypesWhereverTheValueComesFrom) {
  // x:f16 (read), z:f16 (unused) -> Relu = a:f32 (as a DequantizeLinear's output is typed),
  // output twice and as the model's fp16; k: an fp16 constant output; a node already named
  // "a_Cast". The model's output types: f16, f16, f16.
  ir::Graph g;
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat16, {4}));
  ir::Value* z = g.AddInput("z", ir::TensorType(DType::kFloat16, {4}));
  ir::Value* a = g.AddNode(OpKind::kRelu, "a_Cast", {x}, {"a"})->output(0);
  ir::Value* k = g.NewConstant(
      "k", CastTensor(Tensor::FromVector<float>(DType::kFloat32, {1}, {2}), DType::kFloat16));
  g.AddOutput(a);
  g.AddOutput(a);
  g.AddOutput(k);
  ASSERT_TRUE(ir::InferShapes(g).ok());
  a->set_type(ir::TensorType(DType::kFloat32, {4}));
  absl::StatusOr<int> widened =
      passes::WidenReducedFloats(g, {DType::kFloat16, DType::kFloat16, DType::kFloat16});
  ASSERT_TRUE(widened.ok()) << widened.status();
  SCOPED_TRACE(ir::PrintGraph(g));
  ASSERT_TRUE(ir::Verify(g).ok());
  EXPECT_EQ(z->dtype(), DType::kFloat16);
  EXPECT_TRUE(z->uses().empty());  // no Cast for an input nothing reads
  EXPECT_EQ(x->dtype(), DType::kFloat16);
  ASSERT_EQ(g.outputs().size(), 3u);
  EXPECT_EQ(g.outputs()[0], g.outputs()[1]);  // one Cast for the output listed twice
  EXPECT_EQ(g.outputs()[0]->name(), "a");
  EXPECT_EQ(g.outputs()[2]->name(), "k");
  for (const ir::Value* out : g.outputs()) {
    EXPECT_EQ(out->dtype(), DType::kFloat16) << out->name();
    ASSERT_NE(out->producer(), nullptr) << out->name();
    EXPECT_EQ(out->producer()->kind(), OpKind::kCast) << out->name();
  }
  EXPECT_EQ(CountOps(g, OpKind::kCast), 3);  // x's, a's, k's
  absl::flat_hash_set<std::string> node_names;
  for (const auto& n : g.nodes()) {
    EXPECT_TRUE(node_names.insert(n->name()).second) << "two nodes named " << n->name();
  }
}

}  // namespace
}  // namespace qcc::testing
