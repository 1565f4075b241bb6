#include "ir/shape_fns/movement_params.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "ir/shape_fns.h"
#include "support/status.h"

namespace qcc::ir {
namespace {

absl::Status Invalid(absl::string_view message) { return absl::InvalidArgumentError(message); }

/// Normalised, distinct axes from an axes tensor (or 0..n-1 when absent).
absl::StatusOr<std::vector<int64_t>> DistinctAxes(const Tensor* axes, int64_t count, int64_t rank) {
  std::vector<int64_t> out(count);
  std::vector<bool> seen(rank, false);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t raw = axes != nullptr ? axes->GetAsInt64(i) : i;
    QCC_ASSIGN_OR_RETURN(out[i], NormalizeAxis(raw, rank));
    if (seen[out[i]]) return Invalid(absl::StrCat("axis ", raw, " is listed twice"));
    seen[out[i]] = true;
  }
  return out;
}

/// Number of elements of start, start+step, ... strictly before `end` (step > 0) or strictly
/// after it (step < 0); computed without overflow for any step.
int64_t StepCount(int64_t start, int64_t end, int64_t step) {
  const bool forward = step > 0;
  if (forward ? end <= start : start <= end) return 0;
  const uint64_t span =
      forward ? static_cast<uint64_t>(end - start) : static_cast<uint64_t>(start - end);
  const uint64_t mag = forward ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
  return static_cast<int64_t>((span - 1) / mag + 1);
}

}  // namespace

absl::StatusOr<std::vector<SliceAxis>> ResolveSlice(const std::vector<Dim>& dims,
                                                    const Tensor& starts, const Tensor& ends,
                                                    const Tensor* axes, const Tensor* steps) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  const int64_t n = starts.numel();
  if (starts.rank() > 1 || ends.rank() > 1) return Invalid("starts and ends must be 1-D");
  if (ends.numel() != n) {
    return Invalid(absl::StrCat("starts has ", n, " entries but ends has ", ends.numel()));
  }
  if (axes != nullptr && !axes->defined()) axes = nullptr;
  if (steps != nullptr && !steps->defined()) steps = nullptr;
  if (axes != nullptr && axes->numel() != n) {
    return Invalid(absl::StrCat("axes has ", axes->numel(), " entries, starts has ", n));
  }
  if (steps != nullptr && steps->numel() != n) {
    return Invalid(absl::StrCat("steps has ", steps->numel(), " entries, starts has ", n));
  }
  if (axes == nullptr && n > rank) {
    return Invalid(absl::StrCat("starts has ", n, " entries for rank ", rank));
  }
  QCC_ASSIGN_OR_RETURN(std::vector<int64_t> axis_of, DistinctAxes(axes, n, rank));

  std::vector<SliceAxis> out(rank);
  for (int64_t d = 0; d < rank; ++d) out[d] = SliceAxis{0, 1, dims[d], true};
  for (int64_t i = 0; i < n; ++i) {
    const int64_t step = steps != nullptr ? steps->GetAsInt64(i) : 1;
    if (step == 0) return Invalid("slice steps must be non-zero");
    int64_t start = starts.GetAsInt64(i);
    int64_t end = ends.GetAsInt64(i);
    SliceAxis& s = out[axis_of[i]];
    const Dim dim = dims[axis_of[i]];
    s.step = step;
    if (!IsKnown(dim)) {
      // Only "everything" survives an unknown extent: [0:INT_MAX:1] keeps the extent itself.
      const bool whole = start == 0 && step == 1 && end >= std::numeric_limits<int32_t>::max();
      s.count = whole ? dim : kUnknownDim;
      s.whole = whole;
      continue;
    }
    if (dim == 0) {
      s.start = 0;
      s.count = 0;
      s.whole = step == 1;
      continue;
    }
    if (start < 0) start += dim;  // cannot overflow: start < 0 < dim
    if (end < 0) end += dim;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
    }
    s.start = start;
    s.count = StepCount(start, end, step);
    s.whole = start == 0 && step == 1 && s.count == dim;
  }
  return out;
}

absl::StatusOr<std::vector<Dim>> ResolveSplit(Dim extent, const Tensor* split, int num_outputs) {
  if (num_outputs < 1) return Invalid("Split needs at least one output");
  if (HasElements(split)) {
    if (split->numel() != num_outputs) {
      return Invalid(
          absl::StrCat("split has ", split->numel(), " sizes for ", num_outputs, " outputs"));
    }
    std::vector<Dim> sizes = split->ToInt64Vector();
    int64_t total = 0;
    for (Dim s : sizes) {
      if (s < 0) return Invalid(absl::StrCat("split size ", s, " is negative"));
      total += s;
    }
    if (IsKnown(extent) && total != extent) {
      return Invalid(absl::StrCat("split sizes add up to ", total, " but the axis has ", extent));
    }
    return sizes;
  }
  if (!IsKnown(extent)) return std::vector<Dim>(num_outputs, kUnknownDim);
  const int64_t chunk = (extent + num_outputs - 1) / num_outputs;
  std::vector<Dim> sizes(num_outputs);
  for (int i = 0; i < num_outputs; ++i) {
    sizes[i] = std::clamp<int64_t>(extent - i * chunk, 0, chunk);
  }
  return sizes;
}

absl::StatusOr<std::vector<int64_t>> ResolvePads(int64_t rank, const Tensor& pads,
                                                 const Tensor* axes) {
  if (axes != nullptr && !axes->defined()) axes = nullptr;
  const int64_t naxes = axes != nullptr ? axes->numel() : rank;
  if (pads.rank() > 1 || pads.numel() != 2 * naxes) {
    return Invalid(absl::StrCat("pads has ", pads.numel(), " entries, expected ", 2 * naxes,
                                " (begin and end for ", naxes, " axes)"));
  }
  QCC_ASSIGN_OR_RETURN(std::vector<int64_t> axis_of, DistinctAxes(axes, naxes, rank));
  std::vector<int64_t> out(2 * rank, 0);
  for (int64_t i = 0; i < naxes; ++i) {
    out[axis_of[i]] = pads.GetAsInt64(i);
    out[rank + axis_of[i]] = pads.GetAsInt64(naxes + i);
  }
  return out;
}

absl::StatusOr<ResizeParams> ResolveResize(const std::vector<Dim>& dims, const ResizeAttrs& attrs,
                                           const Tensor* roi, const Tensor* scales,
                                           const Tensor* sizes) {
  if (!HasElements(sizes)) return ResolveResize(dims, attrs, roi, scales, std::vector<Dim>());
  std::vector<Dim> extents = sizes->ToInt64Vector();
  for (Dim d : extents) {
    if (d < 0) return Invalid(absl::StrCat("size ", d, " is negative"));
  }
  return ResolveResize(dims, attrs, roi, scales, extents);
}

absl::StatusOr<ResizeParams> ResolveResize(const std::vector<Dim>& dims, const ResizeAttrs& attrs,
                                           const Tensor* roi, const Tensor* scales,
                                           const std::vector<Dim>& sizes) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  const bool has_scales = HasElements(scales);
  const bool has_sizes = !sizes.empty();
  if (has_scales == has_sizes) return Invalid("exactly one of scales and sizes must be given");

  std::vector<int64_t> axes(attrs.axes.begin(), attrs.axes.end());
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  } else {
    const int64_t n = static_cast<int64_t>(attrs.axes.size());
    const Tensor list = Tensor::FromVector(DType::kInt64, {n}, attrs.axes);
    QCC_ASSIGN_OR_RETURN(axes, DistinctAxes(&list, n, rank));
  }
  const int64_t naxes = static_cast<int64_t>(axes.size());
  const int64_t given = has_scales ? scales->numel() : static_cast<int64_t>(sizes.size());
  if (given != naxes) {
    return Invalid(absl::StrCat(has_scales ? "scales" : "sizes", " has ", given, " entries for ",
                                naxes, " axes"));
  }

  ResizeParams p;
  p.out_dims = dims;
  p.scales.assign(rank, 1.0);
  p.roi.assign(2 * rank, 0.0);
  std::fill(p.roi.begin() + rank, p.roi.end(), 1.0);
  if (HasElements(roi)) {
    if (roi->numel() != 2 * naxes) {
      return Invalid(absl::StrCat("roi has ", roi->numel(), " entries, expected ", 2 * naxes));
    }
    for (int64_t i = 0; i < naxes; ++i) {
      p.roi[axes[i]] = roi->GetAsDouble(i);
      p.roi[rank + axes[i]] = roi->GetAsDouble(naxes + i);
    }
  }

  if (has_scales) {
    for (int64_t i = 0; i < naxes; ++i) {
      const double s = scales->GetAsDouble(i);
      if (!(s > 0.0) || !std::isfinite(s)) {
        return Invalid(absl::StrCat("scale ", s, " must be positive"));
      }
      const int64_t a = axes[i];
      p.scales[a] = s;
      if (IsKnown(dims[a])) {
        p.out_dims[a] = static_cast<int64_t>(std::floor(static_cast<double>(dims[a]) * s));
      } else if (s != 1.0) {
        p.out_dims[a] = kUnknownDim;
      }
    }
    return p;
  }

  for (int64_t i = 0; i < naxes; ++i) {
    // A size may be a symbol (a batch computed from Shape): the same symbol as the input extent
    // is a scale of 1.
    const Dim size = sizes[i];
    const int64_t a = axes[i];
    p.out_dims[a] = size;
    if (IsKnown(size) && IsKnown(dims[a]) && dims[a] > 0) {
      p.scales[a] = static_cast<double>(size) / dims[a];
    }
  }
  if (attrs.keep_aspect_ratio_policy != KeepAspectRatio::kStretch) {
    // One scale for every listed axis: the smallest (not_larger) or largest (not_smaller)
    // of size/extent; extents are then round-half-up(d * scale).
    bool all_known = true;
    double scale = attrs.keep_aspect_ratio_policy == KeepAspectRatio::kNotLarger
                       ? std::numeric_limits<double>::infinity()
                       : 0.0;
    for (int64_t a : axes) {
      all_known = all_known && IsKnown(dims[a]) && dims[a] > 0;
      if (!all_known) break;
      scale = attrs.keep_aspect_ratio_policy == KeepAspectRatio::kNotLarger
                  ? std::min(scale, p.scales[a])
                  : std::max(scale, p.scales[a]);
    }
    for (int64_t a : axes) {
      p.scales[a] = all_known ? scale : 1.0;
      p.out_dims[a] = all_known ? static_cast<int64_t>(scale * static_cast<double>(dims[a]) + 0.5)
                                : kUnknownDim;
    }
  }
  return p;
}

}  // namespace qcc::ir
