// CPU Resize: nearest for every element type (an indexed copy), linear and cubic for fp32
// (fp16/bf16 arrive as fp32 under kComputeInF32). antialias is not supported.
#include "kernels/cpu/resize.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "backend_cpu/op_registry.h"
#include "backend_cpu/ops/movement_ops.h"
#include "ir/shape_fns/movement_params.h"
#include "kernels/cpu/movement.h"

namespace qcc::cpu {
namespace {

ResizeCoordMode CoordMode(ir::CoordTransform mode) {
  switch (mode) {
    case ir::CoordTransform::kHalfPixel:
      return ResizeCoordMode::kHalfPixel;
    case ir::CoordTransform::kAsymmetric:
      return ResizeCoordMode::kAsymmetric;
    case ir::CoordTransform::kPytorchHalfPixel:
      return ResizeCoordMode::kPytorchHalfPixel;
    case ir::CoordTransform::kAlignCorners:
      return ResizeCoordMode::kAlignCorners;
    case ir::CoordTransform::kTfCropAndResize:
      return ResizeCoordMode::kTfCropAndResize;
    case ir::CoordTransform::kHalfPixelSymmetric:
      return ResizeCoordMode::kHalfPixelSymmetric;
    case ir::CoordTransform::kTfHalfPixelForNn:
      return ResizeCoordMode::kTfHalfPixelForNn;
  }
  return ResizeCoordMode::kHalfPixel;
}

ResizeFilter Filter(ir::ResizeMode mode) {
  switch (mode) {
    case ir::ResizeMode::kNearest:
      return ResizeFilter::kNearest;
    case ir::ResizeMode::kLinear:
      return ResizeFilter::kLinear;
    case ir::ResizeMode::kCubic:
      return ResizeFilter::kCubic;
  }
  return ResizeFilter::kNearest;
}

ResizeRounding Rounding(ir::NearestMode mode) {
  switch (mode) {
    case ir::NearestMode::kRoundPreferFloor:
      return ResizeRounding::kRoundPreferFloor;
    case ir::NearestMode::kRoundPreferCeil:
      return ResizeRounding::kRoundPreferCeil;
    case ir::NearestMode::kFloor:
      return ResizeRounding::kFloor;
    case ir::NearestMode::kCeil:
      return ResizeRounding::kCeil;
  }
  return ResizeRounding::kRoundPreferFloor;
}

const Tensor* Optional(const OpContext& ctx, int i) {
  return ctx.has_input(i) ? &ctx.input(i) : nullptr;
}

absl::Status RunResize(OpContext& ctx) {
  const auto& attrs = ctx.attrs<ir::ResizeAttrs>();
  if (attrs.antialias != 0) return ctx.Unsupported("antialiased Resize is not supported");
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  auto params =
      ir::ResolveResize(x.dims(), attrs, Optional(ctx, 1), Optional(ctx, 2), Optional(ctx, 3));
  if (!params.ok()) return ctx.Error(params.status().message());
  const int64_t rank = x.rank();
  std::vector<ResizeAxisParams> axis_params = ResizeAxes(attrs, *params);
  std::vector<ResizeTaps> taps(rank);
  for (int64_t k = 0; k < rank; ++k) {
    ResizeAxisParams& p = axis_params[k];
    p.in_extent = x.dim(k);
    p.out_extent = out.dim(k);
    if (p.in_extent == 0 && p.out_extent > 0) {
      return ctx.Error(absl::StrCat("cannot resize the empty axis ", k));
    }
    taps[k] = MakeResizeTaps(p);
  }

  if (attrs.mode == ir::ResizeMode::kNearest) {
    const Dims strides = RowMajorStrides(x.dims());
    std::vector<CopyAxis> axes(rank);
    for (int64_t k = 0; k < rank; ++k) {
      axes[k].in_stride = strides[k];
      axes[k].source = taps[k].index;
    }
    const Tensor fill = CastTensor(
        Tensor::FromVector(DType::kFloat32, {}, std::vector<float>{attrs.extrapolation_value}),
        x.dtype());
    IndexedCopy(axes, DTypeSize(x.dtype()), x.raw(), fill.raw(), out.raw());
    return absl::OkStatus();
  }
  if (x.dtype() != DType::kFloat32) {
    return ctx.Unsupported(
        absl::StrCat("no CPU linear/cubic Resize for ", DTypeName(x.dtype()), " data"));
  }
  ResizeF32(x.dims(), taps, attrs.extrapolation_value, x.data<float>(), out.data<float>());
  return absl::OkStatus();
}

}  // namespace

std::vector<ResizeAxisParams> ResizeAxes(const ir::ResizeAttrs& attrs,
                                         const ir::ResizeParams& params) {
  const size_t rank = params.scales.size();
  std::vector<ResizeAxisParams> axes(rank);
  for (size_t k = 0; k < rank; ++k) {
    ResizeAxisParams& p = axes[k];
    p.scale = params.scales[k];
    p.roi_start = params.roi[k];
    p.roi_end = params.roi[rank + k];
    p.coord = CoordMode(attrs.coordinate_transformation_mode);
    p.filter = Filter(attrs.mode);
    p.rounding = Rounding(attrs.nearest_mode);
    p.cubic_a = attrs.cubic_coeff_a;
    p.exclude_outside = attrs.exclude_outside != 0;
  }
  return axes;
}

void RegisterResizeOps(OpRegistry& registry) {
  registry.Add(ir::OpKind::kResize, RunResize, FloatPolicy::kComputeInF32);
}

}  // namespace qcc::cpu
