// CPU ops that move elements between positions: Transpose, Concat, Split, Slice, Pad, Gather,
// Expand, Tile, DepthToSpace, SpaceToDepth. All work on raw bytes, so every element type
// (registered kMovesElements: an fp16 value kept in fp32 moves as fp32) moves without conversion.
#include <vector>

#include "absl/strings/str_cat.h"
#include "backend_cpu/op_registry.h"
#include "backend_cpu/ops/movement_ops.h"
#include "ir/shape_fns.h"
#include "ir/shape_fns/movement_params.h"
#include "kernels/cpu/movement.h"
#include "kernels/cpu/pad.h"
#include "support/status.h"

namespace qcc::cpu {
namespace {

size_t ElemSize(const Tensor& t) { return DTypeSize(t.dtype()); }

/// Product of dims[begin, end).
int64_t Product(const Dims& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

/// Input `i` when present, else nullptr.
const Tensor* Optional(const OpContext& ctx, int i) {
  return ctx.has_input(i) ? &ctx.input(i) : nullptr;
}

absl::StatusOr<int64_t> Axis(const OpContext& ctx, int64_t axis, int64_t rank) {
  auto a = ir::NormalizeAxis(axis, rank);
  if (!a.ok()) return ctx.Error(a.status().message());
  return *a;
}

absl::Status RunTranspose(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> perm = ctx.attrs<ir::TransposeAttrs>().perm;
  if (perm.empty()) {
    for (int64_t i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
  }
  TransposeBytes(x.dims(), perm, ElemSize(x), x.raw(), ctx.output(0).raw(), ctx.num_threads);
  return absl::OkStatus();
}

absl::Status RunConcat(OpContext& ctx) {
  Tensor& out = ctx.output(0);
  QCC_ASSIGN_OR_RETURN(const int64_t axis, Axis(ctx, ctx.attrs<ir::AxisAttrs>().axis, out.rank()));
  std::vector<int64_t> chunk_bytes;
  std::vector<const void*> inputs;
  for (const Tensor& t : ctx.inputs) {
    chunk_bytes.push_back(Product(t.dims(), axis, t.dims().size()) * ElemSize(t));
    inputs.push_back(t.raw());
  }
  ConcatBytes(Product(out.dims(), 0, axis), chunk_bytes, inputs, out.raw());
  return absl::OkStatus();
}

absl::Status RunSplit(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  QCC_ASSIGN_OR_RETURN(const int64_t axis, Axis(ctx, ctx.attrs<ir::SplitAttrs>().axis, x.rank()));
  std::vector<int64_t> chunk_bytes;
  std::vector<void*> outputs;
  for (Tensor& t : ctx.outputs) {
    chunk_bytes.push_back(Product(t.dims(), axis, t.dims().size()) * ElemSize(t));
    outputs.push_back(t.raw());
  }
  SplitBytes(Product(x.dims(), 0, axis), chunk_bytes, x.raw(), outputs);
  return absl::OkStatus();
}

absl::Status RunSlice(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  auto slice =
      ir::ResolveSlice(x.dims(), ctx.input(1), ctx.input(2), Optional(ctx, 3), Optional(ctx, 4));
  if (!slice.ok()) return ctx.Error(slice.status().message());
  const Dims strides = RowMajorStrides(x.dims());
  std::vector<CopyAxis> axes(x.rank());
  for (int64_t d = 0; d < x.rank(); ++d) {
    const ir::SliceAxis& s = (*slice)[d];
    axes[d].in_stride = strides[d];
    axes[d].source.resize(s.count);
    for (int64_t i = 0; i < s.count; ++i) axes[d].source[i] = s.start + i * s.step;
  }
  IndexedCopy(axes, ElemSize(x), x.raw(), nullptr, ctx.output(0).raw(), ctx.num_threads);
  return absl::OkStatus();
}

absl::Status RunPad(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  auto pads = ir::ResolvePads(rank, ctx.input(1), Optional(ctx, 3));
  if (!pads.ok()) return ctx.Error(pads.status().message());
  PadFill mode = PadFill::kConstant;
  switch (ctx.attrs<ir::PadAttrs>().mode) {
    case ir::PadMode::kConstant:
      mode = PadFill::kConstant;
      break;
    case ir::PadMode::kReflect:
      mode = PadFill::kReflect;
      break;
    case ir::PadMode::kEdge:
      mode = PadFill::kEdge;
      break;
    case ir::PadMode::kWrap:
      mode = PadFill::kWrap;
      break;
  }
  const Dims strides = RowMajorStrides(x.dims());
  std::vector<CopyAxis> axes(rank);
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t begin = (*pads)[d];
    const int64_t end = (*pads)[rank + d];
    const int64_t kept = x.dim(d) + std::min<int64_t>(begin, 0) + std::min<int64_t>(end, 0);
    if (mode != PadFill::kConstant && kept <= 0 && (begin > 0 || end > 0)) {
      return ctx.Error(absl::StrCat("axis ", d, " has no elements to pad from in this mode"));
    }
    axes[d].in_stride = strides[d];
    axes[d].source = PadSourceIndex(x.dim(d), begin, end, mode);
  }
  const Tensor* value = Optional(ctx, 2);
  const void* fill = value != nullptr && value->numel() > 0 ? value->raw() : nullptr;
  IndexedCopy(axes, ElemSize(x), x.raw(), fill, ctx.output(0).raw(), ctx.num_threads);
  return absl::OkStatus();
}

absl::Status RunGather(OpContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  QCC_ASSIGN_OR_RETURN(const int64_t axis, Axis(ctx, ctx.attrs<ir::AxisAttrs>().axis, data.rank()));
  const int64_t extent = data.dim(axis);
  std::vector<int64_t> idx = indices.ToInt64Vector();
  for (int64_t& i : idx) {
    if (i < -extent || i >= extent) {
      return ctx.Error(absl::StrCat("index ", i, " is out of range for extent ", extent));
    }
    if (i < 0) i += extent;
  }
  const int64_t inner_bytes =
      Product(data.dims(), axis + 1, data.dims().size()) * static_cast<int64_t>(ElemSize(data));
  GatherBytes(Product(data.dims(), 0, axis), extent, inner_bytes, idx, data.raw(),
              ctx.output(0).raw());
  return absl::OkStatus();
}

/// Expand and Tile: output axis k reads input axis k - (out_rank - in_rank), where an input of
/// extent 1 broadcasts (Expand) and coordinates wrap modulo the input extent (Tile).
absl::Status RunBroadcastCopy(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& out = ctx.output(0);
  const int64_t offset = out.rank() - x.rank();
  const Dims strides = RowMajorStrides(x.dims());
  std::vector<CopyAxis> axes(out.rank());
  for (int64_t k = 0; k < out.rank(); ++k) {
    axes[k].source.assign(out.dim(k), 0);
    if (k < offset) continue;
    const int64_t in_extent = x.dim(k - offset);
    axes[k].in_stride = strides[k - offset];
    for (int64_t i = 0; i < out.dim(k) && in_extent > 0; ++i) axes[k].source[i] = i % in_extent;
  }
  IndexedCopy(axes, ElemSize(x), x.raw(), nullptr, out.raw(), ctx.num_threads);
  return absl::OkStatus();
}

/// DepthToSpace and SpaceToDepth are a transpose of a 6-D view of the NCHW input.
absl::Status RunDepthToSpace(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const auto& attrs = ctx.attrs<ir::DepthToSpaceAttrs>();
  const int64_t b = attrs.blocksize;
  const int64_t n = x.dim(0), c = x.dim(1) / (b * b), h = x.dim(2), w = x.dim(3);
  if (attrs.mode == ir::DepthToSpaceMode::kDCR) {
    TransposeBytes({n, b, b, c, h, w}, {0, 3, 4, 1, 5, 2}, ElemSize(x), x.raw(),
                   ctx.output(0).raw());
  } else {
    TransposeBytes({n, c, b, b, h, w}, {0, 1, 4, 2, 5, 3}, ElemSize(x), x.raw(),
                   ctx.output(0).raw());
  }
  return absl::OkStatus();
}

absl::Status RunSpaceToDepth(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t b = ctx.attrs<ir::DepthToSpaceAttrs>().blocksize;
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2) / b, w = x.dim(3) / b;
  TransposeBytes({n, c, h, b, w, b}, {0, 3, 5, 1, 2, 4}, ElemSize(x), x.raw(), ctx.output(0).raw());
  return absl::OkStatus();
}

}  // namespace

void RegisterMovementIndexOps(OpRegistry& registry) {
  using ir::OpKind;
  constexpr FloatPolicy kMoves = FloatPolicy::kMovesElements;
  registry.Add(OpKind::kTranspose, RunTranspose, kMoves);
  registry.Add(OpKind::kConcat, RunConcat, kMoves);
  registry.Add(OpKind::kSplit, RunSplit, kMoves);
  registry.Add(OpKind::kSlice, RunSlice, kMoves);
  registry.Add(OpKind::kPad, RunPad, kMoves);
  registry.Add(OpKind::kGather, RunGather, kMoves);
  registry.Add(OpKind::kExpand, RunBroadcastCopy, kMoves);
  registry.Add(OpKind::kTile, RunBroadcastCopy, kMoves);
  registry.Add(OpKind::kDepthToSpace, RunDepthToSpace, kMoves);
  registry.Add(OpKind::kSpaceToDepth, RunSpaceToDepth, kMoves);
}

}  // namespace qcc::cpu
