#include "support/tensor.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "support/float16.h"

namespace qcc {
namespace {

TEST(Tensor, AllocatesZeroedAlignedStorage) {
  Tensor t(DType::kFloat32, {2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<float>()[i], 0.0f);
}

TEST(Tensor, CopiesShareStorageAndCloneDoesNot) {
  Tensor a = Tensor::FromVector<float>(DType::kFloat32, {3}, {1, 2, 3});
  Tensor b = a;
  Tensor c = a.Clone();
  a.data<float>()[0] = 9;
  EXPECT_EQ(b.data<float>()[0], 9);
  EXPECT_EQ(c.data<float>()[0], 1);
  Tensor r = a.Reshaped({1, 3});
  EXPECT_EQ(r.dims(), (Dims{1, 3}));
  EXPECT_EQ(r.data<float>(), a.data<float>());
}

TEST(Tensor, ScalarAndEmpty) {
  Tensor s(DType::kInt64, {});
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.rank(), 0);
  Tensor e(DType::kFloat32, {0, 4});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_TRUE(e.BitwiseEquals(Tensor(DType::kFloat32, {0, 4})));
  EXPECT_FALSE(Tensor().defined());
}

TEST(Tensor, StridesAndStrings) {
  EXPECT_EQ(RowMajorStrides({2, 3, 4}), (Dims{12, 4, 1}));
  EXPECT_EQ(DimsToString({1, 3, 224, 224}), "[1,3,224,224]");
  EXPECT_EQ(DimsToString({}), "[]");
}

// GetAsInt64 (shape arithmetic reads axes, pads and shapes with it) saturates floats outside
// int64's range and maps NaN to 0: a plain cast of them is undefined (a fuzzed Unsqueeze with
// float axes of 2.7e26 hit it).
TEST(Tensor, GetAsInt64SaturatesFloatsOutsideInt64) {
  const Tensor t = Tensor::FromVector<double>(
      DType::kFloat64, {7},
      {2.7e26, -2.7e26, std::nan(""), 9223372036854775808.0, -9223372036854775808.0, -3.75, 42.0});
  EXPECT_EQ(t.ToInt64Vector(),
            (std::vector<int64_t>{
                std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), 0,
                std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), -3, 42}));
}

// CastTensor to an integer type: finite floats past int64's range saturate first (then wrap to
// the narrower type, as any int64 does), infinities and NaN give 0.
TEST(CastTensor, FloatOutsideInt64SaturatesThenNarrows) {
  const Tensor f =
      Tensor::FromVector<double>(DType::kFloat64, {4}, {2.7e26, -2.7e26, INFINITY, std::nan("")});
  EXPECT_EQ(CastTensor(f, DType::kInt64).ToInt64Vector(),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::max(),
                                  std::numeric_limits<int64_t>::min(), 0, 0}));
  const Tensor i32 = CastTensor(f, DType::kInt32);
  EXPECT_EQ(i32.data<int32_t>()[0], -1);  // int64 max narrowed: all ones
  EXPECT_EQ(i32.data<int32_t>()[1], 0);   // int64 min narrowed: all zeros
}

TEST(CastTensor, FloatToIntTruncatesTowardZero) {
  Tensor f = Tensor::FromVector<float>(DType::kFloat32, {4}, {1.9f, -1.9f, 0.5f, -0.5f});
  Tensor i = CastTensor(f, DType::kInt32);
  EXPECT_EQ(i.data<int32_t>()[0], 1);
  EXPECT_EQ(i.data<int32_t>()[1], -1);
  EXPECT_EQ(i.data<int32_t>()[2], 0);
  EXPECT_EQ(i.data<int32_t>()[3], 0);
}

TEST(CastTensor, ToHalfAndBoolAndBack) {
  Tensor f = Tensor::FromVector<float>(DType::kFloat32, {3}, {1.0f, 0.0f, -2.5f});
  Tensor h = CastTensor(f, DType::kFloat16);
  EXPECT_EQ(h.data<uint16_t>()[0], 0x3c00);
  EXPECT_EQ(h.data<uint16_t>()[2], FloatToHalf(-2.5f));
  Tensor b = CastTensor(f, DType::kBool);
  EXPECT_EQ(b.data<uint8_t>()[0], 1);
  EXPECT_EQ(b.data<uint8_t>()[1], 0);
  EXPECT_EQ(b.data<uint8_t>()[2], 1);
  Tensor back = CastTensor(h, DType::kFloat32);
  EXPECT_EQ(back.ToFloatVector(), (std::vector<float>{1.0f, 0.0f, -2.5f}));
}

TEST(CastTensor, Int64KeepsLargeValues) {
  Tensor a = Tensor::FromVector<int64_t>(DType::kInt64, {2}, {(int64_t{1} << 53) + 1, -7});
  Tensor b = CastTensor(a, DType::kInt64);
  EXPECT_EQ(b.data<int64_t>()[0], (int64_t{1} << 53) + 1);
  Tensor c = CastTensor(a, DType::kInt32);
  EXPECT_EQ(c.data<int32_t>()[1], -7);
  EXPECT_EQ(a.ToInt64Vector(), (std::vector<int64_t>{(int64_t{1} << 53) + 1, -7}));
}

}  // namespace
}  // namespace qcc
