// The evaluator runs ops marked may_run_in_place over an input that dies at that node and that
// nothing else holds, and never over a value that is still used, is a graph input or output,
// or is held by an observer. Results are checked against formulas written out here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "backend_cpu/evaluator.h"
#include "ir/shape_inference.h"
#include "tests/testing/op_test_util.h"

namespace qcc::testing {
namespace {

constexpr int64_t kN = 1000;

Tensor Ramp(Dims dims) {
  Tensor t(DType::kFloat32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 0.01f * static_cast<float>(i - 400);
  return t;
}

ir::Value* F32Input(ir::Graph& g, const std::string& name, const Dims& dims) {
  return g.AddInput(
      name, ir::TensorType(DType::kFloat32, std::vector<ir::Dim>(dims.begin(), dims.end())));
}

ir::Value* Unary(ir::Graph& g, ir::OpKind kind, ir::Value* x, const std::string& out) {
  return g.AddNode(kind, out, {x}, {out})->output(0);
}

/// Runs `g` on `feeds`, recording the data address of every node output by name; with
/// `keep`, the observer also holds a copy of each output (sharing its storage).
struct Observed {
  std::vector<Tensor> results;
  std::map<std::string, const void*> address;
  std::map<std::string, Tensor> kept;
};
Observed RunObserved(ir::Graph& g, const std::vector<Tensor>& feeds, bool keep) {
  EXPECT_TRUE(ir::InferShapes(g).ok());
  Observed o;
  cpu::EvalOptions options;
  options.num_threads = 2;
  options.on_value = [&o, keep](const ir::Value& v, const Tensor& t) {
    o.address[v.name()] = t.raw();
    if (keep) o.kept[v.name()] = t;
  };
  auto ev = cpu::Evaluator::Create(g, options);
  EXPECT_TRUE(ev.ok()) << ev.status();
  auto results = (*ev)->Run(feeds);
  EXPECT_TRUE(results.ok()) << results.status();
  if (results.ok()) o.results = *results;
  return o;
}

TEST(EvaluatorInPlaceTest, ChainOfUnaryOpsReusesOneBuffer) {
  ir::Graph g;
  g.set_opset(21);
  ir::Value* x = F32Input(g, "x", {kN});
  ir::Value* a = Unary(g, ir::OpKind::kNeg, x, "a");
  ir::Value* b = Unary(g, ir::OpKind::kRelu, a, "b");
  g.AddOutput(Unary(g, ir::OpKind::kSigmoid, b, "c"));
  const Tensor feed = Ramp({kN});
  const Observed o = RunObserved(g, {feed}, /*keep=*/false);
  ASSERT_EQ(o.results.size(), 1u);
  EXPECT_NE(o.address.at("a"), feed.raw());  // the caller's input is never overwritten
  EXPECT_EQ(o.address.at("b"), o.address.at("a"));
  EXPECT_EQ(o.address.at("c"), o.address.at("a"));
  for (int64_t i = 0; i < kN; ++i) {
    const float v = feed.data<float>()[i];
    EXPECT_EQ(feed.data<float>()[i], 0.01f * static_cast<float>(i - 400));
    EXPECT_NEAR(o.results[0].data<float>()[i], 1.0f / (1.0f + std::exp(-std::max(-v, 0.0f))),
                1e-6f);
  }
}

TEST(EvaluatorInPlaceTest, ValueStillUsedLaterIsNotOverwritten) {
  // a = -x; b = relu(a) (a is used again: new buffer); c = a + b (both die: c takes a's).
  ir::Graph g;
  g.set_opset(21);
  ir::Value* x = F32Input(g, "x", {kN});
  ir::Value* a = Unary(g, ir::OpKind::kNeg, x, "a");
  ir::Value* b = Unary(g, ir::OpKind::kRelu, a, "b");
  g.AddOutput(g.AddNode(ir::OpKind::kAdd, "c", {a, b}, {"c"})->output(0));
  const Tensor feed = Ramp({kN});
  const Observed o = RunObserved(g, {feed}, /*keep=*/false);
  ASSERT_EQ(o.results.size(), 1u);
  EXPECT_NE(o.address.at("b"), o.address.at("a"));
  EXPECT_EQ(o.address.at("c"), o.address.at("a"));
  for (int64_t i = 0; i < kN; ++i) {
    const float v = -feed.data<float>()[i];
    ASSERT_EQ(o.results[0].data<float>()[i], v + std::max(v, 0.0f)) << i;
  }
}

TEST(EvaluatorInPlaceTest, BroadcastAddReusesTheOperandThatSpansTheOutput) {
  // c = bias[16] + relu(x[4, 16]): only the second operand has the output's shape.
  ir::Graph g;
  g.set_opset(21);
  ir::Value* x = F32Input(g, "x", {4, 16});
  ir::Value* bias = F32Input(g, "bias", {16});
  ir::Value* r = Unary(g, ir::OpKind::kRelu, x, "r");
  g.AddOutput(g.AddNode(ir::OpKind::kAdd, "c", {bias, r}, {"c"})->output(0));
  const Tensor feed = Ramp({4, 16});
  Tensor bias_feed(DType::kFloat32, {16});
  for (int64_t j = 0; j < 16; ++j) bias_feed.data<float>()[j] = 0.5f * static_cast<float>(j);
  const Observed o = RunObserved(g, {feed, bias_feed}, /*keep=*/false);
  ASSERT_EQ(o.results.size(), 1u);
  EXPECT_EQ(o.address.at("c"), o.address.at("r"));
  for (int64_t i = 0; i < 64; ++i) {
    const float want = 0.5f * static_cast<float>(i % 16) + std::max(feed.data<float>()[i], 0.0f);
    ASSERT_EQ(o.results[0].data<float>()[i], want) << i;
  }
}

TEST(EvaluatorInPlaceTest, GraphOutputsAndObservedValuesKeepTheirValues) {
  // a = -x is a graph output and is used by b = relu(a): a must survive.
  ir::Graph g;
  g.set_opset(21);
  ir::Value* x = F32Input(g, "x", {kN});
  ir::Value* a = Unary(g, ir::OpKind::kNeg, x, "a");
  ir::Value* b = Unary(g, ir::OpKind::kRelu, a, "b");
  ir::Value* c = Unary(g, ir::OpKind::kExp, b, "c");
  g.AddOutput(a);
  g.AddOutput(c);
  const Tensor feed = Ramp({kN});
  for (bool keep : {false, true}) {
    // With `keep` the observer holds every node output, so nothing may be overwritten.
    const Observed o = RunObserved(g, {feed}, keep);
    ASSERT_EQ(o.results.size(), 2u);
    EXPECT_NE(o.address.at("b"), o.address.at("a"));
    if (keep) {
      EXPECT_NE(o.address.at("c"), o.address.at("b"));
    } else {
      EXPECT_EQ(o.address.at("c"), o.address.at("b"));
    }
    for (int64_t i = 0; i < kN; ++i) {
      const float v = -feed.data<float>()[i];
      ASSERT_EQ(o.results[0].data<float>()[i], v) << i;
      if (keep) {
        ASSERT_EQ(o.kept.at("b").data<float>()[i], std::max(v, 0.0f)) << i;
      }
      ASSERT_NEAR(o.results[1].data<float>()[i], std::exp(std::max(v, 0.0f)), 1e-5f) << i;
    }
  }
}

}  // namespace
}  // namespace qcc::testing
