// Scale solvers against hand-computed ranges and against the real quantization error of the data.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "calib/scale_solvers.h"
#include "gtest/gtest.h"

namespace qcc::calib {
namespace {

TensorStats StatsOf(const std::vector<float>& xs) {
  TensorStats s;
  s.Add(xs.data(), static_cast<int64_t>(xs.size()));
  return s;
}

CalibMethodSpec Spec(const char* text) {
  auto spec = ParseCalibMethod(text);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

// n values evenly spaced over (lo, hi).
std::vector<float> Even(int n, double lo, double hi) {
  std::vector<float> xs(n);
  for (int k = 0; k < n; ++k) xs[k] = static_cast<float>(lo + (hi - lo) * (k + 0.5) / n);
  return xs;
}

// N(0, 1) samples plus `outliers` values at +-`at`.
std::vector<float> GaussianWithOutliers(int n, int outliers, float at = 50.0f) {
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> xs(n);
  for (float& x : xs) x = dist(rng);
  for (int i = 0; i < outliers; ++i) xs.push_back(i % 2 ? at : -at);
  return xs;
}

// Mean squared error of symmetric int8 fake quantization of `xs` with range amax.
double QuantMse(const std::vector<float>& xs, double amax) {
  const double step = amax / 127;
  double err = 0;
  for (float x : xs) {
    const double q = std::clamp(std::nearbyint(x / step), -127.0, 127.0) * step;
    err += (x - q) * (x - q);
  }
  return err / xs.size();
}

TEST(CalibSolversParseTest, MethodsAndErrors) {
  EXPECT_EQ(Spec("minmax").method, CalibMethod::kMinMax);
  EXPECT_EQ(Spec("entropy").method, CalibMethod::kEntropy);
  EXPECT_EQ(Spec("MSE").method, CalibMethod::kMse);
  EXPECT_EQ(Spec("percentile").percentile, 99.99);
  EXPECT_EQ(Spec("percentile=99.9").percentile, 99.9);
  EXPECT_EQ(CalibMethodName(Spec("percentile=99.9")), "percentile=99.9");
  EXPECT_EQ(CalibMethodName(Spec("percentile")), "percentile=99.99");
  EXPECT_EQ(CalibMethodName(CalibMethodSpec{}), "entropy");
  for (const char* bad :
       {"kl", "percentile=", "percentile=0", "percentile=101", "percentile=x", "min-max", ""}) {
    auto r = ParseCalibMethod(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(absl::StrCat("'", bad, "'")), std::string::npos)
        << r.status();
  }
}

TEST(CalibSolversMethodsTest, MinMaxIsTheLargestMagnitude) {
  const TensorStats s = StatsOf(Even(1000, -3.0, 2.5));
  const SymmetricRange r = SolveSymmetric(s, Spec("minmax"));
  EXPECT_EQ(r.amax, s.abs_max());
  EXPECT_NEAR(r.amax, 3.0, 3e-3);
  EXPECT_FALSE(r.degenerate);
  EXPECT_EQ(r.warning, "");
  const AsymmetricRange a = SolveAsymmetric(s, Spec("minmax"));
  EXPECT_EQ(a.lo, s.min());
  EXPECT_EQ(a.hi, s.max());
  // All-positive data: the range is widened to include zero.
  const TensorStats pos = StatsOf(Even(100, 0.5, 2.0));
  const AsymmetricRange p = SolveAsymmetric(pos, Spec("minmax"));
  EXPECT_EQ(p.lo, 0.0f);
  EXPECT_EQ(p.hi, pos.max());
}

TEST(CalibSolversMethodsTest, PercentileOnKnownDistributions) {
  // |x| uniform on (0, 1): the P-th percentile is P/100 (bin width 1/1024).
  const TensorStats u = StatsOf(Even(200000, -1.0, 1.0));
  EXPECT_NEAR(SolveSymmetric(u, Spec("percentile=99")).amax, 0.99, 1.0 / 1024);
  EXPECT_NEAR(SolveSymmetric(u, Spec("percentile=50")).amax, 0.5, 1.0 / 1024);
  EXPECT_EQ(SolveSymmetric(u, Spec("percentile=100")).amax, u.abs_max());
  // N(0, 1): 99% of |x| lies below 2.5758.
  const TensorStats g = StatsOf(GaussianWithOutliers(400000, 0));
  EXPECT_NEAR(SolveSymmetric(g, Spec("percentile=99")).amax, 2.5758, 0.03);
  // Asymmetric: uniform on (-1, 3), 1% in each tail: [-0.96, 2.96].
  const TensorStats a = StatsOf(Even(400000, -1.0, 3.0));
  const AsymmetricRange r = SolveAsymmetric(a, Spec("percentile=99"));
  EXPECT_NEAR(r.lo, -0.96, 4.0 / 1024);
  EXPECT_NEAR(r.hi, 2.96, 4.0 / 1024);
}

TEST(CalibSolversMethodsTest, EntropyClipsOutliersOfAGaussian) {
  // 20 outliers at +-12 among 200k N(0, 1) values: range 16, |x| bins of 1/64.
  const TensorStats s = StatsOf(GaussianWithOutliers(200000, 20, 12.0f));
  ASSERT_EQ(s.abs_max(), 12.0f);
  const SymmetricRange r = SolveSymmetric(s, Spec("entropy"));
  EXPECT_GT(r.amax, 2.5f);
  EXPECT_LT(r.amax, 0.5f * s.abs_max());
  // Asymmetric: the symmetric threshold clipped to the data.
  const AsymmetricRange a = SolveAsymmetric(s, Spec("entropy"));
  EXPECT_EQ(a.hi, r.amax);
  EXPECT_EQ(a.lo, -a.hi);
}

TEST(CalibSolversMethodsTest, MseClipsRareOutliersAndMinimisesTheRealError) {
  // 2 outliers at +-12 among 200k N(0, 1) values: clipping them costs less than the coarser step.
  const std::vector<float> xs = GaussianWithOutliers(200000, 2, 12.0f);
  const TensorStats s = StatsOf(xs);
  const float amax = SolveSymmetric(s, Spec("mse")).amax;
  // Expected error ~ (T/127)^2/12 (rounding, nearly all mass) + p (12 - T)^2 (clipping, p = 1e-5):
  // zero derivative at T / (127^2 * 12) = p (12 - T), T = 7.91.
  const double p = 2.0 / 200002, t_star = 12 * p / (p + 1.0 / (127.0 * 127 * 12));
  EXPECT_NEAR(amax, t_star, 0.3);
  EXPECT_LT(amax, 0.7f * s.abs_max());
  // Near optimal for the real fake-quantization error of the data, not only for the histogram.
  const double at = QuantMse(xs, amax);
  for (double f : {0.7, 0.85, 1.2, 1.5}) {
    EXPECT_LT(at, QuantMse(xs, amax * f) * 1.02) << "factor " << f;
  }
  EXPECT_LT(at, QuantMse(xs, s.abs_max()));
  // With many outliers the squared clipping error dominates and MSE keeps (nearly) all.
  const TensorStats heavy = StatsOf(GaussianWithOutliers(200000, 200, 12.0f));
  EXPECT_GT(SolveSymmetric(heavy, Spec("mse")).amax, 0.9f * 12.0f);
}

TEST(CalibSolversMethodsTest, EntropyAndMseKeepTheWholeRangeOfUniformData) {
  const TensorStats s = StatsOf(Even(100000, -1.0, 1.0));
  for (const char* m : {"entropy", "mse"}) {
    EXPECT_GT(SolveSymmetric(s, Spec(m)).amax, 0.9f) << m;
    EXPECT_LE(SolveSymmetric(s, Spec(m)).amax, s.abs_max()) << m;
  }
}

TEST(CalibSolversMethodsTest, EntropyIsNotCapturedByTheSpikeAtZeroOfAReluOutput) {
  // A ReLU of Gaussian data: half exact zeros, half |N(0, 1)|. The spike at zero must not pull
  // the threshold down to the widest window of one-bin levels (255 bins); KL on the rest keeps
  // at least what percentile 99.9 keeps.
  std::vector<float> xs(400000, 0.0f);
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (size_t i = 0; i < xs.size(); i += 2) xs[i] = std::fabs(g(rng));
  const TensorStats s = StatsOf(xs);
  const SymmetricRange r = SolveSymmetric(s, *ParseCalibMethod("entropy"));
  const double w = s.bin_width();
  EXPECT_GT(r.amax, 256 * w);  // before the fix: exactly 255 * w = 1.99
  EXPECT_GE(r.amax, SolveSymmetric(s, *ParseCalibMethod("percentile=99.9")).amax);
  EXPECT_LE(r.amax, s.abs_max());
}

TEST(CalibSolversMethodsTest, EntropyNeverClipsMostOfAnOffsetDistribution) {
  // A HardSigmoid-like output: 90% of the values at 0.165, the rest spread up to 0.97. A window
  // ending just past 0.165 has KL 0 yet clips 10%; at most 1% may be clipped.
  std::vector<float> xs(90000, 0.165f);
  const std::vector<float> spread = Even(10000, 0.17, 0.97);
  xs.insert(xs.end(), spread.begin(), spread.end());
  const TensorStats s = StatsOf(xs);
  const SymmetricRange r = SolveSymmetric(s, *ParseCalibMethod("entropy"));
  EXPECT_GE(r.amax, SolveSymmetric(s, *ParseCalibMethod("percentile=99")).amax - s.bin_width());
  EXPECT_LE(r.amax, s.abs_max() + s.bin_width());
}

TEST(CalibSolversMethodsTest, ReluOutputsGetANonNegativeAsymmetricRange) {
  std::vector<float> xs = GaussianWithOutliers(50000, 0);
  for (float& x : xs) x = std::max(x, 0.0f);
  const TensorStats s = StatsOf(xs);
  for (const char* m : {"minmax", "entropy", "mse", "percentile=99.9"}) {
    const AsymmetricRange r = SolveAsymmetric(s, Spec(m));
    EXPECT_EQ(r.lo, 0.0f) << m;
    EXPECT_GT(r.hi, 1.0f) << m;
    EXPECT_LE(r.hi, s.max()) << m;
  }
}

}  // namespace
}  // namespace qcc::calib
