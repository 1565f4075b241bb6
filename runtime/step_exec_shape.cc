// The step kinds that exporters' shape arithmetic leads to: Resize (sizes computed from Shape),
// Expand (a broadcast to a computed shape; ConstantOfShape is an Expand of one element) and
// BatchAffine (a shape value the compiler knows as offset + coef * batch, read as data).
// Resize and Expand keep the batch axis as it is, so each is prepared once for every batch.
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/movement.h"
#include "kernels/cpu/resize.h"
#include "runtime/step_exec.h"
#include "support/float16.h"
#include "support/status.h"

namespace qcc::runtime {
namespace {

// ---- Resize ----

struct ResizeState {
  cpu::ResizeFilter filter = cpu::ResizeFilter::kNearest;
  float extrapolation_value = 0.0f;
  std::vector<cpu::ResizeTaps> taps;      // per axis; axis 0 (the batch) is the identity
  std::vector<cpu::CopyAxis> copy;        // nearest: the sample's axes 1.. as an indexed copy
  std::vector<uint8_t> fill;              // nearest: the extrapolation value as one element
  int64_t in_sample = 0, out_sample = 0;  // elements of one sample (batch entry)
};

absl::Status CheckResizeEnums(const StepPrepareContext& c, const ResizeStepParams& p, size_t rank) {
  const bool enums =
      p.coord >= 0 && p.coord <= static_cast<int64_t>(cpu::ResizeCoordMode::kTfHalfPixelForNn) &&
      p.filter >= 0 && p.filter <= static_cast<int64_t>(cpu::ResizeFilter::kCubic) &&
      p.rounding >= 0 && p.rounding <= static_cast<int64_t>(cpu::ResizeRounding::kCeil);
  if (!enums) {
    return c.Error(absl::StrCat("unknown coordinate mode ", p.coord, ", filter ", p.filter,
                                " or rounding ", p.rounding));
  }
  if (p.scales.size() != rank || p.roi.size() != 2 * rank) {
    return c.Error(
        absl::StrCat(p.scales.size(), " scales and ", p.roi.size(), " roi values for rank ", rank));
  }
  for (double s : p.scales) {
    if (!(s > 0.0) || !std::isfinite(s)) return c.Error(absl::StrCat("scale ", s, " is invalid"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ResizeState> PrepareResize(const StepPrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const ResizeStepParams p, c.Decode<ResizeStepParams>());
  QCC_RETURN_IF_ERROR(c.CheckCounts(1, 1, 1));
  const PlanBuffer* x = c.input(0);
  if (x == nullptr) return c.Error("input X is missing");
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", x->dtype));
  const size_t rank = x->dims.size();
  if (rank < 1 || y->dims.size() != rank) {
    return c.Error(absl::StrCat("resizes rank ", rank, " into rank ", y->dims.size()));
  }
  QCC_RETURN_IF_ERROR(CheckResizeEnums(c, p, rank));
  ResizeState s;
  s.filter = static_cast<cpu::ResizeFilter>(p.filter);
  s.extrapolation_value = p.extrapolation_value;
  if (s.filter != cpu::ResizeFilter::kNearest && x->dtype != DType::kFloat32) {
    return c.Error(
        absl::StrCat("linear and cubic Resize take f32 data, not ", DTypeName(x->dtype)));
  }
  // The batch axis is carried through (scale 1, full roi): the same extent in and out.
  const bool crop = p.coord == static_cast<int64_t>(cpu::ResizeCoordMode::kTfCropAndResize);
  if (p.scales[0] != 1.0 || (crop && (p.roi[0] != 0.0 || p.roi[rank] != 1.0))) {
    return c.Error("Resize of the batch axis is not supported");
  }
  for (int64_t batch : c.batches()) {
    const Dims xd = DimsAtBatch(*x, batch), yd = DimsAtBatch(*y, batch);
    if (xd[0] != yd[0]) {
      return c.Error(absl::StrCat("batch axis ", xd[0], " -> ", yd[0], " at batch ", batch));
    }
  }
  for (size_t k = 1; k < rank; ++k) {
    if (x->dims[k] < 0 || y->dims[k] < 0) return c.Error("only the batch axis may be dynamic");
    if (x->dims[k] == 0 && y->dims[k] > 0) {
      return c.Error(absl::StrCat("cannot resize the empty axis ", k));
    }
  }
  s.taps.resize(rank);
  s.taps[0].identity = true;
  s.in_sample = ProductOf(x->dims, 1, rank);
  s.out_sample = ProductOf(y->dims, 1, rank);
  Dims sample(x->dims.begin() + 1, x->dims.end());
  const Dims strides = RowMajorStrides(sample);
  for (size_t k = 1; k < rank; ++k) {
    cpu::ResizeAxisParams a;
    a.in_extent = x->dims[k];
    a.out_extent = y->dims[k];
    a.scale = p.scales[k];
    a.roi_start = p.roi[k];
    a.roi_end = p.roi[rank + k];
    a.coord = static_cast<cpu::ResizeCoordMode>(p.coord);
    a.filter = s.filter;
    a.rounding = static_cast<cpu::ResizeRounding>(p.rounding);
    a.cubic_a = p.cubic_a;
    a.exclude_outside = p.exclude_outside != 0;
    s.taps[k] = cpu::MakeResizeTaps(a);
    if (s.filter == cpu::ResizeFilter::kNearest) {
      s.copy.push_back({strides[k - 1], s.taps[k].index});
    }
  }
  if (s.filter == cpu::ResizeFilter::kNearest) {
    // The extrapolation value (read by tf_crop_and_resize outside the input only) as one
    // element; the compiler keeps integer data away from that mode.
    s.fill.assign(DTypeSize(x->dtype), 0);
    if (x->dtype == DType::kFloat32) {
      std::memcpy(s.fill.data(), &p.extrapolation_value, sizeof(float));
    } else if (x->dtype == DType::kFloat16) {
      const uint16_t h = FloatToHalf(p.extrapolation_value);
      std::memcpy(s.fill.data(), &h, sizeof(h));
    } else if (crop) {
      return c.Error(absl::StrCat("tf_crop_and_resize of ", DTypeName(x->dtype), " data"));
    }
  }
  return s;
}

int64_t ResizeScratch(const ResizeState& s, const StepRunContext& c) {
  if (s.filter == cpu::ResizeFilter::kNearest) return 0;
  const Dims x = c.in_dims(0);
  return static_cast<int64_t>(sizeof(float)) * cpu::ResizeF32ScratchFloats(x, s.taps);
}

void RunResize(const ResizeState& s, const StepRunContext& c) {
  const Dims x = c.in_dims(0);
  if (s.filter != cpu::ResizeFilter::kNearest) {
    cpu::ResizeF32(x, s.taps, s.extrapolation_value, c.in<float>(0), c.out<float>(0),
                   static_cast<float*>(c.scratch));
    return;
  }
  const size_t elem = DTypeSize(c.plan->buffers[c.step->inputs[0]].dtype);
  const uint8_t* in = c.in<uint8_t>(0);
  uint8_t* out = c.out<uint8_t>(0);
  for (int64_t n = 0; n < x[0]; ++n) {
    cpu::IndexedCopy(s.copy, elem, in + n * s.in_sample * elem, s.fill.data(),
                     out + n * s.out_sample * elem, c.num_threads);
  }
}

// ---- Expand ----

absl::StatusOr<NoStepParams> PrepareExpand(const StepPrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const NoStepParams p, c.Decode<NoStepParams>());
  QCC_RETURN_IF_ERROR(c.CheckCounts(1, 1, 1));
  const PlanBuffer* x = c.input(0);
  if (x == nullptr) return c.Error("input X is missing");
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", x->dtype));
  if (x->dims.size() > y->dims.size()) {
    return c.Error(absl::StrCat("expands rank ", x->dims.size(), " into rank ", y->dims.size()));
  }
  for (int64_t batch : c.batches()) {
    const Dims xd = DimsAtBatch(*x, batch), yd = DimsAtBatch(*y, batch);
    const size_t lead = yd.size() - xd.size();
    for (size_t i = 0; i < xd.size(); ++i) {
      if (xd[i] != 1 && xd[i] != yd[lead + i]) {
        return c.Error(absl::StrCat("X ", DimsToString(xd), " does not broadcast to Y ",
                                    DimsToString(yd), " at batch ", batch));
      }
    }
  }
  return p;
}

void RunExpand(const NoStepParams&, const StepRunContext& c) {
  const Dims y = c.out_dims(0);
  if (NumElements(y) == 0) return;
  const size_t elem = DTypeSize(c.plan->buffers[c.step->inputs[0]].dtype);
  const cpu::BroadcastPlan plan = cpu::MakeBroadcastPlan({c.in_dims(0)}, y);
  const uint8_t* x = c.in<uint8_t>(0);
  uint8_t* out = c.out<uint8_t>(0);
  const bool contiguous = plan.inner_stride(0) == 1;
  cpu::ForEachBroadcastRunIn(plan, 0, plan.numel, [&](const auto& offsets, int64_t o, int64_t n) {
    const uint8_t* src = x + offsets[0] * elem;
    uint8_t* dst = out + o * elem;
    if (contiguous) {
      std::memcpy(dst, src, n * elem);
    } else {
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * elem, src, elem);
    }
  });
}

// ---- BatchAffine ----

absl::StatusOr<BatchAffineStepParams> PrepareBatchAffine(const StepPrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const BatchAffineStepParams p, c.Decode<BatchAffineStepParams>());
  QCC_RETURN_IF_ERROR(c.CheckCounts(0, 0, 1));
  const PlanBuffer& y = c.output(0);
  if (y.dtype != DType::kInt64 && y.dtype != DType::kInt32 && y.dtype != DType::kFloat32) {
    return c.Error(absl::StrCat("output is ", DTypeName(y.dtype), "; expected i64, i32 or f32"));
  }
  for (int64_t d : y.dims) {
    if (d < 0) return c.Error("the output has a dynamic extent");
  }
  if (p.coefs.size() != p.offsets.size() ||
      static_cast<int64_t>(p.offsets.size()) != NumElements(y.dims)) {
    return c.Error(absl::StrCat(p.offsets.size(), " offsets and ", p.coefs.size(),
                                " coefficients for an output of ", NumElements(y.dims),
                                " elements"));
  }
  // Every value at every batch of the plan's range fits int64 (it is affine: the ends suffice)
  // and, for i32, int32.
  for (int64_t batch : c.batches()) {
    for (size_t i = 0; i < p.offsets.size(); ++i) {
      const __int128 v = static_cast<__int128>(p.offsets[i]) +
                         static_cast<__int128>(p.coefs[i]) * static_cast<__int128>(batch);
      const bool fits = y.dtype == DType::kInt32 ? v >= INT32_MIN && v <= INT32_MAX
                                                 : v >= INT64_MIN && v <= INT64_MAX;
      if (!fits) return c.Error(absl::StrCat("element ", i, " overflows at batch ", batch));
    }
  }
  return p;
}

void RunBatchAffine(const BatchAffineStepParams& p, const StepRunContext& c) {
  const DType dtype = c.plan->buffers[c.step->outputs[0]].dtype;
  for (size_t i = 0; i < p.offsets.size(); ++i) {
    const int64_t v = p.offsets[i] + p.coefs[i] * c.batch;
    switch (dtype) {
      case DType::kInt64:
        c.out<int64_t>(0)[i] = v;
        break;
      case DType::kInt32:
        c.out<int32_t>(0)[i] = static_cast<int32_t>(v);
        break;
      default:
        c.out<float>(0)[i] = static_cast<float>(v);
        break;
    }
  }
}

}  // namespace

void RegisterShapeSteps(StepRegistry& r) {
  r.Add(StepKind::kResize, PrepareStep<ResizeState, PrepareResize, RunResize, ResizeScratch>);
  r.Add(StepKind::kExpand, PrepareStep<NoStepParams, PrepareExpand, RunExpand>);
  r.Add(StepKind::kBatchAffine,
        PrepareStep<BatchAffineStepParams, PrepareBatchAffine, RunBatchAffine>);
}

}  // namespace qcc::runtime
