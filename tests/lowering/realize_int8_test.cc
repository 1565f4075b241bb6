// The quantized graph (passes/realize_int8.h): an int8 compile's precision decision written into
// the IR, checked node by node against the decision, printed, verified, and lowered directly.
#include "passes/realize_int8.h"

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backend_cpu/evaluator.h"
#include "backend_cpu/lowering.h"
#include "gtest/gtest.h"
#include "ir/printer.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "passes/passes.h"
#include "passes/quantize.h"
#include "runtime/engine.h"
#include "runtime/steps.h"
#include "tests/lowering/lowering_test_util.h"
#include "tests/passes/cleanup_test_util.h"

namespace qcc::testing {
namespace {

using ir::OpKind;
using runtime::StepKind;

/// x:[N,3,8,8] -> Conv 3x3 -> Relu -> MaxPool 2x2 (also output `pooled`) -> Conv 1x1 -> Add
/// (residual from the pool) -> Sigmoid -> GlobalAveragePool -> Flatten -> Gemm -> y:[N,4].
/// Shapes inferred, DefaultPipeline run (the Relu fuses into the first Conv).
std::unique_ptr<ir::Graph> SmallNet() {
  auto g = std::make_unique<ir::Graph>();
  const auto [p, sum] = ResidualStem(*g);
  ir::Value* s = g->AddNode(OpKind::kSigmoid, "sigmoid", {sum}, {"s"})->output(0);
  g->AddOutput(ClassifierHead(*g, s, 8));
  g->AddOutput(p);
  EXPECT_TRUE(ir::Verify(*g).ok());
  EXPECT_TRUE(ir::InferShapes(*g).ok());
  EXPECT_TRUE(passes::RunPipeline(*g, passes::DefaultPipeline()).ok());
  return g;
}

/// Ranges for every tensor of `g`, as a calibration table would give them.
std::map<std::string, passes::TensorRange> Ranges(const ir::Graph& g) {
  std::map<std::string, passes::TensorRange> ranges;
  for (const ir::Value* v : g.inputs()) ranges[v->name()] = {-1.0f, 1.0f};
  for (const auto& node : g.nodes()) {
    for (const ir::Value* v : node->outputs()) ranges[v->name()] = {-2.0f, 2.0f};
  }
  return ranges;
}

const ir::Node* NodeNamed(const ir::Graph& g, const std::string& name) {
  for (const auto& node : g.nodes()) {
    if (node->name() == name) return node.get();
  }
  return nullptr;
}

// A table keeps the constants of its function: HardSigmoid's alpha and beta, a Clip's bounds
// (its constant inputs), so that the quantized graph says which op each table computes.
TEST(RealizeInt8Test, TablesKeepTheirFunctionAndConstants) {
  auto g = std::make_unique<ir::Graph>();
  g->set_opset(17);
  ir::Value* x = g->AddInput("x", ir::TensorType(DType::kFloat32, {1, 8}));
  ir::Node* hs = g->AddNode(OpKind::kHardSigmoid, "hs", {x}, {"h"});
  hs->mutable_attrs<ir::HardSigmoidAttrs>() = {0.25f, 0.375f};
  ir::Node* clip =
      g->AddNode(OpKind::kClip, "clip",
                 {hs->output(0),
                  g->NewConstant("lo", Tensor::FromVector<float>(DType::kFloat32, {}, {0.125f})),
                  g->NewConstant("hi", Tensor::FromVector<float>(DType::kFloat32, {}, {0.75f}))},
                 {"y"});
  g->AddOutput(clip->output(0));
  ASSERT_TRUE(ir::InferShapes(*g).ok());
  absl::StatusOr<passes::QuantDecision> d = passes::AssignPrecision(*g, Ranges(*g), {});
  ASSERT_TRUE(d.ok()) << d.status();
  absl::StatusOr<std::unique_ptr<ir::Graph>> q = passes::RealizeInt8(*g, *d);
  ASSERT_TRUE(q.ok()) << q.status();
  ASSERT_EQ(CountOps(**q, OpKind::kQLut), 2) << ir::PrintGraph(**q);
  const ir::QLutAttrs& h = NodeNamed(**q, "hs")->attrs<ir::QLutAttrs>();
  EXPECT_EQ(h.fn, UnaryFn::kHardSigmoid);
  EXPECT_EQ(h.alpha, 0.25f);
  EXPECT_EQ(h.beta, 0.375f);
  const ir::QLutAttrs& c = NodeNamed(**q, "clip")->attrs<ir::QLutAttrs>();
  EXPECT_EQ(c.fn, UnaryFn::kClip);
  EXPECT_EQ(c.alpha, 0.125f);
  EXPECT_EQ(c.beta, 0.75f);
}

TEST(RealizeInt8Test, TheDecisionIsInTheGraph) {
  const std::unique_ptr<ir::Graph> g = SmallNet();
  absl::StatusOr<passes::QuantDecision> d = passes::AssignPrecision(*g, Ranges(*g), {});
  ASSERT_TRUE(d.ok()) << d.status();
  absl::StatusOr<std::unique_ptr<ir::Graph>> q = passes::RealizeInt8(*g, *d);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_TRUE(ir::Verify(**q).ok());

  // Every int8 node of the decision has its int8 form, named as before.
  int int8_nodes = 0;
  for (const auto& node : g->nodes()) {
    if (!d->runs_int8(node.get())) continue;
    ++int8_nodes;
    const ir::Node* r = NodeNamed(**q, node->name());
    ASSERT_NE(r, nullptr) << node->name();
    const OpKind want = node->kind() == OpKind::kConv   ? OpKind::kQConv
                        : node->kind() == OpKind::kGemm ? OpKind::kQGemm
                        : d->luts.contains(node.get())  ? OpKind::kQLut
                                                        : node->kind();
    EXPECT_EQ(r->kind(), want) << node->name();
  }
  EXPECT_EQ(int8_nodes, 8);  // conv1, pool, conv2, residual, sigmoid, gap, flatten, fc
  EXPECT_EQ(CountOps(**q, OpKind::kConv), 0);
  EXPECT_EQ(CountOps(**q, OpKind::kGemm), 0);
  EXPECT_EQ(CountOps(**q, OpKind::kQConv), 2);
  EXPECT_EQ(CountOps(**q, OpKind::kQGemm), 1);
  EXPECT_EQ(CountOps(**q, OpKind::kQLut), 1);

  // Every int8 tensor is `NAME:int8` with the decision's parameters for NAME.
  int int8_values = 0;
  for (const auto& v : (*q)->values()) {
    if (v->dtype() != DType::kInt8 || v->constant() != nullptr) continue;
    ++int8_values;
    ASSERT_NE(v->quant(), nullptr) << v->name();
    EXPECT_TRUE(absl::EndsWith(v->name(), passes::kInt8Suffix)) << v->name();
    const ir::Value* fused = g->FindValue(passes::FloatTensorName(*v));
    ASSERT_NE(fused, nullptr) << v->name();
    ASSERT_TRUE(d->params.contains(fused)) << v->name();
    EXPECT_EQ(v->quant()->scale, d->params.at(fused).scale) << v->name();
    EXPECT_EQ(v->quant()->zero_point, d->params.at(fused).zero_point) << v->name();
  }
  EXPECT_EQ(int8_values, static_cast<int>(d->params.size()));

  // One Quantize, of the graph input; one Dequantize per graph output, right after its
  // producer, giving the output its name back.
  ASSERT_EQ(CountOps(**q, OpKind::kQuantize), 1);
  ASSERT_EQ(CountOps(**q, OpKind::kDequantize), 2);
  const auto& nodes = (*q)->nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i]->kind() == OpKind::kQuantize) {
      EXPECT_EQ(nodes[i]->input(0)->name(), "x");
    }
    if (nodes[i]->kind() != OpKind::kDequantize) continue;
    ASSERT_GT(i, 0u);
    EXPECT_EQ(nodes[i]->input(0)->producer(), nodes[i - 1].get());
    EXPECT_EQ(nodes[i]->output(0)->dtype(), DType::kFloat32);
  }
  ASSERT_EQ((*q)->outputs().size(), 2u);
  EXPECT_EQ((*q)->outputs()[0]->name(), "y");
  EXPECT_EQ((*q)->outputs()[1]->name(), "pooled");
  // The weights are the decision's.
  const ir::Node* conv2 = NodeNamed(**q, "conv2");
  ASSERT_NE(conv2->input(1)->constant(), nullptr);
  EXPECT_EQ(conv2->input(1)->constant()->dtype(), DType::kInt8);
  EXPECT_EQ(std::memcmp(conv2->input(1)->constant()->raw(),
                        d->weights.at(NodeNamed(*g, "conv2")).weights.raw(),
                        conv2->input(1)->constant()->nbytes()),
            0);

  ASSERT_NE(conv2->input(1)->channel_scales(), nullptr);
  EXPECT_EQ(conv2->input(1)->channel_scales()->scales,
            d->weights.at(NodeNamed(*g, "conv2")).weight_scales);
  // The verifier holds the weights to their types.
  const std::vector<float> scales = conv2->input(1)->channel_scales()->scales;
  conv2->input(1)->set_channel_scales({std::vector<float>(scales.begin(), scales.end() - 1), 0});
  const absl::Status short_scales = ir::Verify(**q);
  EXPECT_NE(short_scales.message().find("one scale per output channel"), std::string::npos)
      << short_scales;
  conv2->input(1)->set_channel_scales({scales, 0});

  // The table names its function.
  const ir::Node* sigmoid = NodeNamed(**q, "sigmoid");
  ASSERT_NE(sigmoid, nullptr);
  EXPECT_EQ(sigmoid->attrs<ir::QLutAttrs>().fn, UnaryFn::kSigmoid);

  // Printed with the parameters.
  const std::string printed = ir::PrintGraph(**q);
  EXPECT_NE(printed.find("qcc.QLut(%sum:int8, %sigmoid:lut) {fn=Sigmoid}"), std::string::npos)
      << printed;
  EXPECT_NE(printed.find("= qcc.QConv(%x:int8, %conv1:w"), std::string::npos) << printed;
  EXPECT_NE(printed.find("= qcc.Quantize(%x)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("const  %conv2:w : i8[8,8,1,1] q(8 scales on axis 0, "), std::string::npos)
      << printed;
  const passes::QuantParams& px = d->params.at(g->FindValue("x"));
  EXPECT_NE(printed.find(absl::StrCat("i8[N,3,8,8] q(", px.scale, ", 0)")), std::string::npos)
      << printed;
}

// assign-precision is an ordinary pass: RunPipeline verifies and re-infers the quantized graph it
// leaves, which is RealizeInt8's to the printed character, and its report counts what the
// decision has.
TEST(RealizeInt8Test, AssignPrecisionRunsInAPipelineAndReportsTheDecisionByName) {
  const std::unique_ptr<ir::Graph> fused = SmallNet();
  absl::StatusOr<passes::QuantDecision> d = passes::AssignPrecision(*fused, Ranges(*fused), {});
  ASSERT_TRUE(d.ok()) << d.status();
  absl::StatusOr<std::unique_ptr<ir::Graph>> want = passes::RealizeInt8(*fused, *d);
  ASSERT_TRUE(want.ok()) << want.status();

  const std::unique_ptr<ir::Graph> g = SmallNet();
  passes::PrecisionSetup setup;
  setup.ranges = Ranges(*g);
  passes::PrecisionReport report;
  absl::StatusOr<std::vector<passes::PassRecord>> records =
      passes::RunPipeline(*g, passes::QuantizePipeline(setup, &report));
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 4u);
  EXPECT_EQ((*records)[0].name, "assign-precision");
  EXPECT_EQ((*records)[0].nodes_before, static_cast<int>(fused->nodes().size()));
  EXPECT_NE((*records)[0].summary.find("+8 qcc.Quantize"), std::string::npos)
      << (*records)[0].summary;
  EXPECT_EQ((*records)[3].name, "fold-scales");
  EXPECT_EQ(ir::PrintGraph(*g), ir::PrintGraph(**want));

  // The report, by name, of what the decision holds by pointer.
  ASSERT_EQ(report.nodes.size(), fused->nodes().size());
  EXPECT_EQ(report.Count(passes::NodePrecision::kInt8), static_cast<int>(d->int8.size()));
  EXPECT_EQ(report.Count(passes::NodePrecision::kInt8), 8);
  EXPECT_EQ(report.Count(passes::NodePrecision::kDynamic), 0);
  int weighted = 0;
  for (size_t i = 0; i < report.nodes.size(); ++i) {
    const ir::Node* n = fused->nodes()[i].get();
    EXPECT_EQ(report.nodes[i].name, n->name());
    EXPECT_EQ(report.nodes[i].kind, n->kind());
    EXPECT_EQ(report.nodes[i].precision == passes::NodePrecision::kInt8, d->runs_int8(n))
        << n->name();
    weighted += report.nodes[i].int8_weights ? 1 : 0;
  }
  EXPECT_EQ(weighted, 3);  // conv1, conv2, fc
  ASSERT_EQ(report.int8_tensors.size(), d->params.size());
  const passes::QuantParams& px = d->params.at(fused->FindValue("x"));
  EXPECT_EQ(report.int8_tensors.at("x").scale, px.scale);

  // An --exclude typo fails the pass, named.
  const std::unique_ptr<ir::Graph> typo = SmallNet();
  setup.options.exclude = {"conv9"};
  records = passes::RunPipeline(*typo, passes::QuantizePipeline(setup, &report));
  ASSERT_FALSE(records.ok());
  EXPECT_EQ(records.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(records.status().message(),
                                "pass assign-precision: --exclude "
                                "'conv9' matches no node"))
      << records.status();
}

TEST(RealizeInt8Test, EachNodeIsQuantizedAloneThenPassesCancelTheQdqPairsAndFoldTheScales) {
  const std::unique_ptr<ir::Graph> g = SmallNet();
  absl::StatusOr<passes::QuantDecision> d = passes::AssignPrecision(*g, Ranges(*g), {});
  ASSERT_TRUE(d.ok()) << d.status();
  std::vector<passes::PassRecord> records;
  absl::StatusOr<std::unique_ptr<ir::Graph>> q = passes::RealizeInt8(*g, *d, &records);
  ASSERT_TRUE(q.ok()) << q.status();
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0].name, "realize-int8");
  EXPECT_EQ(records[1].name, "cancel-qdq");
  EXPECT_EQ(records[2].name, "eliminate-dead-code");
  EXPECT_EQ(records[3].name, "fold-scales");
  // Each int8 node reads through its own Quantize: 8 int8 nodes read 9 int8 inputs (the Add
  // two), of 8 distinct tensors (the pool's output is read twice); x is the only one computed
  // in float, so 7 Quantize(Dequantize) pairs cancel, and 6 of those Dequantize go: nothing
  // reads them any more, where `pooled`'s is a graph output.
  EXPECT_NE(records[0].summary.find("+8 qcc.Quantize"), std::string::npos) << records[0].summary;
  EXPECT_EQ(records[1].summary, "-7 qcc.Quantize");
  EXPECT_EQ(records[2].summary, "-6 qcc.Dequantize");
  EXPECT_TRUE(records[3].changed);
  EXPECT_EQ(records[3].nodes_before, records[3].nodes_after);
  EXPECT_EQ(records[3].nodes_after, static_cast<int>((*q)->nodes().size()));

  // fold-scales gives the bias and multipliers the decision computed, bit for bit.
  for (const char* name : {"conv1", "conv2", "fc"}) {
    const ir::Node* folded = NodeNamed(**q, name);
    ASSERT_NE(folded, nullptr) << name;
    ASSERT_EQ(folded->num_inputs(), 4) << name;
    const passes::QuantizedWeights& w = d->weights.at(NodeNamed(*g, name));
    for (int i : {2, 3}) {
      const Tensor& want = i == 2 ? w.bias : w.multiplier;
      const Tensor* got = folded->input(i)->constant();
      ASSERT_NE(got, nullptr) << name;
      ASSERT_EQ(got->dtype(), want.dtype()) << name;
      ASSERT_EQ(got->nbytes(), want.nbytes()) << name;
      EXPECT_EQ(std::memcmp(got->raw(), want.raw(), want.nbytes()), 0) << name << " input " << i;
    }
  }
}

/// x fp32 [1,1,2,2] -> Quantize (0.5, zp 3) -> `kind` in scale form: W int8 [2,1,1,1] = {2, -4}
/// with scales {0.25, 0.5}, fp32 bias {1, -2} -> y (int8 (0.1, zp -2), or fp32 for a
/// float_result QGemm on [1, 1] rows) -> Dequantize.
std::unique_ptr<ir::Graph> ScaleForm(OpKind kind) {
  auto g = std::make_unique<ir::Graph>();
  g->set_opset(17);
  const bool gemm = kind == OpKind::kQGemm;
  const Dims dims = gemm ? Dims{1, 1} : Dims{1, 1, 2, 2};
  ir::Value* x = g->AddInput("x", ir::TensorType(DType::kFloat32, dims));
  ir::Node* q = g->AddNode(OpKind::kQuantize, "q", {x}, {"x:int8"});
  q->output(0)->set_type(ir::TensorType(DType::kInt8, dims));
  q->output(0)->set_quant({0.5f, 3});
  ir::Value* w = g->NewConstant(
      "w", Tensor::FromVector<int8_t>(DType::kInt8, gemm ? Dims{2, 1} : Dims{2, 1, 1, 1}, {2, -4}));
  w->set_channel_scales({{0.25f, 0.5f}, 0});
  ir::Value* b =
      g->NewConstant("b", Tensor::FromVector<float>(DType::kFloat32, {2}, {1.0f, -2.0f}));
  ir::Node* n = g->AddNode(kind, "n", {q->output(0), w, b}, {"y"});
  if (gemm) {
    n->mutable_attrs<ir::QGemmAttrs>().float_result = 1;
    g->AddOutput(n->output(0));
  } else {
    n->output(0)->set_quant({0.1f, -2});
    ir::Node* dq = g->AddNode(OpKind::kDequantize, "dq", {n->output(0)}, {"out"});
    dq->mutable_attrs<ir::CastAttrs>().to = DType::kFloat32;
    g->AddOutput(dq->output(0));
  }
  EXPECT_TRUE(ir::InferShapes(*g).ok());
  EXPECT_TRUE(ir::Verify(*g).ok()) << ir::Verify(*g);
  return g;
}

TEST(FoldScalesTest, TheInt32BiasAndMultipliersComeFromTheScales) {
  std::unique_ptr<ir::Graph> g = ScaleForm(OpKind::kQConv);
  // The lowering takes only the integer form.
  cpu::LowerOptions options;
  absl::StatusOr<runtime::Plan> unfolded = cpu::LowerToCpuPlan(*g, options);
  ASSERT_FALSE(unfolded.ok());
  EXPECT_NE(unfolded.status().message().find("run the fold-scales pass"), std::string::npos)
      << unfolded.status();

  passes::Pipeline fold;
  fold.push_back(passes::CreateFoldScalesPass());
  absl::StatusOr<std::vector<passes::PassRecord>> r = passes::RunPipeline(*g, fold);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE((*r)[0].changed);
  const ir::Node* n = NodeNamed(*g, "n");
  ASSERT_EQ(n->num_inputs(), 4);
  // bias = round(b / (s_x s_w)) - zp_x sum(w): round(1 / 0.125) - 3 * 2 = 2 and
  // round(-2 / 0.25) - 3 * -4 = 4; multiplier = s_x s_w / s_y: 0.125 / 0.1 and 0.25 / 0.1.
  const Tensor* bias = n->input(2)->constant();
  const Tensor* multiplier = n->input(3)->constant();
  ASSERT_NE(bias, nullptr);
  ASSERT_NE(multiplier, nullptr);
  ASSERT_EQ(bias->dtype(), DType::kInt32);
  EXPECT_EQ(bias->data<int32_t>()[0], 2);
  EXPECT_EQ(bias->data<int32_t>()[1], 4);
  EXPECT_EQ(multiplier->data<float>()[0], 0.125f / 0.1f);
  EXPECT_EQ(multiplier->data<float>()[1], 0.25f / 0.1f);
  EXPECT_EQ(g->FindValue("b"), nullptr);  // the fp32 bias is gone
  EXPECT_TRUE(cpu::LowerToCpuPlan(*g, options).ok());
  // A second run finds nothing in scale form.
  r = passes::RunPipeline(*g, fold);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE((*r)[0].changed);
}

TEST(FoldScalesTest, AnFp32ResultKeepsItsBiasInFloat) {
  std::unique_ptr<ir::Graph> g = ScaleForm(OpKind::kQGemm);
  passes::Pipeline fold;
  fold.push_back(passes::CreateFoldScalesPass());
  ASSERT_TRUE(passes::RunPipeline(*g, fold).ok());
  const ir::Node* n = NodeNamed(*g, "n");
  ASSERT_EQ(n->num_inputs(), 5);
  // The int32 bias only corrects the zero point: -3 * 2 and -3 * -4; the scale is s_x s_w.
  EXPECT_EQ(n->input(2)->constant()->data<int32_t>()[0], -6);
  EXPECT_EQ(n->input(2)->constant()->data<int32_t>()[1], 12);
  EXPECT_EQ(n->input(3)->name(), "n:scale");
  EXPECT_EQ(n->input(3)->constant()->data<float>()[0], 0.5f * 0.25f);
  EXPECT_EQ(n->input(3)->constant()->data<float>()[1], 0.5f * 0.5f);
  EXPECT_EQ(n->input(4)->name(), "b");
}

TEST(CancelQdqTest, OnlyAPairOnTheSameGridCancels) {
  // x -> Q(0.1, 0) -> a:int8 -> DQ -> a -> Q(0.1, 0) -> same:int8 -> DQ -> out1
  //                                     a -> Q(0.2, 0) -> other:int8 -> DQ -> out2
  ir::Graph g;
  g.set_opset(17);
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {4}));
  auto quantize = [&](ir::Value* in, const std::string& name, float scale) {
    ir::Node* q = g.AddNode(OpKind::kQuantize, name + ":q", {in}, {name + ":int8"});
    q->output(0)->set_type(ir::TensorType(DType::kInt8, {4}));
    q->output(0)->set_quant({scale, 0});
    return q->output(0);
  };
  auto dequantize = [&](ir::Value* in, const std::string& name) {
    ir::Node* dq = g.AddNode(OpKind::kDequantize, name + ":dq", {in}, {name});
    dq->mutable_attrs<ir::CastAttrs>().to = DType::kFloat32;
    dq->output(0)->set_type(ir::TensorType(DType::kFloat32, {4}));
    return dq->output(0);
  };
  ir::Value* a = dequantize(quantize(x, "a", 0.1f), "a");
  ir::Value* same = quantize(a, "same", 0.1f);
  ir::Value* other = quantize(a, "other", 0.2f);
  g.AddOutput(dequantize(same, "out1"));
  g.AddOutput(dequantize(other, "out2"));
  ASSERT_TRUE(ir::Verify(g).ok()) << ir::Verify(g);
  passes::Pipeline cancel;
  cancel.push_back(passes::CreateCancelQdqPass());
  absl::StatusOr<std::vector<passes::PassRecord>> r = passes::RunPipeline(g, cancel);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].summary, "-1 qcc.Quantize");
  EXPECT_EQ(g.FindValue("same:int8"), nullptr);
  EXPECT_EQ(g.outputs()[0]->producer()->input(0)->name(), "a:int8");
  ASSERT_NE(g.FindValue("other:int8"), nullptr);  // another grid: rounding, kept
  EXPECT_EQ(g.outputs()[1]->producer()->input(0)->name(), "other:int8");
}

TEST(RealizeInt8Test, ItsPlanRunsTheInt8StepsCloseToFp32) {
  const std::unique_ptr<ir::Graph> g = SmallNet();
  absl::StatusOr<passes::QuantDecision> d = passes::AssignPrecision(*g, Ranges(*g), {});
  ASSERT_TRUE(d.ok()) << d.status();
  absl::StatusOr<std::unique_ptr<ir::Graph>> q = passes::RealizeInt8(*g, *d);
  ASSERT_TRUE(q.ok()) << q.status();
  cpu::LowerOptions options;
  options.batch_min = 1;
  options.batch_max = 2;
  absl::StatusOr<runtime::Plan> plan = cpu::LowerToCpuPlan(**q, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (StepKind k : {StepKind::kQuantize, StepKind::kQConv, StepKind::kQMaxPool, StepKind::kQLut,
                     StepKind::kQGlobalAveragePool, StepKind::kQGemm}) {
    EXPECT_GE(CountSteps(*plan, k), 1) << runtime::StepKindName(static_cast<uint32_t>(k));
  }
  // The Add runs on its own or in the epilogue of the conv before it.
  EXPECT_GE(CountSteps(*plan, StepKind::kQAdd) + CountSteps(*plan, StepKind::kQConvAdd), 1);
  EXPECT_EQ(CountSteps(*plan, StepKind::kConv), 0);
  EXPECT_EQ(CountSteps(*plan, StepKind::kDequantize), 2);
  EXPECT_EQ(plan->metadata.at("quant:x"),
            absl::StrFormat("%.9g %d", d->params.at(g->FindValue("x")).scale, 0));

  const Tensor x = SeededUniform({2, 3, 8, 8}, 7);
  auto reference = cpu::Evaluator::Create(*g);
  ASSERT_TRUE(reference.ok()) << reference.status();
  absl::StatusOr<std::vector<Tensor>> want = (*reference)->Run({x});
  ASSERT_TRUE(want.ok()) << want.status();
  auto engine = runtime::Engine::Create(*plan, runtime::EngineOptions{1});
  ASSERT_TRUE(engine.ok()) << engine.status();
  absl::StatusOr<std::vector<Tensor>> got = (*engine)->CreateContext()->Run({x});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 2u);
  for (size_t o = 0; o < 2; ++o) {
    const Tensor& a = (*got)[o];
    const Tensor& b = (*want)[o];
    ASSERT_EQ(a.numel(), b.numel());
    double err = 0, ref = 0;
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double e = a.data<float>()[i] - b.data<float>()[i];
      err += e * e;
      ref += static_cast<double>(b.data<float>()[i]) * b.data<float>()[i];
    }
    EXPECT_GT(10 * std::log10(ref / err), 25.0) << "output " << o;  // SQNR in dB
  }
}

TEST(RealizeInt8Test, ADecisionThatDoesNotFitIsAnErrorNotACrash) {
  const std::unique_ptr<ir::Graph> g = SmallNet();
  absl::StatusOr<passes::QuantDecision> d = passes::AssignPrecision(*g, Ranges(*g), {});
  ASSERT_TRUE(d.ok()) << d.status();
  passes::QuantDecision no_params = *d;
  no_params.params.erase(g->FindValue("pooled"));
  absl::StatusOr<std::unique_ptr<ir::Graph>> q = passes::RealizeInt8(*g, no_params);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("'pooled' is int8 but has no parameters"), std::string::npos)
      << q.status();
  passes::QuantDecision no_weights = *d;
  no_weights.weights.erase(NodeNamed(*g, "conv2"));
  q = passes::RealizeInt8(*g, no_weights);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("node 'conv2'"), std::string::npos) << q.status();
}

TEST(RealizeInt8Test, TheVerifierChecksQuantizedValues) {
  ir::Graph g;
  g.set_opset(17);
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {4}));
  ir::Node* q = g.AddNode(OpKind::kQuantize, "q", {x}, {"x:int8"});
  q->output(0)->set_type(ir::TensorType(DType::kInt8, {4}));
  ir::Node* dq = g.AddNode(OpKind::kDequantize, "dq", {q->output(0)}, {"y"});
  dq->output(0)->set_type(ir::TensorType(DType::kFloat32, {4}));
  g.AddOutput(dq->output(0));
  absl::Status s = ir::Verify(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'x:int8' must be int8 with quantization parameters"),
            std::string::npos)
      << s;
  q->output(0)->set_quant({0.0f, 0});  // a zero scale
  s = ir::Verify(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("finite scale > 0"), std::string::npos) << s;
  q->output(0)->set_quant({0.05f, 3});
  EXPECT_TRUE(ir::Verify(g).ok()) << ir::Verify(g);
  EXPECT_TRUE(ir::InferShapes(g).ok());
  EXPECT_EQ(q->output(0)->dtype(), DType::kInt8);
  EXPECT_EQ(dq->output(0)->dtype(), DType::kFloat32);
}

}  // namespace
}  // namespace qcc::testing
