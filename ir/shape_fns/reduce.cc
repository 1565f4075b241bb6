// Shape functions of the reductions (Reduce*, with axes as input 1) and arg-reductions.
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/shape_fns.h"
#include "support/status.h"

namespace qcc::ir {

absl::Status InferReduce(InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const auto& attrs = ctx.attrs<ReduceAttrs>();
  ctx.outputs[0] = TensorType::UnknownShape(x.dtype);
  if (!x.has_rank()) return absl::OkStatus();
  const int64_t rank = x.rank();

  // The axes: absent or empty means "all axes", or "none" with noop_with_empty_axes.
  std::vector<bool> reduced(rank, false);
  if (ctx.has_input(1)) {
    const TensorType& axes_type = ctx.input(1);
    if (axes_type.dtype != DType::kInt64) {
      return ctx.Error(absl::StrCat("axes must be i64, got ", DTypeName(axes_type.dtype)));
    }
    const Tensor* axes = ctx.value(1);
    if (axes == nullptr) {
      // Axes computed at run time: with keepdims the rank is known, without it the rank is
      // known only when the number of axes is.
      if (attrs.keepdims != 0) {
        ctx.outputs[0].dims = std::vector<Dim>(rank, kUnknownDim);
      } else if (axes_type.IsStatic() && axes_type.rank() == 1 && (*axes_type.dims)[0] > 0) {
        const int64_t out_rank = rank - (*axes_type.dims)[0];
        if (out_rank < 0) return ctx.Error("more axes than the input has");
        ctx.outputs[0].dims = std::vector<Dim>(out_rank, kUnknownDim);
      }
      return absl::OkStatus();
    }
    if (axes->rank() > 1) return ctx.Error("axes must be a 1-D tensor");
    for (int64_t a : axes->ToInt64Vector()) {
      auto axis = NormalizeAxis(a, rank);
      if (!axis.ok()) return ctx.Error(axis.status().message());
      if (reduced[*axis]) return ctx.Error(absl::StrCat("axis ", a, " is repeated"));
      reduced[*axis] = true;
    }
  }
  bool any = false;
  for (bool r : reduced) any = any || r;
  if (!any) {
    if (attrs.noop_with_empty_axes != 0) {
      ctx.outputs[0] = x;
      return absl::OkStatus();
    }
    reduced.assign(rank, true);
  }

  std::vector<Dim> dims;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i]) {
      dims.push_back((*x.dims)[i]);
    } else if (attrs.keepdims != 0) {
      dims.push_back(1);
    }
  }
  ctx.outputs[0].dims = std::move(dims);
  return absl::OkStatus();
}

absl::Status InferArgReduce(InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const auto& attrs = ctx.attrs<ArgReduceAttrs>();
  ctx.outputs[0] = TensorType::UnknownShape(DType::kInt64);
  if (!x.has_rank()) return absl::OkStatus();
  auto axis = NormalizeAxis(attrs.axis, x.rank());
  if (!axis.ok()) return ctx.Error(axis.status().message());
  std::vector<Dim> dims;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (i != *axis) {
      dims.push_back((*x.dims)[i]);
    } else if (attrs.keepdims != 0) {
      dims.push_back(1);
    }
  }
  ctx.outputs[0].dims = std::move(dims);
  return absl::OkStatus();
}

}  // namespace qcc::ir
