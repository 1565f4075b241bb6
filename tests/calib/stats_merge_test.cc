// TensorStats::Merge is exact: any split of a stream, merged in any order, equals adding it all.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "calib/tensor_stats.h"
#include "gtest/gtest.h"

namespace qcc::calib {
namespace {

// Heavy-tailed data over many magnitudes, with zeros, NaN and infinities.
std::vector<float> MixedData(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> xs(n);
  for (float& x : xs) {
    const float r = u(rng);
    if (r < 0.3f) {
      x = 0.0f;
    } else if (r < 0.31f) {
      x = normal(rng) * 1000.0f;
    } else if (r < 0.3102f) {
      x = r < 0.3101f ? std::numeric_limits<float>::quiet_NaN()
                      : std::numeric_limits<float>::infinity();
    } else {
      x = normal(rng) * std::exp(4.0f * normal(rng));
    }
  }
  return xs;
}

TensorStats AddAll(const float* x, int64_t n) {
  TensorStats s;
  s.Add(x, n);
  return s;
}

TEST(CalibStatsMergeTest, MergeOfTwoHalvesEqualsAddingAll) {
  const std::vector<float> xs = MixedData(50000, 1);
  const TensorStats all = AddAll(xs.data(), static_cast<int64_t>(xs.size()));
  for (int64_t cut : {0, 1, 100, 4095, 4096, 25000, 49999, 50000}) {
    TensorStats a = AddAll(xs.data(), cut);
    const TensorStats b = AddAll(xs.data() + cut, static_cast<int64_t>(xs.size()) - cut);
    TensorStats ba = b;
    a.Merge(b);
    EXPECT_EQ(a, all) << "cut " << cut;
    ba.Merge(AddAll(xs.data(), cut));
    EXPECT_EQ(ba, all) << "cut " << cut << " (reverse order)";
  }
}

TEST(CalibStatsMergeTest, ManyShardsOfDifferentScalesMergeExactly) {
  // Shards with very different magnitudes make the merge rebin by large factors.
  std::vector<float> all_values;
  std::vector<TensorStats> shards;
  for (int i = 0; i < 6; ++i) {
    std::vector<float> xs = MixedData(3000 + 1000 * i, 10 + i);
    for (float& x : xs) x *= std::ldexp(1.0f, 6 * i - 20);
    shards.push_back(AddAll(xs.data(), static_cast<int64_t>(xs.size())));
    all_values.insert(all_values.end(), xs.begin(), xs.end());
  }
  const TensorStats all = AddAll(all_values.data(), static_cast<int64_t>(all_values.size()));
  TensorStats forward, backward;
  for (size_t i = 0; i < shards.size(); ++i) {
    forward.Merge(shards[i]);
    backward.Merge(shards[shards.size() - 1 - i]);
  }
  EXPECT_EQ(forward, all);
  EXPECT_EQ(backward, all);
  // Streaming in small irregular pieces is the same too.
  TensorStats pieces;
  for (size_t i = 0; i < all_values.size();) {
    const size_t n = std::min<size_t>(1 + (i * 7919) % 997, all_values.size() - i);
    pieces.Add(all_values.data() + i, static_cast<int64_t>(n));
    i += n;
  }
  EXPECT_EQ(pieces, all);
}

TEST(CalibStatsMergeTest, MergingEmptyAndNonFiniteOnlyStats) {
  const std::vector<float> xs = MixedData(1000, 5);
  const TensorStats all = AddAll(xs.data(), 1000);
  TensorStats empty, merged = all;
  merged.Merge(empty);
  EXPECT_EQ(merged, all);
  empty.Merge(all);
  EXPECT_EQ(empty, all);
  TensorStats nan_only;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  nan_only.Add(&nan, 1);
  TensorStats with_nan = all;
  with_nan.Merge(nan_only);
  EXPECT_EQ(with_nan.nan_count(), all.nan_count() + 1);
  EXPECT_EQ(with_nan.count(), all.count() + 1);
  EXPECT_EQ(with_nan.bins(), all.bins());
  EXPECT_EQ(with_nan.min(), all.min());
}

}  // namespace
}  // namespace qcc::calib
