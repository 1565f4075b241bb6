// CPU ops that change a tensor's view or type without moving elements between positions:
// Reshape and friends (which share the input's storage), Shape, Size, Cast, constants,
// Dropout (inference) and Range. Output shapes come from the shape functions; the evaluator
// has allocated the outputs before these run.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "backend_cpu/op_registry.h"
#include "backend_cpu/ops/movement_ops.h"
#include "support/status.h"

namespace qcc::cpu {
namespace {

/// Reshape, Flatten, Squeeze, Unsqueeze, Identity: the input's storage under the output shape.
absl::Status RunView(OpContext& ctx) {
  ctx.output(0) = ctx.input(0).Reshaped(ctx.output(0).dims());
  return absl::OkStatus();
}

/// Inference-mode Dropout: Y = X, and the optional mask is all true.
absl::Status RunDropout(OpContext& ctx) {
  const bool training =
      ctx.has_input(2) && ctx.input(2).numel() > 0 && ctx.input(2).GetAsDouble(0) != 0.0;
  const double ratio =
      ctx.has_input(1) && ctx.input(1).numel() > 0 ? ctx.input(1).GetAsDouble(0) : 0.5;
  if (training && ratio != 0.0) return ctx.Unsupported("training-mode Dropout is not supported");
  ctx.output(0) = ctx.input(0).Reshaped(ctx.output(0).dims());
  if (ctx.outputs.size() > 1) {
    Tensor& mask = ctx.output(1);
    std::memset(mask.raw(), 1, mask.nbytes());
  }
  return absl::OkStatus();
}

absl::Status RunShape(OpContext& ctx) {
  const Dims& dims = ctx.input(0).dims();
  const auto& attrs = ctx.attrs<ir::ShapeAttrs>();
  const int64_t rank = ctx.input(0).rank();
  int64_t start = attrs.start < 0 ? attrs.start + rank : attrs.start;
  start = std::clamp<int64_t>(start, 0, rank);
  int64_t* out = ctx.output(0).data<int64_t>();
  for (int64_t i = 0; i < ctx.output(0).numel(); ++i) out[i] = dims[start + i];
  return absl::OkStatus();
}

absl::Status RunSize(OpContext& ctx) {
  ctx.output(0).data<int64_t>()[0] = ctx.input(0).numel();
  return absl::OkStatus();
}

absl::Status RunCast(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const DType to = ctx.attrs<ir::CastAttrs>().to;
  if (x.dtype() == DType::kFloat8E4M3 || to == DType::kFloat8E4M3) {
    return ctx.Unsupported(
        absl::StrCat("no CPU Cast from ", DTypeName(x.dtype()), " to ", DTypeName(to)));
  }
  ctx.output(0) = CastTensor(x, to);
  return absl::OkStatus();
}

absl::Status RunConstant(OpContext& ctx) {
  ctx.output(0) = ctx.attrs<ir::ConstantAttrs>().value;
  return absl::OkStatus();
}

absl::Status RunConstantOfShape(OpContext& ctx) {
  const Tensor& value = ctx.attrs<ir::ConstantAttrs>().value;
  if (!value.defined()) return absl::OkStatus();  // float 0: the output is zero-filled
  Tensor& out = ctx.output(0);
  const size_t elem = DTypeSize(out.dtype());
  auto* dst = static_cast<uint8_t*>(out.raw());
  for (int64_t i = 0; i < out.numel(); ++i) std::memcpy(dst + i * elem, value.raw(), elem);
  return absl::OkStatus();
}

/// out[i] = start + i * delta, computed in T's arithmetic family (double or int64).
template <typename T>
void FillRange(const OpContext& ctx, Tensor& out) {
  T* dst = out.data<T>();
  if constexpr (std::is_floating_point_v<T>) {
    const double start = ctx.input(0).GetAsDouble(0);
    const double delta = ctx.input(2).GetAsDouble(0);
    for (int64_t i = 0; i < out.numel(); ++i) dst[i] = static_cast<T>(start + i * delta);
  } else {
    const int64_t start = ctx.input(0).GetAsInt64(0);
    const int64_t delta = ctx.input(2).GetAsInt64(0);
    for (int64_t i = 0; i < out.numel(); ++i) dst[i] = static_cast<T>(start + i * delta);
  }
}

absl::Status RunRange(OpContext& ctx) {
  Tensor& out = ctx.output(0);
  switch (out.dtype()) {
    case DType::kFloat32:
      FillRange<float>(ctx, out);
      break;
    case DType::kFloat64:
      FillRange<double>(ctx, out);
      break;
    case DType::kInt8:
      FillRange<int8_t>(ctx, out);
      break;
    case DType::kUInt8:
      FillRange<uint8_t>(ctx, out);
      break;
    case DType::kInt16:
      FillRange<int16_t>(ctx, out);
      break;
    case DType::kUInt16:
      FillRange<uint16_t>(ctx, out);
      break;
    case DType::kInt32:
      FillRange<int32_t>(ctx, out);
      break;
    case DType::kUInt32:
      FillRange<uint32_t>(ctx, out);
      break;
    case DType::kInt64:
      FillRange<int64_t>(ctx, out);
      break;
    case DType::kUInt64:
      FillRange<uint64_t>(ctx, out);
      break;
    default:
      return ctx.Unsupported(absl::StrCat("no CPU Range for ", DTypeName(out.dtype())));
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterMovementOps(OpRegistry& registry) {
  using ir::OpKind;
  constexpr FloatPolicy kAsIs = FloatPolicy::kAsIs;
  constexpr FloatPolicy kMoves = FloatPolicy::kMovesElements;
  registry.Add(OpKind::kReshape, RunView, kMoves);
  registry.Add(OpKind::kFlatten, RunView, kMoves);
  registry.Add(OpKind::kSqueeze, RunView, kMoves);
  registry.Add(OpKind::kUnsqueeze, RunView, kMoves);
  registry.Add(OpKind::kIdentity, RunView, kMoves);
  registry.Add(OpKind::kDropout, RunDropout, kMoves);
  registry.Add(OpKind::kShape, RunShape, kMoves);
  registry.Add(OpKind::kSize, RunSize, kMoves);
  registry.Add(OpKind::kCast, RunCast, kAsIs);
  registry.Add(OpKind::kConstant, RunConstant, kAsIs);
  registry.Add(OpKind::kConstantOfShape, RunConstantOfShape, kAsIs);
  registry.Add(OpKind::kRange, RunRange, FloatPolicy::kComputeInF32);
  RegisterMovementIndexOps(registry);
  RegisterResizeOps(registry);
}

}  // namespace qcc::cpu
