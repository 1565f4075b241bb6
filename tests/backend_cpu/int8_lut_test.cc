// int8 lookup tables: BuildLut against each activation's formula written out here for all 256
// inputs, and the AVX-512 VBMI ApplyLut against the scalar one bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/qlut.h"

namespace qcc::cpu {
namespace {

/// Quantization spelled out: nearbyint rounds half to even; NaN would give the zero point.
int8_t QuantizeRef(float v, float scale, int32_t zp) {
  const float r = v / scale;
  if (std::isnan(r)) return static_cast<int8_t>(zp);
  const double q = std::nearbyint(std::clamp<double>(r, -1e9, 1e9)) + zp;
  return static_cast<int8_t>(std::clamp<double>(q, -128, 127));
}

struct LutCase {
  UnaryFn op;
  float alpha, beta;
  float s_in;
  int32_t zp_in;
  float s_out;
  int32_t zp_out;
};

/// f(x) for each op, from the ONNX operator definitions.
float Formula(const LutCase& c, float x) {
  switch (c.op) {
    case UnaryFn::kSigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case UnaryFn::kTanh:
      return std::tanh(x);
    case UnaryFn::kHardSigmoid:
      return std::max(0.0f, std::min(1.0f, c.alpha * x + c.beta));
    case UnaryFn::kHardSwish:
      return x * std::max(0.0f, std::min(1.0f, (1.0f / 6.0f) * x + 0.5f));
    default:
      ADD_FAILURE() << "no formula for function " << static_cast<int>(c.op);
      return 0.0f;
  }
}

TEST(Int8LutTest, BuildMatchesFormulaForAllInputs) {
  const LutCase cases[] = {
      {UnaryFn::kSigmoid, 0.0f, 0.0f, 0.0625f, 0, 1.0f / 256.0f,
       -128},  // [0, 1) over the full range
      {UnaryFn::kSigmoid, 0.0f, 0.0f, 0.11f, 17, 0.0039f, -128},
      {UnaryFn::kTanh, 0.0f, 0.0f, 0.03f, -5, 1.0f / 128.0f, 0},
      {UnaryFn::kTanh, 0.0f, 0.0f, 0.5f, 0, 0.01f, 3},  // saturates at both ends
      {UnaryFn::kHardSigmoid, 0.2f, 0.5f, 0.05f, 0, 1.0f / 255.0f, -128},
      {UnaryFn::kHardSigmoid, 0.3f, 0.4f, 0.07f, -20, 0.004f, -100},
      {UnaryFn::kHardSwish, 0.0f, 0.0f, 0.05f, 0, 0.05f, 0},
      {UnaryFn::kHardSwish, 0.0f, 0.0f, 0.0931f, 11, 0.047f, -37},
  };
  for (const LutCase& c : cases) {
    const Int8Lut table = BuildLut({c.op, c.alpha, c.beta}, c.s_in, c.zp_in, c.s_out, c.zp_out);
    for (int q = -128; q <= 127; ++q) {
      const float x = static_cast<float>(q - c.zp_in) * c.s_in;
      ASSERT_EQ(table[q + 128], QuantizeRef(Formula(c, x), c.s_out, c.zp_out))
          << "op " << static_cast<int>(c.op) << ", q = " << q;
    }
  }
}

TEST(Int8LutTest, HandValues) {
  // HardSwish with s_in = s_out = 0.25: q = 12 is x = 3 -> 3 (q 12); q = -12 is -3 -> 0;
  // q = 4 is x = 1 -> 1 * (1/6 + 1/2) = 0.6667 -> q 2.67 -> 3; q = -4 is -1 -> -0.3333 -> q -1.
  const Int8Lut hs = BuildLut({UnaryFn::kHardSwish}, 0.25f, 0, 0.25f, 0);
  EXPECT_EQ(hs[12 + 128], 12);
  EXPECT_EQ(hs[-12 + 128], 0);
  EXPECT_EQ(hs[4 + 128], 3);
  EXPECT_EQ(hs[-4 + 128], -1);
  EXPECT_EQ(hs[127 + 128], 127);
  // Sigmoid, s_out = 1/256, zp_out = -128: sigmoid(0) = 0.5 -> 128 - 128 = 0; large x -> 1 -> 127.
  const Int8Lut sg = BuildLut({UnaryFn::kSigmoid}, 0.1f, 0, 1.0f / 256.0f, -128);
  EXPECT_EQ(sg[0 + 128], 0);
  EXPECT_EQ(sg[127 + 128], 127);
  EXPECT_EQ(sg[-128 + 128], -128);
  // HardSigmoid(alpha 0.2, beta 0.5) with s_in = 0.5: q = 5 is x = 2.5 -> 1; q = -5 -> 0.
  const Int8Lut hsig = BuildLut({UnaryFn::kHardSigmoid, 0.2f, 0.5f}, 0.5f, 0, 0.01f, -100);
  EXPECT_EQ(hsig[5 + 128], 0);      // 1 / 0.01 = 100, -100
  EXPECT_EQ(hsig[-5 + 128], -100);  // 0
  EXPECT_EQ(hsig[0 + 128], -50);    // 0.5 / 0.01 = 50
}

TEST(Int8LutTest, ApplyFastPathMatchesReference) {
  std::mt19937 rng(10);
  std::uniform_int_distribution<int> dist(-128, 127);
  Int8Lut table;
  for (int8_t& t : table) t = static_cast<int8_t>(dist(rng));  // every entry distinct-ish
  for (int64_t n : {1, 15, 16, 17, 63, 64, 1000, 100003}) {
    std::vector<int8_t> x(n);
    for (int8_t& v : x) v = static_cast<int8_t>(dist(rng));
    std::vector<int8_t> want(n);
    ApplyLutReference(table, n, x.data(), want.data());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(want[i], table[x[i] + 128]);
    for (int threads : {1, 2}) {
      std::vector<int8_t> got = x;  // in place
      ApplyLut(table, n, got.data(), got.data(), threads);
      ASSERT_EQ(got, want) << "n = " << n << ", threads = " << threads;
    }
  }
  if (!CpuHasAvx512Vbmi()) GTEST_SKIP() << "CPU lacks avx512vbmi: ApplyLut ran the scalar loop";
}

}  // namespace
}  // namespace qcc::cpu
