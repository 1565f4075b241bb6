// Shape functions of the ops that pick, join or resample along axes: Concat, Split, Slice, Pad,
// Gather, Resize, DepthToSpace and SpaceToDepth. Data-dependent parameters are resolved by
// movement_params.h, the same code the CPU kernels use.
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/shape_fns.h"
#include "ir/shape_fns/movement_params.h"
#include "support/status.h"

namespace qcc::ir {
namespace {

/// Returns `axis` normalised against `rank`, or the node's error.
absl::StatusOr<int64_t> Axis(const InferContext& ctx, int64_t axis, int64_t rank) {
  auto a = NormalizeAxis(axis, rank);
  if (!a.ok()) return ctx.Error(a.status().message());
  return *a;
}

}  // namespace

absl::Status InferConcat(InferContext& ctx) {
  const DType dtype = ctx.input(0).dtype;
  ctx.outputs[0] = TensorType::UnknownShape(dtype);
  int64_t rank = -1;
  bool all_ranked = true;
  for (const TensorType& t : ctx.inputs) {
    if (t.dtype != dtype) return ctx.Error("all inputs must share one element type");
    if (!t.has_rank()) {
      all_ranked = false;
    } else if (rank >= 0 && t.rank() != rank) {
      return ctx.Error(absl::StrCat("inputs have ranks ", rank, " and ", t.rank()));
    } else {
      rank = t.rank();
    }
  }
  if (rank < 0) return absl::OkStatus();
  QCC_ASSIGN_OR_RETURN(const int64_t axis, Axis(ctx, ctx.attrs<AxisAttrs>().axis, rank));
  std::vector<Dim> dims(rank, kUnknownDim);
  Dim sum = all_ranked ? 0 : kUnknownDim;
  for (const TensorType& t : ctx.inputs) {
    if (!t.has_rank()) continue;
    for (int64_t i = 0; i < rank; ++i) {
      const Dim d = (*t.dims)[i];
      if (i == axis) {
        sum = IsKnown(sum) && IsKnown(d) ? sum + d : kUnknownDim;
      } else if (IsKnown(d)) {
        if (IsKnown(dims[i]) && dims[i] != d) {
          return ctx.Error(absl::StrCat("inputs differ on axis ", i, ": ", dims[i], " vs ", d));
        }
        dims[i] = d;
      } else if (dims[i] == kUnknownDim) {
        dims[i] = d;
      }
    }
  }
  dims[axis] = ctx.num_inputs() == 1 && all_ranked ? (*ctx.input(0).dims)[axis] : sum;
  ctx.outputs[0].dims = std::move(dims);
  return absl::OkStatus();
}

absl::Status InferSplit(InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const auto& attrs = ctx.attrs<SplitAttrs>();
  const int n = static_cast<int>(ctx.outputs.size());
  if (attrs.num_outputs != 0 && attrs.num_outputs != n) {
    return ctx.Error(
        absl::StrCat("num_outputs is ", attrs.num_outputs, " but the node has ", n, " outputs"));
  }
  for (auto& out : ctx.outputs) out = TensorType::UnknownShape(x.dtype);
  if (!x.has_rank()) return absl::OkStatus();
  QCC_ASSIGN_OR_RETURN(const int64_t axis, Axis(ctx, attrs.axis, x.rank()));
  std::vector<Dim> sizes(n, kUnknownDim);
  const Tensor* split = ctx.has_input(1) ? ctx.value(1) : nullptr;
  if (!ctx.has_input(1) || split != nullptr) {
    auto resolved = ResolveSplit((*x.dims)[axis], split, n);
    if (!resolved.ok()) return ctx.Error(resolved.status().message());
    sizes = *resolved;
  }
  for (int i = 0; i < n; ++i) {
    ctx.outputs[i].dims = x.dims;
    (*ctx.outputs[i].dims)[axis] = sizes[i];
  }
  return absl::OkStatus();
}

absl::Status InferSlice(InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  ctx.outputs[0] = TensorType::UnknownShape(x.dtype);
  if (!x.has_rank()) return absl::OkStatus();
  const Tensor* starts = ctx.value(1);
  const Tensor* ends = ctx.value(2);
  const Tensor* axes = ctx.has_input(3) ? ctx.value(3) : nullptr;
  const Tensor* steps = ctx.has_input(4) ? ctx.value(4) : nullptr;
  ctx.outputs[0].dims = x.dims;
  std::vector<Dim>& dims = *ctx.outputs[0].dims;
  if (starts == nullptr || ends == nullptr || (ctx.has_input(3) && axes == nullptr) ||
      (ctx.has_input(4) && steps == nullptr)) {
    // Parameters computed at run time: the rank stays, the sliced extents become unknown.
    if (axes != nullptr) {
      for (int64_t a : axes->ToInt64Vector()) {
        QCC_ASSIGN_OR_RETURN(const int64_t axis, Axis(ctx, a, x.rank()));
        dims[axis] = kUnknownDim;
      }
    } else {
      dims.assign(x.rank(), kUnknownDim);
    }
    return absl::OkStatus();
  }
  auto resolved = ResolveSlice(*x.dims, *starts, *ends, axes, steps);
  if (!resolved.ok()) return ctx.Error(resolved.status().message());
  for (int64_t i = 0; i < x.rank(); ++i) dims[i] = (*resolved)[i].count;
  return absl::OkStatus();
}

absl::Status InferPad(InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  ctx.outputs[0] = TensorType::UnknownShape(x.dtype);
  if (!x.has_rank()) return absl::OkStatus();
  const int64_t rank = x.rank();
  ctx.outputs[0].dims = std::vector<Dim>(rank, kUnknownDim);
  if (ctx.has_input(2) && ctx.input(2).dtype != x.dtype) {
    return ctx.Error("constant_value must have the data's element type");
  }
  const Tensor* pads = ctx.value(1);
  const Tensor* axes = ctx.has_input(3) ? ctx.value(3) : nullptr;
  if (pads == nullptr || (ctx.has_input(3) && axes == nullptr)) return absl::OkStatus();
  auto amounts = ResolvePads(rank, *pads, axes);
  if (!amounts.ok()) return ctx.Error(amounts.status().message());
  for (int64_t i = 0; i < rank; ++i) {
    const Dim d = (*x.dims)[i];
    const int64_t grow = (*amounts)[i] + (*amounts)[rank + i];
    Dim& out = (*ctx.outputs[0].dims)[i];
    if (IsKnown(d)) {
      out = d + grow;
      if (out < 0) return ctx.Error(absl::StrCat("pads crop axis ", i, " below zero"));
    } else if ((*amounts)[i] == 0 && (*amounts)[rank + i] == 0) {
      out = d;
    }
  }
  return absl::OkStatus();
}

absl::Status InferGather(InferContext& ctx) {
  const TensorType& data = ctx.input(0);
  const TensorType& indices = ctx.input(1);
  ctx.outputs[0] = TensorType::UnknownShape(data.dtype);
  if (indices.dtype != DType::kInt32 && indices.dtype != DType::kInt64) {
    return ctx.Error(absl::StrCat("indices must be i32 or i64, got ", DTypeName(indices.dtype)));
  }
  if (!data.has_rank()) return absl::OkStatus();
  QCC_ASSIGN_OR_RETURN(const int64_t axis, Axis(ctx, ctx.attrs<AxisAttrs>().axis, data.rank()));
  if (!indices.has_rank()) return absl::OkStatus();
  std::vector<Dim> dims(data.dims->begin(), data.dims->begin() + axis);
  dims.insert(dims.end(), indices.dims->begin(), indices.dims->end());
  dims.insert(dims.end(), data.dims->begin() + axis + 1, data.dims->end());
  ctx.outputs[0].dims = std::move(dims);
  return absl::OkStatus();
}

absl::Status InferResize(InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  ctx.outputs[0] = TensorType::UnknownShape(x.dtype);
  if (!x.has_rank()) return absl::OkStatus();
  const Tensor* scales = ctx.has_input(2) ? ctx.value(2) : nullptr;
  const Tensor* sizes = ctx.has_input(3) ? ctx.value(3) : nullptr;
  // Sizes computed from Shape (the batch kept, the spatial extents scaled) are known
  // symbolically.
  std::vector<Dim> symbolic_sizes;
  if (ctx.has_input(3) && sizes == nullptr) {
    if (const std::optional<std::vector<ShapeEntry>> entries = ShapeEntries(ctx, 3)) {
      for (const ShapeEntry& e : *entries) {
        if (e.constant && *e.constant < 0) {
          return ctx.Error(absl::StrCat("size ", *e.constant, " is negative"));
        }
        symbolic_sizes.push_back(e.dim);
      }
    }
  }
  const bool scales_pending = ctx.has_input(2) && scales == nullptr;
  const bool sizes_pending = ctx.has_input(3) && sizes == nullptr && symbolic_sizes.empty();
  if ((scales_pending || sizes_pending) && !HasElements(scales) && !HasElements(sizes) &&
      symbolic_sizes.empty()) {
    ctx.outputs[0].dims = std::vector<Dim>(x.rank(), kUnknownDim);
    return absl::OkStatus();
  }
  const Tensor* roi = ctx.has_input(1) ? ctx.value(1) : nullptr;
  auto params = symbolic_sizes.empty()
                    ? ResolveResize(*x.dims, ctx.attrs<ResizeAttrs>(), roi, scales, sizes)
                    : ResolveResize(*x.dims, ctx.attrs<ResizeAttrs>(), roi, scales, symbolic_sizes);
  if (!params.ok()) return ctx.Error(params.status().message());
  ctx.outputs[0].dims = std::move(params->out_dims);
  return absl::OkStatus();
}

namespace {

/// Checks DepthToSpace/SpaceToDepth's input: rank 4 (when known) and a positive blocksize.
absl::StatusOr<int64_t> BlockSize(const InferContext& ctx) {
  const int64_t b = ctx.attrs<DepthToSpaceAttrs>().blocksize;
  if (b < 1) return ctx.Error(absl::StrCat("blocksize ", b, " must be positive"));
  if (ctx.input(0).has_rank() && ctx.input(0).rank() != 4) {
    return ctx.Error(absl::StrCat("the input must be 4-D, got rank ", ctx.input(0).rank()));
  }
  return b;
}

/// d * f, or d / f (which must divide); unknown stays unknown.
absl::StatusOr<Dim> ScaleDim(const InferContext& ctx, Dim d, int64_t f, bool divide) {
  if (!IsKnown(d)) return kUnknownDim;
  if (!divide) return d * f;
  if (d % f != 0) return ctx.Error(absl::StrCat("extent ", d, " is not a multiple of ", f));
  return d / f;
}

}  // namespace

absl::Status InferDepthToSpace(InferContext& ctx) {
  QCC_ASSIGN_OR_RETURN(const int64_t b, BlockSize(ctx));
  const TensorType& x = ctx.input(0);
  ctx.outputs[0] = TensorType::UnknownShape(x.dtype);
  if (!x.has_rank()) return absl::OkStatus();
  const std::vector<Dim>& in = *x.dims;
  std::vector<Dim> dims{in[0], 0, 0, 0};
  QCC_ASSIGN_OR_RETURN(dims[1], ScaleDim(ctx, in[1], b * b, true));
  QCC_ASSIGN_OR_RETURN(dims[2], ScaleDim(ctx, in[2], b, false));
  QCC_ASSIGN_OR_RETURN(dims[3], ScaleDim(ctx, in[3], b, false));
  ctx.outputs[0].dims = std::move(dims);
  return absl::OkStatus();
}

absl::Status InferSpaceToDepth(InferContext& ctx) {
  QCC_ASSIGN_OR_RETURN(const int64_t b, BlockSize(ctx));
  const TensorType& x = ctx.input(0);
  ctx.outputs[0] = TensorType::UnknownShape(x.dtype);
  if (!x.has_rank()) return absl::OkStatus();
  const std::vector<Dim>& in = *x.dims;
  std::vector<Dim> dims{in[0], 0, 0, 0};
  QCC_ASSIGN_OR_RETURN(dims[1], ScaleDim(ctx, in[1], b * b, false));
  QCC_ASSIGN_OR_RETURN(dims[2], ScaleDim(ctx, in[2], b, true));
  QCC_ASSIGN_OR_RETURN(dims[3], ScaleDim(ctx, in[3], b, true));
  ctx.outputs[0].dims = std::move(dims);
  return absl::OkStatus();
}

}  // namespace qcc::ir
