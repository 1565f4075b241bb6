// Degenerate statistics (no data, zeros, constants, NaN/inf) still give finite non-zero ranges.
#include <cmath>
#include <limits>
#include <vector>

#include "calib/scale_solvers.h"
#include "gtest/gtest.h"

namespace qcc::calib {
namespace {

const char* const kMethods[] = {"minmax", "entropy", "mse", "percentile=99.99"};

TensorStats StatsOf(const std::vector<float>& xs) {
  TensorStats s;
  s.Add(xs.data(), static_cast<int64_t>(xs.size()));
  return s;
}

void ExpectValid(const TensorStats& s, const char* method) {
  const CalibMethodSpec spec = *ParseCalibMethod(method);
  const SymmetricRange r = SolveSymmetric(s, spec);
  EXPECT_TRUE(std::isfinite(r.amax) && r.amax > 0) << method << " amax " << r.amax;
  const AsymmetricRange a = SolveAsymmetric(s, spec);
  EXPECT_TRUE(std::isfinite(a.lo) && std::isfinite(a.hi)) << method;
  EXPECT_LE(a.lo, 0.0f) << method;
  EXPECT_GE(a.hi, 0.0f) << method;
  EXPECT_LT(a.lo, a.hi) << method;
}

TEST(CalibSolversDegenerateTest, AllZeroGetsAmaxOneAndAWarning) {
  const TensorStats s = StatsOf(std::vector<float>(1000, 0.0f));
  for (const char* m : kMethods) {
    const SymmetricRange r = SolveSymmetric(s, *ParseCalibMethod(m));
    EXPECT_EQ(r.amax, 1.0f) << m;
    EXPECT_TRUE(r.degenerate) << m;
    EXPECT_NE(r.warning.find("zero"), std::string::npos) << r.warning;
    const AsymmetricRange a = SolveAsymmetric(s, *ParseCalibMethod(m));
    EXPECT_EQ(a.lo, -1.0f);
    EXPECT_EQ(a.hi, 1.0f);
    EXPECT_TRUE(a.degenerate);
    ExpectValid(s, m);
  }
}

TEST(CalibSolversDegenerateTest, ConstantTensorKeepsItsValueExactly) {
  const TensorStats pos = StatsOf(std::vector<float>(500, 3.5f));
  const TensorStats neg = StatsOf(std::vector<float>(500, -2.0f));
  for (const char* m : kMethods) {
    const SymmetricRange r = SolveSymmetric(pos, *ParseCalibMethod(m));
    EXPECT_EQ(r.amax, 3.5f) << m;
    EXPECT_TRUE(r.degenerate);
    EXPECT_NE(r.warning.find("constant value 3.5"), std::string::npos) << r.warning;
    EXPECT_EQ(SolveSymmetric(neg, *ParseCalibMethod(m)).amax, 2.0f) << m;
    const AsymmetricRange a = SolveAsymmetric(neg, *ParseCalibMethod(m));
    EXPECT_EQ(a.lo, -2.0f);
    EXPECT_EQ(a.hi, 0.0f);
    ExpectValid(pos, m);
    ExpectValid(neg, m);
  }
}

TEST(CalibSolversDegenerateTest, NoFiniteValueAtAll) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (const TensorStats& s : {TensorStats(), StatsOf({nan, nan, inf, -inf})}) {
    for (const char* m : kMethods) {
      const SymmetricRange r = SolveSymmetric(s, *ParseCalibMethod(m));
      EXPECT_EQ(r.amax, 1.0f);
      EXPECT_TRUE(r.degenerate);
      EXPECT_NE(r.warning.find("no finite value"), std::string::npos) << r.warning;
      ExpectValid(s, m);
    }
  }
  const SymmetricRange r = SolveSymmetric(StatsOf({nan, nan, inf, -inf}), {});
  EXPECT_NE(r.warning.find("2 NaN, 1 +inf and 1 -inf"), std::string::npos) << r.warning;
}

TEST(CalibSolversDegenerateTest, NanInOtherwiseGoodDataIsReportedNotAbsorbed) {
  std::vector<float> xs(1000);
  for (int i = 0; i < 1000; ++i) xs[i] = std::sin(0.1f * i);
  xs[10] = std::numeric_limits<float>::quiet_NaN();
  const TensorStats s = StatsOf(xs);
  for (const char* m : kMethods) {
    const SymmetricRange r = SolveSymmetric(s, *ParseCalibMethod(m));
    EXPECT_FALSE(r.degenerate);
    EXPECT_LE(r.amax, 1.0f);
    EXPECT_NE(r.warning.find("1 NaN"), std::string::npos) << r.warning;
  }
}

TEST(CalibSolversDegenerateTest, TinyAndSparseTensorsStayFiniteAndNonZero) {
  std::vector<float> sparse(100000, 0.0f);
  sparse[5] = 4.0f;  // 99.999% zeros: the percentile lands in the zero bin
  std::vector<float> tiny = {1e-35f, -3e-36f, 0.0f};
  std::vector<float> huge = {3e38f, -1e38f, 1.0f};
  for (const auto* xs : {&sparse, &tiny, &huge}) {
    const TensorStats s = StatsOf(*xs);
    for (const char* m : kMethods) ExpectValid(s, m);
  }
  EXPECT_GE(SolveSymmetric(StatsOf(sparse), *ParseCalibMethod("percentile=99")).amax, 4.0f / 1024);
}

}  // namespace
}  // namespace qcc::calib
