// Comparisons, logic, Where and the variadic Min / Max / Sum / Mean.
#include <cmath>
#include <functional>
#include <vector>

#include "gtest/gtest.h"
#include "tests/backend_cpu/elementwise_testing.h"
#include "tests/testing/op_test_util.h"

namespace qcc {
namespace {

using ir::OpKind;
using testing::BroadcastShape;
using testing::BroadcastSourceIndex;
using testing::F32;
using testing::I64;
using testing::RunSingleOp;

Tensor Bool(Dims dims, const std::vector<uint8_t>& v) {
  return Tensor::FromVector(DType::kBool, std::move(dims), v);
}

TEST(ElementwiseCompare, FloatComparisonsBroadcast) {
  const Dims da = {3, 1}, db = {1, 4};
  const Tensor a = F32(da, {1, 2, 3});
  const Tensor b = F32(db, {0, 2, 2.5f, 4});
  const std::vector<std::pair<OpKind, std::function<bool(float, float)>>> cases = {
      {OpKind::kEqual, [](float x, float y) { return x == y; }},
      {OpKind::kLess, [](float x, float y) { return x < y; }},
      {OpKind::kLessOrEqual, [](float x, float y) { return x <= y; }},
      {OpKind::kGreater, [](float x, float y) { return x > y; }},
      {OpKind::kGreaterOrEqual, [](float x, float y) { return x >= y; }},
  };
  const Dims dy = BroadcastShape(da, db);
  for (const auto& [kind, ref] : cases) {
    auto out = RunSingleOp(kind, ir::NoAttrs{}, {{a}, {b}});
    ASSERT_TRUE(out.ok()) << out.status();
    const Tensor& y = (*out)[0];
    ASSERT_EQ(y.dtype(), DType::kBool);
    ASSERT_EQ(y.dims(), dy);
    for (int64_t o = 0; o < y.numel(); ++o) {
      const float va = a.data<float>()[BroadcastSourceIndex(da, dy, o)];
      const float vb = b.data<float>()[BroadcastSourceIndex(db, dy, o)];
      EXPECT_EQ(y.data<uint8_t>()[o], ref(va, vb) ? 1 : 0) << ir::OpName(kind) << " @" << o;
    }
  }
}

TEST(ElementwiseCompare, IntegerAndBoolEquality) {
  auto ints =
      RunSingleOp(OpKind::kLess, ir::NoAttrs{}, {{I64({2, 2}, {-5, 3, 7, 0})}, {I64({2}, {0, 3})}});
  ASSERT_TRUE(ints.ok()) << ints.status();
  EXPECT_EQ((*ints)[0].ToInt64Vector(), (std::vector<int64_t>{1, 0, 0, 1}));
  auto u8 = RunSingleOp(OpKind::kGreater, ir::NoAttrs{},
                        {{Tensor::FromVector<uint8_t>(DType::kUInt8, {2}, {200, 1})},
                         {Tensor::FromVector<uint8_t>(DType::kUInt8, {}, {100})}});
  ASSERT_TRUE(u8.ok()) << u8.status();
  EXPECT_EQ((*u8)[0].ToInt64Vector(), (std::vector<int64_t>{1, 0}));
  auto bools = RunSingleOp(OpKind::kEqual, ir::NoAttrs{},
                           {{Bool({4}, {0, 0, 1, 1})}, {Bool({4}, {0, 1, 0, 1})}});
  ASSERT_TRUE(bools.ok()) << bools.status();
  EXPECT_EQ((*bools)[0].ToInt64Vector(), (std::vector<int64_t>{1, 0, 0, 1}));
}

TEST(ElementwiseCompare, LogicOnBoolsBroadcast) {
  const Tensor a = Bool({2, 1}, {0, 1});
  const Tensor b = Bool({1, 2}, {0, 1});
  const std::vector<std::pair<OpKind, std::vector<int64_t>>> cases = {
      {OpKind::kAnd, {0, 0, 0, 1}},
      {OpKind::kOr, {0, 1, 1, 1}},
      {OpKind::kXor, {0, 1, 1, 0}},
  };
  for (const auto& [kind, want] : cases) {
    auto out = RunSingleOp(kind, ir::NoAttrs{}, {{a}, {b}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].dims(), (Dims{2, 2}));
    EXPECT_EQ((*out)[0].ToInt64Vector(), want) << ir::OpName(kind);
  }
  auto not_bool = RunSingleOp(OpKind::kAnd, ir::NoAttrs{}, {{I64({1}, {1})}, {I64({1}, {1})}});
  ASSERT_FALSE(not_bool.ok());
  EXPECT_EQ(not_bool.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(ElementwiseCompare, WhereBroadcastsAnyDType) {
  const Tensor cond = Bool({3, 1}, {1, 0, 1});
  auto ints = RunSingleOp(OpKind::kWhere, ir::NoAttrs{},
                          {{cond}, {I64({1, 4}, {1, 2, 3, 4})}, {I64({}, {-1})}});
  ASSERT_TRUE(ints.ok()) << ints.status();
  EXPECT_EQ((*ints)[0].dims(), (Dims{3, 4}));
  EXPECT_EQ((*ints)[0].ToInt64Vector(),
            (std::vector<int64_t>{1, 2, 3, 4, -1, -1, -1, -1, 1, 2, 3, 4}));

  const Tensor x16 = CastTensor(F32({2}, {1.5f, -2.0f}), DType::kFloat16);
  const Tensor y16 = CastTensor(F32({2}, {7.0f, 8.0f}), DType::kFloat16);
  auto halves = RunSingleOp(OpKind::kWhere, ir::NoAttrs{}, {{Bool({2}, {0, 1})}, {x16}, {y16}});
  ASSERT_TRUE(halves.ok()) << halves.status();
  EXPECT_EQ((*halves)[0].dtype(), DType::kFloat16);
  EXPECT_EQ((*halves)[0].ToFloatVector(), (std::vector<float>{7.0f, -2.0f}));

  auto bools = RunSingleOp(OpKind::kWhere, ir::NoAttrs{},
                           {{Bool({2}, {1, 0})}, {Bool({}, {1})}, {Bool({2}, {0, 0})}});
  ASSERT_TRUE(bools.ok()) << bools.status();
  EXPECT_EQ((*bools)[0].ToInt64Vector(), (std::vector<int64_t>{1, 0}));
}

TEST(ElementwiseVariadic, SumMeanMinMaxBroadcast) {
  const Tensor a = F32({2, 3}, {1, -2, 3, 4, 5, -6});
  const Tensor b = F32({3}, {10, 0, -10});
  const Tensor c = F32({}, {0.5f});
  auto sum = RunSingleOp(OpKind::kSum, ir::NoAttrs{}, {{a}, {b}, {c}});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ((*sum)[0].ToFloatVector(),
            (std::vector<float>{11.5f, -1.5f, -6.5f, 14.5f, 5.5f, -15.5f}));
  auto mean = RunSingleOp(OpKind::kMean, ir::NoAttrs{}, {{a}, {b}, {c}});
  ASSERT_TRUE(mean.ok()) << mean.status();
  const std::vector<float> m = (*mean)[0].ToFloatVector();
  const std::vector<float> want_mean = {11.5f / 3, -1.5f / 3, -6.5f / 3,
                                        14.5f / 3, 5.5f / 3,  -15.5f / 3};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(m[i], want_mean[i]);
  auto mn = RunSingleOp(OpKind::kMin, ir::NoAttrs{}, {{a}, {b}, {c}});
  ASSERT_TRUE(mn.ok()) << mn.status();
  EXPECT_EQ((*mn)[0].ToFloatVector(), (std::vector<float>{0.5f, -2, -10, 0.5f, 0, -10}));
  auto mx = RunSingleOp(OpKind::kMax, ir::NoAttrs{}, {{b}, {a}});
  ASSERT_TRUE(mx.ok()) << mx.status();
  EXPECT_EQ((*mx)[0].ToFloatVector(), (std::vector<float>{10, 0, 3, 10, 5, -6}));
}

TEST(ElementwiseVariadic, SingleInputIntsAndNaN) {
  auto one = RunSingleOp(OpKind::kMax, ir::NoAttrs{}, {{I64({3}, {4, -1, 9})}});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ((*one)[0].ToInt64Vector(), (std::vector<int64_t>{4, -1, 9}));
  auto ints = RunSingleOp(OpKind::kMin, ir::NoAttrs{},
                          {{Tensor::FromVector<int32_t>(DType::kInt32, {2}, {4, -1})},
                           {Tensor::FromVector<int32_t>(DType::kInt32, {2}, {3, 0})}});
  ASSERT_TRUE(ints.ok()) << ints.status();
  EXPECT_EQ((*ints)[0].ToInt64Vector(), (std::vector<int64_t>{3, -1}));
  auto nan = RunSingleOp(OpKind::kMax, ir::NoAttrs{},
                         {{F32({2}, {1.0f, std::nanf("")})}, {F32({2}, {std::nanf(""), 1.0f})}});
  ASSERT_TRUE(nan.ok()) << nan.status();
  EXPECT_TRUE(std::isnan((*nan)[0].data<float>()[0]));
  EXPECT_TRUE(std::isnan((*nan)[0].data<float>()[1]));
}

}  // namespace
}  // namespace qcc
