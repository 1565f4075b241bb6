// Reduce* and ArgMax / ArgMin against a reference that gathers each output's elements by index.
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "tests/backend_cpu/elementwise_testing.h"
#include "tests/testing/op_test_util.h"

namespace qcc {
namespace {

using ir::OpKind;
using testing::F32;
using testing::I64;
using testing::RunSingleOp;

/// For each output element (kept axes in order), the input elements it reduces.
std::vector<std::vector<double>> GatherGroups(const Tensor& x, const std::vector<bool>& reduced) {
  const Dims& d = x.dims();
  int64_t out_numel = 1;
  for (size_t a = 0; a < d.size(); ++a) out_numel *= reduced[a] ? 1 : d[a];
  std::vector<std::vector<double>> groups(out_numel);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t rest = i, o = 0, stride = 1;
    for (int64_t a = static_cast<int64_t>(d.size()) - 1; a >= 0; --a) {
      const int64_t coord = rest % d[a];
      rest /= d[a];
      if (!reduced[a]) {
        o += coord * stride;
        stride *= d[a];
      }
    }
    groups[o].push_back(x.GetAsDouble(i));
  }
  return groups;
}

double RefReduce(OpKind kind, const std::vector<double>& v) {
  double s = 0, p = 1, mx = -INFINITY, mn = INFINITY, l1 = 0, sq = 0;
  for (double e : v) {
    s += e;
    p *= e;
    mx = std::max(mx, e);
    mn = std::min(mn, e);
    l1 += std::abs(e);
    sq += e * e;
  }
  double lse = 0;
  for (double e : v) lse += std::exp(e);
  switch (kind) {
    case OpKind::kReduceSum:
      return s;
    case OpKind::kReduceMean:
      return s / v.size();
    case OpKind::kReduceMax:
      return mx;
    case OpKind::kReduceMin:
      return mn;
    case OpKind::kReduceProd:
      return p;
    case OpKind::kReduceL1:
      return l1;
    case OpKind::kReduceL2:
      return std::sqrt(sq);
    case OpKind::kReduceLogSum:
      return std::log(s);
    case OpKind::kReduceLogSumExp:
      return std::log(lse);
    case OpKind::kReduceSumSquare:
      return sq;
    default:
      ADD_FAILURE() << "not a reduction";
      return 0;
  }
}

TEST(ReduceOps, EveryKindAxesAndKeepdims) {
  const Dims dx = {2, 3, 4};
  const Tensor x = F32(dx, testing::UniformFloats(24, 0.5f, 2.0f, 42));
  const std::vector<OpKind> kinds = {
      OpKind::kReduceSum,       OpKind::kReduceMean,     OpKind::kReduceMax, OpKind::kReduceMin,
      OpKind::kReduceProd,      OpKind::kReduceL1,       OpKind::kReduceL2,  OpKind::kReduceLogSum,
      OpKind::kReduceLogSumExp, OpKind::kReduceSumSquare};
  // Axes as given (possibly negative), or nullopt for "no axes input".
  const std::vector<std::optional<std::vector<int64_t>>> axes_cases = {
      std::nullopt,
      std::vector<int64_t>{},
      std::vector<int64_t>{0},
      std::vector<int64_t>{1},
      std::vector<int64_t>{-1},
      std::vector<int64_t>{0, 2},
      std::vector<int64_t>{-3, -2},
      std::vector<int64_t>{2, 1, 0}};
  for (OpKind kind : kinds) {
    for (const auto& axes : axes_cases) {
      for (int keepdims : {0, 1}) {
        std::vector<bool> reduced(3, axes && !axes->empty() ? false : true);
        if (axes) {
          for (int64_t a : *axes) reduced[a < 0 ? a + 3 : a] = true;
        }
        Dims want_dims;
        for (int a = 0; a < 3; ++a) {
          if (!reduced[a])
            want_dims.push_back(dx[a]);
          else if (keepdims)
            want_dims.push_back(1);
        }
        std::vector<testing::OpInput> inputs = {{x}};
        if (axes) {
          inputs.push_back({I64({static_cast<int64_t>(axes->size())}, *axes), true});
        }
        auto out = RunSingleOp(kind, ir::ReduceAttrs{keepdims, 0}, inputs);
        ASSERT_TRUE(out.ok()) << out.status();
        const Tensor& y = (*out)[0];
        ASSERT_EQ(y.dims(), want_dims) << ir::OpName(kind);
        const auto groups = GatherGroups(x, reduced);
        ASSERT_EQ(static_cast<size_t>(y.numel()), groups.size());
        for (int64_t o = 0; o < y.numel(); ++o) {
          const double want = RefReduce(kind, groups[o]);
          EXPECT_NEAR(y.data<float>()[o], want, 1e-5 * std::max(1.0, std::abs(want)))
              << ir::OpName(kind) << " keepdims " << keepdims << " @" << o;
        }
      }
    }
  }
}

TEST(ReduceOps, AxesAsRuntimeInputAndNoop) {
  const Tensor x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto runtime = RunSingleOp(OpKind::kReduceSum, ir::ReduceAttrs{0, 0}, {{x}, {I64({1}, {-1})}});
  ASSERT_TRUE(runtime.ok()) << runtime.status();
  EXPECT_EQ((*runtime)[0].dims(), (Dims{2}));
  EXPECT_EQ((*runtime)[0].ToFloatVector(), (std::vector<float>{6, 15}));

  auto noop = RunSingleOp(OpKind::kReduceSum, ir::ReduceAttrs{1, 1}, {{x}, {I64({0}, {}), true}});
  ASSERT_TRUE(noop.ok()) << noop.status();
  EXPECT_TRUE((*noop)[0].BitwiseEquals(x));

  auto bad = RunSingleOp(OpKind::kReduceSum, ir::ReduceAttrs{}, {{x}, {I64({1}, {2}), true}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ReduceOps, EmptySetsGiveIdentities) {
  const Tensor x = F32({2, 0, 3}, {});
  const Tensor axes = I64({1}, {1});
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::pair<OpKind, float>> cases = {
      {OpKind::kReduceSum, 0.0f},   {OpKind::kReduceProd, 1.0f},      {OpKind::kReduceMax, -inf},
      {OpKind::kReduceMin, inf},    {OpKind::kReduceLogSumExp, -inf}, {OpKind::kReduceL2, 0.0f},
      {OpKind::kReduceLogSum, -inf}};
  for (const auto& [kind, want] : cases) {
    auto out = RunSingleOp(kind, ir::ReduceAttrs{0, 0}, {{x}, {axes, true}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].dims(), (Dims{2, 3}));
    for (float v : (*out)[0].ToFloatVector()) EXPECT_EQ(v, want) << ir::OpName(kind);
  }
}

TEST(ReduceOps, IntegerTypes) {
  const Tensor x = Tensor::FromVector<int32_t>(DType::kInt32, {2, 3}, {1, -7, 3, 4, 5, -6});
  auto sum = RunSingleOp(OpKind::kReduceSum, ir::ReduceAttrs{0, 0}, {{x}, {I64({1}, {0}), true}});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ((*sum)[0].dtype(), DType::kInt32);
  EXPECT_EQ((*sum)[0].ToInt64Vector(), (std::vector<int64_t>{5, -2, -3}));
  auto mx = RunSingleOp(OpKind::kReduceMax, ir::ReduceAttrs{1, 0}, {{x}, {I64({1}, {1}), true}});
  ASSERT_TRUE(mx.ok()) << mx.status();
  EXPECT_EQ((*mx)[0].dims(), (Dims{2, 1}));
  EXPECT_EQ((*mx)[0].ToInt64Vector(), (std::vector<int64_t>{3, 5}));
  auto mean = RunSingleOp(OpKind::kReduceMean, ir::ReduceAttrs{0, 0}, {{I64({4}, {1, 2, 3, -13})}});
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_EQ((*mean)[0].ToInt64Vector(), (std::vector<int64_t>{-1}));  // -7 / 4 truncates
  auto prod = RunSingleOp(OpKind::kReduceProd, ir::ReduceAttrs{0, 0}, {{x}});
  ASSERT_TRUE(prod.ok()) << prod.status();
  EXPECT_EQ((*prod)[0].ToInt64Vector(), (std::vector<int64_t>{1 * -7 * 3 * 4 * 5 * -6}));
}

TEST(ReduceArg, MaxMinAxisKeepdimsAndTies) {
  // [2, 3] with a tie in row 0 (5 at 0 and 2) and in column 1 (4 and 4).
  const Tensor x = F32({2, 3}, {5, 4, 5, 1, 4, 0});
  struct Case {
    OpKind kind;
    ir::ArgReduceAttrs attrs;
    Dims dims;
    std::vector<int64_t> want;
  };
  const std::vector<Case> cases = {
      {OpKind::kArgMax, {1, 1, 0}, {2, 1}, {0, 1}},
      {OpKind::kArgMax, {1, 1, 1}, {2, 1}, {2, 1}},
      {OpKind::kArgMax, {-1, 0, 0}, {2}, {0, 1}},
      {OpKind::kArgMax, {0, 0, 0}, {3}, {0, 0, 0}},
      {OpKind::kArgMax, {0, 0, 1}, {3}, {0, 1, 0}},
      {OpKind::kArgMin, {1, 0, 0}, {2}, {1, 2}},
      {OpKind::kArgMin, {0, 1, 0}, {1, 3}, {1, 0, 1}},
      {OpKind::kArgMin, {0, 1, 1}, {1, 3}, {1, 1, 1}},
  };
  for (const Case& c : cases) {
    auto out = RunSingleOp(c.kind, c.attrs, {{x}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].dtype(), DType::kInt64);
    EXPECT_EQ((*out)[0].dims(), c.dims);
    EXPECT_EQ((*out)[0].ToInt64Vector(), c.want)
        << ir::OpName(c.kind) << " axis " << c.attrs.axis << " last " << c.attrs.select_last_index;
  }
  auto ints = RunSingleOp(OpKind::kArgMax, ir::ArgReduceAttrs{1, 0, 0},
                          {{Tensor::FromVector<uint8_t>(DType::kUInt8, {1, 4}, {3, 250, 7, 9})}});
  ASSERT_TRUE(ints.ok()) << ints.status();
  EXPECT_EQ((*ints)[0].ToInt64Vector(), (std::vector<int64_t>{1}));
}

}  // namespace
}  // namespace qcc
