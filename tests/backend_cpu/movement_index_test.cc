// CPU kernels of Transpose, Concat, Split, Slice, Gather, Expand, Tile, DepthToSpace and
// SpaceToDepth, on hand-computed values and several element types.
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/op_test_util.h"

namespace qcc {
namespace {

using ir::OpKind;
using testing::F32;
using testing::I64;
using testing::OpInput;
using testing::RunSingleOp;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

/// 0, 1, ..., n-1 of `dtype` and `dims`.
Tensor Iota(Dims dims, DType dtype = DType::kFloat32) {
  Tensor t(DType::kFloat32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return CastTensor(t, dtype);
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.GetAsDouble(i);
  return v;
}

/// Runs a one-output op and returns its output; fails the test on error.
Tensor Run1(OpKind kind, ir::Attrs attrs, const std::vector<OpInput>& inputs) {
  auto out = RunSingleOp(kind, std::move(attrs), inputs);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[0] : Tensor();
}

TEST(MovementIndex, TransposeMatchesIndexFormula) {
  for (DType dt : {DType::kFloat32, DType::kInt8, DType::kFloat16, DType::kInt64}) {
    const Tensor x = Iota({2, 3, 4}, dt);
    const Tensor y = Run1(OpKind::kTranspose, ir::TransposeAttrs{{1, 2, 0}}, {{x}});
    ASSERT_EQ(y.dims(), (Dims{3, 4, 2}));
    ASSERT_EQ(y.dtype(), dt);
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 4; ++k) {
        for (int i = 0; i < 2; ++i) {
          EXPECT_EQ(y.GetAsDouble((j * 4 + k) * 2 + i), i * 12 + j * 4 + k);
        }
      }
    }
  }
  const Tensor r = Run1(OpKind::kTranspose, ir::TransposeAttrs{}, {{Iota({2, 3})}});
  EXPECT_EQ(r.dims(), (Dims{3, 2}));
  EXPECT_EQ(Values(r), (std::vector<double>{0, 3, 1, 4, 2, 5}));
}

TEST(MovementIndex, ConcatNegativeAxisAndEmptyInput) {
  const Tensor a = F32({2, 1}, {1, 2});
  const Tensor b = F32({2, 2}, {3, 4, 5, 6});
  const Tensor e(DType::kFloat32, {2, 0});
  const Tensor y = Run1(OpKind::kConcat, ir::AxisAttrs{-1}, {{a}, {e}, {b, true}});
  EXPECT_EQ(y.dims(), (Dims{2, 3}));
  EXPECT_EQ(Values(y), (std::vector<double>{1, 3, 4, 2, 5, 6}));
  const Tensor rows = Run1(OpKind::kConcat, ir::AxisAttrs{0},
                           {{Iota({1, 2}, DType::kUInt8)}, {Iota({2, 2}, DType::kUInt8)}});
  EXPECT_EQ(Values(rows), (std::vector<double>{0, 1, 0, 1, 2, 3}));
}

TEST(MovementIndex, SplitEvenUnevenAndSized) {
  auto out = RunSingleOp(OpKind::kSplit, ir::SplitAttrs{0, 3}, {{Iota({7})}}, 3);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values((*out)[0]), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(Values((*out)[1]), (std::vector<double>{3, 4, 5}));
  EXPECT_EQ(Values((*out)[2]), (std::vector<double>{6}));

  out = RunSingleOp(OpKind::kSplit, ir::SplitAttrs{}, {{Iota({6}, DType::kInt16)}}, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values((*out)[1]), (std::vector<double>{3, 4, 5}));

  out = RunSingleOp(OpKind::kSplit, ir::SplitAttrs{-1, 0},
                    {{Iota({2, 4})}, {I64({3}, {1, 0, 3}), true}}, 3);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dims(), (Dims{2, 1}));
  EXPECT_EQ((*out)[1].dims(), (Dims{2, 0}));
  EXPECT_EQ(Values((*out)[0]), (std::vector<double>{0, 4}));
  EXPECT_EQ(Values((*out)[2]), (std::vector<double>{1, 2, 3, 5, 6, 7}));
}

/// Slice of Iota({10}) with one axis of starts/ends/steps.
std::vector<double> Slice1D(int64_t start, int64_t end, int64_t step) {
  return Values(Run1(OpKind::kSlice, ir::NoAttrs{},
                     {{Iota({10})},
                      {I64({1}, {start})},
                      {I64({1}, {end})},
                      {I64({1}, {0}), true},
                      {I64({1}, {step}), true}}));
}

TEST(MovementIndex, SliceNegativesClampingAndSteps) {
  using V = std::vector<double>;
  EXPECT_EQ(Slice1D(-3, kMax, 1), (V{7, 8, 9}));
  EXPECT_EQ(Slice1D(-100, 3, 1), (V{0, 1, 2}));
  EXPECT_EQ(Slice1D(1, -1, 3), (V{1, 4, 7}));
  EXPECT_EQ(Slice1D(20, -20, -1), (V{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(Slice1D(kMax, kMin, -4), (V{9, 5, 1}));
  EXPECT_EQ(Slice1D(8, 1, -3), (V{8, 5, 2}));
  EXPECT_EQ(Slice1D(5, 2, 1), V{});
  EXPECT_EQ(Slice1D(0, 10, kMax), (V{0}));
  EXPECT_EQ(Slice1D(9, -11, kMin), (V{9}));

  // x[1:, ::-2] on a 3x4 fp16 tensor, int32 parameters, negative axis.
  auto i32 = [](std::vector<int32_t> v) {
    return Tensor::FromVector(DType::kInt32, {static_cast<int64_t>(v.size())}, v);
  };
  const Tensor y = Run1(OpKind::kSlice, ir::NoAttrs{},
                        {{Iota({3, 4}, DType::kFloat16)},
                         {i32({1, -1}), true},
                         {i32({INT32_MAX, INT32_MIN}), true},
                         {i32({0, -1}), true},
                         {i32({1, -2}), true}});
  ASSERT_EQ(y.dtype(), DType::kFloat16);
  EXPECT_EQ(y.dims(), (Dims{2, 2}));
  EXPECT_EQ(Values(y), (V{7, 5, 11, 9}));

  // Default axes and steps.
  const Tensor z = Run1(OpKind::kSlice, ir::NoAttrs{},
                        {{Iota({3, 4})}, {I64({2}, {0, 1}), true}, {I64({2}, {2, 3}), true}});
  EXPECT_EQ(Values(z), (V{1, 2, 5, 6}));

  auto bad = RunSingleOp(OpKind::kSlice, ir::NoAttrs{},
                         {{Iota({3})}, {I64({1}, {0})}, {I64({1}, {2})}, {}, {I64({1}, {0})}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MovementIndex, GatherNegativeIndicesAndIndexTypes) {
  const Tensor idx32 = Tensor::FromVector(DType::kInt32, {1, 2}, std::vector<int32_t>{-1, 0});
  const Tensor y = Run1(OpKind::kGather, ir::AxisAttrs{1}, {{Iota({3, 4})}, {idx32}});
  EXPECT_EQ(y.dims(), (Dims{3, 1, 2}));
  EXPECT_EQ(Values(y), (std::vector<double>{3, 0, 7, 4, 11, 8}));

  const Tensor rows =
      Run1(OpKind::kGather, ir::AxisAttrs{-2}, {{Iota({3, 2}, DType::kBool)}, {I64({2}, {2, -3})}});
  EXPECT_EQ(rows.dtype(), DType::kBool);
  EXPECT_EQ(Values(rows), (std::vector<double>{1, 1, 0, 1}));

  const Tensor scalar =
      Run1(OpKind::kGather, ir::AxisAttrs{0}, {{Iota({4}, DType::kInt64)}, {I64({}, {-2}), true}});
  EXPECT_EQ(scalar.dims(), Dims{});
  EXPECT_EQ(Values(scalar), (std::vector<double>{2}));

  auto bad = RunSingleOp(OpKind::kGather, ir::AxisAttrs{0}, {{Iota({4})}, {I64({1}, {4})}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MovementIndex, ExpandAndTile) {
  const Tensor col = F32({3, 1}, {1, 2, 3});
  const Tensor e = Run1(OpKind::kExpand, ir::NoAttrs{}, {{col}, {I64({3}, {2, 1, 2}), true}});
  EXPECT_EQ(e.dims(), (Dims{2, 3, 2}));
  EXPECT_EQ(Values(e), (std::vector<double>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  // A target extent of 1 keeps the input's larger extent.
  const Tensor k = Run1(OpKind::kExpand, ir::NoAttrs{}, {{col}, {I64({1}, {1})}});
  EXPECT_EQ(k.dims(), (Dims{3, 1}));

  const Tensor m = Iota({2, 2}, DType::kUInt16);
  const Tensor t = Run1(OpKind::kTile, ir::NoAttrs{}, {{m}, {I64({2}, {2, 3}), true}});
  EXPECT_EQ(t.dims(), (Dims{4, 6}));
  EXPECT_EQ(Values(t), (std::vector<double>{0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3,
                                            0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3}));
  const Tensor none = Run1(OpKind::kTile, ir::NoAttrs{}, {{m}, {I64({2}, {0, 1})}});
  EXPECT_EQ(none.dims(), (Dims{0, 2}));
}

/// The ONNX DepthToSpace example input: x[0, c, h, w] = 9c + 3h + w, shape [1, 8, 2, 3].
Tensor DepthExample() {
  Tensor x(DType::kFloat32, {1, 8, 2, 3});
  for (int c = 0; c < 8; ++c) {
    for (int h = 0; h < 2; ++h) {
      for (int w = 0; w < 3; ++w) x.data<float>()[(c * 2 + h) * 3 + w] = 9 * c + 3 * h + w;
    }
  }
  return x;
}

TEST(MovementIndex, DepthToSpaceModesAndSpaceToDepthInverse) {
  using V = std::vector<double>;
  const Tensor x = DepthExample();
  const Tensor dcr = Run1(OpKind::kDepthToSpace, ir::DepthToSpaceAttrs{2}, {{x}});
  ASSERT_EQ(dcr.dims(), (Dims{1, 2, 4, 6}));
  const V dcr_v = Values(dcr);
  EXPECT_EQ(V(dcr_v.begin(), dcr_v.begin() + 12), (V{0, 18, 1, 19, 2, 20, 36, 54, 37, 55, 38, 56}));
  EXPECT_EQ(V(dcr_v.begin() + 24, dcr_v.begin() + 30), (V{9, 27, 10, 28, 11, 29}));

  const Tensor crd =
      Run1(OpKind::kDepthToSpace, ir::DepthToSpaceAttrs{2, ir::DepthToSpaceMode::kCRD}, {{x}});
  const V crd_v = Values(crd);
  EXPECT_EQ(V(crd_v.begin(), crd_v.begin() + 12), (V{0, 9, 1, 10, 2, 11, 18, 27, 19, 28, 20, 29}));
  EXPECT_EQ(V(crd_v.begin() + 24, crd_v.begin() + 30), (V{36, 45, 37, 46, 38, 47}));

  // SpaceToDepth inverts DCR DepthToSpace.
  const Tensor back = Run1(OpKind::kSpaceToDepth, ir::DepthToSpaceAttrs{2}, {{dcr}});
  EXPECT_TRUE(back.BitwiseEquals(x));
}

}  // namespace
}  // namespace qcc
