// CPU kernels of the view-like movement ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity,
// Dropout), the shape queries, Cast, Constant, ConstantOfShape and Range.
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "support/float16.h"
#include "tests/testing/op_test_util.h"

namespace qcc {
namespace {

using ir::OpKind;
using testing::F32;
using testing::I64;
using testing::OpInput;
using testing::RunSingleOp;

/// 0, 1, 2, ..., n-1 as f32 of `dims`.
Tensor Iota(Dims dims) {
  Tensor t(DType::kFloat32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.GetAsDouble(i);
  return v;
}

TEST(MovementView, ReshapeSharesStorageAndResolvesZeroAndMinusOne) {
  const Tensor x = Iota({2, 3, 4});
  auto out = RunSingleOp(OpKind::kReshape, ir::ReshapeAttrs{}, {{x}, {I64({3}, {0, -1, 2}), true}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dims(), (Dims{2, 6, 2}));
  EXPECT_EQ((*out)[0].raw(), x.raw());  // a view, not a copy
  EXPECT_EQ(Values((*out)[0]), Values(x));

  // The shape as a runtime input.
  out = RunSingleOp(OpKind::kReshape, ir::ReshapeAttrs{}, {{x}, {I64({2}, {-1, 3})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dims(), (Dims{8, 3}));

  // allowzero keeps a literal 0.
  out = RunSingleOp(OpKind::kReshape, ir::ReshapeAttrs{1},
                    {{Tensor(DType::kFloat32, {0, 4})}, {I64({3}, {2, 0, 5}), true}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dims(), (Dims{2, 0, 5}));

  out = RunSingleOp(OpKind::kReshape, ir::ReshapeAttrs{}, {{x}, {I64({2}, {5, -1})}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MovementView, FlattenSqueezeUnsqueeze) {
  const Tensor x = Iota({2, 3, 1, 4});
  auto flat = RunSingleOp(OpKind::kFlatten, ir::FlattenAttrs{-2}, {{x}});
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_EQ((*flat)[0].dims(), (Dims{6, 4}));
  EXPECT_EQ(Values((*flat)[0]), Values(x));
  flat = RunSingleOp(OpKind::kFlatten, ir::FlattenAttrs{0}, {{x}});
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ((*flat)[0].dims(), (Dims{1, 24}));

  auto sq = RunSingleOp(OpKind::kSqueeze, ir::NoAttrs{}, {{x}});
  ASSERT_TRUE(sq.ok()) << sq.status();
  EXPECT_EQ((*sq)[0].dims(), (Dims{2, 3, 4}));
  sq = RunSingleOp(OpKind::kSqueeze, ir::NoAttrs{}, {{x}, {I64({1}, {-2}), true}});
  ASSERT_TRUE(sq.ok());
  EXPECT_EQ((*sq)[0].dims(), (Dims{2, 3, 4}));

  auto unsq =
      RunSingleOp(OpKind::kUnsqueeze, ir::NoAttrs{}, {{Iota({3})}, {I64({3}, {0, 3, -2}), true}});
  ASSERT_TRUE(unsq.ok()) << unsq.status();
  EXPECT_EQ((*unsq)[0].dims(), (Dims{1, 3, 1, 1}));
  EXPECT_EQ(Values((*unsq)[0]), (std::vector<double>{0, 1, 2}));
}

TEST(MovementView, IdentityAndDropoutKeepFp16Bits) {
  Tensor h(DType::kFloat16, {3});
  const std::vector<uint16_t> bits = {0x3C00, 0xC500, 0x7BFF};  // 1, -5, 65504
  for (int i = 0; i < 3; ++i) h.data<uint16_t>()[i] = bits[i];
  auto id = RunSingleOp(OpKind::kIdentity, ir::NoAttrs{}, {{h}});
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_TRUE((*id)[0].BitwiseEquals(h));

  auto drop = RunSingleOp(OpKind::kDropout, ir::NoAttrs{}, {{h}, {F32({}, {0.3f}), true}},
                          /*num_outputs=*/2);
  ASSERT_TRUE(drop.ok()) << drop.status();
  EXPECT_TRUE((*drop)[0].BitwiseEquals(h));
  ASSERT_EQ((*drop)[1].dtype(), DType::kBool);
  EXPECT_EQ(Values((*drop)[1]), (std::vector<double>{1, 1, 1}));

  const Tensor training = Tensor::FromVector(DType::kBool, {}, std::vector<uint8_t>{1});
  drop = RunSingleOp(OpKind::kDropout, ir::NoAttrs{}, {{h}, {F32({}, {0.3f})}, {training}});
  EXPECT_EQ(drop.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(MovementView, ShapeAndSize) {
  const Tensor x(DType::kFloat16, {2, 3, 5, 7});
  auto shape = RunSingleOp(OpKind::kShape, ir::ShapeAttrs{}, {{x}});
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ((*shape)[0].ToInt64Vector(), (std::vector<int64_t>{2, 3, 5, 7}));
  shape = RunSingleOp(OpKind::kShape, ir::ShapeAttrs{-3, -1}, {{x}});
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ((*shape)[0].ToInt64Vector(), (std::vector<int64_t>{3, 5}));
  shape = RunSingleOp(OpKind::kShape, ir::ShapeAttrs{-100, 100}, {{x}});
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ((*shape)[0].ToInt64Vector(), (std::vector<int64_t>{2, 3, 5, 7}));
  shape = RunSingleOp(OpKind::kShape, ir::ShapeAttrs{2, 1}, {{x}});
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ((*shape)[0].numel(), 0);
  auto size = RunSingleOp(OpKind::kSize, ir::NoAttrs{}, {{x}});
  ASSERT_TRUE(size.ok());
  EXPECT_EQ((*size)[0].dims(), Dims{});
  EXPECT_EQ((*size)[0].GetAsInt64(0), 210);
}

TEST(MovementView, CastEveryNumericPairOnExactValues) {
  // 0, 1, 2, 5, 100 are exact in every numeric type (bool: all but 0 become 1).
  const std::vector<DType> types = {
      DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt8,
      DType::kUInt8,   DType::kInt16,   DType::kUInt16,   DType::kInt32,   DType::kUInt32,
      DType::kInt64,   DType::kUInt64,  DType::kBool};
  const Tensor src = F32({5}, {0, 1, 2, 5, 100});
  for (DType from : types) {
    const Tensor x = CastTensor(src, from);
    for (DType to : types) {
      auto out = RunSingleOp(OpKind::kCast, ir::CastAttrs{to}, {{x}});
      ASSERT_TRUE(out.ok()) << DTypeName(from) << "->" << DTypeName(to) << ": " << out.status();
      ASSERT_EQ((*out)[0].dtype(), to);
      const bool via_bool = from == DType::kBool || to == DType::kBool;
      const std::vector<double> want =
          via_bool ? std::vector<double>{0, 1, 1, 1, 1} : std::vector<double>{0, 1, 2, 5, 100};
      EXPECT_EQ(Values((*out)[0]), want) << DTypeName(from) << "->" << DTypeName(to);
    }
  }
}

TEST(MovementView, CastRoundsAndTruncates) {
  const Tensor x = F32({5}, {-1.7f, 2.9f, -0.0f, 0.5f, 1.0f / 3.0f});
  auto i32 = RunSingleOp(OpKind::kCast, ir::CastAttrs{DType::kInt32}, {{x}});
  ASSERT_TRUE(i32.ok());
  EXPECT_EQ(Values((*i32)[0]), (std::vector<double>{-1, 2, 0, 0, 0}));
  auto boolean = RunSingleOp(OpKind::kCast, ir::CastAttrs{DType::kBool}, {{x}});
  ASSERT_TRUE(boolean.ok());
  EXPECT_EQ(Values((*boolean)[0]), (std::vector<double>{1, 1, 0, 1, 1}));
  auto half = RunSingleOp(OpKind::kCast, ir::CastAttrs{DType::kFloat16}, {{x}});
  ASSERT_TRUE(half.ok());
  // 1/3 in fp16: 0x3555 (0.333251953125), the nearest of its two neighbours.
  EXPECT_EQ((*half)[0].data<uint16_t>()[4], 0x3555);
  EXPECT_EQ((*half)[0].data<uint16_t>()[0], FloatToHalf(-1.7f));
  auto bf = RunSingleOp(OpKind::kCast, ir::CastAttrs{DType::kBFloat16}, {{x}});
  ASSERT_TRUE(bf.ok());
  EXPECT_EQ((*bf)[0].data<uint16_t>()[4], 0x3EAB);  // 0.333984375

  auto fp8 = RunSingleOp(OpKind::kCast, ir::CastAttrs{DType::kFloat8E4M3}, {{x}});
  EXPECT_EQ(fp8.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(MovementView, ConstantAndConstantOfShape) {
  ir::ConstantAttrs c;
  c.value = Tensor::FromVector(DType::kInt64, {2, 2}, std::vector<int64_t>{1, -2, 3, -4});
  auto out = RunSingleOp(OpKind::kConstant, c, {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE((*out)[0].BitwiseEquals(c.value));

  c.value = Tensor::FromVector(DType::kInt32, {1}, std::vector<int32_t>{7});
  out = RunSingleOp(OpKind::kConstantOfShape, c, {{I64({2}, {2, 3})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), DType::kInt32);
  EXPECT_EQ(Values((*out)[0]), std::vector<double>(6, 7.0));

  c.value = Tensor::FromVector(DType::kFloat16, {1}, std::vector<uint16_t>{0xBC00});  // -1
  out = RunSingleOp(OpKind::kConstantOfShape, c, {{I64({1}, {4})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), DType::kFloat16);
  EXPECT_EQ(Values((*out)[0]), std::vector<double>(4, -1.0));

  out = RunSingleOp(OpKind::kConstantOfShape, ir::ConstantAttrs{}, {{I64({2}, {3, 0})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), DType::kFloat32);
  EXPECT_EQ((*out)[0].dims(), (Dims{3, 0}));
}

TEST(MovementView, RangeFloatIntAndHalf) {
  auto scalar = [](DType t, double v) { return CastTensor(F32({}, {static_cast<float>(v)}), t); };
  auto out = RunSingleOp(OpKind::kRange, ir::NoAttrs{},
                         {{scalar(DType::kFloat32, 1)},
                          {scalar(DType::kFloat32, 10)},
                          {scalar(DType::kFloat32, 2.5)}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values((*out)[0]), (std::vector<double>{1, 3.5, 6, 8.5}));

  out = RunSingleOp(
      OpKind::kRange, ir::NoAttrs{},
      {{scalar(DType::kInt32, 10)}, {scalar(DType::kInt32, 4)}, {scalar(DType::kInt32, -3)}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), DType::kInt32);
  EXPECT_EQ(Values((*out)[0]), (std::vector<double>{10, 7}));

  out = RunSingleOp(OpKind::kRange, ir::NoAttrs{},
                    {{scalar(DType::kFloat16, 0)},
                     {scalar(DType::kFloat16, 1)},
                     {scalar(DType::kFloat16, 0.25)}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), DType::kFloat16);
  EXPECT_EQ(Values((*out)[0]), (std::vector<double>{0, 0.25, 0.5, 0.75}));

  out = RunSingleOp(
      OpKind::kRange, ir::NoAttrs{},
      {{scalar(DType::kInt64, 0)}, {scalar(DType::kInt64, 5)}, {scalar(DType::kInt64, 0)}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace qcc
