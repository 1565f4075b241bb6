// The GPU observers' batch statistics (kernels/cuda/observer_bodies.h): the host
// reference BatchStatsHost, turned into a TensorStats with FromParts, equals TensorStats::Add of
// the same values, for random batches with NaN, infinities, zeros of both signs, denormals and
// huge values; and HistogramBin / StatsRangeLog2 are TensorStats's binning and RangeLog2For.
// (The device reduction is checked against BatchStatsHost in tests/gpu/observer_gpu_test.cc.)
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "calib/tensor_stats.h"
#include "gtest/gtest.h"
#include "kernels/cuda/observer_bodies.h"
#include "support/float16.h"

namespace qcc::calib {
namespace {

using cuda::BatchStats;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

static_assert(cuda::kStatsBins == TensorStats::kBins);
static_assert(cuda::kStatsHalfBins == TensorStats::kHalfBins);
static_assert(cuda::kStatsHalfBinsLog2 == TensorStats::kHalfBinsLog2);
static_assert(cuda::kStatsMinRangeLog2 == TensorStats::kMinRangeLog2);
static_assert(cuda::kStatsMaxRangeLog2 == TensorStats::kMaxRangeLog2);
static_assert(cuda::kStatsNoRange == TensorStats::kNoRange);

// TensorStats from a BatchStats, as the calibration runner rebuilds one from the device.
absl::StatusOr<TensorStats> ToTensorStats(const BatchStats& b) {
  std::vector<int64_t> bins(b.bins, b.bins + cuda::kStatsBins);
  const double range = b.range_log2 == cuda::kStatsNoRange ? 0.0 : std::ldexp(1.0, b.range_log2);
  return TensorStats::FromParts(b.min, b.max, static_cast<int64_t>(b.count),
                                static_cast<int64_t>(b.nan), static_cast<int64_t>(b.posinf),
                                static_cast<int64_t>(b.neginf), range, std::move(bins));
}

// A batch of `n` values drawn from `mix`: a bit set of the kinds of values it may hold.
enum Mix : unsigned {
  kNormal = 1,
  kSpecial = 2,   // NaN, +-inf
  kZeros = 4,     // +-0
  kDenormal = 8,  // subnormal floats
  kHuge = 16,     // up to FLT_MAX
  kTiny = 32,     // around 2^-100 .. 2^-126 (the range floor)
};

std::vector<float> RandomBatch(int64_t n, unsigned mix, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 5), scale(-20, 20);
  std::vector<float> x(n);
  for (auto& v : x) {
    for (;;) {
      const int k = kind(rng);
      if (!(mix & (1u << k))) continue;
      switch (k) {
        case 0:
          v = std::ldexp(u(rng), scale(rng));
          break;
        case 1: {
          const int s = static_cast<int>(rng() % 3);
          v = s == 0 ? kNaN : (s == 1 ? kInf : -kInf);
          break;
        }
        case 2:
          v = rng() % 2 ? 0.0f : -0.0f;
          break;
        case 3:
          v = BitCast<float>((static_cast<uint32_t>(rng()) & 0x807fffffu) | 1u);
          break;
        case 4:
          v = std::ldexp(u(rng), 100 + static_cast<int>(rng() % 29));  // up to ~2^128
          if (!std::isfinite(v)) v = std::numeric_limits<float>::max();
          break;
        case 5:
          v = std::ldexp(u(rng), -100 - static_cast<int>(rng() % 27));
          break;
      }
      break;
    }
  }
  return x;
}

void ExpectMatchesTensorStats(const std::vector<float>& x, const char* what) {
  auto batch = std::make_unique<BatchStats>();
  cuda::BatchStatsHost(x.data(), static_cast<int64_t>(x.size()), batch.get());
  TensorStats want;
  want.Add(x.data(), static_cast<int64_t>(x.size()));
  absl::StatusOr<TensorStats> got = ToTensorStats(*batch);
  ASSERT_TRUE(got.ok()) << what << ": " << got.status();
  EXPECT_TRUE(*got == want) << what << ": range_log2 " << got->range_log2() << " vs "
                            << want.range_log2() << ", min " << got->min() << " vs " << want.min()
                            << ", max " << got->max() << " vs " << want.max();
  EXPECT_EQ(batch->range_log2, want.range_log2()) << what;
  if (want.has_finite()) {
    EXPECT_EQ(batch->min, want.min()) << what;
    EXPECT_EQ(batch->max, want.max()) << what;
  }
}

TEST(DeviceStatsTest, BatchStatsHostEqualsTensorStatsAdd) {
  const unsigned mixes[] = {kNormal,
                            kNormal | kSpecial,
                            kNormal | kZeros,
                            kZeros,
                            kSpecial,
                            kSpecial | kZeros,
                            kDenormal,
                            kDenormal | kZeros,
                            kTiny | kDenormal,
                            kHuge,
                            kHuge | kNormal | kSpecial,
                            kNormal | kSpecial | kZeros | kDenormal | kHuge | kTiny};
  const int64_t sizes[] = {1, 2, 17, 1000, 4096, 4097, 20000};
  int cases = 0;
  for (unsigned mix : mixes) {
    for (int64_t n : sizes) {
      const std::vector<float> x = RandomBatch(n, mix, 1000 + cases);
      ExpectMatchesTensorStats(x,
                               ("mix " + std::to_string(mix) + " n " + std::to_string(n)).c_str());
      ++cases;
    }
  }
  EXPECT_EQ(cases, 84);
}

TEST(DeviceStatsTest, EmptyAndNonFiniteBatches) {
  ExpectMatchesTensorStats({}, "empty");
  ExpectMatchesTensorStats({kNaN, kInf, -kInf, kNaN}, "non-finite");
  auto b = std::make_unique<BatchStats>();
  const float x[] = {kNaN, -kInf};
  cuda::BatchStatsHost(x, 2, b.get());
  EXPECT_EQ(b->range_log2, cuda::kStatsNoRange);
  EXPECT_EQ(b->count, 2u);
  EXPECT_EQ(b->nan, 1u);
  EXPECT_EQ(b->neginf, 1u);
  EXPECT_EQ(b->min, kInf);
  EXPECT_EQ(b->max, -kInf);
}

TEST(DeviceStatsTest, EdgeValues) {
  const float max = std::numeric_limits<float>::max();
  const float denorm = std::numeric_limits<float>::denorm_min();
  ExpectMatchesTensorStats({max, -max, 0.0f}, "FLT_MAX");
  ExpectMatchesTensorStats({denorm, -denorm}, "denorm_min");
  ExpectMatchesTensorStats({-0.0f}, "negative zero");
  ExpectMatchesTensorStats({-0.0f, 0.0f, -0.0f}, "zeros");
  ExpectMatchesTensorStats({1.0f, -1.0f, 0.5f, 0.99999994f}, "powers of two");  // 1 -> range 2
  ExpectMatchesTensorStats({std::ldexp(1.0f, -100), std::ldexp(1.0f, -101)}, "range floor");
}

TEST(DeviceStatsTest, BinAndRangeMatchTensorStats) {
  // StatsRangeLog2 is RangeLog2For on every exponent (random mantissas) and the specials.
  std::mt19937 rng(5);
  for (uint32_t e = 0; e < 255; ++e) {
    for (int k = 0; k < 16; ++k) {
      const float v = BitCast<float>((e << 23) | (static_cast<uint32_t>(rng()) & 0x7fffffu));
      ASSERT_EQ(cuda::StatsRangeLog2(v), RangeLog2For(v)) << v;
    }
  }
  EXPECT_EQ(cuda::StatsRangeLog2(0.0f), RangeLog2For(0.0f));
  // HistogramBin: single values added to a TensorStats land in that bin.
  for (int c = 0; c < 2000; ++c) {
    const std::vector<float> one = RandomBatch(1, kNormal | kZeros | kDenormal | kHuge | kTiny, c);
    TensorStats s;
    s.Add(one.data(), 1);
    const int bin = cuda::HistogramBin(one[0], s.range_log2());
    ASSERT_EQ(s.bins()[bin], 1) << one[0];
  }
  // And at wider ranges than the value's own (the device bins every value at the batch range).
  for (int c = 0; c < 2000; ++c) {
    const std::vector<float> two = RandomBatch(2, kNormal | kZeros | kDenormal | kTiny, 9000 + c);
    const std::vector<float> wide = {two[0], 1e30f};
    TensorStats s;
    s.Add(wide.data(), 2);
    const int bin = cuda::HistogramBin(two[0], s.range_log2());
    ASSERT_GE(s.bins()[bin], 1) << two[0];
  }
}

}  // namespace
}  // namespace qcc::calib
