// The int8 GEMM (kernels/cpu/qgemm.h): the reference against hand-computed values and an
// independent naive evaluation of the contract, and the fast paths (VNNI and AVX2) bit-identical
// to the reference over shapes (row, column and depth tails), extreme values, wrapping and
// threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/qgemm.h"

namespace qcc::cpu {
namespace {

struct Gemm {
  QGemmParams p;
  std::vector<int8_t> a, b;
  std::vector<int32_t> bias;
  std::vector<float> multiplier;

  Gemm(int64_t m, int64_t n, int64_t k) : a(m * k), b(n * k), bias(n), multiplier(n) {
    p.m = m, p.n = n, p.k = k;
    Bind();
  }
  void Bind() {
    p.a = a.data();
    p.b = b.data();
    p.bias = bias.data();
    p.multiplier = multiplier.data();
  }
};

void Randomize(Gemm& g, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> x(-128, 127), w(-127, 127), bias(-30000, 30000);
  std::uniform_real_distribution<double> log_scale(-1.5, 0.5);
  for (int8_t& v : g.a) v = static_cast<int8_t>(x(rng));
  for (int8_t& v : g.b) v = static_cast<int8_t>(w(rng));
  for (int64_t n = 0; n < g.p.n; ++n) {
    g.bias[n] = bias(rng);
    g.multiplier[n] = static_cast<float>(std::pow(10.0, log_scale(rng)) * 127.0 /
                                         (8000.0 * std::sqrt(static_cast<double>(g.p.k) + 1)));
  }
  g.p.zp_out = rng() % 4 != 0 ? static_cast<int32_t>(rng() % 41) - 20 : rng() % 2 ? -128 : 127;
  g.p.lo = rng() % 2 == 0 ? -128 : std::max(-128, g.p.zp_out);
  g.p.hi = rng() % 3 == 0 ? std::min(127, g.p.zp_out + 50) : 127;
}

/// The contract evaluated independently: exact int64 sums, fp32 scale, nearbyint.
std::vector<int8_t> NaiveGemm(const QGemmParams& p) {
  std::vector<int8_t> y(p.m * p.n);
  for (int64_t m = 0; m < p.m; ++m) {
    for (int64_t n = 0; n < p.n; ++n) {
      int64_t acc = p.bias != nullptr ? p.bias[n] : 0;
      for (int64_t k = 0; k < p.k; ++k) acc += p.a[m * p.k + k] * p.b[n * p.k + k];
      const float scaled = static_cast<float>(acc) * p.multiplier[n];
      const double q = std::nearbyint(static_cast<double>(scaled)) + p.zp_out;
      y[m * p.n + n] = static_cast<int8_t>(std::clamp<double>(q, p.lo, p.hi));
    }
  }
  return y;
}

std::vector<int8_t> RunReference(Gemm& g) {
  std::vector<int8_t> y(g.p.m * g.p.n);
  g.p.y = y.data();
  QGemmReference(g.p);
  return y;
}

/// QGemm with weights packed for `path`; checks nothing is written past y.
std::vector<int8_t> RunPacked(Gemm& g, QKernelPath path, int threads) {
  g.p.num_threads = threads;
  const PackedQGemmWeights packed = PackQGemmWeights(g.p, path);
  using Layout = PackedQGemmWeights::Layout;
  if (path == QKernelPath::kFastest) {
    EXPECT_EQ(packed.layout, QInt8HasVnni()   ? Layout::kVnni
                             : QInt8HasAvx2() ? Layout::kAvx2
                                              : Layout::kReference);
  }
  if (path == QKernelPath::kAvx2) {
    EXPECT_EQ(packed.layout, QInt8HasAvx2() ? Layout::kAvx2 : Layout::kReference);
  }
  constexpr int64_t kGuard = 128;
  const int64_t size = g.p.m * g.p.n;
  std::vector<int8_t> y(size + kGuard, 0x5a);
  g.p.y = y.data();
  QGemm(g.p, packed);
  for (int64_t i = 0; i < kGuard; ++i) EXPECT_EQ(y[size + i], 0x5a) << "overrun at +" << i;
  y.resize(size);
  return y;
}

/// The fp32-result form (QGemmParams::y_f32) with weights packed for `path` (the reference when
/// kReference without packing): y = float(acc) * multiplier [* row_scale[m]] + bias_f32 (+ add,
/// a residual [M, N], when given). Checks the guard.
std::vector<float> RunFloat(Gemm& g, const std::vector<float>& fbias, QKernelPath path, int threads,
                            bool packed, const std::vector<float>& add = {},
                            const std::vector<float>& row_scale = {}) {
  g.p.num_threads = threads;
  constexpr int64_t kGuard = 32;
  const int64_t size = g.p.m * g.p.n;
  std::vector<float> y(size + kGuard, 7.0f);
  g.p.y = nullptr;
  g.p.y_f32 = y.data();
  g.p.bias_f32 = fbias.empty() ? nullptr : fbias.data();
  g.p.add_f32 = add.empty() ? nullptr : add.data();
  g.p.row_scale = row_scale.empty() ? nullptr : row_scale.data();
  if (packed) {
    QGemm(g.p, PackQGemmWeights(g.p, path));
  } else {
    QGemmReference(g.p);
  }
  g.p.y_f32 = nullptr;
  g.p.bias_f32 = nullptr;
  g.p.add_f32 = nullptr;
  g.p.row_scale = nullptr;
  for (int64_t i = 0; i < kGuard; ++i) EXPECT_EQ(y[size + i], 7.0f) << "overrun at +" << i;
  y.resize(size);
  return y;
}

TEST(Int8GemmReferenceTest, FloatResultIsScaledAccumulatorPlusBias) {
  Gemm g(5, 7, 9);
  Randomize(g, 7);
  std::vector<float> fbias(7);
  for (int64_t n = 0; n < 7; ++n) fbias[n] = 0.25f * static_cast<float>(n) - 1.0f;
  std::vector<float> residual(5 * 7);
  for (size_t i = 0; i < residual.size(); ++i)
    residual[i] = 0.375f * static_cast<float>(i % 11) - 2.0f;
  const std::vector<float> y = RunFloat(g, fbias, QKernelPath::kReference, 1, false);
  const std::vector<float> with_residual =
      RunFloat(g, fbias, QKernelPath::kReference, 1, false, residual);
  const std::vector<float> rows = {0.5f, 3.0f, 0.01f, 1.0f, 7.25f};
  const std::vector<float> per_row =
      RunFloat(g, fbias, QKernelPath::kReference, 1, false, residual, rows);
  for (int64_t m = 0; m < 5; ++m) {
    for (int64_t n = 0; n < 7; ++n) {
      int64_t acc = g.bias[n];
      for (int64_t k = 0; k < 9; ++k) acc += g.a[m * 9 + k] * g.b[n * 9 + k];
      const float scaled = static_cast<float>(acc) * g.multiplier[n];
      EXPECT_EQ(y[m * 7 + n], scaled + fbias[n]) << "m " << m << " n " << n;
      // The residual Add of the graph, in the same order: (scaled + bias) + residual.
      EXPECT_EQ(with_residual[m * 7 + n], (scaled + fbias[n]) + residual[m * 7 + n]);
      // Per-row activation scales (dynamic quantization per row): after the multiplier.
      EXPECT_EQ(per_row[m * 7 + n], (scaled * rows[m] + fbias[n]) + residual[m * 7 + n]);
    }
  }
}

TEST(Int8GemmReferenceTest, HandComputed) {
  Gemm g(2, 3, 3);
  g.a = {1, 2, 3, -4, 5, -6};
  g.b = {1, 0, -1, 2, 2, 2, 127, 127, 127};
  g.bias = {0, 1, -100};
  g.multiplier = {0.5f, 0.25f, 1.0f};
  g.Bind();
  g.p.zp_out = 1;
  // Row 0: acc = -2, 1 + 12, -100 + 762 -> -1 + 1, 3.25 -> 3 + 1, 662 saturates to 127.
  // Row 1: acc = 2, 1 - 10, -100 - 635 -> 1 + 1, -2.25 -> -2 + 1, -735 saturates to -128.
  EXPECT_EQ(RunReference(g), (std::vector<int8_t>{0, 4, 127, 2, -1, -128}));
  g.p.lo = 1;  // a fused ReLU with zp_out 1
  EXPECT_EQ(RunReference(g), (std::vector<int8_t>{1, 4, 127, 2, 1, 1}));
}

TEST(Int8GemmReferenceTest, RoundsHalfToEven) {
  Gemm g(1, 4, 1);
  g.a = {1};
  g.b = {5, 7, -5, 3};
  g.bias = {0, 0, 0, 0};
  g.multiplier = {0.5f, 0.5f, 0.5f, 0.5f};  // 2.5, 3.5, -2.5, 1.5
  g.Bind();
  EXPECT_EQ(RunReference(g), (std::vector<int8_t>{2, 4, -2, 2}));
}

struct Shape {
  int64_t m, n, k;
};
const Shape kShapes[] = {{1, 1, 1},
                         {1, 10, 64},
                         {32, 10, 64},
                         {3, 17, 5},
                         {6, 64, 4},
                         {7, 65, 7},
                         {13, 100, 3},
                         {5, 48, 130},
                         {2, 16, 0},
                         {64, 33, 257},
                         {17, 200, 9},
                         {1, 1000, 512},
                         {40, 128, 96},
                         {5, 23, 15},
                         {9, 24, 17},
                         {4, 25, 513},
                         {3, 10, 1101},
                         {11, 8, 2},
                         // Large enough that every pass of the kernel runs on two threads.
                         {300, 40, 384}};

TEST(Int8GemmReferenceTest, MatchesNaiveEvaluation) {
  uint32_t seed = 1;
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(absl::StrCat("M", s.m, " N", s.n, " K", s.k));
    Gemm g(s.m, s.n, s.k);
    Randomize(g, seed++);
    EXPECT_EQ(RunReference(g), NaiveGemm(g.p));
  }
}

TEST(Int8GemmTest, ReferencePackingRunsTheReference) {
  Gemm g(7, 65, 7);
  Randomize(g, 5);
  EXPECT_EQ(RunPacked(g, QKernelPath::kReference, 2), RunReference(g));
}

/// The fast paths this CPU runs: kFastest (VNNI) when it has VNNI, kAvx2 when it has AVX2
/// (kFastest is AVX2 then, unless it also has VNNI).
std::vector<QKernelPath> FastPaths() {
  std::vector<QKernelPath> paths;
  if (QInt8HasVnni()) paths.push_back(QKernelPath::kFastest);
  if (QInt8HasAvx2()) paths.push_back(QKernelPath::kAvx2);
  return paths;
}

std::string PathName(QKernelPath path) {
  return path == QKernelPath::kAvx2 ? "avx2" : path == QKernelPath::kFastest ? "fastest" : "ref";
}

#define SKIP_WITHOUT_FAST_PATH() \
  if (FastPaths().empty())       \
  GTEST_SKIP() << "this CPU lacks AVX2 and AVX-512 VNNI: no int8 fast path to test"

TEST(Int8GemmFastTest, BitIdenticalToReferenceOnRandomData) {
  SKIP_WITHOUT_FAST_PATH();
  for (const QKernelPath path : FastPaths()) {
    uint32_t seed = 100;
    for (const Shape& s : kShapes) {
      for (int threads : {1, 2}) {
        SCOPED_TRACE(
            absl::StrCat(PathName(path), ": M", s.m, " N", s.n, " K", s.k, " threads ", threads));
        Gemm g(s.m, s.n, s.k);
        Randomize(g, seed++);
        EXPECT_EQ(RunPacked(g, path, threads), RunReference(g));
        g.p.bias = nullptr;
        EXPECT_EQ(RunPacked(g, path, threads), RunReference(g));
      }
    }
  }
}

TEST(Int8GemmFastTest, FloatResultBitIdenticalToReference) {
  SKIP_WITHOUT_FAST_PATH();
  for (const QKernelPath path : FastPaths()) {
    uint32_t seed = 300;
    for (const Shape& s : kShapes) {
      for (int threads : {1, 2}) {
        SCOPED_TRACE(
            absl::StrCat(PathName(path), ": M", s.m, " N", s.n, " K", s.k, " threads ", threads));
        Gemm g(s.m, s.n, s.k);
        Randomize(g, seed++);
        std::vector<float> fbias(s.n);
        std::mt19937 rng(seed);
        std::uniform_real_distribution<float> b(-3.0f, 3.0f);
        for (float& v : fbias) v = b(rng);
        const std::vector<float> want = RunFloat(g, fbias, path, threads, false);
        EXPECT_EQ(RunFloat(g, fbias, path, threads, true), want);
        std::vector<float> residual(s.m * s.n);
        for (float& v : residual) v = b(rng);
        EXPECT_EQ(RunFloat(g, fbias, path, threads, true, residual),
                  RunFloat(g, fbias, path, threads, false, residual));
        std::vector<float> rows(s.m);
        for (float& v : rows) v = std::fabs(b(rng)) + 1e-3f;
        EXPECT_EQ(RunFloat(g, fbias, path, threads, true, residual, rows),
                  RunFloat(g, fbias, path, threads, false, residual, rows));
        EXPECT_EQ(RunFloat(g, {}, path, threads, true, {}, rows),
                  RunFloat(g, {}, path, threads, false, {}, rows));
        g.p.bias = nullptr;
        EXPECT_EQ(RunFloat(g, {}, path, threads, true), RunFloat(g, {}, path, threads, false));
        EXPECT_EQ(RunFloat(g, {}, path, threads, true, residual),
                  RunFloat(g, {}, path, threads, false, residual));
      }
    }
  }
}

TEST(Int8GemmFastTest, BitIdenticalToReferenceOnExtremeValues) {
  SKIP_WITHOUT_FAST_PATH();
  for (const QKernelPath path : FastPaths()) {
    uint32_t seed = 300;
    for (const Shape& s : kShapes) {
      for (const auto& [x, w] :
           {std::pair<int8_t, int8_t>{-128, 127}, {127, -127}, {-128, -128}, {127, 127}}) {
        SCOPED_TRACE(
            absl::StrCat(PathName(path), ": M", s.m, " N", s.n, " K", s.k, " a ", x, " b ", w));
        Gemm g(s.m, s.n, s.k);
        Randomize(g, seed++);
        std::fill(g.a.begin(), g.a.end(), x);
        std::fill(g.b.begin(), g.b.end(), w);
        EXPECT_EQ(RunPacked(g, path, 2), RunReference(g));
      }
    }
  }
}

TEST(Int8GemmFastTest, BitIdenticalWhenTheBiasWraps) {
  SKIP_WITHOUT_FAST_PATH();
  // Biases at the ends of int32 make short sums wrap modulo 2^32 too.
  for (const QKernelPath path : FastPaths()) {
    uint32_t seed = 700;
    for (const Shape& s : kShapes) {
      SCOPED_TRACE(absl::StrCat(PathName(path), ": M", s.m, " N", s.n, " K", s.k));
      Gemm g(s.m, s.n, s.k);
      Randomize(g, seed++);
      for (int64_t n = 0; n < s.n; ++n) {
        g.bias[n] = n % 2 == 0 ? std::numeric_limits<int32_t>::max() - static_cast<int32_t>(n)
                               : std::numeric_limits<int32_t>::min() + static_cast<int32_t>(n);
        g.multiplier[n] = 2.5e-8f;
      }
      g.p.lo = -128;
      g.p.hi = 127;
      EXPECT_EQ(RunPacked(g, path, 2), RunReference(g));
    }
  }
}

TEST(Int8GemmTest, FastestPicksVnniElseAvx2) {
  Gemm g(3, 17, 5);
  using Layout = PackedQGemmWeights::Layout;
  EXPECT_EQ(PackQGemmWeights(g.p).layout, QInt8HasVnni()   ? Layout::kVnni
                                          : QInt8HasAvx2() ? Layout::kAvx2
                                                           : Layout::kReference);
  EXPECT_EQ(PackQGemmWeights(g.p, QKernelPath::kAvx2).layout,
            QInt8HasAvx2() ? Layout::kAvx2 : Layout::kReference);
}

TEST(Int8GemmFastTest, OddMultipliersAndZeroPointsFallBackToTheReference) {
  // Outside the fast epilogue's preconditions (finite multipliers, int8 zp_out) QGemm must
  // still give the contract's bits.
  Gemm g(7, 20, 9);
  Randomize(g, 31);
  g.multiplier[0] = std::numeric_limits<float>::quiet_NaN();
  g.multiplier[1] = std::numeric_limits<float>::infinity();
  g.bias[1] = 0;
  std::fill(g.a.begin(), g.a.begin() + 9, 0);  // row 0: acc = 0 in column 1, 0 * inf = NaN
  const std::vector<int8_t> reference = RunReference(g);
  EXPECT_EQ(RunPacked(g, QKernelPath::kFastest, 2), reference);
  EXPECT_EQ(RunPacked(g, QKernelPath::kAvx2, 2), reference);
  EXPECT_EQ(reference[0], std::clamp(g.p.zp_out, g.p.lo, g.p.hi));
  EXPECT_EQ(reference[1], std::clamp(g.p.zp_out, g.p.lo, g.p.hi));
  Randomize(g, 32);
  g.p.zp_out = -1000;
  g.p.lo = -128;
  g.p.hi = 127;
  EXPECT_EQ(RunPacked(g, QKernelPath::kFastest, 1), RunReference(g));
  EXPECT_EQ(RunPacked(g, QKernelPath::kAvx2, 1), RunReference(g));
}

TEST(Int8GemmFastTest, BitIdenticalWhenTheAccumulatorWraps) {
  SKIP_WITHOUT_FAST_PATH();
  // K = 150001 products of -128 * 127 sum to -2.4e9, past int32: both paths wrap mod 2^32.
  Gemm g(2, 3, 150001);
  Randomize(g, 9);
  std::fill(g.a.begin(), g.a.end(), -128);
  std::fill(g.b.begin(), g.b.end(), 127);
  g.multiplier = {1e-7f, 2e-7f, 3e-7f};
  g.Bind();
  for (const QKernelPath path : FastPaths()) {
    SCOPED_TRACE(PathName(path));
    EXPECT_EQ(RunPacked(g, path, 1), RunReference(g));
  }
}

}  // namespace
}  // namespace qcc::cpu
