// Unary elementwise ops against std:: math written out in the test.
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/elementwise_math.h"
#include "support/float16.h"
#include "tests/testing/op_test_util.h"

namespace qcc {
namespace {

using ir::OpKind;
using testing::F32;
using testing::RunSingleOp;

std::vector<float> Values(int n, float lo, float hi, unsigned seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

/// Runs `kind` on `x` (shape [n]) and checks every output against ref(x) within a relative
/// tolerance.
void ExpectUnary(OpKind kind, ir::Attrs attrs, const std::vector<float>& x,
                 const std::function<double(double)>& ref, double tol = 1e-6) {
  auto out = RunSingleOp(kind, std::move(attrs), {{F32({static_cast<int64_t>(x.size())}, x)}});
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor& y = (*out)[0];
  ASSERT_EQ(y.dtype(), DType::kFloat32);
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = ref(x[i]);
    EXPECT_NEAR(y.data<float>()[i], want, tol * std::max(1.0, std::abs(want)))
        << ir::OpName(kind) << " at x = " << x[i];
  }
}

TEST(ElementwiseUnary, Activations) {
  const std::vector<float> x = Values(257, -6.0f, 6.0f);
  ExpectUnary(OpKind::kRelu, ir::NoAttrs{}, x, [](double v) { return v > 0 ? v : 0.0; });
  ExpectUnary(OpKind::kLeakyRelu, ir::LeakyReluAttrs{0.1f}, x,
              [](double v) { return v > 0 ? v : 0.1f * v; });
  ExpectUnary(OpKind::kSigmoid, ir::NoAttrs{}, x, [](double v) { return 1 / (1 + std::exp(-v)); });
  ExpectUnary(OpKind::kHardSigmoid, ir::HardSigmoidAttrs{0.25f, 0.4f}, x,
              [](double v) { return std::min(1.0, std::max(0.0, 0.25 * v + 0.4)); });
  ExpectUnary(OpKind::kHardSwish, ir::NoAttrs{}, x,
              [](double v) { return v * std::min(1.0, std::max(0.0, v / 6 + 0.5)); });
  ExpectUnary(OpKind::kTanh, ir::NoAttrs{}, x, [](double v) { return std::tanh(v); });
  ExpectUnary(OpKind::kErf, ir::NoAttrs{}, x, [](double v) { return std::erf(v); });
  ExpectUnary(OpKind::kElu, ir::EluAttrs{0.7f}, x,
              [](double v) { return v < 0 ? 0.7f * (std::exp(v) - 1) : v; });
  const ir::SeluAttrs selu;
  ExpectUnary(OpKind::kSelu, selu, x, [&](double v) {
    return v > 0 ? selu.gamma * v : selu.gamma * (selu.alpha * std::exp(v) - selu.alpha);
  });
  ExpectUnary(OpKind::kCelu, ir::EluAttrs{2.0f}, x, [](double v) {
    return std::max(0.0, v) + std::min(0.0, 2.0 * (std::exp(v / 2.0) - 1));
  });
  ExpectUnary(OpKind::kThresholdedRelu, ir::ThresholdedReluAttrs{1.5f}, x,
              [](double v) { return v > 1.5 ? v : 0.0; });
  ExpectUnary(OpKind::kSoftplus, ir::NoAttrs{}, x,
              [](double v) { return std::log(std::exp(v) + 1); });
  ExpectUnary(OpKind::kSoftsign, ir::NoAttrs{}, x, [](double v) { return v / (1 + std::abs(v)); });
  ExpectUnary(OpKind::kMish, ir::NoAttrs{}, x,
              [](double v) { return v * std::tanh(std::log1p(std::exp(v))); });
  ExpectUnary(OpKind::kGelu, ir::GeluAttrs{}, x,
              [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); });
  ExpectUnary(OpKind::kGelu, ir::GeluAttrs{ir::GeluApprox::kTanh}, x, [](double v) {
    const double pi = std::acos(-1.0);
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / pi) * (v + 0.044715 * v * v * v)));
  });
  ExpectUnary(OpKind::kShrink, ir::ShrinkAttrs{0.3f, 1.0f}, x,
              [](double v) { return v < -1 ? v + 0.3f : (v > 1 ? v - 0.3f : 0.0); });
}

TEST(ElementwiseUnary, ActivationsStayFiniteAtExtremes) {
  const std::vector<float> x = {-1000.0f, -90.0f, 90.0f, 1000.0f};
  ExpectUnary(OpKind::kSigmoid, ir::NoAttrs{}, x, [](double v) { return v > 0 ? 1.0 : 0.0; });
  ExpectUnary(OpKind::kSoftplus, ir::NoAttrs{}, x, [](double v) { return v > 0 ? v : 0.0; });
  ExpectUnary(OpKind::kMish, ir::NoAttrs{}, x, [](double v) { return v > 0 ? v : -0.0; });
}

TEST(ElementwiseUnary, Math) {
  const std::vector<float> x = Values(101, -3.0f, 3.0f, 2);
  const std::vector<float> pos = Values(101, 0.01f, 5.0f, 3);
  const std::vector<float> unit = Values(101, -0.99f, 0.99f, 4);
  ExpectUnary(OpKind::kSqrt, ir::NoAttrs{}, pos, [](double v) { return std::sqrt(v); });
  ExpectUnary(OpKind::kExp, ir::NoAttrs{}, x, [](double v) { return std::exp(v); });
  ExpectUnary(OpKind::kLog, ir::NoAttrs{}, pos, [](double v) { return std::log(v); });
  ExpectUnary(OpKind::kNeg, ir::NoAttrs{}, x, [](double v) { return -v; });
  ExpectUnary(OpKind::kAbs, ir::NoAttrs{}, x, [](double v) { return std::abs(v); });
  ExpectUnary(OpKind::kReciprocal, ir::NoAttrs{}, pos, [](double v) { return 1 / v; });
  ExpectUnary(OpKind::kFloor, ir::NoAttrs{}, x, [](double v) { return std::floor(v); });
  ExpectUnary(OpKind::kCeil, ir::NoAttrs{}, x, [](double v) { return std::ceil(v); });
  ExpectUnary(OpKind::kSign, ir::NoAttrs{}, x, [](double v) { return v > 0 ? 1.0 : -1.0; });
  ExpectUnary(OpKind::kSin, ir::NoAttrs{}, x, [](double v) { return std::sin(v); });
  ExpectUnary(OpKind::kCos, ir::NoAttrs{}, x, [](double v) { return std::cos(v); });
  ExpectUnary(OpKind::kTan, ir::NoAttrs{}, unit, [](double v) { return std::tan(v); });
  ExpectUnary(OpKind::kAsin, ir::NoAttrs{}, unit, [](double v) { return std::asin(v); });
  ExpectUnary(OpKind::kAcos, ir::NoAttrs{}, unit, [](double v) { return std::acos(v); });
  ExpectUnary(OpKind::kAtan, ir::NoAttrs{}, x, [](double v) { return std::atan(v); });
  ExpectUnary(OpKind::kSinh, ir::NoAttrs{}, x, [](double v) { return std::sinh(v); });
  ExpectUnary(OpKind::kCosh, ir::NoAttrs{}, x, [](double v) { return std::cosh(v); });
  ExpectUnary(OpKind::kAsinh, ir::NoAttrs{}, x, [](double v) { return std::asinh(v); });
  ExpectUnary(OpKind::kAcosh, ir::NoAttrs{}, Values(50, 1.0f, 9.0f, 5),
              [](double v) { return std::acosh(v); });
  ExpectUnary(
      OpKind::kAtanh, ir::NoAttrs{}, unit, [](double v) { return std::atanh(v); }, 1e-5);
}

TEST(ElementwiseUnary, RoundIsHalfToEven) {
  auto out = RunSingleOp(OpKind::kRound, ir::NoAttrs{},
                         {{F32({7}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, -2.6f})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].ToFloatVector(), (std::vector<float>{0, 2, 2, -0.0f, -2, 2, -3}));
}

TEST(ElementwiseUnary, ClipWithOptionalBounds) {
  const Tensor x = F32({5}, {-3, -1, 0, 2, 9});
  auto both = RunSingleOp(OpKind::kClip, ir::NoAttrs{},
                          {{x}, {F32({}, {-1.5f}), true}, {F32({}, {4.0f}), true}});
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ((*both)[0].ToFloatVector(), (std::vector<float>{-1.5f, -1, 0, 2, 4}));
  auto max_only = RunSingleOp(OpKind::kClip, ir::NoAttrs{}, {{x}, {Tensor()}, {F32({}, {1.0f})}});
  ASSERT_TRUE(max_only.ok()) << max_only.status();
  EXPECT_EQ((*max_only)[0].ToFloatVector(), (std::vector<float>{-3, -1, 0, 1, 1}));
  auto none = RunSingleOp(OpKind::kClip, ir::NoAttrs{}, {{x}});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ((*none)[0].ToFloatVector(), x.ToFloatVector());
  auto ints = RunSingleOp(OpKind::kClip, ir::NoAttrs{},
                          {{Tensor::FromVector<int32_t>(DType::kInt32, {4}, {-7, 0, 5, 100})},
                           {Tensor::FromVector<int32_t>(DType::kInt32, {}, {-2})}});
  ASSERT_TRUE(ints.ok()) << ints.status();
  EXPECT_EQ((*ints)[0].ToInt64Vector(), (std::vector<int64_t>{-2, 0, 5, 100}));
}

TEST(ElementwiseUnary, IntegerAbsNegSignRelu) {
  const Tensor x = Tensor::FromVector<int64_t>(DType::kInt64, {4}, {-5, 0, 7, -1});
  auto run = [&](OpKind k) {
    auto out = RunSingleOp(k, ir::NoAttrs{}, {{x}});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? (*out)[0].ToInt64Vector() : std::vector<int64_t>{};
  };
  EXPECT_EQ(run(OpKind::kAbs), (std::vector<int64_t>{5, 0, 7, 1}));
  EXPECT_EQ(run(OpKind::kNeg), (std::vector<int64_t>{5, 0, -7, 1}));
  EXPECT_EQ(run(OpKind::kSign), (std::vector<int64_t>{-1, 0, 1, -1}));
  EXPECT_EQ(run(OpKind::kRelu), (std::vector<int64_t>{0, 0, 7, 0}));
  auto i8 = RunSingleOp(OpKind::kAbs, ir::NoAttrs{},
                        {{Tensor::FromVector<int8_t>(DType::kInt8, {2}, {-128, -3})}});
  ASSERT_TRUE(i8.ok()) << i8.status();
  EXPECT_EQ((*i8)[0].ToInt64Vector(), (std::vector<int64_t>{-128, 3}));  // wraps like C
}

TEST(ElementwiseUnary, Float64AndFloat16) {
  auto f64 = RunSingleOp(OpKind::kExp, ir::NoAttrs{},
                         {{Tensor::FromVector<double>(DType::kFloat64, {2}, {1.0, -2.0})}});
  ASSERT_TRUE(f64.ok()) << f64.status();
  EXPECT_EQ((*f64)[0].dtype(), DType::kFloat64);
  EXPECT_DOUBLE_EQ((*f64)[0].data<double>()[0], std::exp(1.0));
  EXPECT_DOUBLE_EQ((*f64)[0].data<double>()[1], std::exp(-2.0));
  const Tensor h = CastTensor(F32({3}, {-1.0f, 0.5f, 2.0f}), DType::kFloat16);
  auto f16 = RunSingleOp(OpKind::kRelu, ir::NoAttrs{}, {{h}});
  ASSERT_TRUE(f16.ok()) << f16.status();
  EXPECT_EQ((*f16)[0].dtype(), DType::kFloat16);
  EXPECT_EQ((*f16)[0].ToFloatVector(), (std::vector<float>{0.0f, 0.5f, 2.0f}));
}

TEST(ElementwiseUnary, ClassifiersAndNot) {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = F32({4}, {1.0f, inf, -inf, std::nanf("")});
  auto nan = RunSingleOp(OpKind::kIsNaN, ir::NoAttrs{}, {{x}});
  ASSERT_TRUE(nan.ok()) << nan.status();
  EXPECT_EQ((*nan)[0].dtype(), DType::kBool);
  EXPECT_EQ((*nan)[0].ToInt64Vector(), (std::vector<int64_t>{0, 0, 0, 1}));
  auto inf_both = RunSingleOp(OpKind::kIsInf, ir::IsInfAttrs{}, {{x}});
  ASSERT_TRUE(inf_both.ok()) << inf_both.status();
  EXPECT_EQ((*inf_both)[0].ToInt64Vector(), (std::vector<int64_t>{0, 1, 1, 0}));
  auto inf_neg = RunSingleOp(OpKind::kIsInf, ir::IsInfAttrs{1, 0}, {{x}});
  ASSERT_TRUE(inf_neg.ok()) << inf_neg.status();
  EXPECT_EQ((*inf_neg)[0].ToInt64Vector(), (std::vector<int64_t>{0, 0, 1, 0}));
  auto not_out = RunSingleOp(OpKind::kNot, ir::NoAttrs{},
                             {{Tensor::FromVector<uint8_t>(DType::kBool, {3}, {1, 0, 1})}});
  ASSERT_TRUE(not_out.ok()) << not_out.status();
  EXPECT_EQ((*not_out)[0].ToInt64Vector(), (std::vector<int64_t>{0, 1, 0}));
}

TEST(ElementwiseMath, ExpAndTanhWithinTwoUlps) {
  // A sweep with geometric steps near 0 and fine steps elsewhere, against libm in double.
  int checked = 0;
  for (float x = -103.0f; x < 88.7f; x += std::max(1e-3f, std::abs(x) * 1e-4f)) {
    for (float v : {x, std::nextafter(x, 0.0f), x * 1e-6f}) {
      const double e = std::exp(double{v});
      const double ulp = std::max<double>(std::numeric_limits<float>::denorm_min(),
                                          std::abs(e) * std::numeric_limits<float>::epsilon());
      ASSERT_NEAR(cpu::ExpF32(v), e, 2 * ulp) << v;
      const double t = std::tanh(double{v});
      ASSERT_NEAR(cpu::TanhF32(v), t,
                  2 * std::abs(t) * std::numeric_limits<float>::epsilon() +
                      std::numeric_limits<float>::denorm_min())
          << v;
      ++checked;
    }
  }
  EXPECT_GT(checked, 10000);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(cpu::ExpF32(inf), inf);
  EXPECT_EQ(cpu::ExpF32(89.0f), inf);
  EXPECT_EQ(cpu::ExpF32(-inf), 0.0f);
  EXPECT_EQ(cpu::ExpF32(-105.0f), 0.0f);
  EXPECT_TRUE(std::isnan(cpu::ExpF32(std::nanf(""))));
  EXPECT_EQ(cpu::TanhF32(inf), 1.0f);
  EXPECT_EQ(cpu::TanhF32(-inf), -1.0f);
  EXPECT_TRUE(std::isnan(cpu::TanhF32(std::nanf(""))));
}

TEST(ElementwiseMath, ErfWithinThreeTenMillionths) {
  // Absolute error below 3e-7 everywhere (Abramowitz and Stegun 7.1.26 is 1.5e-7, plus float
  // rounding), and relative error below 1e-6 near 0 (the series), against libm in double.
  int checked = 0;
  for (float x = -6.0f; x < 6.0f; x += 1.3e-4f) {
    for (float v : {x, x * 1e-5f}) {
      const double e = std::erf(double{v});
      ASSERT_NEAR(cpu::ErfF32(v), e, 3e-7) << v;
      if (std::abs(v) < 0.5f) {
        ASSERT_NEAR(cpu::ErfF32(v), e, 1e-6 * std::abs(e) + 1e-30) << v;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 100000);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(cpu::ErfF32(inf), 1.0f);
  EXPECT_EQ(cpu::ErfF32(-inf), -1.0f);
  EXPECT_EQ(cpu::ErfF32(0.0f), 0.0f);
  EXPECT_TRUE(std::isnan(cpu::ErfF32(std::nanf(""))));
}

TEST(ElementwiseMath, GeluWithinItsStatedError) {
  // support/fast_math.h's bound: 2.1e-7 relative for x > 0, 8.3e-7 absolute for x < 0 (where
  // 1 + erf cancels), against erfc in double, on a grid of 2.4 million points and their 1e-4
  // multiples; and the Gelu op (the SIMD loop this CPU runs) gives the scalar function's bits.
  std::vector<float> x;
  for (float v = -12.0f; v < 12.0f; v += 1e-5f) {
    x.push_back(v);
    x.push_back(v * 1e-4f);
  }
  double worst_pos = 0, worst_neg = 0;
  for (float v : x) {
    const double want = 0.5 * v * std::erfc(-double{v} / std::sqrt(2.0));
    const double err = std::abs(double{GeluF32(v)} - want);
    if (v > 0) worst_pos = std::max(worst_pos, err / want);
    if (v < 0) worst_neg = std::max(worst_neg, err);
  }
  EXPECT_LT(worst_pos, 2.1e-7);
  EXPECT_LT(worst_neg, 8.3e-7);
  const float inf = std::numeric_limits<float>::infinity();
  x.insert(x.end(), {0.0f, -0.0f, inf, -inf, std::nanf(""), 1e30f, -1e30f, 1e-40f});
  auto out =
      RunSingleOp(OpKind::kGelu, ir::GeluAttrs{}, {{F32({static_cast<int64_t>(x.size())}, x)}});
  ASSERT_TRUE(out.ok()) << out.status();
  const float* y = (*out)[0].data<float>();
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = GeluF32(x[i]);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(y[i])) << x[i];
    } else {
      ASSERT_EQ(BitCast<uint32_t>(y[i]), BitCast<uint32_t>(want)) << x[i];
    }
  }
  EXPECT_EQ(GeluF32(0.0f), 0.0f);
  EXPECT_EQ(GeluF32(inf), inf);
  EXPECT_TRUE(std::isnan(GeluF32(-inf)));  // -inf * (1 + erf(-inf)) = -inf * 0
  EXPECT_TRUE(std::isnan(GeluF32(std::nanf(""))));
  EXPECT_FLOAT_EQ(GeluF32(1e30f), 1e30f);
  EXPECT_EQ(GeluF32(-1e30f), 0.0f);
}

TEST(ElementwiseUnary, UnsupportedDTypeIsUnimplemented) {
  auto out = RunSingleOp(OpKind::kSigmoid, ir::NoAttrs{},
                         {{Tensor::FromVector<int32_t>(DType::kInt32, {2}, {1, 2})}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(out.status().message().find("i32"), absl::string_view::npos) << out.status();
}

}  // namespace
}  // namespace qcc
