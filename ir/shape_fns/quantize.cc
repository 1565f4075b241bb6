// Shape functions of QuantizeLinear and DequantizeLinear.
#include "absl/strings/str_cat.h"
#include "ir/shape_fns.h"

namespace qcc::ir {
namespace {

/// Checks the scale (input 1) and the optional zero point (input 2) against x (input 0): a
/// scalar (or one-element 1-D) scale, or a 1-D scale with one entry per index of `axis`.
absl::Status CheckQuantParams(InferContext& ctx, int64_t axis, int64_t block_size) {
  if (block_size != 0) return ctx.Error("blocked quantization (block_size) is not supported");
  const TensorType& scale = ctx.input(1);
  if (!IsFloat(scale.dtype)) {
    return ctx.Error(absl::StrCat("the scale is ", DTypeName(scale.dtype), "; it must be a float"));
  }
  if (ctx.has_input(2) && ctx.input(2).has_rank() && scale.has_rank() &&
      ctx.input(2).dims != scale.dims) {
    return ctx.Error("the zero point and the scale must have the same shape");
  }
  if (!scale.has_rank() || scale.rank() == 0) return absl::OkStatus();
  if (scale.rank() != 1) return ctx.Error("the scale must be a scalar or 1-D");
  const TensorType& x = ctx.input(0);
  if (!x.has_rank()) return absl::OkStatus();
  const Dim n = (*scale.dims)[0];
  if (n == 1 && x.rank() == 0) return absl::OkStatus();
  auto a = NormalizeAxis(axis, x.rank());
  if (!a.ok()) return ctx.Error(a.status().message());
  const Dim extent = (*x.dims)[*a];
  if (IsKnown(n) && IsKnown(extent) && n != extent && n != 1) {
    return ctx.Error(
        absl::StrCat("the scale has ", n, " entries and axis ", axis, " of the input ", extent));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status InferQuantizeLinear(InferContext& ctx) {
  const auto& a = ctx.attrs<QuantizeLinearAttrs>();
  if (absl::Status s = CheckQuantParams(ctx, a.axis, a.block_size); !s.ok()) return s;
  DType out = DType::kUInt8;
  if (ctx.has_input(2)) {
    out = ctx.input(2).dtype;
  } else if (a.output_dtype != DType::kUndefined) {
    out = a.output_dtype;
  }
  if (out != DType::kInt8 && out != DType::kUInt8 && out != DType::kInt16 &&
      out != DType::kUInt16 && out != DType::kInt32) {
    return ctx.Error(absl::StrCat("quantizing to ", DTypeName(out), " is not supported"));
  }
  ctx.outputs[0] = ctx.input(0);
  ctx.outputs[0].dtype = out;
  return absl::OkStatus();
}

absl::Status InferDequantizeLinear(InferContext& ctx) {
  const auto& a = ctx.attrs<DequantizeLinearAttrs>();
  if (absl::Status s = CheckQuantParams(ctx, a.axis, a.block_size); !s.ok()) return s;
  const DType in = ctx.input(0).dtype;
  if (!IsInteger(in)) {
    return ctx.Error(absl::StrCat("dequantizing ", DTypeName(in), " is not supported"));
  }
  ctx.outputs[0] = ctx.input(0);
  ctx.outputs[0].dtype = ctx.input(1).dtype;
  return absl::OkStatus();
}

absl::Status InferQuantize(InferContext& ctx) {
  if (!IsFloat(ctx.input(0).dtype)) {
    return ctx.Error(absl::StrCat("quantizes a float tensor, got ", DTypeName(ctx.input(0).dtype)));
  }
  ctx.outputs[0] = ctx.input(0);
  ctx.outputs[0].dtype = DType::kInt8;
  return absl::OkStatus();
}

absl::Status InferDequantize(InferContext& ctx) {
  if (ctx.input(0).dtype != DType::kInt8) {
    return ctx.Error(absl::StrCat("dequantizes int8, got ", DTypeName(ctx.input(0).dtype)));
  }
  const DType to = ctx.attrs<CastAttrs>().to;
  if (!IsFloat(to)) return ctx.Error(absl::StrCat("dequantizes to ", DTypeName(to)));
  ctx.outputs[0] = ctx.input(0);
  ctx.outputs[0].dtype = to;
  return absl::OkStatus();
}

namespace {

/// x [.., K] times W [N, K]^T -> [.., N] of `dtype`.
absl::Status InferGemmNK(InferContext& ctx, DType dtype) {
  ctx.outputs[0] = TensorType::UnknownShape(dtype);
  const TensorType& x = ctx.input(0);
  const TensorType& w = ctx.input(1);
  if (w.has_rank() && w.rank() != 2) {
    return ctx.Error(absl::StrCat("W must be 2-D [N, K], got rank ", w.rank()));
  }
  if (!x.has_rank() || !w.has_rank()) return absl::OkStatus();
  if (x.rank() < 1) return ctx.Error("X must have rank >= 1");
  const Dim k = x.dims->back(), wk = (*w.dims)[1];
  if (IsKnown(k) && IsKnown(wk) && k != wk) {
    return ctx.Error(absl::StrCat("X has ", k, " columns but W [N, K] has K = ", wk));
  }
  std::vector<Dim> out = *x.dims;
  out.back() = (*w.dims)[0];
  ctx.outputs[0].dims = std::move(out);
  return absl::OkStatus();
}

}  // namespace

absl::Status InferQGemm(InferContext& ctx) {
  if (ctx.input(0).dtype != DType::kInt8) {
    return ctx.Error(absl::StrCat("X must be int8, got ", DTypeName(ctx.input(0).dtype)));
  }
  return InferGemmNK(ctx, ctx.attrs<QGemmAttrs>().float_result ? DType::kFloat32 : DType::kInt8);
}

absl::Status InferDynamicQGemm(InferContext& ctx) {
  if (ctx.input(0).dtype != DType::kFloat32) {
    return ctx.Error(absl::StrCat("X must be fp32, got ", DTypeName(ctx.input(0).dtype)));
  }
  return InferGemmNK(ctx, DType::kFloat32);
}

}  // namespace qcc::ir
