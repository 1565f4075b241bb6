// An fp16 model in the evaluator: each op computes in fp32 from its fp16 inputs (the weights
// widened once, when the evaluator is made) and its output is rounded to fp16, as the model's
// types say. Checked bit for bit against that rule written out here, on values whose fp32 sums
// are exact (so the GEMM's summation order cannot matter) and whose fp16 roundings show.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend_cpu/evaluator.h"
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

}  // namespace
}  // namespace qcc::testing
