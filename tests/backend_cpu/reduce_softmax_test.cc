// Softmax, LogSoftmax and Hardmax: every axis, the opset < 13 flattened form, extremes.
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/softmax.h"
#include "tests/backend_cpu/elementwise_testing.h"
#include "tests/testing/op_test_util.h"

namespace qcc {
namespace {

using ir::OpKind;
using testing::F32;
using testing::RunSingleOp;

/// Reference over a [outer, n, inner] view: exp(x) / sum exp(x) along n, in double.
std::vector<double> RefSoftmax(const std::vector<float>& x, int64_t outer, int64_t n, int64_t inner,
                               bool log) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += std::exp(double{x[(o * n + j) * inner + i]});
      for (int64_t j = 0; j < n; ++j) {
        const int64_t k = (o * n + j) * inner + i;
        y[k] = log ? x[k] - std::log(sum) : std::exp(double{x[k]}) / sum;
      }
    }
  }
  return y;
}

TEST(ReduceSoftmax, EveryAxisBothForms) {
  const Dims dx = {2, 3, 4};
  const std::vector<float> xv = testing::UniformFloats(24, -4.0f, 4.0f, 5);
  const Tensor x = F32(dx, xv);
  for (int64_t axis = -3; axis < 3; ++axis) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    for (int coerce : {0, 1}) {
      int64_t outer = 1, n = 1, inner = 1;
      for (int64_t k = 0; k < 3; ++k) {
        if (k < a)
          outer *= dx[k];
        else if (k == a || coerce)
          n *= dx[k];
        else
          inner *= dx[k];
      }
      for (bool log : {false, true}) {
        auto out = RunSingleOp(log ? OpKind::kLogSoftmax : OpKind::kSoftmax,
                               ir::SoftmaxAttrs{axis, coerce}, {{x}});
        ASSERT_TRUE(out.ok()) << out.status();
        ASSERT_EQ((*out)[0].dims(), dx);
        const std::vector<double> want = RefSoftmax(xv, outer, n, inner, log);
        for (int k = 0; k < 24; ++k) {
          EXPECT_NEAR((*out)[0].data<float>()[k], want[k], 1e-6 * std::max(1.0, std::abs(want[k])))
              << "axis " << axis << " coerce " << coerce << " log " << log << " @" << k;
        }
      }
    }
  }
}

TEST(ReduceSoftmax, LargeInputsDoNotOverflow) {
  auto out = RunSingleOp(OpKind::kSoftmax, ir::SoftmaxAttrs{}, {{F32({3}, {1000, 1000, 999})}});
  ASSERT_TRUE(out.ok()) << out.status();
  const double e = std::exp(-1.0), s = 2 + e;
  EXPECT_NEAR((*out)[0].data<float>()[0], 1 / s, 1e-6);
  EXPECT_NEAR((*out)[0].data<float>()[2], e / s, 1e-6);
  auto log = RunSingleOp(OpKind::kLogSoftmax, ir::SoftmaxAttrs{}, {{F32({2}, {-1000, 0})}});
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_NEAR((*log)[0].data<float>()[0], -1000.0f, 1e-3);
  EXPECT_EQ((*log)[0].data<float>()[1], 0.0f);
}

TEST(ReduceSoftmax, HardmaxFirstMaximum) {
  const Tensor x = F32({2, 3}, {1, 3, 3, 0, -1, 0});
  auto rows = RunSingleOp(OpKind::kHardmax, ir::SoftmaxAttrs{-1, 0}, {{x}});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ((*rows)[0].ToFloatVector(), (std::vector<float>{0, 1, 0, 1, 0, 0}));
  auto cols = RunSingleOp(OpKind::kHardmax, ir::SoftmaxAttrs{0, 0}, {{x}});
  ASSERT_TRUE(cols.ok()) << cols.status();
  EXPECT_EQ((*cols)[0].ToFloatVector(), (std::vector<float>{1, 1, 1, 0, 0, 0}));
  auto flat = RunSingleOp(OpKind::kHardmax, ir::SoftmaxAttrs{0, 1}, {{x}});
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_EQ((*flat)[0].ToFloatVector(), (std::vector<float>{0, 1, 0, 0, 0, 0}));
}

TEST(ReduceSoftmax, Float64AndBadAxis) {
  auto f64 =
      RunSingleOp(OpKind::kSoftmax, ir::SoftmaxAttrs{},
                  {{Tensor::FromVector<double>(DType::kFloat64, {2}, {0.0, std::log(3.0)})}});
  ASSERT_TRUE(f64.ok()) << f64.status();
  EXPECT_NEAR((*f64)[0].data<double>()[0], 0.25, 1e-15);
  EXPECT_NEAR((*f64)[0].data<double>()[1], 0.75, 1e-15);
  auto bad = RunSingleOp(OpKind::kSoftmax, ir::SoftmaxAttrs{2, 0}, {{F32({2}, {1, 2})}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();
}

TEST(ReduceSoftmax, AddRowsIsAddThenSoftmax) {
  // Attention's rows: softmax(x + add) in place equals the Add then the Softmax kernel bit for
  // bit where every term is a normal float; a -1e4 mask gives exact zeros, a term below
  // 1.2e-38 of the row's largest is 0 (the Softmax kernel keeps it as a denormal), NaN spreads.
  constexpr int64_t kRows = 5, kN = 37;
  std::vector<float> x = testing::UniformFloats(kRows * kN, -6.0f, 6.0f, 17);
  std::vector<float> add = testing::UniformFloats(kRows * kN, -2.0f, 2.0f, 18);
  for (int64_t j = 0; j < kN; j += 7) add[2 * kN + j] = -10000.0f;
  std::vector<float> sum(x.size()), want(x.size());
  for (size_t i = 0; i < x.size(); ++i) sum[i] = x[i] + add[i];
  cpu::SoftmaxParams p;
  p.outer = kRows;
  p.n = kN;
  cpu::Softmax<float>(p, sum.data(), want.data());
  std::vector<float> got = x;
  cpu::SoftmaxAddRows(kRows, kN, got.data(), add.data(), kN);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(got[i], want[i]) << i;
  for (int64_t j = 0; j < kN; j += 7) EXPECT_EQ(got[2 * kN + j], 0.0f) << j;
  // One row without an add, a term 95 below the maximum, and a NaN.
  std::vector<float> row = {0.0f, -95.0f, 1.0f, 2.0f};
  cpu::SoftmaxAddRows(1, 4, row.data(), nullptr, 0);
  EXPECT_EQ(row[1], 0.0f);
  EXPECT_NEAR(row[3], std::exp(2.0) / (1 + std::exp(1.0) + std::exp(2.0)), 1e-7);
  row = {0.0f, std::nanf(""), 1.0f};
  cpu::SoftmaxAddRows(1, 3, row.data(), nullptr, 0);
  for (float v : row) EXPECT_TRUE(std::isnan(v));
}

}  // namespace
}  // namespace qcc
