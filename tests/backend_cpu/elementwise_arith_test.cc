// Broadcasting arithmetic (Add, Sub, Mul, Div, Pow, Mod, PRelu) and the broadcast plan.
#include <cmath>
#include <functional>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/broadcast.h"
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
using testing::UniformFloats;

TEST(ElementwiseBroadcastPlan, MergesAxesIntoShortPlans) {
  const cpu::BroadcastPlan same = cpu::MakeBroadcastPlan({{2, 3, 4}, {2, 3, 4}}, {2, 3, 4});
  EXPECT_EQ(same.dims, cpu::BroadcastPlan::Extents({24}));
  EXPECT_EQ(same.inner_stride(0), 1);
  EXPECT_EQ(same.inner_stride(1), 1);

  const cpu::BroadcastPlan scalar = cpu::MakeBroadcastPlan({{2, 3, 4}, {}}, {2, 3, 4});
  EXPECT_EQ(scalar.dims, cpu::BroadcastPlan::Extents({24}));
  EXPECT_EQ(scalar.inner_stride(1), 0);

  const cpu::BroadcastPlan channel =
      cpu::MakeBroadcastPlan({{2, 3, 4, 5}, {1, 3, 1, 1}}, {2, 3, 4, 5});
  EXPECT_EQ(channel.dims, cpu::BroadcastPlan::Extents({2, 3, 20}));
  EXPECT_EQ(channel.strides[0], cpu::BroadcastPlan::Extents({60, 20, 1}));
  EXPECT_EQ(channel.strides[1], cpu::BroadcastPlan::Extents({0, 1, 0}));

  const cpu::BroadcastPlan outer = cpu::MakeBroadcastPlan({{3, 1}, {1, 4}}, {3, 4});
  EXPECT_EQ(outer.dims, cpu::BroadcastPlan::Extents({3, 4}));
  EXPECT_EQ(outer.strides[0], cpu::BroadcastPlan::Extents({1, 0}));
  EXPECT_EQ(outer.strides[1], cpu::BroadcastPlan::Extents({0, 1}));
}

/// Runs a float binary op over every shape pair and compares with ref, element by element,
/// reading the inputs through the independent broadcast index.
void ExpectFloatBinary(OpKind kind, const std::function<double(double, double)>& ref) {
  const std::vector<std::pair<Dims, Dims>> shapes = {
      {{2, 3, 4}, {2, 3, 4}},       {{2, 3, 4}, {}},           {{}, {2, 3, 4}},
      {{2, 3, 4, 5}, {1, 3, 1, 1}}, {{2, 3, 4, 5}, {3, 1, 1}}, {{3, 1}, {1, 4}},
      {{2, 1, 4}, {3, 1}},          {{5}, {2, 3, 5}},          {{1, 1}, {1}},
      {{2, 0, 3}, {1, 3}},          {{4, 1, 6}, {4, 5, 1}},
  };
  unsigned seed = 10;
  for (const auto& [da, db] : shapes) {
    const Tensor a = F32(da, UniformFloats(NumElements(da), 0.5f, 4.0f, ++seed));
    const Tensor b = F32(db, UniformFloats(NumElements(db), 0.5f, 4.0f, ++seed));
    auto out = RunSingleOp(kind, ir::DefaultAttrs(kind), {{a}, {b}});
    ASSERT_TRUE(out.ok()) << out.status();
    const Tensor& y = (*out)[0];
    const Dims dy = BroadcastShape(da, db);
    ASSERT_EQ(y.dims(), dy) << DimsToString(da) << " x " << DimsToString(db);
    for (int64_t o = 0; o < y.numel(); ++o) {
      const float va = a.data<float>()[BroadcastSourceIndex(da, dy, o)];
      const float vb = b.data<float>()[BroadcastSourceIndex(db, dy, o)];
      // +, -, *, / of two floats rounded once from double is the correctly rounded float.
      ASSERT_FLOAT_EQ(y.data<float>()[o], static_cast<float>(ref(va, vb)))
          << ir::OpName(kind) << " " << DimsToString(da) << " x " << DimsToString(db) << " @" << o;
    }
  }
}

TEST(ElementwiseArith, FloatBroadcastingShapes) {
  ExpectFloatBinary(OpKind::kAdd, [](double a, double b) { return a + b; });
  ExpectFloatBinary(OpKind::kSub, [](double a, double b) { return a - b; });
  ExpectFloatBinary(OpKind::kMul, [](double a, double b) { return a * b; });
  ExpectFloatBinary(OpKind::kDiv, [](double a, double b) { return a / b; });
  ExpectFloatBinary(OpKind::kPow, [](double a, double b) { return std::pow(a, b); });
}

TEST(ElementwiseArith, IntegerTypesWrapAndTruncate) {
  auto i8 = RunSingleOp(OpKind::kAdd, ir::AddAttrs{},
                        {{Tensor::FromVector<int8_t>(DType::kInt8, {2}, {100, -100})},
                         {Tensor::FromVector<int8_t>(DType::kInt8, {}, {100})}});
  ASSERT_TRUE(i8.ok()) << i8.status();
  EXPECT_EQ((*i8)[0].ToInt64Vector(), (std::vector<int64_t>{-56, 0}));

  auto u8 = RunSingleOp(OpKind::kSub, ir::NoAttrs{},
                        {{Tensor::FromVector<uint8_t>(DType::kUInt8, {2}, {3, 200})},
                         {Tensor::FromVector<uint8_t>(DType::kUInt8, {2}, {5, 100})}});
  ASSERT_TRUE(u8.ok()) << u8.status();
  EXPECT_EQ((*u8)[0].ToInt64Vector(), (std::vector<int64_t>{254, 100}));

  auto div = RunSingleOp(OpKind::kDiv, ir::NoAttrs{},
                         {{Tensor::FromVector<int32_t>(DType::kInt32, {5}, {7, -7, 7, -7, 9})},
                          {Tensor::FromVector<int32_t>(DType::kInt32, {5}, {2, 2, -2, -2, 0})}});
  ASSERT_TRUE(div.ok()) << div.status();
  // C truncation toward zero; division by zero is defined as 0 rather than a trap.
  EXPECT_EQ((*div)[0].ToInt64Vector(), (std::vector<int64_t>{3, -3, -3, 3, 0}));

  auto mul =
      RunSingleOp(OpKind::kMul, ir::NoAttrs{}, {{I64({2, 1}, {3, -4})}, {I64({3}, {1, 10, 100})}});
  ASSERT_TRUE(mul.ok()) << mul.status();
  EXPECT_EQ((*mul)[0].dims(), (Dims{2, 3}));
  EXPECT_EQ((*mul)[0].ToInt64Vector(), (std::vector<int64_t>{3, 30, 300, -4, -40, -400}));
}

TEST(ElementwiseArith, ModSignFollowsDivisorOrDividend) {
  const Tensor a = Tensor::FromVector<int32_t>(DType::kInt32, {4}, {5, -5, 5, -5});
  const Tensor b = Tensor::FromVector<int32_t>(DType::kInt32, {4}, {3, 3, -3, -3});
  auto mod = RunSingleOp(OpKind::kMod, ir::ModAttrs{0}, {{a}, {b}});
  ASSERT_TRUE(mod.ok()) << mod.status();
  EXPECT_EQ((*mod)[0].ToInt64Vector(), (std::vector<int64_t>{2, 1, -1, -2}));  // Python %
  auto fmod = RunSingleOp(OpKind::kMod, ir::ModAttrs{1}, {{a}, {b}});
  ASSERT_TRUE(fmod.ok()) << fmod.status();
  EXPECT_EQ((*fmod)[0].ToInt64Vector(), (std::vector<int64_t>{2, -2, 2, -2}));  // C %
  auto ffmod = RunSingleOp(OpKind::kMod, ir::ModAttrs{1},
                           {{F32({3}, {5.5f, -5.5f, 5.5f})}, {F32({3}, {2, 2, -2})}});
  ASSERT_TRUE(ffmod.ok()) << ffmod.status();
  EXPECT_EQ(
      (*ffmod)[0].ToFloatVector(),
      (std::vector<float>{std::fmod(5.5f, 2.0f), std::fmod(-5.5f, 2.0f), std::fmod(5.5f, -2.0f)}));
}

TEST(ElementwiseArith, PowMixedTypesKeepsBaseType) {
  auto f_by_i =
      RunSingleOp(OpKind::kPow, ir::NoAttrs{}, {{F32({3}, {2, 3, -2})}, {I64({3}, {3, 2, 3})}});
  ASSERT_TRUE(f_by_i.ok()) << f_by_i.status();
  EXPECT_EQ((*f_by_i)[0].dtype(), DType::kFloat32);
  EXPECT_EQ((*f_by_i)[0].ToFloatVector(), (std::vector<float>{8, 9, -8}));

  auto i_by_i = RunSingleOp(OpKind::kPow, ir::NoAttrs{},
                            {{I64({4}, {2, -3, 5, 7})}, {I64({4}, {40, 3, 0, -1})}});
  ASSERT_TRUE(i_by_i.ok()) << i_by_i.status();
  EXPECT_EQ((*i_by_i)[0].ToInt64Vector(), (std::vector<int64_t>{1LL << 40, -27, 1, 0}));

  auto i_by_f =
      RunSingleOp(OpKind::kPow, ir::NoAttrs{},
                  {{Tensor::FromVector<int32_t>(DType::kInt32, {2}, {4, 9})}, {F32({}, {0.5f})}});
  ASSERT_TRUE(i_by_f.ok()) << i_by_f.status();
  EXPECT_EQ((*i_by_f)[0].dtype(), DType::kInt32);
  EXPECT_EQ((*i_by_f)[0].ToInt64Vector(), (std::vector<int64_t>{2, 3}));

  const std::vector<float> x = UniformFloats(9, -3.0f, 3.0f, 7);
  auto square = RunSingleOp(OpKind::kPow, ir::NoAttrs{}, {{F32({9}, x)}, {F32({}, {2.0f}), true}});
  ASSERT_TRUE(square.ok()) << square.status();
  for (int i = 0; i < 9; ++i) EXPECT_EQ((*square)[0].data<float>()[i], x[i] * x[i]);
}

TEST(ElementwiseArith, PReluSlopePerChannel) {
  const Dims dx = {2, 3, 2, 2};
  const std::vector<float> xv = UniformFloats(24, -2.0f, 2.0f, 3);
  const std::vector<float> slope = {0.1f, 0.2f, 0.3f};
  auto out = RunSingleOp(OpKind::kPRelu, ir::NoAttrs{}, {{F32(dx, xv)}, {F32({3, 1, 1}, slope)}});
  ASSERT_TRUE(out.ok()) << out.status();
  for (int i = 0; i < 24; ++i) {
    const float s = slope[(i / 4) % 3];
    EXPECT_EQ((*out)[0].data<float>()[i], xv[i] < 0 ? s * xv[i] : xv[i]) << i;
  }
}

TEST(ElementwiseArith, Float64AndMismatchedDTypes) {
  auto f64 = RunSingleOp(OpKind::kAdd, ir::AddAttrs{},
                         {{Tensor::FromVector<double>(DType::kFloat64, {2}, {0.1, 0.2})},
                          {Tensor::FromVector<double>(DType::kFloat64, {}, {0.3})}});
  ASSERT_TRUE(f64.ok()) << f64.status();
  EXPECT_EQ((*f64)[0].data<double>()[0], 0.1 + 0.3);
  EXPECT_EQ((*f64)[0].data<double>()[1], 0.2 + 0.3);

  auto mixed = RunSingleOp(OpKind::kAdd, ir::AddAttrs{}, {{F32({2}, {1, 2})}, {I64({2}, {1, 2})}});
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.status().code(), absl::StatusCode::kInvalidArgument) << mixed.status();
}

}  // namespace
}  // namespace qcc
