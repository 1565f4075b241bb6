// Every fp32 step kind on small inputs, run through Engine (after a plan file round trip),
// against naive loops written out here.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <vector>

#include "gtest/gtest.h"
#include "support/float16.h"
#include "tests/runtime/engine_test_util.h"

namespace qcc::runtime {
namespace {

using engine_testing::ExpectTensorsNear;
using engine_testing::PlanBuilder;
using engine_testing::RandomFloat;
using engine_testing::RunPlan;

using engine_testing::kF32;

TEST(EngineFloatStepsTest, ConvGroupedWithBiasAndRelu) {
  // X [N, 4, 6, 5], W [6, 2, 3, 2], group 2, stride 1x2, pads (1, 0, 0, 1), relu.
  const int64_t n = 2, c = 4, h = 6, w = 5, k = 6, r = 3, s = 2, g = 2;
  ConvStepParams p;
  p.geometry.stride_w = 2;
  p.geometry.pad_top = 1, p.geometry.pad_right = 1;
  p.geometry.group = g;
  p.activation.lo = 0.0f;
  const int64_t oh = (h + 1 - r) / 1 + 1, ow = (w + 1 - s) / 2 + 1;  // 5, 3
  const Tensor wt = RandomFloat({k, c / g, r, s}, 1), bias = RandomFloat({k}, 2);
  PlanBuilder b(1, 2);
  const int32_t x = b.Input("x", kF32, {-1, c, h, w});
  const int32_t wb = b.Weight("w", kF32, {k, c / g, r, s},
                              std::vector<float>(wt.data<float>(), wt.data<float>() + wt.numel()));
  const int32_t bb =
      b.Weight("b", kF32, {k}, std::vector<float>(bias.data<float>(), bias.data<float>() + k));
  const int32_t y = b.Output("y", kF32, {-1, k, oh, ow});
  b.Step(StepKind::kConv, "conv", {x, wb, bb}, {y}, p);
  const Tensor in = RandomFloat({n, c, h, w}, 3);
  const std::vector<Tensor> out = RunPlan(b.plan(), {in});
  ASSERT_EQ(out.size(), 1u);
  Tensor want(kF32, {n, k, oh, ow});
  for (int64_t ni = 0; ni < n; ++ni)
    for (int64_t ki = 0; ki < k; ++ki)
      for (int64_t y0 = 0; y0 < oh; ++y0)
        for (int64_t x0 = 0; x0 < ow; ++x0) {
          double acc = bias.data<float>()[ki];
          const int64_t gi = ki / (k / g);
          for (int64_t ci = 0; ci < c / g; ++ci)
            for (int64_t ri = 0; ri < r; ++ri)
              for (int64_t si = 0; si < s; ++si) {
                const int64_t iy = y0 - 1 + ri, ix = x0 * 2 + si;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                acc += wt.data<float>()[((ki * (c / g) + ci) * r + ri) * s + si] *
                       in.data<float>()[((ni * c + gi * (c / g) + ci) * h + iy) * w + ix];
              }
          want.data<float>()[((ni * k + ki) * oh + y0) * ow + x0] =
              static_cast<float>(std::max(acc, 0.0));
        }
  ExpectTensorsNear(out[0], want);
}

TEST(EngineFloatStepsTest, GemmTransposedBWithBroadcastC) {
  const int64_t m = 3, k = 5, n = 4;
  GemmStepParams p;
  p.alpha = 0.5f, p.beta = 2.0f, p.trans_b = 1;
  const Tensor bt = RandomFloat({n, k}, 4), ct = RandomFloat({n}, 5);
  PlanBuilder b(1, 3);
  const int32_t a = b.Input("a", kF32, {-1, k});
  const int32_t wb =
      b.Weight("b", kF32, {n, k}, std::vector<float>(bt.data<float>(), bt.data<float>() + n * k));
  const int32_t cb =
      b.Weight("c", kF32, {n}, std::vector<float>(ct.data<float>(), ct.data<float>() + n));
  const int32_t y = b.Output("y", kF32, {-1, n});
  b.Step(StepKind::kGemm, "fc", {a, wb, cb}, {y}, p);
  const Tensor in = RandomFloat({m, k}, 6);
  const std::vector<Tensor> out = RunPlan(b.plan(), {in});
  ASSERT_EQ(out.size(), 1u);
  Tensor want(kF32, {m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t l = 0; l < k; ++l)
        acc += in.data<float>()[i * k + l] * bt.data<float>()[j * k + l];
      want.data<float>()[i * n + j] = static_cast<float>(0.5 * acc + 2.0 * ct.data<float>()[j]);
    }
  ExpectTensorsNear(out[0], want);
}

TEST(EngineFloatStepsTest, SoftmaxAlongAMiddleAxis) {
  PlanBuilder b(1, 2);
  const int32_t x = b.Input("x", kF32, {-1, 4, 3});
  const int32_t y = b.Output("y", kF32, {-1, 4, 3});
  b.Step(StepKind::kSoftmax, "softmax", {x}, {y}, AxisStepParams{1});
  const Tensor in = RandomFloat({2, 4, 3}, 7, -5.0f, 5.0f);
  const std::vector<Tensor> out = RunPlan(b.plan(), {in});
  ASSERT_EQ(out.size(), 1u);
  Tensor want(kF32, {2, 4, 3});
  for (int64_t o = 0; o < 2; ++o)
    for (int64_t i = 0; i < 3; ++i) {
      double sum = 0;
      for (int64_t a = 0; a < 4; ++a) sum += std::exp(in.data<float>()[(o * 4 + a) * 3 + i]);
      for (int64_t a = 0; a < 4; ++a) {
        const int64_t idx = (o * 4 + a) * 3 + i;
        want.data<float>()[idx] = static_cast<float>(std::exp(in.data<float>()[idx]) / sum);
      }
    }
  ExpectTensorsNear(out[0], want);
}

TEST(EngineFloatStepsTest, EveryUnaryFunction) {
  // Each function of support/unary_fn.h against its ONNX definition in double, on inputs in
  // its domain.
  struct Case {
    UnaryFn op;
    float alpha, beta;
    double (*f)(double x, double alpha, double beta);
    float lo = -6.0f, hi = 6.0f;
  };
  const Case cases[] = {
      {UnaryFn::kRelu, 0, 0, [](double x, double, double) { return std::max(x, 0.0); }},
      {UnaryFn::kSigmoid, 0, 0, [](double x, double, double) { return 1 / (1 + std::exp(-x)); }},
      {UnaryFn::kTanh, 0, 0, [](double x, double, double) { return std::tanh(x); }},
      {UnaryFn::kHardSigmoid, 0.3f, 0.4f,
       [](double x, double a, double b) { return std::clamp(a * x + b, 0.0, 1.0); }},
      {UnaryFn::kHardSwish, 0, 0,
       [](double x, double, double) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }},
      {UnaryFn::kClip, -1.0f, 2.5f,
       [](double x, double a, double b) { return std::clamp(x, a, b); }},
      {UnaryFn::kLeakyRelu, 0.1f, 0, [](double x, double a, double) { return x < 0 ? a * x : x; }},
      {UnaryFn::kErf, 0, 0, [](double x, double, double) { return std::erf(x); }},
      {UnaryFn::kSqrt, 0, 0, [](double x, double, double) { return std::sqrt(x); }, 0.0f, 6.0f},
      {UnaryFn::kGelu, 0, 0,
       [](double x, double, double) { return x * (1 + std::erf(x / std::sqrt(2.0))) / 2; }},
      {UnaryFn::kGeluTanh, 0, 0,
       [](double x, double, double) {
         const double k = 0.79788456080286535588;  // sqrt(2 / pi)
         return x * (1 + std::tanh(k * (x + 0.044715 * x * x * x))) / 2;
       }},
      {UnaryFn::kElu, 0.7f, 0,
       [](double x, double a, double) { return x < 0 ? a * (std::exp(x) - 1) : x; }},
      {UnaryFn::kCelu, 1.5f, 0,
       [](double x, double a, double) {
         return std::max(0.0, x) + std::min(0.0, a * (std::exp(x / a) - 1));
       }},
      {UnaryFn::kThresholdedRelu, 1.25f, 0,
       [](double x, double a, double) { return x > a ? x : 0.0; }},
      {UnaryFn::kSoftplus, 0, 0,
       [](double x, double, double) { return std::log(1 + std::exp(x)); }},
      {UnaryFn::kSoftsign, 0, 0, [](double x, double, double) { return x / (1 + std::fabs(x)); }},
      {UnaryFn::kMish, 0, 0,
       [](double x, double, double) { return x * std::tanh(std::log(1 + std::exp(x))); }},
      {UnaryFn::kShrink, 0.5f, 0.25f,
       [](double x, double l, double b) { return x < -l ? x + b : (x > l ? x - b : 0.0); }},
      {UnaryFn::kExp, 0, 0, [](double x, double, double) { return std::exp(x); }},
      {UnaryFn::kLog, 0, 0, [](double x, double, double) { return std::log(x); }, 0.01f, 6.0f},
      {UnaryFn::kNeg, 0, 0, [](double x, double, double) { return -x; }},
      {UnaryFn::kAbs, 0, 0, [](double x, double, double) { return std::fabs(x); }},
      {UnaryFn::kReciprocal, 0, 0, [](double x, double, double) { return 1 / x; }, 0.1f, 6.0f},
      {UnaryFn::kFloor, 0, 0, [](double x, double, double) { return std::floor(x); }},
      {UnaryFn::kCeil, 0, 0, [](double x, double, double) { return std::ceil(x); }},
      {UnaryFn::kRound, 0, 0, [](double x, double, double) { return std::nearbyint(x); }},
      {UnaryFn::kSign, 0, 0,
       [](double x, double, double) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }},
      {UnaryFn::kSin, 0, 0, [](double x, double, double) { return std::sin(x); }},
      {UnaryFn::kCos, 0, 0, [](double x, double, double) { return std::cos(x); }},
      {UnaryFn::kTan, 0, 0, [](double x, double, double) { return std::tan(x); }, -1.4f, 1.4f},
      {UnaryFn::kAsin, 0, 0, [](double x, double, double) { return std::asin(x); }, -0.9f, 0.9f},
      {UnaryFn::kAcos, 0, 0, [](double x, double, double) { return std::acos(x); }, -0.9f, 0.9f},
      {UnaryFn::kAtan, 0, 0, [](double x, double, double) { return std::atan(x); }},
      {UnaryFn::kSinh, 0, 0, [](double x, double, double) { return std::sinh(x); }},
      {UnaryFn::kCosh, 0, 0, [](double x, double, double) { return std::cosh(x); }},
      {UnaryFn::kAsinh, 0, 0, [](double x, double, double) { return std::asinh(x); }},
      {UnaryFn::kAcosh, 0, 0, [](double x, double, double) { return std::acosh(x); }, 1.0f, 6.0f},
      {UnaryFn::kAtanh, 0, 0, [](double x, double, double) { return std::atanh(x); }, -0.9f, 0.9f},
  };
  // Selu is the one function of three constants: a plan's Unary step holds two (the lowering
  // refuses it), so it is not here.
  ASSERT_EQ(std::size(cases), static_cast<size_t>(kNumUnaryFns - 1));
  for (const Case& c : cases) {
    SCOPED_TRACE(static_cast<int>(c.op));
    const Tensor in = RandomFloat({2, 50}, 8, c.lo, c.hi);
    PlanBuilder b(1, 2);
    const int32_t x = b.Input("x", kF32, {-1, 50});
    const int32_t y = b.Output("y", kF32, {-1, 50});
    b.Step(StepKind::kUnary, "unary", {x}, {y},
           UnaryStepParams{static_cast<int64_t>(c.op), c.alpha, c.beta});
    const std::vector<Tensor> out = RunPlan(b.plan(), {in});
    ASSERT_EQ(out.size(), 1u);
    Tensor want(kF32, {2, 50});
    for (int64_t i = 0; i < 100; ++i) {
      want.data<float>()[i] = static_cast<float>(c.f(in.data<float>()[i], c.alpha, c.beta));
    }
    ExpectTensorsNear(out[0], want, 1e-5);
  }
}

TEST(EngineFloatStepsTest, BinaryBroadcastWithActivation) {
  const Tensor a = RandomFloat({2, 3, 4}, 9), c = RandomFloat({3, 1}, 10, 0.5f, 2.0f);
  for (BinaryOp op : {BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv}) {
    BinaryStepParams p;
    p.op = static_cast<int64_t>(op);
    p.activation.lo = -0.5f, p.activation.hi = 1.5f;
    PlanBuilder b(1, 2);
    const int32_t x = b.Input("a", kF32, {-1, 3, 4});
    const int32_t w = b.Weight("b", kF32, {3, 1}, c.ToFloatVector());
    const int32_t y = b.Output("y", kF32, {-1, 3, 4});
    b.Step(StepKind::kBinary, "binary", {x, w}, {y}, p);
    const std::vector<Tensor> out = RunPlan(b.plan(), {a});
    ASSERT_EQ(out.size(), 1u);
    Tensor want(kF32, {2, 3, 4});
    for (int64_t i = 0; i < 24; ++i) {
      const float va = a.data<float>()[i], vb = c.data<float>()[(i / 4) % 3];
      float v = op == BinaryOp::kAdd   ? va + vb
                : op == BinaryOp::kSub ? va - vb
                : op == BinaryOp::kMul ? va * vb
                                       : va / vb;
      want.data<float>()[i] = std::clamp(v, -0.5f, 1.5f);
    }
    ExpectTensorsNear(out[0], want, 0);
  }
}

TEST(EngineFloatStepsTest, MaxAverageAndGlobalAveragePools) {
  PoolStepParams w;
  w.kernel_h = w.kernel_w = 2, w.stride_h = w.stride_w = 2, w.ceil_mode = 1;
  // 5x5 with ceil_mode: out 3x3, the last window holds one row/column of the input.
  PlanBuilder b(1, 2);
  const int32_t x = b.Input("x", kF32, {-1, 2, 5, 5});
  const int32_t ymax = b.Output("max", kF32, {-1, 2, 3, 3});
  const int32_t yavg = b.Output("avg", kF32, {-1, 2, 3, 3});
  const int32_t ygap = b.Output("gap", kF32, {-1, 2, 1, 1});
  b.Step(StepKind::kMaxPool, "max", {x}, {ymax}, w);
  b.Step(StepKind::kAveragePool, "avg", {x}, {yavg}, AveragePoolStepParams{w, 0});
  b.Step(StepKind::kGlobalAveragePool, "gap", {x}, {ygap}, NoStepParams{});
  const Tensor in = RandomFloat({2, 2, 5, 5}, 11);
  const std::vector<Tensor> out = RunPlan(b.plan(), {in});
  ASSERT_EQ(out.size(), 3u);
  Tensor want_max(kF32, {2, 2, 3, 3}), want_avg(kF32, {2, 2, 3, 3}), want_gap(kF32, {2, 2, 1, 1});
  for (int64_t plane = 0; plane < 4; ++plane) {
    const float* p = in.data<float>() + plane * 25;
    double total = 0;
    for (int64_t i = 0; i < 25; ++i) total += p[i];
    want_gap.data<float>()[plane] = static_cast<float>(total / 25);
    for (int64_t oy = 0; oy < 3; ++oy)
      for (int64_t ox = 0; ox < 3; ++ox) {
        float mx = -INFINITY;
        double sum = 0;
        int count = 0;
        for (int64_t iy = oy * 2; iy < std::min<int64_t>(oy * 2 + 2, 5); ++iy)
          for (int64_t ix = ox * 2; ix < std::min<int64_t>(ox * 2 + 2, 5); ++ix) {
            mx = std::max(mx, p[iy * 5 + ix]);
            sum += p[iy * 5 + ix];
            ++count;
          }
        want_max.data<float>()[(plane * 3 + oy) * 3 + ox] = mx;
        want_avg.data<float>()[(plane * 3 + oy) * 3 + ox] = static_cast<float>(sum / count);
      }
  }
  ExpectTensorsNear(out[0], want_max, 0);
  ExpectTensorsNear(out[1], want_avg);
  ExpectTensorsNear(out[2], want_gap);
}

TEST(EngineFloatStepsTest, ConcatAlongChannels) {
  PlanBuilder b(1, 2);
  const int32_t x0 = b.Input("x0", kF32, {-1, 1, 2});
  const int32_t x1 = b.Input("x1", kF32, {-1, 3, 2});
  const int32_t y = b.Output("y", kF32, {-1, 4, 2});
  b.Step(StepKind::kConcat, "concat", {x0, x1}, {y}, AxisStepParams{1});
  const Tensor t0 = RandomFloat({2, 1, 2}, 12), t1 = RandomFloat({2, 3, 2}, 13);
  const std::vector<Tensor> out = RunPlan(b.plan(), {t0, t1});
  ASSERT_EQ(out.size(), 1u);
  Tensor want(kF32, {2, 4, 2});
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t c = 0; c < 2; ++c)
        want.data<float>()[(n * 4 + r) * 2 + c] =
            r == 0 ? t0.data<float>()[n * 2 + c] : t1.data<float>()[(n * 3 + r - 1) * 2 + c];
  ExpectTensorsNear(out[0], want, 0);
}

TEST(EngineFloatStepsTest, CastF16ToF32AndBack) {
  // fp16 in -> f32 -> Relu -> f16 out: every value of a few fp16 bit patterns round trips
  // exactly through support/float16.h's conversions.
  const std::vector<uint16_t> bits = {0x0000, 0x3c00, 0xbc00, 0x7bff, 0x0001, 0x3555, 0xc900};
  const int64_t n = static_cast<int64_t>(bits.size());
  PlanBuilder b(1, 2);
  const int32_t x = b.Input("x", DType::kFloat16, {-1, n});
  const int32_t f = b.Arena("f", kF32, {-1, n});
  const int32_t r = b.Arena("r", kF32, {-1, n});
  const int32_t y = b.Output("y", DType::kFloat16, {-1, n});
  b.Step(StepKind::kCast, "widen", {x}, {f}, NoStepParams{});
  UnaryStepParams relu;
  relu.op = static_cast<int64_t>(UnaryFn::kRelu);
  b.Step(StepKind::kUnary, "relu", {f}, {r}, relu);
  b.Step(StepKind::kCast, "narrow", {r}, {y}, NoStepParams{});
  Tensor in(DType::kFloat16, {2, n});
  for (int64_t row = 0; row < 2; ++row) {
    for (int64_t i = 0; i < n; ++i) in.data<uint16_t>()[row * n + i] = bits[i];
  }
  const std::vector<Tensor> out = RunPlan(b.plan(), {in});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].dtype(), DType::kFloat16);
  for (int64_t i = 0; i < 2 * n; ++i) {
    const float v = HalfToFloat(bits[i % n]);
    EXPECT_EQ(out[0].data<uint16_t>()[i], FloatToHalf(v > 0 ? v : 0.0f)) << i;
  }
}

TEST(EngineFloatStepsTest, ConvTransposeGroupedPaddedWithOutputPadding) {
  // X [N, 4, 3, 4], W [4, 3, 3, 2] (C_in 4 -> M 6 in 2 groups), stride 2x1, dilation 1x2, pads
  // (1, 0, 0, 1), output padding 1x0, bias: out = s * (in - 1) + op + d * (k - 1) + 1 - pads.
  const int64_t n = 2, c = 4, h = 3, w = 4, g = 2, mg = 3, m = mg * g, r = 3, s = 2;
  ConvTransposeStepParams p;
  p.geometry.stride_h = 2;
  p.geometry.dilation_w = 2;
  p.geometry.pad_top = 1, p.geometry.pad_right = 1;
  p.geometry.group = g;
  p.output_padding_h = 1;
  const int64_t oh = 2 * (h - 1) + 1 + (r - 1) + 1 - 1;      // 7
  const int64_t ow = 1 * (w - 1) + 0 + 2 * (s - 1) + 1 - 1;  // 5
  const Tensor wt = RandomFloat({c, mg, r, s}, 11), bias = RandomFloat({m}, 12);
  PlanBuilder b(1, 2);
  const int32_t x = b.Input("x", kF32, {-1, c, h, w});
  const int32_t wb = b.Weight("w", kF32, {c, mg, r, s},
                              std::vector<float>(wt.data<float>(), wt.data<float>() + wt.numel()));
  const int32_t bb =
      b.Weight("b", kF32, {m}, std::vector<float>(bias.data<float>(), bias.data<float>() + m));
  const int32_t y = b.Output("y", kF32, {-1, m, oh, ow});
  b.Step(StepKind::kConvTranspose, "deconv", {x, wb, bb}, {y}, p);
  const Tensor in = RandomFloat({n, c, h, w}, 13);
  const std::vector<Tensor> out = RunPlan(b.plan(), {in});
  ASSERT_EQ(out.size(), 1u);
  // ONNX ConvTranspose: every input pixel scatters its taps to (i * s - pad + k * d).
  std::vector<double> acc(n * m * oh * ow, 0.0);
  for (int64_t ni = 0; ni < n; ++ni)
    for (int64_t mi = 0; mi < m; ++mi)
      for (int64_t i = 0; i < oh * ow; ++i)
        acc[(ni * m + mi) * oh * ow + i] = bias.data<float>()[mi];
  for (int64_t ni = 0; ni < n; ++ni)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t j = 0; j < mg; ++j)
        for (int64_t iy = 0; iy < h; ++iy)
          for (int64_t ix = 0; ix < w; ++ix)
            for (int64_t ri = 0; ri < r; ++ri)
              for (int64_t si = 0; si < s; ++si) {
                const int64_t oy = iy * 2 - 1 + ri, ox = ix - 0 + si * 2;
                if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
                const int64_t mi = ci / (c / g) * mg + j;
                acc[((ni * m + mi) * oh + oy) * ow + ox] +=
                    double{wt.data<float>()[((ci * mg + j) * r + ri) * s + si]} *
                    in.data<float>()[((ni * c + ci) * h + iy) * w + ix];
              }
  Tensor want(kF32, {n, m, oh, ow});
  for (size_t i = 0; i < acc.size(); ++i) want.data<float>()[i] = static_cast<float>(acc[i]);
  ExpectTensorsNear(out[0], want, 1e-5f);
}

TEST(EngineFloatStepsTest, ConvTransposeWithOutputExtentsThePadsDoNotGiveIsRejected) {
  PlanBuilder b(1, 1);
  const int32_t x = b.Input("x", kF32, {1, 2, 4, 4});
  const int32_t w = b.Weight("w", kF32, {2, 1, 2, 2}, std::vector<float>(8, 0.5f));
  const int32_t y = b.Output("y", kF32, {1, 1, 9, 8});  // stride 2, kernel 2: 8x8
  ConvTransposeStepParams p;
  p.geometry.stride_h = p.geometry.stride_w = 2;
  b.Step(StepKind::kConvTranspose, "deconv", {x, w}, {y}, p);
  absl::StatusOr<std::shared_ptr<const Engine>> engine = Engine::Create(b.plan());
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("deconv"), std::string::npos) << engine.status();
  EXPECT_NE(engine.status().message().find("output Y"), std::string::npos) << engine.status();
}

TEST(EngineFloatStepsTest, CastRejectsOtherDtypes) {
  PlanBuilder b(1, 1);
  const int32_t x = b.Input("x", kF32, {1, 4});
  const int32_t y = b.Output("y", DType::kInt8, {1, 4});
  b.Step(StepKind::kCast, "bad", {x}, {y}, NoStepParams{});
  absl::StatusOr<std::shared_ptr<const Engine>> engine = Engine::Create(b.plan());
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("f16 to f32, f32 to f16, or i64, i32, bool to f32"),
            std::string::npos)
      << engine.status();
}

TEST(EngineFloatStepsTest, HalfWeightsAreWidenedOnceAtLoad) {
  // An fp16 plan's Gemm weight stored as f16: the result is the fp32 Gemm of the widened values.
  const int64_t m = 2, k = 3, n = 2;
  const std::vector<float> wf = {0.1f, -2.5f, 3.0f, 0.333f, 1.0f, -0.75f};  // [n, k]
  std::vector<uint16_t> wh;
  for (float v : wf) wh.push_back(FloatToHalf(v));
  GemmStepParams p;
  p.trans_b = 1;
  PlanBuilder b(1, 2);
  const int32_t a = b.Input("a", kF32, {-1, k});
  const int32_t w = b.Weight("w", DType::kFloat16, {n, k}, wh);
  const int32_t y = b.Output("y", kF32, {-1, n});
  b.Step(StepKind::kGemm, "fc", {a, w}, {y}, p);
  const Tensor in = RandomFloat({m, k}, 11);
  const std::vector<Tensor> out = RunPlan(b.plan(), {in});
  ASSERT_EQ(out.size(), 1u);
  Tensor want(kF32, {m, n});
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t q = 0; q < k; ++q) {
        acc += static_cast<double>(in.data<float>()[i * k + q]) * HalfToFloat(wh[j * k + q]);
      }
      want.data<float>()[i * n + j] = static_cast<float>(acc);
    }
  }
  ExpectTensorsNear(out[0], want);
}

}  // namespace
}  // namespace qcc::runtime
