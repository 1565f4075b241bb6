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

/// x [n, c0 + c1 + c2, 4] (n symbolic) -> Neg of the first c0 channels, Relu of the next c1 and
/// a Reshape of the last c2 (which keeps x's storage) -> Concat on the channels, the graph's
/// output. With `also_read`, the Neg's output is a graph output as well.
struct ConcatCase {
  ir::Graph g;
  std::vector<int64_t> channels;
};
void BuildConcatCase(ConcatCase& c, bool also_read) {
  ir::Graph& g = c.g;
  g.set_opset(21);
  const ir::Dim n = ir::SymbolDim(g.AddSymbol("N"));
  const int64_t total = c.channels[0] + c.channels[1] + c.channels[2];
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {n, total, 4}));
  ir::Value* split_sizes =
      g.NewConstant("sizes", Tensor::FromVector<int64_t>(DType::kInt64, {3}, c.channels));
  ir::Node* split = g.AddNode(ir::OpKind::kSplit, "split", {x, split_sizes}, {"s0", "s1", "s2"});
  split->set_attrs(ir::SplitAttrs{1});
  ir::Value* a = Unary(g, ir::OpKind::kNeg, split->output(0), "a");
  ir::Value* b = Unary(g, ir::OpKind::kRelu, split->output(1), "b");
  ir::Value* shape = g.NewConstant(
      "shape", Tensor::FromVector<int64_t>(DType::kInt64, {3}, {0, c.channels[2], 4}));
  ir::Value* r = g.AddNode(ir::OpKind::kReshape, "r", {split->output(2), shape}, {"r"})->output(0);
  ir::Node* cat = g.AddNode(ir::OpKind::kConcat, "cat", {a, b, r}, {"cat"});
  cat->set_attrs(ir::AxisAttrs{-2});
  g.AddOutput(cat->output(0));
  if (also_read) g.AddOutput(a);
}

/// The Concat's output from formulas: per image, -x over the first channels, max(x, 0) over
/// the next ones, x over the rest.
std::vector<float> ConcatWant(const Tensor& x, const std::vector<int64_t>& channels) {
  const int64_t total = channels[0] + channels[1] + channels[2];
  std::vector<float> want(x.numel());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t ch = i / 4 % total;
    const float v = x.data<float>()[i];
    want[i] = ch < channels[0] ? -v : ch < channels[0] + channels[1] ? std::max(v, 0.0f) : v;
  }
  return want;
}

TEST(EvaluatorInPlaceTest, ChannelConcatAtBatchOneIsComputedInItsOutput) {
  // At batch 1 each input of the channel Concat is a contiguous slice of its output: the Neg
  // and the Relu write there (64 and 128 bytes in: slices of whole 64-byte lines), the Reshape
  // (whose output is x's own storage) is copied. The same model at batch 2, and with slices
  // that are not whole lines, copies every input; all give the same values.
  for (const auto& [batch, channels] : std::vector<std::pair<int64_t, std::vector<int64_t>>>{
           {1, {4, 8, 3}}, {2, {4, 8, 3}}, {1, {3, 5, 2}}}) {
    SCOPED_TRACE(::testing::Message() << "batch " << batch << ", channels " << channels[0] << "+"
                                      << channels[1] << "+" << channels[2]);
    ConcatCase c{ir::Graph(), channels};
    BuildConcatCase(c, /*also_read=*/false);
    const int64_t total = channels[0] + channels[1] + channels[2];
    const Tensor feed = Ramp({batch, total, 4});
    // Twice: the second run is the one in the arena planned from the first.
    for (int run = 0; run < 2; ++run) {
      const Observed o = RunObserved(c.g, {feed}, /*keep=*/false);
      ASSERT_EQ(o.results.size(), 1u);
      const auto* out = static_cast<const uint8_t*>(o.results[0].raw());
      const bool in_place = batch == 1 && channels[0] == 4;
      EXPECT_EQ(o.address.at("a") == out, in_place);
      EXPECT_EQ(o.address.at("b") == out + channels[0] * 4 * 4, in_place);
      EXPECT_NE(o.address.at("r"), out + (channels[0] + channels[1]) * 4 * 4);
      const std::vector<float> want = ConcatWant(feed, channels);
      for (int64_t i = 0; i < feed.numel(); ++i) {
        ASSERT_EQ(o.results[0].data<float>()[i], want[i]) << "element " << i;
      }
    }
  }
}

TEST(EvaluatorInPlaceTest, ConcatInputReadElsewhereIsComputedOnItsOwn) {
  // The Neg's output is also a graph output: it keeps its own tensor (the Relu's slice is still
  // computed in place), and both outputs hold their values.
  ConcatCase c{ir::Graph(), {4, 8, 3}};
  BuildConcatCase(c, /*also_read=*/true);
  const Tensor feed = Ramp({1, 15, 4});
  const Observed o = RunObserved(c.g, {feed}, /*keep=*/false);
  ASSERT_EQ(o.results.size(), 2u);
  const auto* out = static_cast<const uint8_t*>(o.results[0].raw());
  EXPECT_NE(o.address.at("a"), out);
  EXPECT_EQ(o.address.at("b"), out + 4 * 4 * 4);
  const std::vector<float> want = ConcatWant(feed, c.channels);
  for (int64_t i = 0; i < feed.numel(); ++i) {
    ASSERT_EQ(o.results[0].data<float>()[i], want[i]) << "element " << i;
    if (i < 16) {
      ASSERT_EQ(o.results[1].data<float>()[i], -feed.data<float>()[i]);
    }
  }
}

TEST(EvaluatorInPlaceTest, CalibrationTapsReadAConcatInputInItsSlice) {
  // An Observe on the Relu's output (as calibration inserts) leaves it computed in place; the
  // tap gets the values there, and they stay the Relu's after the Concat has run.
  ConcatCase c{ir::Graph(), {4, 8, 3}};
  BuildConcatCase(c, /*also_read=*/false);
  ir::Value* b = c.g.FindValue("b");
  ir::Node* tap = c.g.AddNode(ir::OpKind::kObserve, "observe:b", {b}, {});
  tap->mutable_attrs<ir::ObserveAttrs>().observer_id = 7;
  c.g.MoveNodeAfter(tap, b->producer());
  ASSERT_TRUE(ir::InferShapes(c.g).ok());
  Tensor seen;
  cpu::EvalOptions options;
  options.num_threads = 2;
  options.on_observe = [&seen](int64_t id, const Tensor& t) {
    EXPECT_EQ(id, 7);
    seen = t;  // held past the Concat: its values must not change
  };
  auto ev = cpu::Evaluator::Create(c.g, options);
  ASSERT_TRUE(ev.ok()) << ev.status();
  const Tensor feed = Ramp({1, 15, 4});
  auto results = (*ev)->Run({feed});
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_TRUE(seen.defined());
  EXPECT_EQ(seen.raw(), static_cast<const uint8_t*>((*results)[0].raw()) + 4 * 4 * 4);
  const std::vector<float> want = ConcatWant(feed, c.channels);
  for (int64_t i = 0; i < feed.numel(); ++i) {
    ASSERT_EQ((*results)[0].data<float>()[i], want[i]) << "element " << i;
  }
  for (int64_t i = 0; i < seen.numel(); ++i) {
    ASSERT_EQ(seen.data<float>()[i], std::max(feed.data<float>()[16 + i], 0.0f)) << i;
  }
}

TEST(EvaluatorInPlaceTest, ConcatOfAConcatHoldsEveryValue) {
  // The Concat's output is itself an input of a second channel Concat (with the Neg of x): the
  // inner one keeps the output its inputs were computed in (the outer copies it), the second
  // input of the outer one is computed in place.
  ConcatCase c{ir::Graph(), {4, 8, 4}};
  BuildConcatCase(c, /*also_read=*/false);
  ir::Graph& g = c.g;
  ir::Value* inner = g.outputs()[0];
  ir::Value* minus = Unary(g, ir::OpKind::kNeg, g.inputs()[0], "minus");
  ir::Node* outer = g.AddNode(ir::OpKind::kConcat, "outer", {inner, minus}, {"outer"});
  outer->set_attrs(ir::AxisAttrs{1});
  g.SetOutput(0, outer->output(0));
  const Tensor feed = Ramp({1, 16, 4});
  const Observed o = RunObserved(g, {feed}, /*keep=*/false);
  ASSERT_EQ(o.results.size(), 1u);
  const std::vector<float> want = ConcatWant(feed, c.channels);
  for (int64_t i = 0; i < feed.numel(); ++i) {
    ASSERT_EQ(o.results[0].data<float>()[i], want[i]) << "element " << i;
    ASSERT_EQ(o.results[0].data<float>()[feed.numel() + i], -feed.data<float>()[i]) << i;
  }
  const auto* out = static_cast<const uint8_t*>(o.results[0].raw());
  EXPECT_EQ(o.address.at("minus"), out + feed.nbytes());
}

}  // namespace
}  // namespace qcc::testing
