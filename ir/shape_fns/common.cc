// Shape functions shared by many elementwise ops, and the helpers every shape function uses.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ir/shape_fns.h"
#include "support/status.h"

namespace qcc::ir {

absl::StatusOr<std::vector<Dim>> BroadcastDims(const std::vector<Dim>& a,
                                               const std::vector<Dim>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<Dim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const Dim db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == 1) {
      out[i] = db;
    } else if (db == 1) {
      out[i] = da;
    } else if (IsKnown(da) && IsKnown(db)) {
      if (da != db) {
        return absl::InvalidArgumentError(
            absl::StrCat("shapes cannot be broadcast: extent ", da, " against ", db));
      }
      out[i] = da;
    } else if (da == db) {
      out[i] = da;  // same symbol
    } else if (IsKnown(da)) {
      out[i] = da;  // the other must be da or 1; a known extent > 1 wins
    } else if (IsKnown(db)) {
      out[i] = db;
    } else {
      out[i] = kUnknownDim;
    }
  }
  return out;
}

absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return a;
}

std::optional<std::vector<ShapeEntry>> ShapeEntries(const InferContext& ctx, int i) {
  std::vector<ShapeEntry> entries;
  if (const Tensor* t = ctx.value(i)) {
    if (t->rank() != 1) return std::nullopt;
    for (int64_t v : t->ToInt64Vector()) entries.push_back({v, IsKnown(v) ? v : kUnknownDim});
    return entries;
  }
  const SymbolicValue* s = ctx.symbolic_value(i);
  if (s == nullptr || ctx.input(i).rank() != 1) return std::nullopt;
  for (const std::optional<SymInt>& e : *s) {
    ShapeEntry entry;
    if (e && e->is_constant()) {
      entry.constant = e->constant();
      entry.dim = IsKnown(e->constant()) ? e->constant() : kUnknownDim;
    } else if (e) {
      entry.dim = e->AsDim();
    }
    entries.push_back(entry);
  }
  return entries;
}

Dim DimProduct(const std::vector<Dim>& dims, size_t begin, size_t end) {
  Dim p = 1;
  for (size_t i = begin; i < end; ++i) {
    if (!IsKnown(dims[i])) return kUnknownDim;
    p *= dims[i];
  }
  return p;
}

absl::Status InferSameAsInput0(InferContext& ctx) {
  for (auto& out : ctx.outputs) out = ctx.input(0);
  return absl::OkStatus();
}

absl::Status InferNoOutputs(InferContext& ctx) { return absl::OkStatus(); }

absl::Status InferSameShapeBool(InferContext& ctx) {
  ctx.outputs[0] = ctx.input(0);
  ctx.outputs[0].dtype = DType::kBool;
  return absl::OkStatus();
}

namespace {

/// Broadcasts every present input; the result keeps input 0's dtype.
absl::StatusOr<TensorType> BroadcastAll(const InferContext& ctx, int first, int count) {
  TensorType out = TensorType::UnknownShape(ctx.input(first).dtype);
  std::vector<Dim> dims;
  for (int i = first; i < first + count; ++i) {
    if (!ctx.input(i).has_rank()) return out;
    auto b = BroadcastDims(dims, *ctx.input(i).dims);
    if (!b.ok()) return ctx.Error(b.status().message());
    dims = *b;
  }
  out.dims = std::move(dims);
  return out;
}

}  // namespace

absl::Status InferBroadcast(InferContext& ctx) {
  QCC_ASSIGN_OR_RETURN(ctx.outputs[0], BroadcastAll(ctx, 0, ctx.num_inputs()));
  return absl::OkStatus();
}

absl::Status InferBroadcastBool(InferContext& ctx) {
  QCC_ASSIGN_OR_RETURN(ctx.outputs[0], BroadcastAll(ctx, 0, ctx.num_inputs()));
  ctx.outputs[0].dtype = DType::kBool;
  return absl::OkStatus();
}

absl::Status InferWhere(InferContext& ctx) {
  QCC_ASSIGN_OR_RETURN(ctx.outputs[0], BroadcastAll(ctx, 0, 3));
  ctx.outputs[0].dtype = ctx.input(1).dtype;
  return absl::OkStatus();
}

}  // namespace qcc::ir
