// int8 Quantize / Dequantize / Requantize / Add and fp16 conversion kernels: the references
// against hand values and formulas written out here, and the AVX-512 paths against the references
// bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/qelementwise.h"
#include "support/float16.h"

namespace qcc::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
const int64_t kLengths[] = {1, 15, 16, 17, 63, 64, 1000, 100003};

/// The quantization formula spelled out independently: nearbyint rounds half to even in the
/// default rounding mode; NaN gives the zero point.
int32_t Expected(float v, int32_t zp, int32_t lo = -128, int32_t hi = 127) {
  if (std::isnan(v)) return std::min(std::max(zp, lo), hi);
  const double r = std::nearbyint(std::max(-1e9, std::min(1e9, static_cast<double>(v)))) + zp;
  return static_cast<int32_t>(std::min<double>(std::max<double>(r, lo), hi));
}

// The AVX-512 path, else the AVX2 one (QCC_CPU_FEATURES=avx2 picks it on an AVX-512 CPU).
#define SKIP_WITHOUT_FAST_PATH()                                                               \
  if (!CpuHasAvx512Int8() && !Cpu().avx2) {                                                    \
    GTEST_SKIP() << "CPU lacks avx512f/bw/vl and avx2: the fast path is the scalar reference"; \
  }

TEST(Int8QuantizeTest, ReferenceHandValues) {
  const QuantizeS8Params p{0.5f, 0};
  const std::vector<float> x = {1.25f, 1.75f, -0.25f, -0.75f, 100.0f, -100.0f, kNaN,
                                kInf,  -kInf, 1e30f,  -1e30f, 63.5f,  -64.0f,  -64.25f};
  // x / 0.5 = 2.5 -> 2, 3.5 -> 4, -0.5 -> 0, -1.5 -> -2, saturation both ends, NaN -> zp,
  // 127 and -128 exactly, -128.5 -> -128.
  const std::vector<int8_t> want = {2,   4,    0,   -2,   127, -128, 0,
                                    127, -128, 127, -128, 127, -128, -128};
  std::vector<int8_t> y(x.size());
  QuantizeF32ToS8Reference(p, x.size(), x.data(), y.data());
  EXPECT_EQ(y, want);

  const QuantizeS8Params pz{0.5f, 10};
  QuantizeF32ToS8Reference(pz, x.size(), x.data(), y.data());
  EXPECT_EQ(y[0], 12);
  EXPECT_EQ(y[3], 8);
  EXPECT_EQ(y[4], 127);
  EXPECT_EQ(y[6], 10);  // NaN -> the zero point
  EXPECT_EQ(y[12], -118);
}

TEST(Int8QuantizeTest, DividesByScale) {
  // 8.25f / 1.1f = 7.5 exactly in fp32 -> 8 (half to even), but 8.25f * (1 / 1.1f) = 7.4999995
  // -> 7; 2.25f / 0.3f = 7.4999995 -> 7, but 2.25f * (1 / 0.3f) = 7.5 -> 8.
  const float x[] = {8.25f, 2.25f};
  const float scale[] = {1.1f, 0.3f};
  const int8_t want[] = {8, 7};
  for (int i = 0; i < 2; ++i) {
    ASSERT_NE(std::nearbyint(x[i] / scale[i]), std::nearbyint(x[i] * (1.0f / scale[i])));
    int8_t y = 0;
    QuantizeF32ToS8Reference({scale[i], 0}, 1, &x[i], &y);
    EXPECT_EQ(y, want[i]);
    QuantizeF32ToS8({scale[i], 0}, 1, &x[i], &y, 1);
    EXPECT_EQ(y, want[i]);
  }
}

/// Random fp32 data with ties at the scale (k + 0.5) * scale, NaN, +-inf, huge, tiny values.
std::vector<float> QuantizeInputs(int64_t n, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> uni(-300.0f * scale, 300.0f * scale);
  std::uniform_int_distribution<int> kind(0, 9), k(-300, 300), special(0, 8);
  const float specials[] = {kNaN, -kNaN, kInf, -kInf, 1e30f, -1e30f, 4194304.5f, 1e-40f, -0.0f};
  std::vector<float> x(n);
  for (float& v : x) {
    const int c = kind(rng);
    v = c < 6   ? uni(rng)
        : c < 9 ? (static_cast<float>(k(rng)) + 0.5f) * scale
                : specials[special(rng)];
  }
  return x;
}

TEST(Int8QuantizeTest, ReferenceMatchesFormulaOnRandomData) {
  std::mt19937 rng(1);
  for (const QuantizeS8Params p : {QuantizeS8Params{0.25f, 0}, QuantizeS8Params{0.0371f, -7}}) {
    const std::vector<float> x = QuantizeInputs(5000, p.scale, rng);
    std::vector<int8_t> y(x.size());
    QuantizeF32ToS8Reference(p, x.size(), x.data(), y.data());
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(y[i], Expected(x[i] / p.scale, p.zero_point)) << "x = " << x[i];
    }
  }
}

TEST(Int8QuantizeTest, FastPathMatchesReference) {
  SKIP_WITHOUT_FAST_PATH();
  std::mt19937 rng(2);
  for (const QuantizeS8Params p : {QuantizeS8Params{0.25f, 0}, QuantizeS8Params{0.0371f, 5}}) {
    for (int64_t n : kLengths) {
      const std::vector<float> x = QuantizeInputs(n, p.scale, rng);
      std::vector<int8_t> want(n);
      QuantizeF32ToS8Reference(p, n, x.data(), want.data());
      for (int threads : {1, 2}) {
        std::vector<int8_t> got(n, 99);
        QuantizeF32ToS8(p, n, x.data(), got.data(), threads);
        ASSERT_EQ(got, want) << "n = " << n << ", threads = " << threads;
      }
    }
  }
}

std::vector<int8_t> RandomInt8(int64_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(-128, 127);
  std::vector<int8_t> v(n);
  for (int8_t& b : v) b = static_cast<int8_t>(dist(rng));
  return v;
}

TEST(Int8DequantizeTest, ReferenceAndFastPath) {
  const std::vector<int8_t> x = {-128, -1, 0, 3, 127};
  std::vector<float> y(x.size());
  DequantizeS8ToF32Reference({0.5f, 3}, x.size(), x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{-65.5f, -2.0f, -1.5f, 0.0f, 62.0f}));
  SKIP_WITHOUT_FAST_PATH();
  std::mt19937 rng(3);
  const QuantizeS8Params p{0.0371f, -9};
  for (int64_t n : kLengths) {
    const std::vector<int8_t> q = RandomInt8(n, rng);
    std::vector<float> want(n);
    DequantizeS8ToF32Reference(p, n, q.data(), want.data());
    for (int threads : {1, 2}) {
      std::vector<float> got(n);
      DequantizeS8ToF32(p, n, q.data(), got.data(), threads);
      ASSERT_EQ(0, std::memcmp(got.data(), want.data(), n * sizeof(float))) << "n = " << n;
    }
  }
}

TEST(Int8RequantizeTest, ReferenceHandValues) {
  // (x - 2) * 0.25 + 5: 10 -> 2 + 5 = 7; 12 -> 2.5 -> 2 + 5; 16 -> 3.5 -> 4 + 5.
  const std::vector<int8_t> x = {10, 12, 16, -128, 127};
  std::vector<int8_t> y(x.size());
  RequantizeS8Reference({2, 0.25f, 5, -128, 127}, x.size(), x.data(), y.data());
  EXPECT_EQ(y, (std::vector<int8_t>{7, 7, 9, -27, 36}));  // -130 / 4 = -32.5 -> -32
  // Saturation at both ends with M = 4, and a fused ReLU clamp at the zero point.
  RequantizeS8Reference({0, 4.0f, 0, -128, 127}, x.size(), x.data(), y.data());
  EXPECT_EQ(y, (std::vector<int8_t>{40, 48, 64, -128, 127}));
  RequantizeS8Reference({0, 0.5f, -3, -3, 127}, x.size(), x.data(), y.data());
  EXPECT_EQ(y, (std::vector<int8_t>{2, 3, 5, -3, 61}));  // 63.5 -> 64 - 3
}

TEST(Int8RequantizeTest, FastPathMatchesReference) {
  SKIP_WITHOUT_FAST_PATH();
  std::mt19937 rng(4);
  for (const RequantizeS8Params p :
       {RequantizeS8Params{3, 0.37f, -4, -4, 127}, RequantizeS8Params{-1, 2.5f, 0, -128, 127},
        RequantizeS8Params{0, 0.5f, 1, -128, 100}}) {
    for (int64_t n : kLengths) {
      const std::vector<int8_t> x = RandomInt8(n, rng);
      std::vector<int8_t> want(n);
      RequantizeS8Reference(p, n, x.data(), want.data());
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(want[i], Expected((x[i] - p.zp_in) * p.multiplier, p.zp_out, p.lo, p.hi));
      }
      for (int threads : {1, 2}) {
        std::vector<int8_t> got(n);
        RequantizeS8(p, n, x.data(), got.data(), threads);
        ASSERT_EQ(got, want) << "n = " << n << ", threads = " << threads;
      }
    }
  }
}

TEST(Int8AddTest, ReferenceHandValues) {
  // (10 - 2) * 0.5 + (-3 - 1) * 0.25 = 4 - 1 = 3, + 5 = 8.
  // (5 - 2) * 0.5 + (1 - 1) * 0.25 = 1.5 -> 2 (tie to even) + 5 = 7.
  // (7 - 2) * 0.5 + (1 - 1) * 0.25 = 2.5 -> 2 + 5 = 7.
  const std::vector<int8_t> a = {10, 5, 7, 127, -128, -10};
  const std::vector<int8_t> b = {-3, 1, 1, 127, -128, 1};
  std::vector<int8_t> y(a.size());
  AddS8Params p{2, 0.5f, 1, 0.25f, 5, -128, 127};
  AddS8Reference(p, a.size(), a.data(), b.data(), y.data());
  EXPECT_EQ(y, (std::vector<int8_t>{8, 7, 7, 99, -92, -1}));  // 62.5 + 31.5; -65 - 32.25
  p.mult_a = 2.0f;  // 250 + 31.5 and -260 - 32.25 saturate
  AddS8Reference(p, a.size(), a.data(), b.data(), y.data());
  EXPECT_EQ(y, (std::vector<int8_t>{20, 11, 15, 127, -128, -19}));
  p.lo = 5;
  AddS8Reference(p, a.size(), a.data(), b.data(), y.data());
  EXPECT_EQ(y, (std::vector<int8_t>{20, 11, 15, 127, 5, 5}));
}

TEST(Int8AddTest, FastPathMatchesReference) {
  SKIP_WITHOUT_FAST_PATH();
  std::mt19937 rng(5);
  for (const AddS8Params p :
       {AddS8Params{3, 0.37f, -2, 0.81f, -4, -4, 127}, AddS8Params{0, 0.5f, 0, 0.25f, 0, -128, 127},
        AddS8Params{-7, 1.9f, 11, 0.013f, 20, -100, 90}}) {
    for (int64_t n : kLengths) {
      const std::vector<int8_t> a = RandomInt8(n, rng), b = RandomInt8(n, rng);
      std::vector<int8_t> want(n);
      AddS8Reference(p, n, a.data(), b.data(), want.data());
      for (int i = 0; i < n; ++i) {
        const float ta = static_cast<float>(a[i] - p.zp_a) * p.mult_a;
        const float tb = static_cast<float>(b[i] - p.zp_b) * p.mult_b;
        ASSERT_EQ(want[i], Expected(ta + tb, p.zp_out, p.lo, p.hi));
      }
      for (int threads : {1, 2}) {
        std::vector<int8_t> got = a;  // in place: y aliases a
        AddS8(p, n, got.data(), b.data(), got.data(), threads);
        ASSERT_EQ(got, want) << "n = " << n << ", threads = " << threads;
      }
    }
  }
}

uint32_t Bits(float f) { return BitCast<uint32_t>(f); }

TEST(Fp16ConvertTest, ReferenceHandValues) {
  const std::vector<float> x = {1.0f,
                                65504.0f,
                                65520.0f,
                                0x1p-24f,
                                0x1p-25f,
                                0x1.8p-24f,
                                -0.0f,
                                BitCast<float>(0x7f800001u),
                                BitCast<float>(0xffc12345u)};
  std::vector<uint16_t> y(x.size());
  ConvertF32ToF16Reference(x.size(), x.data(), y.data());
  // 65520 rounds to inf (tie to even); 2^-25 ties down to 0, 1.5 * 2^-24 ties up to 2 * 2^-24;
  // every NaN becomes the quiet NaN of its sign.
  EXPECT_EQ(y, (std::vector<uint16_t>{0x3c00, 0x7bff, 0x7c00, 0x0001, 0x0000, 0x0002, 0x8000,
                                      0x7e00, 0xfe00}));
  const std::vector<uint16_t> h = {0x0001, 0x7c01, 0xfe00, 0x8400};
  std::vector<float> f(h.size());
  ConvertF16ToF32Reference(h.size(), h.data(), f.data());
  EXPECT_EQ(f[0], 0x1p-24f);
  EXPECT_EQ(Bits(f[1]), 0x7f802000u);  // a signalling NaN stays signalling
  EXPECT_EQ(Bits(f[2]), 0xffc00000u);
  EXPECT_EQ(f[3], -0x1p-14f);
}

TEST(Fp16ConvertTest, FastPathMatchesReference) {
  // The AVX-512 path, else the AVX2 + F16C one (QCC_CPU_FEATURES=avx2 picks it on an AVX-512 CPU).
  if (!CpuHasAvx512Int8() && !(Cpu().avx2 && Cpu().f16c)) {
    GTEST_SKIP() << "CPU lacks avx512f/bw/vl and f16c: the fast path is the scalar reference";
  }
  std::mt19937 rng(6);
  std::uniform_int_distribution<uint32_t> bits;
  std::uniform_int_distribution<int> exp(100, 145);  // around the fp16 range, subnormals included
  for (int64_t n : kLengths) {
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t b = bits(rng);
      // Half of the values in and near the fp16 range, the rest any bit pattern (NaN payloads).
      x[i] = BitCast<float>(i % 2 ? b : (b & 0x807fffffu) | (uint32_t(exp(rng)) << 23));
    }
    std::vector<uint16_t> want(n);
    ConvertF32ToF16Reference(n, x.data(), want.data());
    for (int threads : {1, 2}) {
      std::vector<uint16_t> got(n);
      ConvertF32ToF16(n, x.data(), got.data(), threads);
      ASSERT_EQ(got, want) << "n = " << n << ", threads = " << threads;
    }
  }
  std::vector<uint16_t> all(65536 + 17);  // every half, then an odd tail
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);
  for (int64_t n : {int64_t{17}, static_cast<int64_t>(all.size())}) {
    std::vector<float> want(n), got(n);
    ConvertF16ToF32Reference(n, all.data(), want.data());
    for (int threads : {1, 2}) {
      ConvertF16ToF32(n, all.data(), got.data(), threads);
      ASSERT_EQ(0, std::memcmp(got.data(), want.data(), n * sizeof(float))) << "n = " << n;
    }
  }
}

TEST(Fp16ConvertTest, RoundInPlaceIsTheRoundTripOnEveryPath) {
  // RoundF32ToF16InPlace must give widen(narrow(x)) bit for bit: ties, overflow to inf, fp16
  // subnormals, fp32 subnormals, signed zeros and NaN payloads (each becomes the quiet NaN of its
  // sign), on the scalar reference, then whichever vector path this CPU picks.
  std::mt19937 rng(8);
  std::uniform_int_distribution<uint32_t> bits;
  std::uniform_int_distribution<int> exp(90, 145);
  std::vector<float> x = {65519.0f,
                          65520.0f,
                          -65536.0f,
                          0x1p-25f,
                          0x1.8p-24f,
                          0x1p-130f,
                          -0.0f,
                          BitCast<float>(0x7f800001u),
                          BitCast<float>(0xffc12345u),
                          1.0f + 0x1p-11f};
  for (int i = 0; i < 100000; ++i) {
    const uint32_t b = bits(rng);
    x.push_back(BitCast<float>(i % 3 ? (b & 0x807fffffu) | (uint32_t(exp(rng)) << 23) : b));
  }
  for (int64_t n : {int64_t{7}, int64_t{16}, int64_t{33}, static_cast<int64_t>(x.size())}) {
    std::vector<uint16_t> half(n);
    std::vector<float> want(n);
    ConvertF32ToF16Reference(n, x.data(), half.data());
    ConvertF16ToF32Reference(n, half.data(), want.data());
    if (n > 8) {
      EXPECT_EQ(Bits(want[1]), 0x7f800000u);  // 65520: a tie, to even, which is inf
      EXPECT_EQ(Bits(want[7]), 0x7fc00000u);  // a signalling NaN's payload is gone
    }
    for (int threads : {1, 2}) {
      std::vector<float> got(x.begin(), x.begin() + n);
      RoundF32ToF16InPlace(n, got.data(), threads);
      ASSERT_EQ(0, std::memcmp(got.data(), want.data(), n * sizeof(float)))
          << "n = " << n << ", threads = " << threads;
    }
  }
}

}  // namespace
}  // namespace qcc::cpu

namespace qcc::cpu {
namespace {

TEST(RangeF32Test, MinAndMaxWithZeroSkippingNaNOnAnyThreadCount) {
  // 200,000 values (several 64k blocks and a tail): positives with one negative outlier far in.
  std::vector<float> x(200000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f + static_cast<float>(i % 977) * 1e-3f;
  x[151234] = -7.25f;
  x[5] = std::nanf("");
  x[199999] = 3.5f;
  for (int threads : {1, 2, 3}) {
    float lo = 1, hi = -1;
    RangeF32(static_cast<int64_t>(x.size()), x.data(), &lo, &hi, threads);
    EXPECT_EQ(lo, -7.25f) << threads;
    EXPECT_EQ(hi, 3.5f) << threads;
  }
  // 0 is always inside; no values at all gives [0, 0].
  const std::vector<float> positive = {2.0f, 3.0f};
  float lo = 1, hi = -1;
  RangeF32(2, positive.data(), &lo, &hi, 1);
  EXPECT_EQ(lo, 0.0f);
  EXPECT_EQ(hi, 3.0f);
  RangeF32(0, positive.data(), &lo, &hi, 2);
  EXPECT_EQ(lo, 0.0f);
  EXPECT_EQ(hi, 0.0f);
}

// QuantizeRowsS8 (AVX-512 where the CPU has it) against the reference, byte for byte: scales,
// sums, the finite flag and the padding, on rows of zeros, of values under 127 / FLT_MAX, with
// their maximum at both signs, with NaN or inf, and of lengths with and without a tail.
TEST(QuantizeRowsS8, SameBytesScalesAndSumsAsTheReference) {
  const float kInf = std::numeric_limits<float>::infinity();
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int64_t n : {1, 15, 16, 17, 32, 384, 1000}) {
    const int64_t rows = 8, ld = n + 3, out_n = (n + 63) / 64 * 64;
    std::vector<float> x(rows * ld);
    for (float& v : x) v = normal(rng);
    for (int64_t j = 0; j < n; ++j) {
      x[0 * ld + j] = 0.0f;                           // a row of zeros
      x[1 * ld + j] *= 1e-39f;                        // m < 127 / FLT_MAX: quantizes to 0
      x[5 * ld + j] = static_cast<float>(j % 7) - 3;  // ties at .5 after scaling are possible
    }
    x[2 * ld + n - 1] = -1e30f;  // the maximum magnitude, negative
    x[3 * ld + n / 2] = std::numeric_limits<float>::quiet_NaN();
    x[4 * ld] = -kInf;
    for (bool with_sum : {false, true}) {
      std::vector<int8_t> got(rows * out_n, 99), want(rows * out_n, 99);
      std::vector<float> got_scale(rows), want_scale(rows);
      std::vector<int32_t> got_sum(rows, -1), want_sum(rows, -1);
      const bool got_finite = QuantizeRowsS8(x.data(), rows, n, ld, got.data(), out_n,
                                             got_scale.data(), with_sum ? got_sum.data() : nullptr);
      const bool want_finite =
          QuantizeRowsS8Reference(x.data(), rows, n, ld, want.data(), out_n, want_scale.data(),
                                  with_sum ? want_sum.data() : nullptr);
      EXPECT_FALSE(want_finite);
      EXPECT_EQ(got_finite, want_finite);
      EXPECT_EQ(got, want) << "n " << n;
      EXPECT_EQ(0, std::memcmp(got_scale.data(), want_scale.data(), rows * sizeof(float)))
          << "n " << n;
      EXPECT_EQ(got_sum, want_sum) << "n " << n;
    }
    // The finite rows alone.
    std::vector<int8_t> got(2 * out_n), want(2 * out_n);
    std::vector<float> gs(2), ws(2);
    EXPECT_TRUE(QuantizeRowsS8(x.data() + 5 * ld, 2, n, ld, got.data(), out_n, gs.data(), nullptr));
    EXPECT_TRUE(QuantizeRowsS8Reference(x.data() + 5 * ld, 2, n, ld, want.data(), out_n, ws.data(),
                                        nullptr));
    EXPECT_EQ(got, want) << "n " << n;
  }
}

}  // namespace
}  // namespace qcc::cpu
