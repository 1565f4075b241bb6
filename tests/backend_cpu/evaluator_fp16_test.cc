// An fp16 model in the evaluator: each op computes in fp32 from its fp16 inputs (the weights
// widened once, when the evaluator is made) and its output is rounded to fp16, as the model's
// types say. Checked bit for bit against that rule written out here, on values whose fp32 sums
// are exact (so the GEMM's summation order cannot matter) and whose fp16 roundings show.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backend_cpu/evaluator.h"
#include "ir/attrs.h"
#include "ir/shape_inference.h"
#include "support/float16.h"
#include "support/tensor.h"

namespace qcc::testing {
namespace {

constexpr int64_t kRows = 3, kDepth = 40, kCols = 24;

// Multiples of 0.5 below 32: products and sums of 40 of them are exact in fp32 (< 2^24), and
// the sums (thousands) fall where fp16 values are 2 to 8 apart, so rounding to fp16 shows.
float Value(int64_t i, int64_t salt) {
  return static_cast<float>((i * 7 + salt * 13) % 32) + ((i + salt) % 3 == 0 ? 0.5f : 0.0f);
}

// The bias: small values of both signs.
float BiasValue(int64_t i) { return static_cast<float>((i * 5) % 33 - 16) + 0.5f * (i % 2); }

std::vector<uint16_t> Halves(int64_t n, int64_t salt) {
  std::vector<uint16_t> h(n);
  for (int64_t i = 0; i < n; ++i) h[i] = FloatToHalf(salt < 0 ? BiasValue(i) : Value(i, salt));
  return h;
}

TEST(EvaluatorFp16Test, EachOpRoundsToFp16AndTheWidenedWeightsServeEveryRun) {
  const std::vector<uint16_t> x = Halves(kRows * kDepth, 1), w = Halves(kDepth * kCols, 2),
                              b = Halves(kCols, -1);
  ir::Graph g;
  g.set_opset(17);
  ir::Value* in = g.AddInput("x", ir::TensorType(DType::kFloat16, {kRows, kDepth}));
  ir::Value* wv =
      g.NewConstant("w", Tensor::FromVector<uint16_t>(DType::kFloat16, {kDepth, kCols}, w));
  ir::Value* bv = g.NewConstant("b", Tensor::FromVector<uint16_t>(DType::kFloat16, {kCols}, b));
  ir::Value* m = g.AddNode(ir::OpKind::kMatMul, "mm", {in, wv}, {"m"})->output(0);
  ir::Value* s = g.AddNode(ir::OpKind::kAdd, "add", {m, bv}, {"s"})->output(0);
  g.AddOutput(g.AddNode(ir::OpKind::kRelu, "relu", {s}, {"y"})->output(0));
  ASSERT_TRUE(ir::InferShapes(g).ok());

  // The rule: y = relu(f16(f16(x . w) + b)), every sum in fp32.
  std::vector<uint16_t> want(kRows * kCols);
  bool rounded = false;  // some y differs unless m is rounded to fp16 first
  for (int64_t r = 0; r < kRows; ++r) {
    for (int64_t c = 0; c < kCols; ++c) {
      float dot = 0.0f;
      for (int64_t k = 0; k < kDepth; ++k) {
        dot += HalfToFloat(x[r * kDepth + k]) * HalfToFloat(w[k * kCols + c]);
      }
      const uint16_t m16 = FloatToHalf(dot);
      const uint16_t s16 = FloatToHalf(HalfToFloat(m16) + HalfToFloat(b[c]));
      // Rounding m to fp16 before the Add shows in y here (an fp32 m would give another y).
      rounded = rounded || s16 != FloatToHalf(dot + HalfToFloat(b[c]));
      want[r * kCols + c] = HalfToFloat(s16) < 0.0f ? uint16_t{0} : s16;
    }
  }
  ASSERT_TRUE(rounded);

  cpu::EvalOptions options;
  options.num_threads = 2;
  auto ev = cpu::Evaluator::Create(g, options);
  ASSERT_TRUE(ev.ok()) << ev.status();
  const Tensor feed = Tensor::FromVector<uint16_t>(DType::kFloat16, {kRows, kDepth}, x);
  for (int run = 0; run < 2; ++run) {
    auto y = (*ev)->Run({feed});
    ASSERT_TRUE(y.ok()) << y.status();
    ASSERT_EQ((*y)[0].dtype(), DType::kFloat16);
    const uint16_t* got = (*y)[0].data<uint16_t>();
    EXPECT_TRUE(std::equal(want.begin(), want.end(), got)) << "run " << run;
  }
}

TEST(EvaluatorFp16Test, MoversBetweenFp32OpsGiveTheFp16TensorsBitForBit) {
  // fp16 values stay in fp32 between ops: a mover (Transpose, Pad with an fp16 fill, Where,
  // Reshape, Concat) runs on those forms, or on fp16 tensors where an input has none (the graph
  // input y). Every output, and every value on_value sees, must be the fp16 tensor the model's
  // types give: m = f16(x * c), then pure moves of those values.
  ir::Graph g;
  g.set_opset(17);
  const std::vector<uint16_t> xh = {FloatToHalf(1.1f), FloatToHalf(2.3f), FloatToHalf(-3.7f),
                                    FloatToHalf(4.9f), FloatToHalf(0.3f), FloatToHalf(-7.1f)};
  const std::vector<uint16_t> ch = {FloatToHalf(3.3f), FloatToHalf(1.7f), FloatToHalf(0.9f)};
  const std::vector<uint16_t> yh = {FloatToHalf(9.5f), FloatToHalf(-1.25f), FloatToHalf(0.1f),
                                    FloatToHalf(6.0f), FloatToHalf(7.0f),   FloatToHalf(8.0f)};
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat16, {2, 3}));
  ir::Value* y = g.AddInput("y", ir::TensorType(DType::kFloat16, {3, 2}));
  ir::Value* c = g.NewConstant("c", Tensor::FromVector<uint16_t>(DType::kFloat16, {3}, ch));
  ir::Value* m = g.AddNode(ir::OpKind::kMul, "mul", {x, c}, {"m"})->output(0);
  ir::Node* tn = g.AddNode(ir::OpKind::kTranspose, "t", {m}, {"t"});
  tn->set_attrs(ir::TransposeAttrs{{1, 0}});
  ir::Node* cat = g.AddNode(ir::OpKind::kConcat, "cat", {tn->output(0), y}, {"cat"});
  cat->set_attrs(ir::AxisAttrs{0});
  ir::Value* pads =
      g.NewConstant("pads", Tensor::FromVector<int64_t>(DType::kInt64, {4}, {0, 1, 0, 1}));
  ir::Value* fill =
      g.NewConstant("fill", Tensor::FromVector<uint16_t>(DType::kFloat16, {}, {FloatToHalf(2.5f)}));
  ir::Value* p = g.AddNode(ir::OpKind::kPad, "pad", {tn->output(0), pads, fill}, {"p"})->output(0);
  ir::Value* neg = g.AddNode(ir::OpKind::kNeg, "neg", {p}, {"n"})->output(0);
  std::vector<uint8_t> cond_bits(12);
  for (int i = 0; i < 12; ++i) cond_bits[i] = i % 3 == 0;
  ir::Value* cond =
      g.NewConstant("cond", Tensor::FromVector<uint8_t>(DType::kBool, {3, 4}, cond_bits));
  ir::Value* w = g.AddNode(ir::OpKind::kWhere, "where", {cond, p, neg}, {"w"})->output(0);
  ir::Value* shape = g.NewConstant("shape", Tensor::FromVector<int64_t>(DType::kInt64, {1}, {6}));
  ir::Value* flat = g.AddNode(ir::OpKind::kReshape, "flat", {m, shape}, {"flat"})->output(0);
  g.AddOutput(cat->output(0));
  g.AddOutput(w);
  g.AddOutput(flat);
  ASSERT_TRUE(ir::InferShapes(g).ok());

  std::vector<uint16_t> mh(6), th(6);
  for (int i = 0; i < 6; ++i) {
    mh[i] = FloatToHalf(HalfToFloat(xh[i]) * HalfToFloat(ch[i % 3]));
  }
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 2; ++k) th[r * 2 + k] = mh[k * 3 + r];
  }
  std::vector<uint16_t> want_cat = th;
  want_cat.insert(want_cat.end(), yh.begin(), yh.end());
  std::vector<uint16_t> want_p(12), want_w(12);
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 4; ++k) {
      want_p[r * 4 + k] = k == 0 || k == 3 ? FloatToHalf(2.5f) : th[r * 2 + k - 1];
    }
  }
  for (int i = 0; i < 12; ++i) {
    want_w[i] = cond_bits[i] ? want_p[i] : static_cast<uint16_t>(want_p[i] ^ 0x8000);
  }

  std::map<std::string, std::vector<uint16_t>> seen;
  for (bool observed : {false, true}) {
    cpu::EvalOptions options;
    options.num_threads = 1;
    if (observed) {
      options.on_value = [&](const ir::Value& v, const Tensor& t) {
        if (t.dtype() != DType::kFloat16) return;
        seen[v.name()].assign(t.data<uint16_t>(), t.data<uint16_t>() + t.numel());
      };
    }
    auto ev = cpu::Evaluator::Create(g, options);
    ASSERT_TRUE(ev.ok()) << ev.status();
    for (int run = 0; run < 2; ++run) {  // the second run on the arena
      auto out = (*ev)->Run({Tensor::FromVector<uint16_t>(DType::kFloat16, {2, 3}, xh),
                             Tensor::FromVector<uint16_t>(DType::kFloat16, {3, 2}, yh)});
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ(out->size(), 3u);
      for (const Tensor& t : *out) ASSERT_EQ(t.dtype(), DType::kFloat16);
      auto halves = [](const Tensor& t) {
        return std::vector<uint16_t>(t.data<uint16_t>(), t.data<uint16_t>() + t.numel());
      };
      EXPECT_EQ(halves((*out)[0]), want_cat) << "observed " << observed << ", run " << run;
      EXPECT_EQ(halves((*out)[1]), want_w) << "observed " << observed << ", run " << run;
      EXPECT_EQ(halves((*out)[2]), mh) << "observed " << observed << ", run " << run;
    }
  }
  // on_value saw the fp16 tensors of the fp32 op's output and of the movers' outputs.
  EXPECT_EQ(seen["m"], mh);
  EXPECT_EQ(seen["t"], th);
  EXPECT_EQ(seen["p"], want_p);
  EXPECT_EQ(seen["w"], want_w);
}

TEST(EvaluatorFp16Test, MaxPoolOutputsAreFp16ValuesAndAnEmptyWindowRoundsToMinusInfinity) {
  // MaxPool skips the rounding pass (each output is one of its fp16 inputs), except where a
  // window lies wholly in the padding: that output is the lowest float, -inf in fp16, and the
  // fp32 op after it must see -inf (here -inf * 0 = NaN, where the lowest float * 0 = -0).
  ir::Graph g;
  g.set_opset(17);
  const std::vector<uint16_t> xh = {FloatToHalf(1.1f),  FloatToHalf(-2.3f), FloatToHalf(3.7f),
                                    FloatToHalf(-4.9f), FloatToHalf(0.3f),  FloatToHalf(7.1f)};
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat16, {1, 1, 2, 3}));
  ir::Value* c =
      g.NewConstant("c", Tensor::FromVector<uint16_t>(DType::kFloat16, {}, {FloatToHalf(1.3f)}));
  ir::Value* zero =
      g.NewConstant("zero", Tensor::FromVector<uint16_t>(DType::kFloat16, {}, {FloatToHalf(0)}));
  ir::Value* m = g.AddNode(ir::OpKind::kMul, "mul", {x, c}, {"m"})->output(0);
  ir::Node* pool = g.AddNode(ir::OpKind::kMaxPool, "pool", {m}, {"p"});
  ir::PoolAttrs a;
  a.kernel_shape = {2, 2};
  pool->set_attrs(a);
  ir::Node* empty = g.AddNode(ir::OpKind::kMaxPool, "empty", {m}, {"e"});
  ir::PoolAttrs b;
  b.kernel_shape = {1, 1};
  b.pads = {1, 0, 0, 0};  // output row 0 reads only the padding row above x
  empty->set_attrs(b);
  g.AddOutput(g.AddNode(ir::OpKind::kMul, "scaled", {pool->output(0), zero}, {"s"})->output(0));
  g.AddOutput(g.AddNode(ir::OpKind::kMul, "zeroed", {empty->output(0), zero}, {"z"})->output(0));
  g.AddOutput(pool->output(0));
  ASSERT_TRUE(ir::InferShapes(g).ok());

  std::vector<uint16_t> mh(6);
  for (int i = 0; i < 6; ++i)
    mh[i] = FloatToHalf(HalfToFloat(xh[i]) * HalfToFloat(FloatToHalf(1.3f)));
  std::vector<uint16_t> want_p(2);
  for (int ox = 0; ox < 2; ++ox) {
    float best = HalfToFloat(mh[ox]);
    for (int i : {ox + 1, 3 + ox, 4 + ox}) best = std::max(best, HalfToFloat(mh[i]));
    want_p[ox] = FloatToHalf(best);
  }
  cpu::EvalOptions options;
  options.num_threads = 1;
  auto ev = cpu::Evaluator::Create(g, options);
  ASSERT_TRUE(ev.ok()) << ev.status();
  auto out = (*ev)->Run({Tensor::FromVector<uint16_t>(DType::kFloat16, {1, 1, 2, 3}, xh)});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 3u);
  const uint16_t* s = (*out)[0].data<uint16_t>();
  for (int i = 0; i < 2; ++i) EXPECT_EQ(s[i], FloatToHalf(HalfToFloat(want_p[i]) * 0.0f)) << i;
  // e is 3 x 3: row 0 from the padding alone (-inf), rows 1-2 m itself.
  ASSERT_EQ((*out)[1].numel(), 9);
  const uint16_t* z = (*out)[1].data<uint16_t>();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(HalfToFloat(z[i]))) << "row 0, column " << i;
  for (int i = 3; i < 9; ++i) EXPECT_EQ(z[i], FloatToHalf(HalfToFloat(mh[i - 3]) * 0.0f)) << i;
  EXPECT_EQ(std::vector<uint16_t>((*out)[2].data<uint16_t>(), (*out)[2].data<uint16_t>() + 2),
            want_p);
}

}  // namespace
}  // namespace qcc::testing
