// TensorStats: bin placement, range growth, NaN/inf counting, constant memory, FromParts checks.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "calib/tensor_stats.h"
#include "gtest/gtest.h"

namespace qcc::calib {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Independent reference: bin of x at range 2^e, in double arithmetic.
int RefBin(float x, int e) {
  const double w = std::ldexp(1.0, e) / 1024.0;
  const double m = std::floor(std::fabs(static_cast<double>(x)) / w);
  return x < 0 ? 1023 - static_cast<int>(m) : 1024 + static_cast<int>(m);
}

std::vector<int64_t> RefHistogram(const std::vector<float>& xs, int e) {
  std::vector<int64_t> h(2048, 0);
  for (float x : xs) {
    if (std::isfinite(x)) ++h[RefBin(x, e)];
  }
  return h;
}

TEST(CalibStatsHistogramTest, HandComputedBinsAndCounts) {
  TensorStats s;
  const std::vector<float> xs = {-1.0f, 0.5f, 2.0f, kNaN, kInf, -kInf, 0.0f, -0.0f};
  s.Add(xs.data(), static_cast<int64_t>(xs.size()));
  EXPECT_EQ(s.count(), 8);
  EXPECT_EQ(s.nan_count(), 1);
  EXPECT_EQ(s.posinf_count(), 1);
  EXPECT_EQ(s.neginf_count(), 1);
  EXPECT_EQ(s.finite_count(), 5);
  EXPECT_EQ(s.min(), -1.0f);
  EXPECT_EQ(s.max(), 2.0f);
  EXPECT_EQ(s.range(), 4.0);  // smallest power of two strictly above 2
  EXPECT_EQ(s.bin_width(), 4.0 / 1024);
  // w = 1/256: 2 -> m 512 -> bin 1536; 0.5 -> m 128 -> 1152; -1 -> m 256 -> 1023 - 256 = 767;
  // both zeros -> 1024.
  std::vector<int64_t> want(2048, 0);
  want[1536] = 1;
  want[1152] = 1;
  want[767] = 1;
  want[1024] = 2;
  EXPECT_EQ(s.bins(), want);
  const std::vector<int64_t> abs = s.AbsHistogram();
  EXPECT_EQ(abs[0], 2);
  EXPECT_EQ(abs[128], 1);
  EXPECT_EQ(abs[256], 1);
  EXPECT_EQ(abs[512], 1);
}

TEST(CalibStatsHistogramTest, BinEdgesAreHalfOpenAwayFromZero) {
  TensorStats s;
  const float w = 1.0f / 1024;  // range 1 (max |x| = 0.75)
  const std::vector<float> xs = {w, -w, 0.999f * w, -0.999f * w, 0.75f};
  s.Add(xs.data(), 5);
  ASSERT_EQ(s.range(), 1.0);
  EXPECT_EQ(s.bins()[1025], 1);  // [w, 2w)
  EXPECT_EQ(s.bins()[1022], 1);  // (-2w, -w]
  EXPECT_EQ(s.bins()[1024], 1);  // [0, w)
  EXPECT_EQ(s.bins()[1023], 1);  // (-w, 0]
}

TEST(CalibStatsHistogramTest, NegativeZeroCountsAsZero) {
  TensorStats a, b;
  const float neg_first[] = {-0.0f, 0.0f}, pos_first[] = {0.0f, -0.0f};
  a.Add(neg_first, 2);
  b.Add(pos_first, 2);
  EXPECT_EQ(a, b);
  EXPECT_FALSE(std::signbit(a.min()));
  EXPECT_FALSE(std::signbit(a.max()));
  EXPECT_EQ(a.range(), std::ldexp(1.0, TensorStats::kMinRangeLog2));
  EXPECT_EQ(a.bins()[1024], 2);
}

TEST(CalibStatsHistogramTest, RangeGrowsByMergingBinPairs) {
  std::mt19937 rng(7);
  std::vector<float> all;
  TensorStats s;
  // Each chunk has a larger magnitude, forcing several doublings (2^-3 ... 2^9).
  for (float scale : {0.1f, 0.7f, 3.0f, 40.0f, 300.0f}) {
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> chunk(5000);
    for (float& x : chunk) x = dist(rng);
    s.Add(chunk.data(), static_cast<int64_t>(chunk.size()));
    all.insert(all.end(), chunk.begin(), chunk.end());
    float amax = 0;
    for (float x : all) amax = std::max(amax, std::fabs(x));
    int k;
    std::frexp(amax, &k);
    ASSERT_EQ(s.range_log2(), k) << "scale " << scale;
    ASSERT_EQ(s.bins(), RefHistogram(all, k)) << "scale " << scale;
  }
}

TEST(CalibStatsHistogramTest, LargeAddMatchesReferenceAcrossBlocks) {
  // 100k values (sub-histogram path, 25 blocks), half of them ReLU zeros, with NaN/inf sprinkled.
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> xs(100000);
  for (float& x : xs) x = std::max(dist(rng), 0.0f);
  xs[17] = kNaN;
  xs[50001] = kInf;
  xs[99999] = -kInf;
  xs[4096] = -5.5f;
  TensorStats s;
  s.Add(xs.data(), static_cast<int64_t>(xs.size()));
  EXPECT_EQ(s.count(), 100000);
  EXPECT_EQ(s.nan_count(), 1);
  EXPECT_EQ(s.posinf_count(), 1);
  EXPECT_EQ(s.neginf_count(), 1);
  EXPECT_EQ(s.min(), -5.5f);
  EXPECT_EQ(s.bins(), RefHistogram(xs, s.range_log2()));
  int64_t total = 0;
  for (int64_t c : s.bins()) total += c;
  EXPECT_EQ(total, s.finite_count());
}

TEST(CalibStatsHistogramTest, EveryLengthAndSignMatchesTheReference) {
  // Lengths around the 16- and 32-value vector steps and the 8192-value sub-histogram switch,
  // with values in the centre bin that are not zero, tiny negatives (the bin below it), -0.0,
  // and one NaN in some blocks (the mixed-block path).
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (const int64_t n : {1, 15, 16, 17, 31, 33, 100, 4097, 8191, 8192, 12345}) {
    SCOPED_TRACE(n);
    std::vector<float> xs(n);
    for (int64_t i = 0; i < n; ++i) {
      switch (i % 7) {
        case 0:
          xs[i] = 0.0f;
          break;
        case 1:
          xs[i] = -0.0f;
          break;
        case 2:
          xs[i] = 1e-6f;
          break;
        case 3:
          xs[i] = -1e-6f;
          break;
        default:
          xs[i] = dist(rng);
      }
    }
    if (n > 100) xs[n / 2] = kNaN;
    TensorStats s;
    s.Add(xs.data(), n);
    float lo = kInf, hi = -kInf;
    for (float x : xs) {
      if (std::isnan(x)) continue;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
    EXPECT_EQ(s.count(), n);
    EXPECT_EQ(s.nan_count(), n > 100 ? 1 : 0);
    EXPECT_EQ(s.min(), lo + 0.0f);
    EXPECT_EQ(s.max(), hi + 0.0f);
    EXPECT_EQ(s.bins(), RefHistogram(xs, s.range_log2()));
  }
}

TEST(CalibStatsHistogramTest, OnlyNonFiniteValuesLeaveNoRange) {
  TensorStats s;
  const float xs[] = {kNaN, kInf, kNaN};
  s.Add(xs, 3);
  EXPECT_FALSE(s.has_finite());
  EXPECT_EQ(s.range(), 0.0);
  EXPECT_EQ(s.range_log2(), TensorStats::kNoRange);
  EXPECT_EQ(s.abs_max(), 0.0f);
  EXPECT_EQ(s.nan_count(), 2);
  EXPECT_EQ(s.posinf_count(), 1);
}

TEST(CalibStatsHistogramTest, ExtremeMagnitudes) {
  TensorStats s;
  const float xs[] = {std::numeric_limits<float>::max(), -std::numeric_limits<float>::denorm_min(),
                      1e-30f};
  s.Add(xs, 3);
  EXPECT_EQ(s.range_log2(), 128);
  EXPECT_EQ(s.bins()[2047], 1);
  EXPECT_EQ(s.bins()[1023], 1);
  EXPECT_EQ(s.bins()[1024], 1);
}

TEST(CalibStatsHistogramTest, MemoryDoesNotGrowWithSamples) {
  TensorStats s;
  std::vector<float> batch(1 << 16);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  for (float& x : batch) x = dist(rng);
  s.Add(batch.data(), static_cast<int64_t>(batch.size()));
  const size_t capacity = s.bins().capacity();
  for (int i = 0; i < 150; ++i) s.Add(batch.data(), static_cast<int64_t>(batch.size()));
  EXPECT_EQ(s.count(), 151LL << 16);
  EXPECT_EQ(s.bins().size(), 2048u);
  EXPECT_EQ(s.bins().capacity(), capacity);
  EXPECT_LE(sizeof(TensorStats), 128u);
}

TEST(CalibStatsHistogramTest, FromPartsRoundTripsAndRejectsInconsistentParts) {
  TensorStats s;
  const float xs[] = {-1.0f, 0.25f, 3.0f, kNaN};
  s.Add(xs, 4);
  auto back = TensorStats::FromParts(s.min(), s.max(), s.count(), s.nan_count(), s.posinf_count(),
                                     s.neginf_count(), s.range(), s.bins());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, s);

  auto expect_bad = [&](float mn, float mx, int64_t count, int64_t nan, double range,
                        std::vector<int64_t> bins, const char* needle) {
    auto r = TensorStats::FromParts(mn, mx, count, nan, 0, 0, range, std::move(bins));
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status();
  };
  std::vector<int64_t> bins = s.bins();
  expect_bad(s.min(), s.max(), 5, 1, 4.0, bins, "sum to 3 but");
  expect_bad(3.0f, -1.0f, 4, 1, 4.0, bins, "min <= max");
  expect_bad(s.min(), s.max(), 4, 1, 3.0, bins, "not a positive power of two");
  expect_bad(s.min(), s.max(), 4, 1, 8.0, bins, "smallest power of two");
  expect_bad(s.min(), s.max(), -4, 1, 4.0, bins, "\"count\" is -4");
  expect_bad(s.min(), s.max(), 4, 5, 4.0, bins, "exceeds");
  expect_bad(s.min(), s.max(), 4, 1, 4.0, std::vector<int64_t>(100, 0), "100 bins");
  std::vector<int64_t> neg = bins;
  neg[0] = -1;
  expect_bad(s.min(), s.max(), 4, 1, 4.0, neg, "bin 0 count -1");
  std::vector<int64_t> outside = bins;
  outside[2047] = 1;
  expect_bad(s.min(), s.max(), 5, 1, 4.0, outside, "outside [min, max]");
  expect_bad(0, 0, 1, 1, 2.0, std::vector<int64_t>(2048, 0), "no finite value");
}

}  // namespace
}  // namespace qcc::calib
