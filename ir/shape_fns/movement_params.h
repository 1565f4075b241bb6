// The data-dependent parameters of Slice, Split, Pad and Resize, resolved once from their input
// tensors and attributes. Shape functions and CPU kernels both call these, so the output shape
// and the data the kernel writes follow one reading of the ONNX rules.
#ifndef QCC_IR_SHAPE_FNS_MOVEMENT_PARAMS_H_
#define QCC_IR_SHAPE_FNS_MOVEMENT_PARAMS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/attrs.h"
#include "ir/types.h"
#include "support/tensor.h"

namespace qcc::ir {

/// One input axis of a resolved Slice: output coordinate i reads input coordinate
/// start + i * step. `count` is the output extent (kUnknownDim or a symbol when the input
/// extent is not known; then `start` is meaningless).
struct SliceAxis {
  int64_t start = 0;
  int64_t step = 1;
  Dim count = 0;
  /// The whole axis, in order (also where the extent is unknown: [0:INT_MAX:1]).
  bool whole = true;
};

/// Resolves Slice's starts/ends (and optional axes/steps, nullptr or undefined when absent)
/// against `dims`, with ONNX's rules: negative values count from the end, starts and ends are
/// clamped (to [0, d] for positive steps, [0, d-1] / [-1, d-1] for negative ones), INT64_MIN/MAX
/// mean "to the edge". Axes not named are copied whole. InvalidArgument on length mismatches,
/// repeated axes or a zero step.
absl::StatusOr<std::vector<SliceAxis>> ResolveSlice(const std::vector<Dim>& dims,
                                                    const Tensor& starts, const Tensor& ends,
                                                    const Tensor* axes, const Tensor* steps);

/// The extents of Split's `num_outputs` outputs along an axis of extent `extent`: `split` when
/// given (non-empty), else chunks of ceil(extent / num_outputs) with a smaller last one
/// (opset 18). Unknown when `extent` is unknown and no `split` is given.
absl::StatusOr<std::vector<Dim>> ResolveSplit(Dim extent, const Tensor* split, int num_outputs);

/// Pad amounts for every axis, [begin_0..begin_{r-1}, end_0..end_{r-1}], from Pad's `pads`
/// input and optional `axes` input (negative axes count from the end).
absl::StatusOr<std::vector<int64_t>> ResolvePads(int64_t rank, const Tensor& pads,
                                                 const Tensor* axes);

/// Resize's sizes and scales expanded to every input axis.
struct ResizeParams {
  std::vector<Dim> out_dims;
  std::vector<double> scales;  // per axis: the factor the coordinate transform divides by
  std::vector<double> roi;     // [start_0.., end_0..] in normalised coordinates; 0 and 1 default
};

/// Resolves Resize's roi/scales/sizes inputs (nullptr, undefined or empty when absent) and its
/// axes and keep_aspect_ratio_policy attributes against `dims`. Output extents are
/// floor(d * scale) with scales, the sizes (or the aspect-preserving round(d * scale)) with sizes.
absl::StatusOr<ResizeParams> ResolveResize(const std::vector<Dim>& dims, const ResizeAttrs& attrs,
                                           const Tensor* roi, const Tensor* scales,
                                           const Tensor* sizes);
/// The same with the sizes as extents (empty when absent), which may be symbols or unknown: a
/// size equal to its input extent keeps scale 1.
absl::StatusOr<ResizeParams> ResolveResize(const std::vector<Dim>& dims, const ResizeAttrs& attrs,
                                           const Tensor* roi, const Tensor* scales,
                                           const std::vector<Dim>& sizes);

/// True when `t` is present and holds at least one element.
inline bool HasElements(const Tensor* t) { return t != nullptr && t->defined() && t->numel() > 0; }

}  // namespace qcc::ir

#endif  // QCC_IR_SHAPE_FNS_MOVEMENT_PARAMS_H_
