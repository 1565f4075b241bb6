// Every int8 and data-movement step kind on small inputs, run through Engine (after a plan file
// round trip), against an independent computation: the kernels' reference functions for
// QConv/QGemm, the numerics contract's formulas written out for the elementwise and pool steps,
// plain index loops for the movement steps.
#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/qconv.h"
#include "kernels/cpu/qgemm.h"
#include "tests/runtime/engine_test_util.h"

namespace qcc::runtime {
namespace {

using engine_testing::ExpectTensorsEqual;
using engine_testing::PlanBuilder;
using engine_testing::RandomFloat;
using engine_testing::RandomInt8;
using engine_testing::RandomVector;
using engine_testing::RoundClamp;
using engine_testing::RunPlan;

using engine_testing::kF32;
using engine_testing::kI32;
using engine_testing::kI8;

TEST(EngineStepsTest, QuantizeAndDequantize) {
  PlanBuilder b(1, 4);
  const int32_t x = b.Input("x", kF32, {-1, 6});
  const int32_t q = b.Output("q", kI8, {-1, 6});
  const int32_t y = b.Output("y", kF32, {-1, 6});
  b.Step(StepKind::kQuantize, "quant", {x}, {q}, QuantizeParams{0.5f, 3});
  b.Step(StepKind::kDequantize, "dequant", {q}, {y}, QuantizeParams{0.5f, 3});
  const float inf = std::numeric_limits<float>::infinity();
  Tensor in = Tensor::FromVector<float>(
      kF32, {2, 6},
      {0.25f, 0.75f, -1.25f, 1.0f, 100.0f, -70.0f, inf, -inf, NAN, 0.26f, -0.25f, 3.1f});
  const std::vector<Tensor> out = RunPlan(b.plan(), {in});
  ASSERT_EQ(out.size(), 2u);
  Tensor want_q(kI8, {2, 6}), want_y(kF32, {2, 6});
  for (int64_t i = 0; i < 12; ++i) {
    // x / 0.5 rounded half to even: 0.25 -> 0.5 -> 0, 0.75 -> 1.5 -> 2, -1.25 -> -2.5 -> -2.
    const float v = in.data<float>()[i];
    want_q.data<int8_t>()[i] = RoundClamp(std::isnan(v) ? 0.0f : v / 0.5f, 3);
    want_y.data<float>()[i] = static_cast<float>(want_q.data<int8_t>()[i] - 3) * 0.5f;
  }
  EXPECT_EQ(want_q.data<int8_t>()[0], 3);
  EXPECT_EQ(want_q.data<int8_t>()[1], 5);
  EXPECT_EQ(want_q.data<int8_t>()[2], 1);
  ExpectTensorsEqual(out[0], want_q);
  ExpectTensorsEqual(out[1], want_y);
}

TEST(EngineStepsTest, Requantize) {
  PlanBuilder b;
  const int32_t x = b.Input("x", kI8, {4, 64});
  const int32_t y = b.Output("y", kI8, {4, 64});
  b.Step(StepKind::kRequantize, "rq", {x}, {y}, RequantizeParams{0.37f, 5, -7, -20, 100});
  const Tensor in = RandomInt8({4, 64}, 1);
  const std::vector<Tensor> out = RunPlan(b.plan(), {in});
  ASSERT_EQ(out.size(), 1u);
  Tensor want(kI8, {4, 64});
  for (int64_t i = 0; i < in.numel(); ++i) {
    want.data<int8_t>()[i] =
        RoundClamp(static_cast<float>(in.data<int8_t>()[i] - 5) * 0.37f, -7, -20, 100);
  }
  ExpectTensorsEqual(out[0], want);
}

// A QConv plan over a dynamic batch, compared with QConvReference at batch `batch`.
void CheckQConv(Dims x_dims, Dims w_dims, const ConvGeometry& g, int64_t batch, bool with_bias) {
  QConvStepParams params;
  params.geometry = g;
  params.pad_value = 5;
  params.zp_out = -3;
  params.lo = -100;
  params.hi = 120;
  cpu::QConvParams p;
  p.n = batch;
  p.c = x_dims[1], p.h = x_dims[2], p.w = x_dims[3];
  p.k = w_dims[0], p.r = w_dims[2], p.s = w_dims[3];
  p.stride_h = g.stride_h, p.stride_w = g.stride_w;
  p.pad_top = g.pad_top, p.pad_left = g.pad_left, p.pad_bottom = g.pad_bottom;
  p.pad_right = g.pad_right;
  p.dilation_h = g.dilation_h, p.dilation_w = g.dilation_w, p.group = g.group;
  p.pad_value = 5, p.zp_out = -3, p.lo = -100, p.hi = 120;
  const Dims y_dims = {-1, p.k, p.out_h(), p.out_w()};

  const std::vector<int8_t> w = RandomVector<int8_t>(NumElements(w_dims), 2, -127, 127);
  const std::vector<int32_t> bias = RandomVector<int32_t>(p.k, 3, -5000, 5000);
  std::vector<float> mult(p.k);
  for (int64_t k = 0; k < p.k; ++k) mult[k] = 0.002f + 0.0005f * k;

  PlanBuilder b(1, 4);
  const int32_t x = b.Input("x", kI8, x_dims);
  const int32_t wb = b.Weight("w", kI8, w_dims, w);
  const int32_t bb = with_bias ? b.Weight("bias", kI32, {p.k}, bias) : -1;
  const int32_t mb = b.Weight("mult", kF32, {p.k}, mult);
  const int32_t y = b.Output("y", kI8, y_dims);
  b.Step(StepKind::kQConv, "conv", {x, wb, bb, mb}, {y}, params);

  Dims in_dims = x_dims;
  in_dims[0] = batch;
  const Tensor in = RandomInt8(in_dims, 4);
  const std::vector<Tensor> out = RunPlan(b.plan(), {in}, /*num_threads=*/2);
  ASSERT_EQ(out.size(), 1u);
  Tensor want(kI8, {batch, p.k, p.out_h(), p.out_w()});
  p.input = in.data<int8_t>();
  p.weights = w.data();
  p.bias = with_bias ? bias.data() : nullptr;
  p.multiplier = mult.data();
  p.output = want.data<int8_t>();
  cpu::QConvReference(p);
  ExpectTensorsEqual(out[0], want);
}

TEST(EngineStepsTest, QConvGroupedStridedDilatedPadded) {
  ConvGeometry g;
  g.stride_h = 2;
  g.pad_top = 1, g.pad_bottom = 1, g.pad_right = 2;
  g.dilation_w = 2;
  g.group = 2;
  CheckQConv({-1, 4, 7, 6}, {6, 2, 3, 3}, g, 3, /*with_bias=*/true);
  CheckQConv({-1, 4, 7, 6}, {6, 2, 3, 3}, g, 1, /*with_bias=*/false);
}

TEST(EngineStepsTest, QConvDepthwiseAndPointwise) {
  ConvGeometry g;
  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = 1;
  g.group = 32;
  CheckQConv({-1, 32, 9, 9}, {32, 1, 3, 3}, g, 2, /*with_bias=*/true);
  CheckQConv({-1, 48, 5, 5}, {64, 48, 1, 1}, ConvGeometry{}, 2, /*with_bias=*/true);
}

TEST(EngineStepsTest, QGemmFlattensLeadingDims) {
  const int64_t n = 12, k = 40;
  const std::vector<int8_t> w = RandomVector<int8_t>(n * k, 5, -127, 127);
  const std::vector<int32_t> bias = RandomVector<int32_t>(n, 6, -3000, 3000);
  std::vector<float> mult(n);
  for (int64_t i = 0; i < n; ++i) mult[i] = 0.003f + 0.0001f * i;
  for (bool with_bias : {true, false}) {
    PlanBuilder b(1, 3);
    const int32_t a = b.Input("a", kI8, {-1, 2, k});
    const int32_t wb = b.Weight("w", kI8, {n, k}, w);
    const int32_t bb = with_bias ? b.Weight("bias", kI32, {n}, bias) : -1;
    const int32_t mb = b.Weight("mult", kF32, {n}, mult);
    const int32_t y = b.Output("y", kI8, {-1, 2, n});
    b.Step(StepKind::kQGemm, "fc", {a, wb, bb, mb}, {y}, QGemmStepParams{4, -128, 127});
    const Tensor in = RandomInt8({3, 2, k}, 7);
    const std::vector<Tensor> out = RunPlan(b.plan(), {in});
    ASSERT_EQ(out.size(), 1u);
    Tensor want(kI8, {3, 2, n});
    cpu::QGemmParams p;
    p.m = 6, p.n = n, p.k = k;
    p.a = in.data<int8_t>(), p.b = w.data(), p.bias = with_bias ? bias.data() : nullptr;
    p.multiplier = mult.data(), p.zp_out = 4, p.y = want.data<int8_t>();
    cpu::QGemmReference(p);
    ExpectTensorsEqual(out[0], want);
  }
}

TEST(EngineStepsTest, QAdd) {
  PlanBuilder b(1, 2);
  const int32_t a = b.Input("a", kI8, {-1, 3, 5});
  const int32_t c = b.Input("b", kI8, {-1, 3, 5});
  const int32_t y = b.Output("y", kI8, {-1, 3, 5});
  QAddStepParams p;
  p.mult_a = 0.8f, p.mult_b = 1.3f, p.zp_a = 2, p.zp_b = -4, p.zp_out = 1, p.lo = 1, p.hi = 127;
  b.Step(StepKind::kQAdd, "add", {a, c}, {y}, p);
  const Tensor ta = RandomInt8({2, 3, 5}, 8), tb = RandomInt8({2, 3, 5}, 9);
  const std::vector<Tensor> out = RunPlan(b.plan(), {ta, tb});
  ASSERT_EQ(out.size(), 1u);
  Tensor want(kI8, {2, 3, 5});
  for (int64_t i = 0; i < want.numel(); ++i) {
    const float va = static_cast<float>(ta.data<int8_t>()[i] - 2) * 0.8f;
    const float vb = static_cast<float>(tb.data<int8_t>()[i] + 4) * 1.3f;
    want.data<int8_t>()[i] = RoundClamp(va + vb, 1, 1, 127);
  }
  ExpectTensorsEqual(out[0], want);
}

// Windowed pools over [N, C, H, W] int8 data: max, and average with the contract's formula.
TEST(EngineStepsTest, QMaxPoolAndQAveragePool) {
  const Dims x_dims = {2, 3, 6, 5};
  PoolStepParams w;
  w.kernel_h = 3, w.kernel_w = 2, w.stride_h = 2, w.stride_w = 2;
  w.pad_top = 1, w.pad_left = 1, w.pad_bottom = 1, w.pad_right = 0;
  // out_h = (6 + 2 - 3) / 2 + 1 = 3, out_w = (5 + 1 - 2) / 2 + 1 = 3.
  for (int64_t include_pad : {0, 1}) {
    QAveragePoolStepParams ap;
    ap.pool = w, ap.count_include_pad = include_pad, ap.multiplier = 0.9f, ap.zp_in = 3;
    ap.zp_out = -2;
    PlanBuilder b(1, 2);
    const int32_t x = b.Input("x", kI8, {-1, 3, 6, 5});
    const int32_t ymax = b.Output("max", kI8, {-1, 3, 3, 3});
    const int32_t yavg = b.Output("avg", kI8, {-1, 3, 3, 3});
    b.Step(StepKind::kQMaxPool, "maxpool", {x}, {ymax}, w);
    b.Step(StepKind::kQAveragePool, "avgpool", {x}, {yavg}, ap);
    const Tensor in = RandomInt8(x_dims, 10);
    const std::vector<Tensor> out = RunPlan(b.plan(), {in});
    ASSERT_EQ(out.size(), 2u);
    Tensor want_max(kI8, {2, 3, 3, 3}), want_avg(kI8, {2, 3, 3, 3});
    for (int64_t plane = 0; plane < 6; ++plane) {
      for (int64_t oy = 0; oy < 3; ++oy) {
        for (int64_t ox = 0; ox < 3; ++ox) {
          int32_t mx = -128;
          int64_t sum = 0, count = 0;
          for (int64_t r = 0; r < 3; ++r) {
            for (int64_t s = 0; s < 2; ++s) {
              const int64_t iy = oy * 2 - 1 + r, ix = ox * 2 - 1 + s;
              const bool inside = iy >= 0 && iy < 6 && ix >= 0 && ix < 5;
              if (include_pad == 1 && iy < 7 && ix < 5) ++count;  // padded extent [-1,7)x[-1,5)
              if (!inside) continue;
              const int8_t v = in.data<int8_t>()[(plane * 6 + iy) * 5 + ix];
              mx = std::max<int32_t>(mx, v);
              sum += v - 3;
              if (include_pad == 0) ++count;
            }
          }
          const int64_t o = (plane * 3 + oy) * 3 + ox;
          want_max.data<int8_t>()[o] = static_cast<int8_t>(mx);
          want_avg.data<int8_t>()[o] =
              RoundClamp((static_cast<float>(sum) * 0.9f) / static_cast<float>(count), -2);
        }
      }
    }
    ExpectTensorsEqual(out[0], want_max);
    ExpectTensorsEqual(out[1], want_avg);
  }
}

TEST(EngineStepsTest, QGlobalAveragePool) {
  QAveragePoolStepParams p;
  p.multiplier = 1.7f, p.zp_in = -5, p.zp_out = 6, p.lo = -50, p.hi = 50;
  PlanBuilder b(1, 3);
  const int32_t x = b.Input("x", kI8, {-1, 4, 3, 7});
  const int32_t y = b.Output("y", kI8, {-1, 4, 1, 1});
  b.Step(StepKind::kQGlobalAveragePool, "gap", {x}, {y}, p);
  const Tensor in = RandomInt8({3, 4, 3, 7}, 11);
  const std::vector<Tensor> out = RunPlan(b.plan(), {in});
  ASSERT_EQ(out.size(), 1u);
  Tensor want(kI8, {3, 4, 1, 1});
  for (int64_t plane = 0; plane < 12; ++plane) {
    int64_t sum = 0;
    for (int64_t i = 0; i < 21; ++i) sum += in.data<int8_t>()[plane * 21 + i] + 5;
    want.data<int8_t>()[plane] = RoundClamp((static_cast<float>(sum) * 1.7f) / 21.0f, 6, -50, 50);
  }
  ExpectTensorsEqual(out[0], want);
}

TEST(EngineStepsTest, QLut) {
  std::vector<int8_t> table(256);
  for (int i = 0; i < 256; ++i) table[i] = static_cast<int8_t>((i * 7) % 256 - 128);
  PlanBuilder b(1, 2);
  const int32_t x = b.Input("x", kI8, {-1, 300});
  const int32_t t = b.Weight("table", kI8, {256}, table);
  const int32_t y = b.Output("y", kI8, {-1, 300});
  b.Step(StepKind::kQLut, "sigmoid", {x, t}, {y}, NoStepParams{});
  const Tensor in = RandomInt8({2, 300}, 12);
  const std::vector<Tensor> out = RunPlan(b.plan(), {in});
  ASSERT_EQ(out.size(), 1u);
  Tensor want(kI8, {2, 300});
  for (int64_t i = 0; i < in.numel(); ++i) {
    want.data<int8_t>()[i] = table[in.data<int8_t>()[i] + 128];
  }
  ExpectTensorsEqual(out[0], want);
}

TEST(EngineStepsTest, QConcatRescalesOrCopies) {
  PlanBuilder b(1, 2);
  const int32_t x0 = b.Input("x0", kI8, {-1, 2, 3});
  const int32_t x1 = b.Input("x1", kI8, {-1, 1, 3});
  const int32_t x2 = b.Input("x2", kI8, {-1, 3, 3});
  const int32_t y = b.Output("y", kI8, {-1, 6, 3});
  QConcatStepParams p;
  p.axis = -2, p.multipliers = {1.0f, 0.5f, 2.0f}, p.zp_in = {4, 0, -1}, p.zp_out = 4;
  b.Step(StepKind::kQConcat, "concat", {x0, x1, x2}, {y}, p);
  const Tensor t0 = RandomInt8({2, 2, 3}, 13), t1 = RandomInt8({2, 1, 3}, 14);
  const Tensor t2 = RandomInt8({2, 3, 3}, 15);
  const std::vector<Tensor> out = RunPlan(b.plan(), {t0, t1, t2});
  ASSERT_EQ(out.size(), 1u);
  Tensor want(kI8, {2, 6, 3});
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t r = 0; r < 6; ++r) {
      for (int64_t c = 0; c < 3; ++c) {
        int8_t v;
        if (r < 2) {
          v = t0.data<int8_t>()[(n * 2 + r) * 3 + c];  // multiplier 1, same zero point: a copy
        } else if (r < 3) {
          v = RoundClamp(static_cast<float>(t1.data<int8_t>()[n * 3 + c]) * 0.5f, 4);
        } else {
          v = RoundClamp(static_cast<float>(t2.data<int8_t>()[(n * 3 + r - 3) * 3 + c] + 1) * 2.0f,
                         4);
        }
        want.data<int8_t>()[(n * 6 + r) * 3 + c] = v;
      }
    }
  }
  ExpectTensorsEqual(out[0], want);
}

TEST(EngineStepsTest, ReshapeCopiesBytes) {
  PlanBuilder b(1, 4);
  const int32_t x = b.Input("x", kI8, {-1, 2, 3});
  const int32_t y = b.Output("y", kI8, {-1, 6});
  b.Step(StepKind::kReshape, "flatten", {x}, {y}, NoStepParams{});
  const Tensor in = RandomInt8({4, 2, 3}, 16);
  const std::vector<Tensor> out = RunPlan(b.plan(), {in});
  ASSERT_EQ(out.size(), 1u);
  ExpectTensorsEqual(out[0], in.Reshaped({4, 6}));
}

TEST(EngineStepsTest, TransposeAnyDtype) {
  PlanBuilder b(1, 2);
  const int32_t x = b.Input("x", kF32, {-1, 2, 3, 4});
  const int32_t y = b.Output("y", kF32, {-1, 4, 2, 3});
  b.Step(StepKind::kTranspose, "nchw_to_nwch", {x}, {y}, TransposeStepParams{{0, 3, 1, 2}});
  const Tensor in = RandomFloat({2, 2, 3, 4}, 17);
  const std::vector<Tensor> out = RunPlan(b.plan(), {in});
  ASSERT_EQ(out.size(), 1u);
  Tensor want(kF32, {2, 4, 2, 3});
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t h = 0; h < 3; ++h)
        for (int64_t w = 0; w < 4; ++w)
          want.data<float>()[((n * 4 + w) * 2 + c) * 3 + h] =
              in.data<float>()[((n * 2 + c) * 3 + h) * 4 + w];
  ExpectTensorsEqual(out[0], want);
}

TEST(EngineStepsTest, SliceWithNegativeStep) {
  PlanBuilder b(1, 3);
  const int32_t x = b.Input("x", kI8, {-1, 5, 6});
  const int32_t y = b.Output("y", kI8, {-1, 2, 3});
  // Rows 4, 2 (start 4, step -2); columns 1, 3, 5 (start 1, step 2).
  b.Step(StepKind::kSlice, "slice", {x}, {y}, SliceStepParams{{0, 4, 1}, {1, -2, 2}});
  const Tensor in = RandomInt8({3, 5, 6}, 18);
  const std::vector<Tensor> out = RunPlan(b.plan(), {in});
  ASSERT_EQ(out.size(), 1u);
  Tensor want(kI8, {3, 2, 3});
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t r = 0; r < 2; ++r)
      for (int64_t c = 0; c < 3; ++c)
        want.data<int8_t>()[(n * 2 + r) * 3 + c] =
            in.data<int8_t>()[(n * 5 + (4 - 2 * r)) * 6 + (1 + 2 * c)];
  ExpectTensorsEqual(out[0], want);
}

TEST(EngineStepsTest, PadFillsWithTheZeroPointOrValue) {
  PlanBuilder b(1, 2);
  const int32_t xq = b.Input("xq", kI8, {-1, 2, 3, 3});
  const int32_t xf = b.Input("xf", kF32, {-1, 2, 3, 3});
  const int32_t yq = b.Output("yq", kI8, {-1, 2, 5, 4});
  const int32_t yf = b.Output("yf", kF32, {-1, 2, 5, 4});
  const std::vector<int64_t> pads = {0, 0, 1, 0, 0, 0, 1, 1};
  b.Step(StepKind::kPad, "padq", {xq}, {yq}, PadStepParams{pads, 0.0f, -7});
  b.Step(StepKind::kPad, "padf", {xf}, {yf}, PadStepParams{pads, 2.5f, 0});
  const Tensor tq = RandomInt8({2, 2, 3, 3}, 19);
  const Tensor tf = RandomFloat({2, 2, 3, 3}, 20);
  const std::vector<Tensor> out = RunPlan(b.plan(), {tq, tf});
  ASSERT_EQ(out.size(), 2u);
  Tensor want_q(kI8, {2, 2, 5, 4}), want_f(kF32, {2, 2, 5, 4});
  for (int64_t plane = 0; plane < 4; ++plane) {
    for (int64_t h = 0; h < 5; ++h) {
      for (int64_t w = 0; w < 4; ++w) {
        const bool inside = h >= 1 && h < 4 && w < 3;
        const int64_t o = (plane * 5 + h) * 4 + w, i = (plane * 3 + h - 1) * 3 + w;
        want_q.data<int8_t>()[o] = inside ? tq.data<int8_t>()[i] : -7;
        want_f.data<float>()[o] = inside ? tf.data<float>()[i] : 2.5f;
      }
    }
  }
  ExpectTensorsEqual(out[0], want_q);
  ExpectTensorsEqual(out[1], want_f);
}

}  // namespace
}  // namespace qcc::runtime
