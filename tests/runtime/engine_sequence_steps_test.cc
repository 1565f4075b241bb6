// The step kinds a transformer needs (issue 13): Gather (with the engine's id check), Cast from
// integers, batched MatMul, Reduce, LayerNorm, QGemm's fp32 result, DynamicQGemm and Attention,
// against
// loops written out here, at two batches of a dynamic plan; and what their prepare refuses.
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/cpu/attention.h"
#include "support/quantize.h"
#include "tests/runtime/engine_test_util.h"

namespace qcc::runtime {
namespace {

using engine_testing::CreateError;
using engine_testing::MakeEngine;
using engine_testing::PlanBuilder;
using engine_testing::RandomFloat;
using engine_testing::RunPlan;

using engine_testing::kF32;
using engine_testing::kI64;

/// `n` values in [-2, 2).
std::vector<float> Values(int64_t n, uint64_t seed) {
  const Tensor t = RandomFloat({n}, seed);
  return std::vector<float>(t.data<float>(), t.data<float>() + n);
}

Tensor Ints(Dims dims, const std::vector<int64_t>& values) {
  Tensor t(kI64, std::move(dims));
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return t;
}

TEST(EngineSequenceStepsTest, GatherLooksUpRowsByIdAndCastWidensIntegers) {
  // ids [N, 3] -> table [5, 2] rows -> [N, 3, 2]; and the ids as f32.
  PlanBuilder b(1, 4);
  const int32_t ids = b.Input("ids", kI64, {-1, 3});
  std::vector<float> table(10);
  for (int i = 0; i < 10; ++i) table[i] = 0.5f * static_cast<float>(i) - 1.0f;
  const int32_t w = b.Weight("table", kF32, {5, 2}, table);
  const int32_t rows = b.Output("rows", kF32, {-1, 3, 2});
  const int32_t wide = b.Output("wide", kF32, {-1, 3});
  b.Step(StepKind::kGather, "embed", {w, ids}, {rows}, AxisStepParams{0});
  b.Step(StepKind::kCast, "cast", {ids}, {wide}, NoStepParams{});
  for (int64_t n : {1, 2}) {
    std::vector<int64_t> values = {4, 0, -1, 2, 3, 1};
    values.resize(n * 3);
    const std::vector<Tensor> out = RunPlan(b.plan(), {Ints({n, 3}, values)});
    ASSERT_EQ(out.size(), 2u);
    for (int64_t i = 0; i < n * 3; ++i) {
      const int64_t row = values[i] < 0 ? values[i] + 5 : values[i];
      EXPECT_EQ(out[0].data<float>()[2 * i], table[2 * row]) << i;
      EXPECT_EQ(out[0].data<float>()[2 * i + 1], table[2 * row + 1]) << i;
      EXPECT_EQ(out[1].data<float>()[i], static_cast<float>(values[i])) << i;
    }
  }
  // An id outside the table is the caller's error, named, before anything runs.
  std::shared_ptr<const Engine> engine = MakeEngine(b.plan());
  ASSERT_NE(engine, nullptr);
  for (int64_t bad : {5, -6}) {
    absl::StatusOr<std::vector<Tensor>> r =
        engine->CreateContext()->Run({Ints({1, 3}, {0, bad, 1})});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(absl::StrCat("'ids': id ", bad, " at element 1")),
              std::string::npos)
        << r.status();
    EXPECT_NE(r.status().message().find("5 rows"), std::string::npos) << r.status();
  }
}

TEST(EngineSequenceStepsTest, MatMulBroadcastsBatchAxes) {
  // A [N, 2, 3, 4] x B [1, 4, 5] (a shared operand) -> [N, 2, 3, 5].
  PlanBuilder b(1, 3);
  const int32_t a = b.Input("a", kF32, {-1, 2, 3, 4});
  const std::vector<float> wb = Values(20, 3);
  const int32_t w = b.Weight("b", kF32, {1, 4, 5}, wb);
  const int32_t y = b.Output("y", kF32, {-1, 2, 3, 5});
  b.Step(StepKind::kMatMul, "mm", {a, w}, {y}, NoStepParams{});
  for (int64_t n : {1, 3}) {
    Tensor x(kF32, {n, 2, 3, 4});
    const std::vector<float> xv = Values(x.numel(), 7 + n);
    std::copy(xv.begin(), xv.end(), x.data<float>());
    const std::vector<Tensor> out = RunPlan(b.plan(), {x}, 2);
    ASSERT_EQ(out.size(), 1u);
    for (int64_t r = 0; r < n * 2 * 3; ++r) {
      for (int64_t j = 0; j < 5; ++j) {
        double want = 0;
        for (int64_t k = 0; k < 4; ++k) want += double{xv[r * 4 + k]} * wb[k * 5 + j];
        EXPECT_NEAR(out[0].data<float>()[r * 5 + j], want, 1e-5) << r << "," << j;
      }
    }
  }
  EXPECT_NE(
      CreateError([] {
        PlanBuilder p(1, 1);
        const int32_t x = p.Input("a", kF32, {2, 3});
        const int32_t w = p.Weight("b", kF32, {4, 5}, std::vector<float>(20));
        p.Step(StepKind::kMatMul, "bad", {x, w}, {p.Output("y", kF32, {2, 5})}, NoStepParams{});
        return p.plan();
      }())
          .message()
          .find("do not multiply"),
      std::string::npos);
}

TEST(EngineSequenceStepsTest, BroadcastThatHoldsOnlyAtSomeBatchesIsRefused) {
  // A [N, 2, 3] x B [4, 3, 5]: the batch axis broadcasts against 4 at batch 1 and matches at
  // batch 4, but not at 2 or 3 (where the kernel would read past A).
  PlanBuilder p(1, 4);
  const int32_t a = p.Input("a", kF32, {-1, 2, 3});
  const int32_t b = p.Weight("b", kF32, {4, 3, 5}, std::vector<float>(60));
  p.Step(StepKind::kMatMul, "mm", {a, b}, {p.Output("y", kF32, {4, 2, 5})}, NoStepParams{});
  EXPECT_NE(CreateError(p.plan()).message().find("broadcast only at some batches"),
            std::string::npos)
      << CreateError(p.plan());
}

TEST(EngineSequenceStepsTest, ReduceSumsAndMeansOverAxes) {
  PlanBuilder b(1, 2);
  const int32_t x = b.Input("x", kF32, {-1, 3, 4});
  const int32_t sum = b.Output("sum", kF32, {-1, 4});       // over axis 1, no kept axis
  const int32_t mean = b.Output("mean", kF32, {-1, 3, 1});  // over axis 2, kept as 1
  b.Step(StepKind::kReduce, "sum", {x}, {sum},
         ReduceStepParams{static_cast<int64_t>(ReduceOp::kSum), {1}});
  b.Step(StepKind::kReduce, "mean", {x}, {mean},
         ReduceStepParams{static_cast<int64_t>(ReduceOp::kMean), {2}});
  for (int64_t n : {1, 2}) {
    Tensor t(kF32, {n, 3, 4});
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i % 7) - 2;
    const std::vector<Tensor> out = RunPlan(b.plan(), {t});
    ASSERT_EQ(out.size(), 2u);
    const float* v = t.data<float>();
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < 4; ++k) {
        float s = 0;
        for (int64_t c = 0; c < 3; ++c) s += v[(i * 3 + c) * 4 + k];
        EXPECT_FLOAT_EQ(out[0].data<float>()[i * 4 + k], s);
      }
      for (int64_t c = 0; c < 3; ++c) {
        float s = 0;
        for (int64_t k = 0; k < 4; ++k) s += v[(i * 3 + c) * 4 + k];
        EXPECT_FLOAT_EQ(out[1].data<float>()[i * 3 + c], s / 4);
      }
    }
  }
  EXPECT_NE(CreateError([] {
              PlanBuilder p(1, 1);
              const int32_t in = p.Input("x", kF32, {2, 3});
              p.Step(StepKind::kReduce, "bad", {in}, {p.Output("y", kF32, {2})},
                     ReduceStepParams{0, {1, 0}});
              return p.plan();
            }())
                .message()
                .find("axes must ascend"),
            std::string::npos);
}

TEST(EngineSequenceStepsTest, LayerNormNormalizesTheTrailingAxis) {
  PlanBuilder b(1, 2);
  const int32_t x = b.Input("x", kF32, {-1, 2, 6});
  const std::vector<float> gamma = {1, 2, 0.5f, -1, 1, 3}, beta = {0, 1, 0, -1, 0.5f, 0};
  const int32_t g = b.Weight("gamma", kF32, {6}, gamma);
  const int32_t be = b.Weight("beta", kF32, {6}, beta);
  const int32_t y = b.Output("y", kF32, {-1, 2, 6});
  b.Step(StepKind::kLayerNorm, "ln", {x, g, be}, {y}, LayerNormStepParams{-1, 1e-5f});
  for (int64_t n : {1, 2}) {
    Tensor t(kF32, {n, 2, 6});
    const std::vector<float> v = Values(t.numel(), 11 + n);
    std::copy(v.begin(), v.end(), t.data<float>());
    const std::vector<Tensor> out = RunPlan(b.plan(), {t});
    ASSERT_EQ(out.size(), 1u);
    for (int64_t r = 0; r < n * 2; ++r) {
      double mean = 0, var = 0;
      for (int k = 0; k < 6; ++k) mean += v[r * 6 + k] / 6.0;
      for (int k = 0; k < 6; ++k) var += (v[r * 6 + k] - mean) * (v[r * 6 + k] - mean) / 6.0;
      for (int k = 0; k < 6; ++k) {
        const double want = (v[r * 6 + k] - mean) / std::sqrt(var + 1e-5) * gamma[k] + beta[k];
        EXPECT_NEAR(out[0].data<float>()[r * 6 + k], want, 1e-5);
      }
    }
  }
}

TEST(EngineSequenceStepsTest, QGemmGivesTheFp32ResultWithItsFloatBias) {
  // A [N, 2, 3] int8 x W [4, 3] -> f32 [N, 2, 4] = acc * multiplier + bias.
  PlanBuilder b(1, 2);
  const int32_t a = b.Input("a", DType::kInt8, {-1, 2, 3});
  const std::vector<int8_t> w = {1, -2, 3, 4, 5, -6, -7, 8, 9, 127, -127, 0};
  const std::vector<int32_t> corr = {10, -20, 0, 5};
  const std::vector<float> mult = {0.5f, 0.25f, 0.125f, 1.0f}, fbias = {1, -1, 0.5f, 0};
  const int32_t y = b.Output("y", kF32, {-1, 2, 4});
  b.Step(StepKind::kQGemm, "fc",
         {a, b.Weight("w", DType::kInt8, {4, 3}, w), b.Weight("c", DType::kInt32, {4}, corr),
          b.Weight("m", kF32, {4}, mult), b.Weight("fb", kF32, {4}, fbias)},
         {y}, QGemmStepParams{});
  for (int64_t n : {1, 2}) {
    Tensor x(DType::kInt8, {n, 2, 3});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<int8_t>()[i] = static_cast<int8_t>(31 * i - 90);
    const std::vector<Tensor> out = RunPlan(b.plan(), {x});
    ASSERT_EQ(out.size(), 1u);
    for (int64_t r = 0; r < n * 2; ++r) {
      for (int64_t j = 0; j < 4; ++j) {
        int32_t acc = corr[j];
        for (int64_t k = 0; k < 3; ++k) acc += x.data<int8_t>()[r * 3 + k] * w[j * 3 + k];
        const float scaled = static_cast<float>(acc) * mult[j];
        EXPECT_EQ(out[0].data<float>()[r * 4 + j], scaled + fbias[j]) << r << "," << j;
      }
    }
  }
}

TEST(EngineSequenceStepsTest, DynamicQGemmQuantizesEachRowOfItsInputPerRun) {
  // X [N, 5, 8] f32: per run and per row r, symmetric scale s_r = max|x_r| / 127, the int8 GEMM,
  // fp32 out float(acc) * w_scale[j] * s_r + bias[j]. A row of zeros gives the bias; a row with
  // a NaN gives NaN (and only that row).
  PlanBuilder b(1, 2);
  const int32_t x = b.Input("x", kF32, {-1, 5, 8});
  std::vector<int8_t> w(3 * 8);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = static_cast<int8_t>(static_cast<int>(i * 37 % 255) - 127);
  const std::vector<float> w_scale = {0.01f, 0.02f, 0.005f}, bias = {0.5f, -0.25f, 0};
  const int32_t y = b.Output("y", kF32, {-1, 5, 3});
  b.Step(StepKind::kDynamicQGemm, "fc",
         {x, b.Weight("w", DType::kInt8, {3, 8}, w), b.Weight("s", kF32, {3}, w_scale),
          b.Weight("b", kF32, {3}, bias)},
         {y}, NoStepParams{});
  for (int64_t n : {1, 2}) {
    Tensor t(kF32, {n, 5, 8});
    const std::vector<float> v = Values(t.numel(), 21 + n);
    for (int64_t i = 0; i < t.numel(); ++i) {
      t.data<float>()[i] = (3 * v[i] + 0.5f) * static_cast<float>(1 + i / 8);  // rows differ
    }
    for (int64_t k = 0; k < 8; ++k) t.data<float>()[1 * 8 + k] = 0.0f;  // row 1: zeros
    if (n == 2) t.data<float>()[7 * 8 + 3] = std::nanf("");             // row 7: a NaN
    const std::vector<Tensor> out = RunPlan(b.plan(), {t}, 2);
    ASSERT_EQ(out.size(), 1u);
    for (int64_t r = 0; r < n * 5; ++r) {
      const float* xr = t.data<float>() + r * 8;
      float m = 0;
      for (int64_t k = 0; k < 8; ++k) m = std::max(m, std::fabs(xr[k]));
      const float inv = m > 0 ? 127.0f / m : 0.0f;
      for (int64_t j = 0; j < 3; ++j) {
        const float got = out[0].data<float>()[r * 3 + j];
        if (n == 2 && r == 7) {
          EXPECT_TRUE(std::isnan(got)) << r << "," << j;
          continue;
        }
        int32_t acc = 0;
        for (int64_t k = 0; k < 8; ++k) {
          const float q = std::min(127.0f, std::max(-127.0f, std::nearbyint(xr[k] * inv)));
          acc += static_cast<int32_t>(q) * w[j * 8 + k];
        }
        const float scaled = static_cast<float>(acc) * w_scale[j] * (m / 127.0f);
        EXPECT_EQ(got, scaled + bias[j]) << r << "," << j;
        if (r == 1) {
          EXPECT_EQ(got, bias[j]);
        }
      }
    }
  }
}

TEST(EngineSequenceStepsTest, DynamicQGemmsRefusesOperandsThatAreNotTriples) {
  // X, then (W, weight scale, bias) per output: a missing bias slot, one output, and a W that
  // does not fit X are each refused, naming what was expected.
  struct Bad {
    int outputs;
    bool drop_last_bias;
    int64_t k2;
    const char* message;
  };
  const Bad cases[] = {
      {2, true, 8, "expected 1 + 3 G inputs"},
      {1, false, 8, "G >= 2 outputs"},
      {2, false, 5, "does not fit X"},
  };
  for (const Bad& bad : cases) {
    PlanBuilder b(1, 2);
    const int32_t x = b.Input("x", kF32, {-1, 8});
    std::vector<int32_t> ins = {x}, outs;
    for (int i = 0; i < bad.outputs; ++i) {
      const int64_t k = i == 1 ? bad.k2 : 8;
      const std::string n = absl::StrCat(i);
      ins.push_back(b.Weight("w" + n, DType::kInt8, {3, k}, std::vector<int8_t>(3 * k, 1)));
      ins.push_back(b.Weight("s" + n, kF32, {3}, std::vector<float>{1, 1, 1}));
      ins.push_back(-1);
      outs.push_back(b.Output("y" + n, kF32, {-1, 3}));
    }
    if (bad.drop_last_bias) ins.pop_back();
    b.Step(StepKind::kDynamicQGemms, "qkv", ins, outs, NoStepParams{});
    const absl::Status s = CreateError(b.plan());
    EXPECT_NE(s.message().find(bad.message), std::string::npos) << s;
  }
}

/// softmax(scale * Q Kᵀ + mask) V per head, in double: Q [n, sq, hq*d], K [n, skv, hk*d],
/// V [n, skv, hk*dv], mask [n, 1, 1, skv], or [sq, 1] (one value per query row), or empty ->
/// [n, sq, hq*dv].
std::vector<double> AttentionLoops(const std::vector<float>& q, const std::vector<float>& k,
                                   const std::vector<float>& v, const std::vector<float>& mask,
                                   int64_t n, int64_t sq, int64_t skv, int64_t hq, int64_t hk,
                                   int64_t d, int64_t dv, float scale) {
  std::vector<double> y(n * sq * hq * dv);
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t g = h / (hq / hk);
      for (int64_t i = 0; i < sq; ++i) {
        std::vector<double> s(skv);
        double m = -1e300, sum = 0;
        for (int64_t j = 0; j < skv; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < d; ++e) {
            dot += double{q[(b * sq + i) * hq * d + h * d + e]} *
                   k[(b * skv + j) * hk * d + g * d + e];
          }
          s[j] = scale * dot + (mask.empty()                                  ? 0.0
                                : mask.size() == static_cast<size_t>(n * skv) ? mask[b * skv + j]
                                                                              : mask[i]);
          m = std::max(m, s[j]);
        }
        for (int64_t j = 0; j < skv; ++j) sum += s[j] = std::exp(s[j] - m);
        for (int64_t e = 0; e < dv; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < skv; ++j)
            acc += s[j] / sum * v[(b * skv + j) * hk * dv + g * dv + e];
          y[(b * sq + i) * hq * dv + h * dv + e] = acc;
        }
      }
    }
  }
  return y;
}

TEST(EngineSequenceStepsTest, AttentionIsSoftmaxOfMaskedScoresTimesV) {
  // 4 query heads over 4 K/V heads (multi-head) or 1 (multi-query), Sq 5, Skv 7, D 3, Dv 2,
  // a [N, 1, 1, 7] additive mask or none, on 1 and 2 threads at batches 1 and 3.
  for (int64_t hk : {4, 1}) {
    for (bool with_mask : {true, false}) {
      SCOPED_TRACE(absl::StrCat("kv heads ", hk, " mask ", with_mask));
      constexpr int64_t kSq = 5, kSkv = 7, kHq = 4, kD = 3, kDv = 2;
      PlanBuilder b(1, 3);
      const int32_t q = b.Input("q", kF32, {-1, kSq, kHq * kD});
      const int32_t k = b.Input("k", kF32, {-1, kSkv, hk * kD});
      const int32_t v = b.Input("v", kF32, {-1, kSkv, hk * kDv});
      std::vector<int32_t> ins = {q, k, v};
      if (with_mask) ins.push_back(b.Input("mask", kF32, {-1, 1, 1, kSkv}));
      const int32_t y = b.Output("y", kF32, {-1, kSq, kHq * kDv});
      b.Step(StepKind::kAttention, "attention", ins, {y}, AttentionStepParams{kHq, hk, 0.7f});
      for (int64_t n : {1, 3}) {
        auto make = [&](Dims dims, uint64_t seed) {
          Tensor t(kF32, std::move(dims));
          const std::vector<float> values = Values(t.numel(), seed);
          std::copy(values.begin(), values.end(), t.data<float>());
          return std::make_pair(t, values);
        };
        auto [tq, vq] = make({n, kSq, kHq * kD}, 21 + n);
        auto [tk, vk] = make({n, kSkv, hk * kD}, 31 + n);
        auto [tv, vv] = make({n, kSkv, hk * kDv}, 41 + n);
        std::vector<float> vm;
        std::vector<Tensor> inputs = {tq, tk, tv};
        if (with_mask) {
          Tensor tm(kF32, {n, 1, 1, kSkv});
          for (int64_t i = 0; i < tm.numel(); ++i) {
            vm.push_back(i % kSkv == (i / kSkv) % kSkv ? -10000.0f : 0.25f * (i % 3));
          }
          std::copy(vm.begin(), vm.end(), tm.data<float>());
          inputs.push_back(tm);
        }
        const std::vector<double> want =
            AttentionLoops(vq, vk, vv, vm, n, kSq, kSkv, kHq, hk, kD, kDv, 0.7f);
        const std::vector<Tensor> one = RunPlan(b.plan(), inputs, 1);
        const std::vector<Tensor> two = RunPlan(b.plan(), inputs, 2);
        ASSERT_EQ(one.size(), 1u);
        ASSERT_EQ(two.size(), 1u);
        ASSERT_EQ(one[0].numel(), static_cast<int64_t>(want.size()));
        for (size_t i = 0; i < want.size(); ++i) {
          EXPECT_NEAR(one[0].data<float>()[i], want[i], 2e-6) << i;
          EXPECT_EQ(two[0].data<float>()[i], one[0].data<float>()[i]) << i;  // threads: same bits
        }
      }
    }
  }
}

TEST(EngineSequenceStepsTest, AttentionSplitsOverTwoThreadsAndTakesARowMask) {
  // Enough work for two threads (4 heads of 64 x 64 scores per item); a [Sq, 1] mask, constant
  // along each row (added before the softmax, where it changes nothing but the rounding).
  constexpr int64_t kS = 64, kH = 4, kD = 16;
  PlanBuilder b(1, 2);
  const int32_t q = b.Input("q", kF32, {-1, kS, kH * kD});
  const int32_t k = b.Input("k", kF32, {-1, kS, kH * kD});
  const int32_t v = b.Input("v", kF32, {-1, kS, kH * kD});
  std::vector<float> row_mask(kS);
  for (int64_t i = 0; i < kS; ++i) row_mask[i] = 0.5f * static_cast<float>(i % 5) - 1.0f;
  const int32_t m = b.Weight("mask", kF32, {kS, 1}, row_mask);
  const int32_t y = b.Output("y", kF32, {-1, kS, kH * kD});
  b.Step(StepKind::kAttention, "attention", {q, k, v, m}, {y}, AttentionStepParams{kH, kH, 0.25f});
  constexpr int64_t kN = 2;
  std::vector<Tensor> inputs;
  std::vector<std::vector<float>> values;
  for (uint64_t seed : {51, 52, 53}) {
    Tensor t(kF32, {kN, kS, kH * kD});
    values.push_back(Values(t.numel(), seed));
    std::copy(values.back().begin(), values.back().end(), t.data<float>());
    inputs.push_back(t);
  }
  const std::vector<double> want =
      AttentionLoops(values[0], values[1], values[2], row_mask, kN, kS, kS, kH, kH, kD, kD, 0.25f);
  const std::vector<Tensor> one = RunPlan(b.plan(), inputs, 1);
  const std::vector<Tensor> two = RunPlan(b.plan(), inputs, 2);
  ASSERT_EQ(one.size(), 1u);
  ASSERT_EQ(two.size(), 1u);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(one[0].data<float>()[i], want[i], 2e-6) << i;
    ASSERT_EQ(two[0].data<float>()[i], one[0].data<float>()[i]) << i;
  }
}

TEST(EngineSequenceStepsTest, QAttentionIsTheInt8KernelOnTheStepsOperands) {
  // The int8 step: the kernel's bits for the step's operands at batches 1 and 3 and on 1 and 2
  // threads, within int8's error of softmax(scale * Q Kᵀ + mask) V, multi-query and masked.
  constexpr int64_t kSq = 24, kSkv = 21, kHq = 4, kHk = 1, kD = 8, kDv = 12;
  PlanBuilder b(1, 3);
  const int32_t q = b.Input("q", kF32, {-1, kSq, kHq * kD});
  const int32_t k = b.Input("k", kF32, {-1, kSkv, kHk * kD});
  const int32_t v = b.Input("v", kF32, {-1, kSkv, kHk * kDv});
  const int32_t m = b.Input("mask", kF32, {-1, 1, 1, kSkv});
  const int32_t y = b.Output("y", kF32, {-1, kSq, kHq * kDv});
  b.Step(StepKind::kQAttention, "attention", {q, k, v, m}, {y},
         AttentionStepParams{kHq, kHk, 0.5f});
  for (int64_t n : {1, 3}) {
    SCOPED_TRACE(absl::StrCat("batch ", n));
    std::vector<Tensor> inputs;
    std::vector<std::vector<float>> values;
    const std::vector<Dims> dims = {
        {n, kSq, kHq * kD}, {n, kSkv, kHk * kD}, {n, kSkv, kHk * kDv}, {n, 1, 1, kSkv}};
    for (size_t i = 0; i < dims.size(); ++i) {
      Tensor t(kF32, dims[i]);
      values.push_back(Values(t.numel(), 61 + i + 10 * n));
      if (i == 3) {  // a padding mask: the last 5 keys of every item
        for (int64_t e = 0; e < t.numel(); ++e) values[i][e] = e % kSkv >= kSkv - 5 ? -1e9f : 0.0f;
      }
      std::copy(values[i].begin(), values[i].end(), t.data<float>());
      inputs.push_back(t);
    }
    const std::vector<Tensor> one = RunPlan(b.plan(), inputs, 1);
    const std::vector<Tensor> two = RunPlan(b.plan(), inputs, 2);
    ASSERT_EQ(one.size(), 1u);
    ASSERT_EQ(two.size(), 1u);
    const cpu::AttentionF32Params p = cpu::Attention3dParams(n, kSq, kSkv, kHq * kD, kHk * kDv, kHq,
                                                             kHk, {n, 1, 1, kSkv}, 0.5f, 1);
    std::vector<char> scratch(cpu::AttentionInt8ScratchBytes(p));
    std::vector<float> kernel(n * kSq * kHq * kDv);
    cpu::AttentionInt8(p, values[0].data(), values[1].data(), values[2].data(), values[3].data(),
                       kernel.data(), scratch.data());
    const std::vector<double> want = AttentionLoops(values[0], values[1], values[2], values[3], n,
                                                    kSq, kSkv, kHq, kHk, kD, kDv, 0.5f);
    ASSERT_EQ(one[0].numel(), static_cast<int64_t>(want.size()));
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(one[0].data<float>()[i], kernel[i]) << i;
      ASSERT_EQ(two[0].data<float>()[i], kernel[i]) << i;
      EXPECT_NEAR(kernel[i], want[i], 0.03) << i;  // |V| <= 1: a few of its int8 steps
    }
  }
}

TEST(EngineSequenceStepsTest, UnaryQuantizeChecksItsOpScaleAndZeroPoint) {
  // The fused GELU + Quantize step: the same checks as the two steps it replaces.
  struct Bad {
    UnaryQuantizeStepParams p;
    const char* message;
  };
  const int64_t gelu = static_cast<int64_t>(UnaryFn::kGelu);
  const Bad cases[] = {
      {{{gelu, 0, 0}, {0.0f, 0}}, "scale 0 is not a positive finite number"},
      {{{gelu, 0, 0}, {0.1f, 200}}, "zero point 200 is outside [-128, 127]"},
      {{{kNumUnaryFns, 0, 0}, {0.1f, 0}}, "unknown unary op"},
      {{{-1, 0, 0}, {0.1f, 0}}, "unknown unary op"},
  };
  for (const Bad& bad : cases) {
    PlanBuilder b(1, 2);
    const int32_t x = b.Input("x", kF32, {-1, 6});
    const int32_t y = b.Output("y", DType::kInt8, {-1, 6});
    b.Step(StepKind::kUnaryQuantize, "gelu", {x}, {y}, bad.p);
    const absl::Status s = CreateError(b.plan());
    EXPECT_NE(s.message().find(bad.message), std::string::npos) << s;
  }
}

TEST(EngineSequenceStepsTest, AttentionRefusesAShortMaskWithADynamicAxis) {
  // [N, 7]: its leading axis would stand for Q's rows, not the batch.
  PlanBuilder b(1, 8);
  const int32_t q = b.Input("q", kF32, {-1, 7, 8});
  const int32_t k = b.Input("k", kF32, {-1, 7, 8});
  const int32_t v = b.Input("v", kF32, {-1, 7, 8});
  const int32_t m = b.Input("mask", kF32, {-1, 7});
  const int32_t y = b.Output("y", kF32, {-1, 7, 8});
  b.Step(StepKind::kAttention, "attention", {q, k, v, m}, {y}, AttentionStepParams{2, 2, 1.0f});
  const absl::Status s = CreateError(b.plan());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("dynamic leading axis but not rank 4"), std::string::npos) << s;
}

TEST(EngineSequenceStepsTest, AttentionRefusesHeadsThatDoNotDivide) {
  PlanBuilder b(1, 2);
  const int32_t q = b.Input("q", kF32, {-1, 5, 12});
  const int32_t k = b.Input("k", kF32, {-1, 7, 8});  // 2 heads of 4, not Q's head size 3
  const int32_t v = b.Input("v", kF32, {-1, 7, 8});
  const int32_t y = b.Output("y", kF32, {-1, 5, 16});
  b.Step(StepKind::kAttention, "attention", {q, k, v}, {y}, AttentionStepParams{4, 2, 1.0f});
  const absl::Status s = CreateError(b.plan());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("do not make 4 and 2 heads"), std::string::npos) << s;
}

}  // namespace
}  // namespace qcc::runtime
