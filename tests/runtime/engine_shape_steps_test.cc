// The step kinds shape arithmetic leads to (runtime/step_exec_shape.cc): Resize keeping the
// batch axis, Expand to the output buffer's dims, BatchAffine; at two batches of a dynamic plan
// against loops written out here (Resize against the kernel on the whole tensor), and the plans
// their prepare functions refuse.
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/resize.h"
#include "tests/runtime/engine_test_util.h"

namespace qcc::runtime {
namespace {

using engine_testing::CreateError;
using engine_testing::ExpectTensorsEqual;
using engine_testing::ExpectTensorsNear;
using engine_testing::PlanBuilder;
using engine_testing::RandomFloat;
using engine_testing::RandomInt8;
using engine_testing::RunPlan;

using engine_testing::kF32;

/// Resize parameters of a rank-4 NCHW resample of H and W by `scale` (the batch and channels
/// kept).
ResizeStepParams Scale2d(cpu::ResizeFilter filter, cpu::ResizeCoordMode coord, double scale) {
  ResizeStepParams p;
  p.coord = static_cast<int64_t>(coord);
  p.filter = static_cast<int64_t>(filter);
  p.rounding = static_cast<int64_t>(cpu::ResizeRounding::kFloor);
  p.scales = {1.0, 1.0, scale, scale};
  p.roi = {0, 0, 0, 0, 1, 1, 1, 1};
  return p;
}

/// What the kernel gives for the whole tensor (batch axis included) with `p`.
Tensor ResizeReference(const Tensor& x, const Dims& out_dims, const ResizeStepParams& p) {
  std::vector<cpu::ResizeTaps> taps;
  for (int64_t k = 0; k < x.rank(); ++k) {
    cpu::ResizeAxisParams a;
    a.in_extent = x.dim(k);
    a.out_extent = out_dims[k];
    a.scale = p.scales[k];
    a.roi_start = p.roi[k];
    a.roi_end = p.roi[x.rank() + k];
    a.coord = static_cast<cpu::ResizeCoordMode>(p.coord);
    a.filter = static_cast<cpu::ResizeFilter>(p.filter);
    a.rounding = static_cast<cpu::ResizeRounding>(p.rounding);
    taps.push_back(cpu::MakeResizeTaps(a));
  }
  Tensor want(x.dtype(), out_dims);
  if (x.dtype() == kF32) {
    cpu::ResizeF32(x.dims(), taps, 0.0f, x.data<float>(), want.data<float>());
    return want;
  }
  // Nearest on int8: the taps' single index per axis.
  const int64_t c = x.dim(1), h = x.dim(2), w = x.dim(3);
  for (int64_t n = 0; n < out_dims[0]; ++n)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t i = 0; i < out_dims[2]; ++i)
        for (int64_t j = 0; j < out_dims[3]; ++j) {
          want.data<int8_t>()[((n * c + ci) * out_dims[2] + i) * out_dims[3] + j] =
              x.data<int8_t>()[((n * c + ci) * h + taps[2].index[i]) * w + taps[3].index[j]];
        }
  return want;
}

TEST(EngineShapeStepsTest, ResizeKeepsTheBatchAndMatchesTheKernel) {
  struct Case {
    DType dtype;
    cpu::ResizeFilter filter;
    cpu::ResizeCoordMode coord;
  };
  for (const Case& k :
       {Case{kF32, cpu::ResizeFilter::kLinear, cpu::ResizeCoordMode::kHalfPixel},
        Case{kF32, cpu::ResizeFilter::kCubic, cpu::ResizeCoordMode::kAlignCorners},
        Case{kF32, cpu::ResizeFilter::kNearest, cpu::ResizeCoordMode::kAsymmetric},
        Case{DType::kInt8, cpu::ResizeFilter::kNearest, cpu::ResizeCoordMode::kAsymmetric}}) {
    SCOPED_TRACE(static_cast<int>(k.filter));
    const ResizeStepParams p = Scale2d(k.filter, k.coord, 2.0);
    PlanBuilder b(1, 4);
    const int32_t x = b.Input("x", k.dtype, {-1, 3, 5, 4});
    const int32_t y = b.Output("y", k.dtype, {-1, 3, 10, 8});
    b.Step(StepKind::kResize, "resize", {x}, {y}, p);
    for (int64_t batch : {1, 3}) {
      const Tensor in = k.dtype == kF32 ? RandomFloat({batch, 3, 5, 4}, 7 + batch)
                                        : RandomInt8({batch, 3, 5, 4}, 7 + batch);
      const std::vector<Tensor> out = RunPlan(b.plan(), {in});
      ASSERT_EQ(out.size(), 1u);
      const Tensor want = ResizeReference(in, {batch, 3, 10, 8}, p);
      if (k.dtype == kF32) {
        ExpectTensorsNear(out[0], want, 1e-6);
      } else {
        ExpectTensorsEqual(out[0], want);
      }
    }
  }
}

TEST(EngineShapeStepsTest, ResizeRefusesTheBatchAxisAndInterpolatingIntegers) {
  {
    ResizeStepParams p = Scale2d(cpu::ResizeFilter::kNearest, cpu::ResizeCoordMode::kAsymmetric, 2);
    p.scales[0] = 2.0;
    PlanBuilder b(2, 2);
    const int32_t x = b.Input("x", kF32, {2, 3, 5, 4});
    const int32_t y = b.Output("y", kF32, {4, 3, 10, 8});
    b.Step(StepKind::kResize, "resize", {x}, {y}, p);
    EXPECT_NE(CreateError(b.plan()).message().find("batch axis"), std::string::npos)
        << CreateError(b.plan());
  }
  {
    PlanBuilder b(1, 2);
    const int32_t x = b.Input("x", DType::kInt8, {-1, 3, 5, 4});
    const int32_t y = b.Output("y", DType::kInt8, {-1, 3, 10, 8});
    b.Step(StepKind::kResize, "resize", {x}, {y},
           Scale2d(cpu::ResizeFilter::kLinear, cpu::ResizeCoordMode::kHalfPixel, 2.0));
    EXPECT_NE(CreateError(b.plan()).message().find("take f32 data"), std::string::npos)
        << CreateError(b.plan());
  }
}

TEST(EngineShapeStepsTest, ExpandBroadcastsToTheOutputDims) {
  // [1, 3, 1, 2] -> [N, 3, 4, 2] (a computed expand_as), and a rank-1 [3] -> [N, 2, 3].
  PlanBuilder b(1, 5);
  const int32_t x = b.Input("x", kF32, {1, 3, 1, 2});
  const int32_t y = b.Output("y", kF32, {-1, 3, 4, 2});
  const int32_t v = b.Weight<int32_t>("v", DType::kInt32, {3}, {7, -8, 9});
  const int32_t z = b.Output("z", DType::kInt32, {-1, 2, 3});
  b.Step(StepKind::kExpand, "expand", {x}, {y}, NoStepParams{});
  b.Step(StepKind::kExpand, "expand_v", {v}, {z}, NoStepParams{});
  const Tensor in = RandomFloat({1, 3, 1, 2}, 3);
  for (int64_t batch : {1, 5}) {
    // The batch comes from another input in a real plan; here from a batch-N probe input.
    PlanBuilder probe = b;
    const int32_t p = probe.Input("probe", kF32, {-1});
    probe.Step(StepKind::kReshape, "keep", {p}, {probe.Output("probe_out", kF32, {-1})},
               NoStepParams{});
    const std::vector<Tensor> out = RunPlan(probe.plan(), {in, Tensor(kF32, {batch})});
    ASSERT_EQ(out.size(), 3u);
    Tensor want_y(kF32, {batch, 3, 4, 2});
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t h = 0; h < 4; ++h)
          for (int64_t w = 0; w < 2; ++w)
            want_y.data<float>()[((n * 3 + c) * 4 + h) * 2 + w] = in.data<float>()[c * 2 + w];
    ExpectTensorsEqual(out[0], want_y);
    const int32_t v_values[3] = {7, -8, 9};
    Tensor want_z(DType::kInt32, {batch, 2, 3});
    for (int64_t i = 0; i < batch * 2; ++i) {
      for (int64_t j = 0; j < 3; ++j) want_z.data<int32_t>()[i * 3 + j] = v_values[j];
    }
    ExpectTensorsEqual(out[1], want_z);
  }
}

TEST(EngineShapeStepsTest, BatchAffineComputesShapeValuesFromTheBatch) {
  // [N, 3 * N + 1, -1] as i64 and as f32 (Cast(Shape(x)) read as data).
  BatchAffineStepParams p;
  p.offsets = {0, 1, -1};
  p.coefs = {1, 3, 0};
  PlanBuilder b(1, 8);
  const int32_t x = b.Input("x", kF32, {-1, 2});
  const int32_t i64 = b.Output("i64", DType::kInt64, {3});
  const int32_t f32 = b.Output("f32", kF32, {3});
  const int32_t copy = b.Output("copy", kF32, {-1, 2});
  b.Step(StepKind::kBatchAffine, "shape", {}, {i64}, p);
  b.Step(StepKind::kBatchAffine, "shape_f", {}, {f32}, p);
  b.Step(StepKind::kReshape, "keep", {x}, {copy}, NoStepParams{});
  for (int64_t batch : {1, 6}) {
    const std::vector<Tensor> out = RunPlan(b.plan(), {RandomFloat({batch, 2}, 1)});
    ASSERT_EQ(out.size(), 3u);
    ExpectTensorsEqual(out[0],
                       Tensor::FromVector<int64_t>(DType::kInt64, {3}, {batch, 3 * batch + 1, -1}));
    ExpectTensorsEqual(
        out[1], Tensor::FromVector<float>(kF32, {3}, {float(batch), float(3 * batch + 1), -1.0f}));
  }
}

TEST(EngineShapeStepsTest, BatchAffineRefusesMismatchedAndOverflowingValues) {
  {
    BatchAffineStepParams p;
    p.offsets = {0, 1};
    p.coefs = {1};
    PlanBuilder b(1, 2);
    b.Step(StepKind::kBatchAffine, "shape", {}, {b.Output("y", DType::kInt64, {2})}, p);
    EXPECT_NE(CreateError(b.plan()).message().find("coefficients"), std::string::npos)
        << CreateError(b.plan());
  }
  {
    BatchAffineStepParams p;
    p.offsets = {0};
    p.coefs = {int64_t{1} << 40};  // i32 overflows at any batch
    PlanBuilder b(1, 2);
    b.Step(StepKind::kBatchAffine, "shape", {}, {b.Output("y", DType::kInt32, {1})}, p);
    EXPECT_NE(CreateError(b.plan()).message().find("overflows"), std::string::npos)
        << CreateError(b.plan());
  }
}

}  // namespace
}  // namespace qcc::runtime
