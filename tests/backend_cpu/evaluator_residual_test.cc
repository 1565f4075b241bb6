// The evaluator's residual fusion: a Conv whose output only an Add reads runs in the Add's place
// with the Add's other input added in its epilogue (kernels/cpu/conv.h, ConvF32Params::residual).
// Its results are bit for bit those of the Conv and the Add run apart (an observer turns the
// fusion off), on every conv path, with the residual computed before or after the Conv; and the
// pairs it must not fuse are run apart.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "backend_cpu/evaluator.h"
#include "ir/attrs.h"
#include "ir/shape_inference.h"
#include "tests/backend_cpu/nn_testing.h"
#include "tests/testing/op_test_util.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {
namespace {

Tensor Random(Dims dims, uint32_t seed) { return RandomF32(std::move(dims), seed); }

ir::TensorType F32(const Dims& dims) {
  return ir::TensorType(DType::kFloat32, std::vector<ir::Dim>(dims.begin(), dims.end()));
}

struct Shape {
  int64_t n, c, m, group, h, w, k;
};

/// x -> Conv(W, B; pads k/2, `group`, optional fused activation) -> y; the residual is x itself
/// when the Conv keeps the channels and extents, else a graph input r; with `residual_after`, the
/// residual is Neg(r) computed after the Conv. Add(y, residual) (or Add(residual, y) with
/// `conv_second`) with a fused Relu is the output.
struct Built {
  ir::Graph g;
  std::vector<Tensor> feeds;
};
void Build(Built& b, const Shape& s, bool residual_after, bool conv_second,
           ir::Activation conv_act = ir::Activation::kNone) {
  ir::Graph& g = b.g;
  g.set_opset(21);
  ir::Value* x = g.AddInput("x", F32({s.n, s.c, s.h, s.w}));
  b.feeds.push_back(Random({s.n, s.c, s.h, s.w}, 1));
  ir::Value* w = g.NewConstant("w", Random({s.m, s.c / s.group, s.k, s.k}, 2));
  ir::Value* bias = g.NewConstant("b", Random({s.m}, 3));
  ir::Node* conv = g.AddNode(ir::OpKind::kConv, "conv", {x, w, bias}, {"y"});
  ir::ConvAttrs a;
  a.group = s.group;
  a.pads = {s.k / 2, s.k / 2, s.k / 2, s.k / 2};
  a.activation = conv_act;
  conv->set_attrs(a);
  ir::Value* r = x;
  if (s.m != s.c || residual_after) {
    r = g.AddInput("r", F32({s.n, s.m, s.h, s.w}));
    b.feeds.push_back(Random({s.n, s.m, s.h, s.w}, 4));
  }
  if (residual_after) r = g.AddNode(ir::OpKind::kNeg, "neg", {r}, {"nr"})->output(0);
  ir::Value* y = conv->output(0);
  ir::Node* add =
      g.AddNode(ir::OpKind::kAdd, "add",
                conv_second ? std::vector<ir::Value*>{r, y} : std::vector<ir::Value*>{y, r}, {"z"});
  ir::AddAttrs aa;
  aa.activation = ir::Activation::kRelu;
  add->set_attrs(aa);
  g.AddOutput(add->output(0));
}

/// Runs `g` with the fusion (no observer) and without (an observer), on 2 threads; expects
/// `fused` pairs in the first and the same bits from both.
void ExpectSameBits(ir::Graph& g, const std::vector<Tensor>& feeds, int64_t fused) {
  ASSERT_TRUE(ir::InferShapes(g).ok());
  cpu::EvalOptions plain;
  plain.num_threads = 2;
  cpu::EvalOptions observed = plain;
  observed.on_value = [](const ir::Value&, const Tensor&) {};
  // A per-node hook (profiling) keeps the fusion, and hears of every node once a run, the fused
  // Conv's at its place.
  cpu::EvalOptions timed = plain;
  std::vector<std::string> done;
  timed.on_node_done = [&done](const ir::Node& node) { done.push_back(node.name()); };
  auto a = cpu::Evaluator::Create(g, plain);
  auto b = cpu::Evaluator::Create(g, observed);
  auto c = cpu::Evaluator::Create(g, timed);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ((*a)->fused_residual_adds(), fused);
  EXPECT_EQ((*b)->fused_residual_adds(), 0);
  EXPECT_EQ((*c)->fused_residual_adds(), fused);
  for (const auto& node : g.nodes()) {
    const ir::Node* conv = (*a)->FusedConvOf(*node);
    EXPECT_EQ(conv != nullptr, fused > 0 && node->kind() == ir::OpKind::kAdd);
  }
  auto yc = (*c)->Run(feeds);
  ASSERT_TRUE(yc.ok()) << yc.status();
  std::vector<std::string> order;
  for (const auto& node : g.nodes()) order.push_back(node->name());
  EXPECT_EQ(done, order);
  for (int run = 0; run < 2; ++run) {  // the second run in the arena planned from the first
    auto ya = (*a)->Run(feeds);
    auto yb = (*b)->Run(feeds);
    ASSERT_TRUE(ya.ok()) << ya.status();
    ASSERT_TRUE(yb.ok()) << yb.status();
    ASSERT_EQ(ya->size(), 1u);
    EXPECT_EQ(CompareTensors((*ya)[0], (*yb)[0], 0, 0), "") << "run " << run;
    EXPECT_EQ(CompareTensors((*yc)[0], (*yb)[0], 0, 0), "") << "run " << run;
  }
}

TEST(EvaluatorResidualTest, ConvThenAddRunsAsOneConvWithTheSameBits) {
  const Shape shapes[] = {
      {2, 8, 8, 1, 10, 12, 3},    // im2col tile (AVX-512: the 8 x 32 tile over columns)
      {1, 16, 16, 1, 8, 16, 3},   // implicit im2col (rows of whole vectors)
      {1, 64, 72, 1, 7, 7, 1},    // pointwise on a small map: the transposed tile
      {2, 24, 40, 1, 9, 9, 1},    // pointwise, positions in the lanes
      {1, 12, 12, 12, 11, 13, 3}  // depthwise: the residual in a pass after the kernel
  };
  for (const Shape& s : shapes) {
    for (bool after : {false, true}) {
      for (bool second : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << "channels " << s.c << "->" << s.m << " group " << s.group
                     << " residual after " << after << " conv second " << second);
        Built b;
        Build(b, s, after, second);
        ExpectSameBits(b.g, b.feeds, 1);
      }
    }
  }
}

TEST(EvaluatorResidualTest, PairsThatCannotFuseRunApart) {
  const Shape s{1, 8, 8, 1, 6, 6, 3};
  {
    SCOPED_TRACE("the Conv has an activation of its own");
    Built b;
    Build(b, s, false, false, ir::Activation::kRelu);
    ExpectSameBits(b.g, b.feeds, 0);
  }
  {
    SCOPED_TRACE("the Conv's output is also a graph output");
    Built b;
    Build(b, s, false, false);
    b.g.AddOutput(b.g.nodes()[0]->output(0));
    ASSERT_TRUE(ir::InferShapes(b.g).ok());
    cpu::EvalOptions o;
    auto ev = cpu::Evaluator::Create(b.g, o);
    ASSERT_TRUE(ev.ok());
    EXPECT_EQ((*ev)->fused_residual_adds(), 0);
  }
  {
    SCOPED_TRACE("the Conv's output has another reader");
    Built b;
    Build(b, s, false, false);
    ir::Value* y = b.g.nodes()[0]->output(0);
    b.g.AddOutput(b.g.AddNode(ir::OpKind::kNeg, "neg_y", {y}, {"ny"})->output(0));
    ASSERT_TRUE(ir::InferShapes(b.g).ok());
    auto ev = cpu::Evaluator::Create(b.g, cpu::EvalOptions{});
    ASSERT_TRUE(ev.ok());
    EXPECT_EQ((*ev)->fused_residual_adds(), 0);
  }
  {
    SCOPED_TRACE("a broadcast Add (a per-channel bias)");
    ir::Graph g;
    g.set_opset(21);
    ir::Value* x = g.AddInput("x", F32({1, 8, 6, 6}));
    ir::Node* conv = g.AddNode(ir::OpKind::kConv, "conv",
                               {x, g.NewConstant("w", Random({8, 8, 1, 1}, 2))}, {"y"});
    ir::Value* c = g.AddInput("c", F32({8, 1, 1}));
    g.AddOutput(g.AddNode(ir::OpKind::kAdd, "add", {conv->output(0), c}, {"z"})->output(0));
    ExpectSameBits(g, {Random({1, 8, 6, 6}, 1), Random({8, 1, 1}, 5)}, 0);
  }
}

}  // namespace
}  // namespace qcc::testing
