// Shape functions of the "nn" op group: conv, pools, normalizations, Gemm and MatMul.
// Window arithmetic (output extents, auto_pad) lives in nn_window.cc, shared with the kernels.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/shape_fns.h"
#include "ir/shape_fns/nn_window.h"
#include "support/status.h"

namespace qcc::ir {

namespace {

std::string DimStr(Dim d) { return IsKnown(d) ? absl::StrCat(d) : std::string("?"); }

/// True when both extents are known and differ (symbols and unknowns never conflict).
bool Conflict(Dim a, Dim b) { return IsKnown(a) && IsKnown(b) && a != b; }

/// Error unless input `i` (when ranked) has rank >= `min_rank`.
absl::Status CheckMinRank(const InferContext& ctx, int i, absl::string_view name, int64_t min_rank,
                          absl::string_view layout) {
  const TensorType& t = ctx.input(i);
  if (t.has_rank() && t.rank() < min_rank) {
    return ctx.Error(absl::StrCat(name, " must have rank >= ", min_rank, " (", layout,
                                  "), got rank ", t.rank()));
  }
  return absl::OkStatus();
}

/// Error unless optional input `i`, when present and ranked, is 1-D of extent `want`.
absl::Status CheckVector(const InferContext& ctx, int i, absl::string_view name, Dim want) {
  if (!ctx.has_input(i) || !ctx.input(i).has_rank()) return absl::OkStatus();
  const std::vector<Dim>& d = *ctx.input(i).dims;
  if (d.size() != 1 || Conflict(d[0], want)) {
    return ctx.Error(absl::StrCat(name, " must be 1-D of extent ", DimStr(want), ", got rank ",
                                  d.size(), d.size() == 1 ? absl::StrCat(" extent ", d[0]) : ""));
  }
  return absl::OkStatus();
}

/// The kernel extents from the attribute or the weight's trailing dims; empty when unknown.
absl::StatusOr<Ints> KernelShape(const InferContext& ctx, const Ints& attr, int64_t spatial) {
  const TensorType& w = ctx.input(1);
  if (w.has_rank()) {
    for (int64_t i = 0; i < spatial && !attr.empty() && i < static_cast<int64_t>(attr.size());
         ++i) {
      if (Conflict((*w.dims)[2 + i], attr[i])) {
        return ctx.Error(absl::StrCat("kernel_shape [", absl::StrJoin(attr, ","),
                                      "] disagrees with the weight's spatial extents"));
      }
    }
  }
  if (!attr.empty()) return attr;
  if (!w.has_rank()) return Ints();
  Ints k(w.dims->begin() + 2, w.dims->end());
  for (Dim d : k) {
    if (!IsKnown(d)) return Ints();
  }
  return k;
}

/// Rank of a conv-like node from X or W; -1 when neither is ranked. Checks they agree.
absl::StatusOr<int64_t> ConvRank(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const TensorType& w = ctx.input(1);
  QCC_RETURN_IF_ERROR(CheckMinRank(ctx, 0, "X", 3, "N, C, spatial..."));
  QCC_RETURN_IF_ERROR(CheckMinRank(ctx, 1, "W", 3, "weights with spatial axes"));
  if (x.has_rank() && w.has_rank() && x.rank() != w.rank()) {
    return ctx.Error(absl::StrCat("X has rank ", x.rank(), " but W has rank ", w.rank()));
  }
  return x.has_rank() ? x.rank() : w.rank();
}

Dim XDim(const InferContext& ctx, int64_t axis) {
  return ctx.input(0).has_rank() ? (*ctx.input(0).dims)[axis] : kUnknownDim;
}
Dim WDim(const InferContext& ctx, int64_t axis) {
  return ctx.input(1).has_rank() ? (*ctx.input(1).dims)[axis] : kUnknownDim;
}

}  // namespace

absl::Status InferConv(InferContext& ctx) {
  const ConvAttrs& a = ctx.attrs<ConvAttrs>();
  ctx.outputs[0] = TensorType::UnknownShape(ctx.input(0).dtype);
  QCC_ASSIGN_OR_RETURN(const int64_t rank, ConvRank(ctx));
  if (a.group < 1) return ctx.Error(absl::StrCat("group must be >= 1, got ", a.group));
  if (rank < 0) return absl::OkStatus();
  const int64_t spatial = rank - 2;
  const Dim c = XDim(ctx, 1), m = WDim(ctx, 0), w_c = WDim(ctx, 1);
  if (IsKnown(c) && IsKnown(w_c) && c != w_c * a.group) {
    return ctx.Error(absl::StrCat("X has ", c, " channels but W expects ", w_c, " x group ",
                                  a.group, " = ", w_c * a.group));
  }
  if (IsKnown(c) && c % a.group != 0) {
    return ctx.Error(absl::StrCat("X has ", c, " channels, not a multiple of group ", a.group));
  }
  if (IsKnown(m) && m % a.group != 0) {
    return ctx.Error(
        absl::StrCat("W has ", m, " output channels, not a multiple of group ", a.group));
  }
  QCC_RETURN_IF_ERROR(CheckVector(ctx, 2, "B (bias)", m));
  std::vector<Dim> out(rank, kUnknownDim);
  out[0] = XDim(ctx, 0);
  out[1] = m;
  QCC_ASSIGN_OR_RETURN(Ints kernel, KernelShape(ctx, a.kernel_shape, spatial));
  if (!kernel.empty()) {
    auto spec = MakeWindowSpec(spatial, kernel, a.strides, a.dilations, a.pads, a.auto_pad, false);
    if (!spec.ok()) return ctx.Error(spec.status().message());
    for (int64_t i = 0; i < spatial; ++i) {
      const Dim in = XDim(ctx, 2 + i);
      if (!IsKnown(in)) continue;
      auto w = ForwardWindowAxis(*spec, i, in);
      if (!w.ok()) return ctx.Error(w.status().message());
      out[2 + i] = w->out;
    }
  }
  ctx.outputs[0].dims = std::move(out);
  return absl::OkStatus();
}

absl::Status InferConvTranspose(InferContext& ctx) {
  const ConvTransposeAttrs& a = ctx.attrs<ConvTransposeAttrs>();
  ctx.outputs[0] = TensorType::UnknownShape(ctx.input(0).dtype);
  QCC_ASSIGN_OR_RETURN(const int64_t rank, ConvRank(ctx));
  if (a.group < 1) return ctx.Error(absl::StrCat("group must be >= 1, got ", a.group));
  if (rank < 0) return absl::OkStatus();
  const int64_t spatial = rank - 2;
  const Dim c = XDim(ctx, 1), w_c = WDim(ctx, 0), m_g = WDim(ctx, 1);
  if (Conflict(c, w_c)) {
    return ctx.Error(absl::StrCat("X has ", c, " channels but W (C x M/group x k...) has ", w_c));
  }
  if (IsKnown(c) && c % a.group != 0) {
    return ctx.Error(absl::StrCat("X has ", c, " channels, not a multiple of group ", a.group));
  }
  const Dim m = IsKnown(m_g) ? m_g * a.group : kUnknownDim;
  QCC_RETURN_IF_ERROR(CheckVector(ctx, 2, "B (bias)", m));
  const int64_t n_shape = static_cast<int64_t>(a.output_shape.size());
  if (n_shape != 0 && n_shape != spatial && n_shape != rank) {
    return ctx.Error(absl::StrCat("output_shape has ", n_shape, " entries, expected ", spatial));
  }
  if (!a.output_padding.empty() && static_cast<int64_t>(a.output_padding.size()) != spatial) {
    return ctx.Error(absl::StrCat("output_padding has ", a.output_padding.size(),
                                  " entries, expected ", spatial));
  }
  std::vector<Dim> out(rank, kUnknownDim);
  out[0] = XDim(ctx, 0);
  out[1] = m;
  QCC_ASSIGN_OR_RETURN(Ints kernel, KernelShape(ctx, a.kernel_shape, spatial));
  absl::StatusOr<WindowSpec> spec = absl::UnknownError("kernel unknown");
  if (!kernel.empty()) {
    spec = MakeWindowSpec(spatial, kernel, a.strides, a.dilations, a.pads, a.auto_pad, false);
    if (!spec.ok()) return ctx.Error(spec.status().message());
  }
  for (int64_t i = 0; i < spatial; ++i) {
    const int64_t requested = n_shape == 0 ? -1 : a.output_shape[n_shape - spatial + i];
    const int64_t out_pad = a.output_padding.empty() ? 0 : a.output_padding[i];
    if (requested < -1 || out_pad < 0) {
      return ctx.Error("output_shape and output_padding must be non-negative");
    }
    if (requested >= 0) out[2 + i] = requested;
    const Dim in = XDim(ctx, 2 + i);
    if (!spec.ok() || !IsKnown(in)) continue;
    auto w = TransposedWindowAxis(*spec, i, in, out_pad, requested);
    if (!w.ok()) return ctx.Error(w.status().message());
    out[2 + i] = w->out;
  }
  ctx.outputs[0].dims = std::move(out);
  return absl::OkStatus();
}

absl::Status InferBatchNorm(InferContext& ctx) {
  QCC_RETURN_IF_ERROR(CheckMinRank(ctx, 0, "X", 2, "N, C, ..."));
  const Dim c = XDim(ctx, 1);
  static constexpr const char* kNames[] = {"", "scale", "B", "input_mean", "input_var"};
  for (int i = 1; i < 5; ++i) QCC_RETURN_IF_ERROR(CheckVector(ctx, i, kNames[i], c));
  ctx.outputs[0] = ctx.input(0);
  // Training-mode outputs (running mean and variance) have the statistics' shape.
  for (size_t i = 1; i < ctx.outputs.size(); ++i) {
    ctx.outputs[i] = TensorType(ctx.input(3).dtype, {c});
  }
  return absl::OkStatus();
}

absl::Status InferLayerNorm(InferContext& ctx) {
  const LayerNormAttrs& a = ctx.attrs<LayerNormAttrs>();
  const TensorType& x = ctx.input(0);
  ctx.outputs[0] = x;
  const DType stat_type = a.stash_type == 1 ? DType::kFloat32 : x.dtype;
  for (size_t i = 1; i < ctx.outputs.size(); ++i)
    ctx.outputs[i] = TensorType::UnknownShape(stat_type);
  if (!x.has_rank()) return absl::OkStatus();
  auto axis = NormalizeAxis(a.axis, x.rank());
  if (!axis.ok()) return ctx.Error(axis.status().message());
  const std::vector<Dim> normalized(x.dims->begin() + *axis, x.dims->end());
  for (int i = 1; i < 3; ++i) {
    if (!ctx.has_input(i) || !ctx.input(i).has_rank()) continue;
    const std::vector<Dim>& d = *ctx.input(i).dims;
    bool ok = d.size() <= normalized.size();
    for (size_t j = 0; ok && j < d.size(); ++j) {
      const Dim target = normalized[normalized.size() - d.size() + j];
      ok = d[j] == 1 || !Conflict(d[j], target);
    }
    if (!ok) {
      return ctx.Error(absl::StrCat(i == 1 ? "Scale" : "B", " of rank ", d.size(),
                                    " cannot broadcast to the normalized axes (axis ", *axis,
                                    " of rank ", x.rank(), ")"));
    }
  }
  std::vector<Dim> stat_dims(x.dims->begin(), x.dims->begin() + *axis);
  stat_dims.resize(x.rank(), 1);
  for (size_t i = 1; i < ctx.outputs.size(); ++i) ctx.outputs[i].dims = stat_dims;
  return absl::OkStatus();
}

absl::Status InferPool(InferContext& ctx) {
  const PoolAttrs& a = ctx.attrs<PoolAttrs>();
  const TensorType& x = ctx.input(0);
  ctx.outputs[0] = TensorType::UnknownShape(x.dtype);
  if (ctx.outputs.size() > 1) ctx.outputs[1] = TensorType::UnknownShape(DType::kInt64);
  QCC_RETURN_IF_ERROR(CheckMinRank(ctx, 0, "X", 3, "N, C, spatial..."));
  if (a.storage_order != 0 && a.storage_order != 1) {
    return ctx.Error(absl::StrCat("storage_order must be 0 or 1, got ", a.storage_order));
  }
  if (a.kernel_shape.empty()) return ctx.Error("kernel_shape is required");
  const int64_t spatial = x.has_rank() ? x.rank() - 2 : static_cast<int64_t>(a.kernel_shape.size());
  auto spec = MakeWindowSpec(spatial, a.kernel_shape, a.strides, a.dilations, a.pads, a.auto_pad,
                             a.ceil_mode != 0);
  if (!spec.ok()) return ctx.Error(spec.status().message());
  if (!x.has_rank()) return absl::OkStatus();
  std::vector<Dim> out = *x.dims;
  for (int64_t i = 0; i < spatial; ++i) {
    if (!IsKnown(out[2 + i])) {
      out[2 + i] = kUnknownDim;
      continue;
    }
    auto w = ForwardWindowAxis(*spec, i, out[2 + i]);
    if (!w.ok()) return ctx.Error(w.status().message());
    out[2 + i] = w->out;
  }
  for (auto& o : ctx.outputs) o.dims = out;
  return absl::OkStatus();
}

absl::Status InferGlobalPool(InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  ctx.outputs[0] = x;
  QCC_RETURN_IF_ERROR(CheckMinRank(ctx, 0, "X", 2, "N, C, spatial..."));
  if (x.has_rank()) std::fill(ctx.outputs[0].dims->begin() + 2, ctx.outputs[0].dims->end(), 1);
  return absl::OkStatus();
}

absl::Status InferGemm(InferContext& ctx) {
  const GemmAttrs& g = ctx.attrs<GemmAttrs>();
  const TensorType& a = ctx.input(0);
  const TensorType& b = ctx.input(1);
  ctx.outputs[0] = TensorType::UnknownShape(a.dtype);
  for (int i = 0; i < 2; ++i) {
    if (ctx.input(i).has_rank() && ctx.input(i).rank() != 2) {
      return ctx.Error(
          absl::StrCat(i == 0 ? "A" : "B", " must be 2-D, got rank ", ctx.input(i).rank()));
    }
  }
  const Dim m = a.has_rank() ? (*a.dims)[g.transA ? 1 : 0] : kUnknownDim;
  const Dim ka = a.has_rank() ? (*a.dims)[g.transA ? 0 : 1] : kUnknownDim;
  const Dim kb = b.has_rank() ? (*b.dims)[g.transB ? 1 : 0] : kUnknownDim;
  const Dim n = b.has_rank() ? (*b.dims)[g.transB ? 0 : 1] : kUnknownDim;
  if (Conflict(ka, kb)) {
    return ctx.Error(absl::StrCat("inner extents differ: op(A) is ", DimStr(m), "x", ka,
                                  ", op(B) is ", kb, "x", DimStr(n)));
  }
  if (ctx.has_input(2) && ctx.input(2).has_rank()) {
    const std::vector<Dim>& c = *ctx.input(2).dims;
    const std::vector<Dim> target = {m, n};
    bool ok = c.size() <= 2;
    for (size_t j = 0; ok && j < c.size(); ++j) {
      ok = c[j] == 1 || !Conflict(c[j], target[2 - c.size() + j]);
    }
    if (!ok) {
      return ctx.Error(absl::StrCat("C of shape [", absl::StrJoin(c, ","),
                                    "] cannot broadcast to the output ", DimStr(m), "x",
                                    DimStr(n)));
    }
  }
  ctx.outputs[0].dims = std::vector<Dim>{m, n};
  return absl::OkStatus();
}

absl::Status InferMatMul(InferContext& ctx) {
  const TensorType& a = ctx.input(0);
  const TensorType& b = ctx.input(1);
  ctx.outputs[0] = TensorType::UnknownShape(a.dtype);
  for (int i = 0; i < 2; ++i) {
    if (ctx.input(i).rank() == 0) return ctx.Error("MatMul operands must have rank >= 1");
  }
  if (!a.has_rank() || !b.has_rank()) return absl::OkStatus();
  // numpy: a 1-D A is a row vector [1,K], a 1-D B a column [K,1]; the 1 is dropped afterwards.
  std::vector<Dim> da = *a.dims, db = *b.dims;
  if (da.size() == 1) da.insert(da.begin(), 1);
  if (db.size() == 1) db.push_back(1);
  const Dim ka = da.back(), kb = db[db.size() - 2];
  if (Conflict(ka, kb)) {
    return ctx.Error(absl::StrCat("inner extents differ: A is [", absl::StrJoin(*a.dims, ","),
                                  "], B is [", absl::StrJoin(*b.dims, ","), "]"));
  }
  auto batch = BroadcastDims(std::vector<Dim>(da.begin(), da.end() - 2),
                             std::vector<Dim>(db.begin(), db.end() - 2));
  if (!batch.ok()) return ctx.Error(absl::StrCat("batch axes: ", batch.status().message()));
  std::vector<Dim> out = *batch;
  if (a.rank() > 1) out.push_back(da[da.size() - 2]);
  if (b.rank() > 1) out.push_back(db.back());
  ctx.outputs[0].dims = std::move(out);
  return absl::OkStatus();
}

absl::Status InferAttention(InferContext& ctx) {
  const AttentionAttrs& a = ctx.attrs<AttentionAttrs>();
  const TensorType& q = ctx.input(0);
  ctx.outputs[0] = TensorType::UnknownShape(q.dtype);
  if (a.q_num_heads <= 0 || a.kv_num_heads <= 0 || a.q_num_heads % a.kv_num_heads != 0) {
    return ctx.Error(absl::StrCat("q_num_heads ", a.q_num_heads,
                                  " must be a positive multiple of kv_num_heads ", a.kv_num_heads));
  }
  static constexpr const char* kNames[] = {"Q", "K", "V"};
  for (int i = 0; i < 3; ++i) {
    const TensorType& t = ctx.input(i);
    if (t.dtype != q.dtype) return ctx.Error(absl::StrCat(kNames[i], " has another type than Q"));
    if (!t.has_rank()) return absl::OkStatus();
    if (t.rank() != 3 || !IsKnown((*t.dims)[2])) {
      return ctx.Error(absl::StrCat(
          kNames[i], " must be [batch, sequence, heads * head size] with a known last extent"));
    }
  }
  const std::vector<Dim>& qd = *q.dims;
  const std::vector<Dim>& kd = *ctx.input(1).dims;
  const std::vector<Dim>& vd = *ctx.input(2).dims;
  const Dim head = qd[2] / a.q_num_heads;
  if (qd[2] % a.q_num_heads != 0 || kd[2] != head * a.kv_num_heads || vd[2] % a.kv_num_heads != 0) {
    return ctx.Error(absl::StrCat("Q [", absl::StrJoin(qd, ","), "], K [", absl::StrJoin(kd, ","),
                                  "] and V [", absl::StrJoin(vd, ","), "] do not split into ",
                                  a.q_num_heads, " and ", a.kv_num_heads, " heads of one size"));
  }
  // Equal, not merely compatible: a K of batch 1 is not broadcast over Q's batch.
  if (qd[0] != kd[0] || qd[0] != vd[0] || kd[1] != vd[1]) {
    return ctx.Error(absl::StrCat("Q [", absl::StrJoin(qd, ","), "], K [", absl::StrJoin(kd, ","),
                                  "] and V [", absl::StrJoin(vd, ","),
                                  "] differ in batch or K/V length"));
  }
  if (ctx.has_input(3) && ctx.input(3).has_rank()) {
    const TensorType& m = ctx.input(3);
    if (m.dtype != q.dtype) return ctx.Error("the mask must have Q's type");
    const std::vector<Dim> full = {qd[0], a.q_num_heads, qd[1], kd[1]};
    const std::vector<Dim>& md = *m.dims;
    bool ok = md.size() <= 4;
    for (size_t i = 0; ok && i < md.size(); ++i) {
      const Dim target = full[4 - md.size() + i];
      ok = md[i] == 1 || !Conflict(md[i], target);
    }
    if (!ok) {
      return ctx.Error(absl::StrCat("the mask [", absl::StrJoin(md, ","),
                                    "] does not broadcast to [batch, heads, Sq, Skv]"));
    }
  }
  ctx.outputs[0].dims = std::vector<Dim>{qd[0], qd[1], a.q_num_heads * (vd[2] / a.kv_num_heads)};
  return absl::OkStatus();
}

}  // namespace qcc::ir
