// CPU Resize: every nearest_mode under each coordinate transform, linear under every transform
// (up and down), tf_crop_and_resize extrapolation, cubic, the axes attribute, aspect-ratio
// policies and non-float data. Expected values were computed with the ONNX reference
// implementation (onnx.reference, Resize-19) and match the ONNX operator documentation's examples.
#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/op_test_util.h"

namespace qcc {
namespace {

using ir::CoordTransform;
using ir::NearestMode;
using ir::OpKind;
using ir::ResizeAttrs;
using ir::ResizeMode;
using testing::F32;
using testing::I64;
using testing::OpInput;
using testing::RunSingleOp;
using V = std::vector<float>;

/// Runs Resize on `x` with scales (f32) or sizes (i64); an empty vector omits that input.
Tensor Resize(const ResizeAttrs& attrs, const Tensor& x, const V& scales,
              const std::vector<int64_t>& sizes, const V& roi = {}) {
  std::vector<OpInput> in = {{x}};
  in.push_back({roi.empty() ? Tensor() : F32({static_cast<int64_t>(roi.size())}, roi), true});
  in.push_back(
      {scales.empty() ? Tensor() : F32({static_cast<int64_t>(scales.size())}, scales), true});
  if (!sizes.empty()) in.push_back({I64({static_cast<int64_t>(sizes.size())}, sizes), true});
  auto out = RunSingleOp(OpKind::kResize, attrs, in);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? (*out)[0] : Tensor();
}

void ExpectNear(const Tensor& got, const V& want, Dims dims) {
  ASSERT_EQ(got.dims(), dims);
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got.GetAsDouble(i), want[i], 1e-5 * std::max(1.0f, std::fabs(want[i])))
        << "element " << i;
  }
}

ResizeAttrs Attrs(ResizeMode mode, CoordTransform coord,
                  NearestMode nearest = NearestMode::kRoundPreferFloor) {
  ResizeAttrs a;
  a.mode = mode;
  a.coordinate_transformation_mode = coord;
  a.nearest_mode = nearest;
  return a;
}

struct NearestCase {
  CoordTransform coord;
  NearestMode rounding;
  V up8;    // [0..4] resized to 8
  V down3;  // [0..4] resized to 3
};

TEST(MovementResize, NearestEveryRoundingAndTransform) {
  using C = CoordTransform;
  using N = NearestMode;
  const std::vector<NearestCase> cases = {
      {C::kHalfPixel, N::kRoundPreferFloor, {0, 0, 1, 2, 2, 3, 4, 4}, {0, 2, 4}},
      {C::kHalfPixel, N::kRoundPreferCeil, {0, 0, 1, 2, 2, 3, 4, 4}, {0, 2, 4}},
      {C::kHalfPixel, N::kFloor, {0, 0, 1, 1, 2, 2, 3, 4}, {0, 2, 3}},
      {C::kHalfPixel, N::kCeil, {0, 1, 2, 2, 3, 3, 4, 4}, {1, 2, 4}},
      {C::kAsymmetric, N::kRoundPreferFloor, {0, 1, 1, 2, 2, 3, 4, 4}, {0, 2, 3}},
      {C::kAsymmetric, N::kRoundPreferCeil, {0, 1, 1, 2, 3, 3, 4, 4}, {0, 2, 3}},
      {C::kAsymmetric, N::kFloor, {0, 0, 1, 1, 2, 3, 3, 4}, {0, 1, 3}},
      {C::kAsymmetric, N::kCeil, {0, 1, 2, 2, 3, 4, 4, 4}, {0, 2, 4}},
      {C::kAlignCorners, N::kRoundPreferFloor, {0, 1, 1, 2, 2, 3, 3, 4}, {0, 2, 4}},
      {C::kAlignCorners, N::kRoundPreferCeil, {0, 1, 1, 2, 2, 3, 3, 4}, {0, 2, 4}},
      {C::kAlignCorners, N::kFloor, {0, 0, 1, 1, 2, 2, 3, 4}, {0, 2, 4}},
      {C::kAlignCorners, N::kCeil, {0, 1, 2, 2, 3, 3, 4, 4}, {0, 2, 4}},
      {C::kPytorchHalfPixel, N::kRoundPreferFloor, {0, 0, 1, 2, 2, 3, 4, 4}, {0, 2, 4}},
      {C::kPytorchHalfPixel, N::kFloor, {0, 0, 1, 1, 2, 2, 3, 4}, {0, 2, 3}},
      {C::kPytorchHalfPixel, N::kCeil, {0, 1, 2, 2, 3, 3, 4, 4}, {1, 2, 4}},
  };
  const Tensor x = F32({1, 1, 1, 5}, {0, 1, 2, 3, 4});
  for (const NearestCase& c : cases) {
    SCOPED_TRACE(::testing::Message() << "coord " << static_cast<int>(c.coord) << " rounding "
                                      << static_cast<int>(c.rounding));
    const ResizeAttrs a = Attrs(ResizeMode::kNearest, c.coord, c.rounding);
    ExpectNear(Resize(a, x, {}, {1, 1, 1, 8}), c.up8, {1, 1, 1, 8});
    ExpectNear(Resize(a, x, {}, {1, 1, 1, 3}), c.down3, {1, 1, 1, 3});
  }
}

TEST(MovementResize, NearestUpsampleScalesOnIntegerAndHalfData) {
  // ONNX example: [[1,2],[3,4]] with scales [1,1,2,3].
  const V want = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
  const ResizeAttrs a = Attrs(ResizeMode::kNearest, CoordTransform::kHalfPixel);
  for (DType dt : {DType::kFloat32, DType::kInt8, DType::kUInt8, DType::kFloat16, DType::kInt64}) {
    const Tensor x = CastTensor(F32({1, 1, 2, 2}, {1, 2, 3, 4}), dt);
    const Tensor y = Resize(a, x, {1, 1, 2, 3}, {});
    EXPECT_EQ(y.dtype(), dt);
    ExpectNear(y, want, {1, 1, 4, 6});
  }
}

TEST(MovementResize, NearestTfHalfPixelForNn) {
  // Opset 11's x = (x_out + 0.5) / scale: rows 0.67, 2, 3.33 -> 1, 2, 3; columns 1, 3.
  Tensor x(DType::kFloat32, {1, 1, 4, 4});
  for (int i = 0; i < 16; ++i) x.data<float>()[i] = static_cast<float>(i + 1);
  ExpectNear(
      Resize(Attrs(ResizeMode::kNearest, CoordTransform::kTfHalfPixelForNn), x, {}, {1, 1, 3, 2}),
      {6, 8, 10, 12, 14, 16}, {1, 1, 3, 2});
}

TEST(MovementResize, LinearUpsampleEveryTransform) {
  const Tensor x = F32({1, 1, 2, 2}, {1, 2, 3, 4});
  const V half = {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4};
  const Dims d = {1, 1, 4, 4};
  ExpectNear(Resize(Attrs(ResizeMode::kLinear, CoordTransform::kHalfPixel), x, {1, 1, 2, 2}, {}),
             half, d);
  ExpectNear(
      Resize(Attrs(ResizeMode::kLinear, CoordTransform::kPytorchHalfPixel), x, {1, 1, 2, 2}, {}),
      half, d);
  ExpectNear(
      Resize(Attrs(ResizeMode::kLinear, CoordTransform::kHalfPixelSymmetric), x, {1, 1, 2, 2}, {}),
      half, d);
  ExpectNear(Resize(Attrs(ResizeMode::kLinear, CoordTransform::kAsymmetric), x, {1, 1, 2, 2}, {}),
             {1, 1.5, 2, 2, 2, 2.5, 3, 3, 3, 3.5, 4, 4, 3, 3.5, 4, 4}, d);
  ExpectNear(Resize(Attrs(ResizeMode::kLinear, CoordTransform::kAlignCorners), x, {1, 1, 2, 2}, {}),
             {1, 4.f / 3, 5.f / 3, 2, 5.f / 3, 2, 7.f / 3, 8.f / 3, 7.f / 3, 8.f / 3, 3, 10.f / 3,
              3, 10.f / 3, 11.f / 3, 4},
             d);
}

TEST(MovementResize, LinearDownsampleEveryTransform) {
  // [[1,2,3,4],[5,6,7,8]] with scales 0.6: output 1x2 (floor(1.2), floor(2.4)).
  const Tensor x = F32({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  const V scales = {1, 1, 0.6f, 0.6f};
  const Dims d = {1, 1, 1, 2};
  using C = CoordTransform;
  ExpectNear(Resize(Attrs(ResizeMode::kLinear, C::kHalfPixel), x, scales, {}), {8.f / 3, 13.f / 3},
             d);
  ExpectNear(Resize(Attrs(ResizeMode::kLinear, C::kAlignCorners), x, scales, {}), {1, 3.142857f},
             d);
  ExpectNear(Resize(Attrs(ResizeMode::kLinear, C::kPytorchHalfPixel), x, scales, {}),
             {8.f / 3, 13.f / 3}, d);
  ExpectNear(Resize(Attrs(ResizeMode::kLinear, C::kHalfPixelSymmetric), x, scales, {}),
             {11.f / 3, 16.f / 3}, d);
  ExpectNear(Resize(Attrs(ResizeMode::kLinear, C::kAsymmetric), x, scales, {}), {1, 8.f / 3}, d);

  // pytorch_half_pixel maps a length-1 output to -0.5 (the first element).
  Tensor x16(DType::kFloat32, {1, 1, 4, 4});
  for (int i = 0; i < 16; ++i) x16.data<float>()[i] = static_cast<float>(i + 1);
  ExpectNear(Resize(Attrs(ResizeMode::kLinear, C::kPytorchHalfPixel), x16, {}, {1, 1, 3, 1}),
             {5.f / 3, 7, 37.f / 3}, {1, 1, 3, 1});
}

TEST(MovementResize, TfCropAndResizeExtrapolates) {
  Tensor x(DType::kFloat32, {1, 1, 4, 4});
  for (int i = 0; i < 16; ++i) x.data<float>()[i] = static_cast<float>(i + 1);
  const V roi = {0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f};
  ResizeAttrs a = Attrs(ResizeMode::kLinear, CoordTransform::kTfCropAndResize);
  a.extrapolation_value = 10.0f;
  ExpectNear(Resize(a, x, {}, {1, 1, 3, 3}, roi), {7.6f, 10, 10, 12.4f, 10, 10, 10, 10, 10},
             {1, 1, 3, 3});
  a.mode = ResizeMode::kNearest;
  ExpectNear(Resize(a, x, {}, {1, 1, 3, 3}, roi), {7, 10, 10, 11, 10, 10, 10, 10, 10},
             {1, 1, 3, 3});
}

TEST(MovementResize, CubicDefaultExcludeOutsideAndAlignCorners) {
  Tensor x(DType::kFloat32, {1, 1, 4, 4});
  for (int i = 0; i < 16; ++i) x.data<float>()[i] = static_cast<float>(i + 1);
  ResizeAttrs a = Attrs(ResizeMode::kCubic, CoordTransform::kHalfPixel);
  const Tensor up = Resize(a, x, {1, 1, 2, 2}, {});
  ASSERT_EQ(up.dims(), (Dims{1, 1, 8, 8}));
  // First row and last row of the reference result.
  const V first = {0.4726562f, 0.7695312f, 1.246094f, 1.875f,
                   2.28125f,   2.910156f,  3.386719f, 3.683594f};
  const V last = {13.31641f, 13.61328f, 14.08984f, 14.71875f,
                  15.125f,   15.75391f, 16.23047f, 16.52734f};
  for (int i = 0; i < 8; ++i) {
    EXPECT_NEAR(up.GetAsDouble(i), first[i], 1e-4);
    EXPECT_NEAR(up.GetAsDouble(56 + i), last[i], 1e-4);
  }
  a.cubic_coeff_a = -0.5f;
  a.exclude_outside = 1;
  const Tensor excl = Resize(a, x, {1, 1, 2, 2}, {});
  const V excl_first = {0.5588235f, 0.8149421f, 1.356982f, 1.897059f,
                        2.397059f,  2.937135f,  3.479176f, 3.735294f};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(excl.GetAsDouble(i), excl_first[i], 1e-4);

  ExpectNear(
      Resize(Attrs(ResizeMode::kCubic, CoordTransform::kAlignCorners), x, {1, 1, 0.8f, 0.8f}, {}),
      {1, 2.39519f, 3.790384f, 6.580761f, 7.975947f, 9.371145f, 12.16154f, 13.55672f, 14.95192f},
      {1, 1, 3, 3});
}

TEST(MovementResize, AxesAttributeAndNdLinear) {
  Tensor x(DType::kFloat32, {3, 2, 2});
  for (int i = 0; i < 12; ++i) x.data<float>()[i] = static_cast<float>(i);
  ResizeAttrs a = Attrs(ResizeMode::kLinear, CoordTransform::kHalfPixel);
  a.axes = {0};
  ExpectNear(Resize(a, x, {2.0f}, {}),
             {0, 1, 2, 3, 1, 2, 3, 4, 3, 4, 5, 6, 5, 6, 7, 8, 7, 8, 9, 10, 8, 9, 10, 11},
             {6, 2, 2});
  ExpectNear(Resize(Attrs(ResizeMode::kLinear, CoordTransform::kAlignCorners), x, {}, {2, 3, 3}),
             {0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3, 8, 8.5, 9, 9, 9.5, 10, 10, 10.5, 11}, {2, 3, 3});
}

TEST(MovementResize, KeepAspectRatioNotSmaller) {
  // sizes [3,5] on 2x2: scale max(1.5, 2.5) = 2.5 on both axes -> 5x5.
  ResizeAttrs a = Attrs(ResizeMode::kLinear, CoordTransform::kHalfPixel);
  a.axes = {2, 3};
  a.keep_aspect_ratio_policy = ir::KeepAspectRatio::kNotSmaller;
  ExpectNear(Resize(a, F32({1, 1, 2, 2}, {1, 2, 3, 4}), {}, {3, 5}),
             {1,    1.1f, 1.5f, 1.9f, 2,    1.2f, 1.3f, 1.7f, 2.1f, 2.2f, 2,    2.1f, 2.5f,
              2.9f, 3,    2.8f, 2.9f, 3.3f, 3.7f, 3.8f, 3,    3.1f, 3.5f, 3.9f, 4},
             {1, 1, 5, 5});
}

TEST(MovementResize, UnsupportedAndInvalid) {
  const Tensor x = F32({1, 1, 2, 2}, {1, 2, 3, 4});
  ResizeAttrs a = Attrs(ResizeMode::kLinear, CoordTransform::kHalfPixel);
  a.antialias = 1;
  auto out =
      RunSingleOp(OpKind::kResize, a, {{x}, {Tensor()}, {F32({4}, {1, 1, 0.5f, 0.5f}), true}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
  a.antialias = 0;
  out = RunSingleOp(OpKind::kResize, a,
                    {{CastTensor(x, DType::kInt32)}, {Tensor()}, {F32({4}, {1, 1, 2, 2}), true}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
  out = RunSingleOp(OpKind::kResize, a, {{x}, {Tensor()}, {F32({3}, {1, 2, 2}), true}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace qcc
