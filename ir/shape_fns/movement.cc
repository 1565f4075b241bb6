// Shape functions of the reshaping ops (Flatten, Reshape, Transpose, Squeeze, Unsqueeze, Expand,
// Tile), the shape queries (Shape, Size), Cast, constants, Dropout and Range. Where a shape comes
// from an input tensor, its value is used when known (a constant); otherwise the result keeps
// what can still be said (the rank, extents that do not depend on the value).
#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/shape_fns.h"
#include "support/status.h"

namespace qcc::ir {
namespace {

/// Product of dims[begin, end): known when all are known; the one symbolic extent itself when
/// every other factor is 1 (so Flatten of [N,1,1] keeps N); else unknown.
Dim ProductKeepSymbol(const std::vector<Dim>& dims, size_t begin, size_t end) {
  Dim known = 1;
  Dim other = 1;
  int num_other = 0;
  for (size_t i = begin; i < end; ++i) {
    if (IsKnown(dims[i])) {
      known *= dims[i];
    } else {
      other = dims[i];
      ++num_other;
    }
  }
  if (num_other == 0) return known;
  if (num_other == 1 && known == 1) return other;
  return kUnknownDim;
}

/// A rank-`rank` type with every extent unknown, or an unknown shape when rank < 0.
TensorType UnknownDims(DType dtype, int64_t rank) {
  if (rank < 0) return TensorType::UnknownShape(dtype);
  return TensorType(dtype, std::vector<Dim>(rank, kUnknownDim));
}

/// The length of a 1-D shape-like input whose value is not known, or -1 when not static.
int64_t VectorLength(const TensorType& t) {
  return t.IsStatic() && t.rank() == 1 ? (*t.dims)[0] : -1;
}

/// Reshape's -1 entry: input elements divided by the other output extents. Symbols common to
/// both sides cancel, so [N,C,H,W] -> [0,-1] gives C*H*W even while N is unknown.
absl::StatusOr<Dim> InferMinusOne(const std::vector<Dim>& in, const std::vector<Dim>& out,
                                  size_t minus_one) {
  std::vector<Dim> in_syms;
  int64_t in_known = 1;
  for (Dim d : in) {
    if (d == kUnknownDim) return kUnknownDim;
    if (IsKnown(d)) {
      in_known *= d;
    } else {
      in_syms.push_back(d);
    }
  }
  std::vector<Dim> out_syms;
  int64_t out_known = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (i == minus_one) continue;
    const Dim d = out[i];
    if (d == kUnknownDim) return kUnknownDim;
    if (IsKnown(d)) {
      out_known *= d;
      continue;
    }
    auto it = std::find(in_syms.begin(), in_syms.end(), d);
    if (it == in_syms.end()) return kUnknownDim;
    in_syms.erase(it);
  }
  if (out_known == 0) {
    if (in_syms.empty() && in_known == 0) {
      return absl::InvalidArgumentError("cannot infer -1 when the other extents multiply to 0");
    }
    return kUnknownDim;
  }
  if (in_syms.empty()) {
    if (in_known % out_known != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot reshape ", in_known, " elements into a shape with ", out_known, " x -1"));
    }
    return in_known / out_known;
  }
  if (in_syms.size() == 1 && in_known == out_known) return in_syms[0];
  return kUnknownDim;
}

}  // namespace

absl::Status InferFlatten(InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  ctx.outputs[0] = UnknownDims(x.dtype, 2);
  if (!x.has_rank()) return absl::OkStatus();
  const int64_t rank = x.rank();
  const int64_t axis = ctx.attrs<FlattenAttrs>().axis;
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a > rank) {
    return ctx.Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  ctx.outputs[0].dims =
      std::vector<Dim>{ProductKeepSymbol(*x.dims, 0, a), ProductKeepSymbol(*x.dims, a, rank)};
  return absl::OkStatus();
}

absl::Status InferReshape(InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  ctx.outputs[0] = TensorType::UnknownShape(x.dtype);
  if (!IsInteger(ctx.input(1).dtype)) return ctx.Error("the shape input must be i64");
  if (ctx.value(1) != nullptr && ctx.value(1)->rank() != 1) {
    return ctx.Error("the shape input must be 1-D");
  }
  // The target from its data, or from shape arithmetic (an entry may be the batch symbol).
  const std::optional<std::vector<ShapeEntry>> entries = ShapeEntries(ctx, 1);
  if (!entries) {
    ctx.outputs[0] = UnknownDims(x.dtype, VectorLength(ctx.input(1)));
    return absl::OkStatus();
  }
  const bool allowzero = ctx.attrs<ReshapeAttrs>().allowzero != 0;
  std::vector<Dim> dims(entries->size());
  std::vector<int64_t> req;  // the target, when every entry is a constant
  int64_t minus_one = -1;
  bool any_zero = false;
  for (size_t i = 0; i < entries->size(); ++i) {
    const ShapeEntry& e = (*entries)[i];
    if (!e.constant) {
      dims[i] = e.dim;  // an extent known symbolically, or unknown (it might be -1 or 0)
      continue;
    }
    const int64_t v = *e.constant;
    req.push_back(v);
    if (v == -1) {
      if (minus_one >= 0) return ctx.Error("the shape has more than one -1");
      minus_one = static_cast<int64_t>(i);
      dims[i] = kUnknownDim;
    } else if (v < -1) {
      return ctx.Error(absl::StrCat("shape entry ", v, " is negative"));
    } else if (v == 0 && !allowzero) {
      if (!x.has_rank()) {
        dims[i] = kUnknownDim;
      } else if (static_cast<int64_t>(i) >= x.rank()) {
        return ctx.Error(absl::StrCat("shape entry ", i, " is 0 (copy the input extent) but the ",
                                      "input has rank ", x.rank()));
      } else {
        dims[i] = (*x.dims)[i];
      }
    } else {
      any_zero = any_zero || v == 0;
      dims[i] = v;
    }
  }
  if (any_zero && minus_one >= 0) return ctx.Error("allowzero forbids both 0 and -1 in a shape");
  if (x.has_rank() && minus_one >= 0) {
    auto d = InferMinusOne(*x.dims, dims, minus_one);
    if (!d.ok()) return ctx.Error(d.status().message());
    dims[minus_one] = *d;
  }
  if (x.IsStatic() && req.size() == entries->size()) {
    const Dim out_numel = DimProduct(dims, 0, dims.size());
    if (IsKnown(out_numel) && out_numel != NumElements(x.StaticDims())) {
      return ctx.Error(absl::StrCat("cannot reshape ", DimsToString(x.StaticDims()), " into ",
                                    DimsToString(req)));
    }
  }
  ctx.outputs[0].dims = std::move(dims);
  return absl::OkStatus();
}

absl::Status InferTranspose(InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const Ints& perm = ctx.attrs<TransposeAttrs>().perm;
  if (!x.has_rank()) {
    ctx.outputs[0] = UnknownDims(x.dtype, perm.empty() ? -1 : static_cast<int64_t>(perm.size()));
    return absl::OkStatus();
  }
  const int64_t rank = x.rank();
  if (!perm.empty() && static_cast<int64_t>(perm.size()) != rank) {
    return ctx.Error(absl::StrCat("perm has ", perm.size(), " entries for rank ", rank));
  }
  std::vector<Dim> dims(rank);
  std::vector<bool> seen(rank, false);
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t p = perm.empty() ? rank - 1 - i : perm[i];
    if (p < 0 || p >= rank || seen[p]) return ctx.Error("perm is not a permutation of the axes");
    seen[p] = true;
    dims[i] = (*x.dims)[p];
  }
  ctx.outputs[0] = TensorType(x.dtype, std::move(dims));
  return absl::OkStatus();
}

absl::Status InferSqueeze(InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  ctx.outputs[0] = TensorType::UnknownShape(x.dtype);
  const Tensor* axes = ctx.has_input(1) ? ctx.value(1) : nullptr;
  if (ctx.has_input(1) && axes == nullptr) {
    const int64_t n = VectorLength(ctx.input(1));
    if (x.has_rank() && n > 0) ctx.outputs[0] = UnknownDims(x.dtype, x.rank() - n);
    return absl::OkStatus();
  }
  if (!x.has_rank()) return absl::OkStatus();
  const std::vector<Dim>& in = *x.dims;
  std::vector<bool> drop(in.size(), false);
  if (axes != nullptr && axes->numel() > 0) {
    for (int64_t a : axes->ToInt64Vector()) {
      auto axis = NormalizeAxis(a, x.rank());
      if (!axis.ok()) return ctx.Error(axis.status().message());
      if (drop[*axis]) return ctx.Error(absl::StrCat("axis ", a, " is listed twice"));
      if (IsKnown(in[*axis]) && in[*axis] != 1) {
        return ctx.Error(absl::StrCat("cannot squeeze axis ", a, " of extent ", in[*axis]));
      }
      drop[*axis] = true;
    }
  } else {
    // Without axes every extent-1 axis goes; an extent not known might be 1, so the rank is not.
    for (size_t i = 0; i < in.size(); ++i) {
      if (!IsKnown(in[i])) return absl::OkStatus();
      drop[i] = in[i] == 1;
    }
  }
  std::vector<Dim> dims;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!drop[i]) dims.push_back(in[i]);
  }
  ctx.outputs[0].dims = std::move(dims);
  return absl::OkStatus();
}

absl::Status InferUnsqueeze(InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  ctx.outputs[0] = TensorType::UnknownShape(x.dtype);
  const Tensor* axes = ctx.value(1);
  if (axes == nullptr) {
    const int64_t n = VectorLength(ctx.input(1));
    if (x.has_rank() && n >= 0) ctx.outputs[0] = UnknownDims(x.dtype, x.rank() + n);
    return absl::OkStatus();
  }
  if (!x.has_rank()) return absl::OkStatus();
  const int64_t out_rank = x.rank() + axes->numel();
  std::vector<bool> inserted(out_rank, false);
  for (int64_t a : axes->ToInt64Vector()) {
    auto axis = NormalizeAxis(a, out_rank);
    if (!axis.ok()) return ctx.Error(axis.status().message());
    if (inserted[*axis]) return ctx.Error(absl::StrCat("axis ", a, " is listed twice"));
    inserted[*axis] = true;
  }
  std::vector<Dim> dims(out_rank);
  for (int64_t i = 0, j = 0; i < out_rank; ++i) dims[i] = inserted[i] ? 1 : (*x.dims)[j++];
  ctx.outputs[0].dims = std::move(dims);
  return absl::OkStatus();
}

absl::Status InferExpand(InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  ctx.outputs[0] = TensorType::UnknownShape(x.dtype);
  if (ctx.value(1) != nullptr && ctx.value(1)->rank() != 1) {
    return ctx.Error("the shape input must be 1-D");
  }
  std::vector<Dim> target;
  if (const std::optional<std::vector<ShapeEntry>> entries = ShapeEntries(ctx, 1)) {
    for (const ShapeEntry& e : *entries) {
      if (e.constant && *e.constant < 0) {
        return ctx.Error(absl::StrCat("shape entry ", *e.constant, " is negative"));
      }
      target.push_back(e.dim);
    }
  } else {
    const int64_t n = VectorLength(ctx.input(1));
    if (n < 0) return absl::OkStatus();
    target.assign(n, kUnknownDim);
  }
  if (!x.has_rank()) return absl::OkStatus();
  auto dims = BroadcastDims(*x.dims, target);
  if (!dims.ok()) return ctx.Error(dims.status().message());
  ctx.outputs[0].dims = std::move(*dims);
  return absl::OkStatus();
}

absl::Status InferTile(InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  ctx.outputs[0] = UnknownDims(x.dtype, x.rank());
  const Tensor* repeats = ctx.value(1);
  if (repeats == nullptr || !x.has_rank()) return absl::OkStatus();
  if (repeats->numel() != x.rank()) {
    return ctx.Error(
        absl::StrCat("repeats has ", repeats->numel(), " entries for rank ", x.rank()));
  }
  std::vector<Dim>& dims = *ctx.outputs[0].dims;
  for (int64_t i = 0; i < x.rank(); ++i) {
    const int64_t r = repeats->GetAsInt64(i);
    const Dim d = (*x.dims)[i];
    if (r < 0) return ctx.Error(absl::StrCat("repeat ", r, " is negative"));
    dims[i] = IsKnown(d) ? d * r : (r == 1 ? d : (r == 0 ? 0 : kUnknownDim));
  }
  return absl::OkStatus();
}

absl::Status InferShapeOp(InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  ctx.outputs[0] = TensorType(DType::kInt64, {kUnknownDim});
  if (!x.has_rank()) return absl::OkStatus();
  const auto& attrs = ctx.attrs<ShapeAttrs>();
  const int64_t rank = x.rank();
  auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  (*ctx.outputs[0].dims)[0] = std::max<int64_t>(0, clamp(attrs.end) - clamp(attrs.start));
  return absl::OkStatus();
}

absl::Status InferSize(InferContext& ctx) {
  ctx.outputs[0] = TensorType(DType::kInt64, {});
  return absl::OkStatus();
}

absl::Status InferCast(InferContext& ctx) {
  const DType to = ctx.attrs<CastAttrs>().to;
  if (to == DType::kUndefined) return ctx.Error("Cast needs a target type");
  ctx.outputs[0] = ctx.input(0);
  ctx.outputs[0].dtype = to;
  return absl::OkStatus();
}

absl::Status InferConstant(InferContext& ctx) {
  const Tensor& value = ctx.attrs<ConstantAttrs>().value;
  if (!value.defined()) return ctx.Error("Constant has no value");
  ctx.outputs[0] = TensorType(value.dtype(), value.dims());
  return absl::OkStatus();
}

absl::Status InferConstantOfShape(InferContext& ctx) {
  const Tensor& value = ctx.attrs<ConstantAttrs>().value;
  if (value.defined() && value.numel() != 1) return ctx.Error("value must hold one element");
  const DType dtype = value.defined() ? value.dtype() : DType::kFloat32;
  if (ctx.value(0) != nullptr && ctx.value(0)->rank() != 1) {
    return ctx.Error("the shape input must be 1-D");
  }
  const std::optional<std::vector<ShapeEntry>> entries = ShapeEntries(ctx, 0);
  if (!entries) {
    ctx.outputs[0] = UnknownDims(dtype, VectorLength(ctx.input(0)));
    return absl::OkStatus();
  }
  std::vector<Dim> dims;
  for (const ShapeEntry& e : *entries) {
    if (e.constant && *e.constant < 0) {
      return ctx.Error(absl::StrCat("shape entry ", *e.constant, " is negative"));
    }
    dims.push_back(e.dim);
  }
  ctx.outputs[0] = TensorType(dtype, std::move(dims));
  return absl::OkStatus();
}

absl::Status InferDropout(InferContext& ctx) {
  ctx.outputs[0] = ctx.input(0);
  if (ctx.outputs.size() > 1) {
    ctx.outputs[1] = ctx.input(0);
    ctx.outputs[1].dtype = DType::kBool;
  }
  return absl::OkStatus();
}

absl::Status InferRange(InferContext& ctx) {
  const DType dtype = ctx.input(0).dtype;
  ctx.outputs[0] = TensorType(dtype, {kUnknownDim});
  for (int i = 0; i < 3; ++i) {
    if (ctx.input(i).dtype != dtype) return ctx.Error("start, limit and delta must share a type");
    const Tensor* v = ctx.value(i);
    if (v == nullptr) return absl::OkStatus();
    if (v->numel() != 1) return ctx.Error("start, limit and delta must be scalars");
  }
  int64_t count = 0;
  if (IsFloat(dtype)) {
    const double start = ctx.value(0)->GetAsDouble(0);
    const double limit = ctx.value(1)->GetAsDouble(0);
    const double delta = ctx.value(2)->GetAsDouble(0);
    if (delta == 0.0 || !std::isfinite(delta)) return ctx.Error("delta must be finite, non-zero");
    count = static_cast<int64_t>(std::max(0.0, std::ceil((limit - start) / delta)));
  } else {
    const int64_t start = ctx.value(0)->GetAsInt64(0);
    const int64_t limit = ctx.value(1)->GetAsInt64(0);
    const int64_t delta = ctx.value(2)->GetAsInt64(0);
    if (delta == 0) return ctx.Error("delta must be non-zero");
    const int64_t span = limit - start;
    if ((span > 0) == (delta > 0) && span != 0) {
      const int64_t mag = delta > 0 ? delta : -delta;
      count = ((span > 0 ? span : -span) + mag - 1) / mag;
    }
  }
  (*ctx.outputs[0].dims)[0] = count;
  return absl::OkStatus();
}

}  // namespace qcc::ir
