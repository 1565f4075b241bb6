// MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool on the CPU.
#include "absl/strings/str_cat.h"
#include "backend_cpu/ops/nn_internal.h"
#include "kernels/cpu/pool.h"
#include "support/status.h"

namespace qcc::cpu::nn {

namespace {

/// Resolves the node's window over input `x` into kernel parameters.
absl::StatusOr<PoolF32Params> PoolParams(const OpContext& ctx, const Tensor& x) {
  const ir::PoolAttrs& a = ctx.attrs<ir::PoolAttrs>();
  const std::vector<int64_t> in = SpatialDims(x);
  auto spec = ir::MakeWindowSpec(static_cast<int64_t>(in.size()), a.kernel_shape, a.strides,
                                 a.dilations, a.pads, a.auto_pad, a.ceil_mode != 0);
  if (!spec.ok()) return ctx.Error(spec.status().message());
  QCC_ASSIGN_OR_RETURN(std::vector<ir::WindowAxis> axes, ForwardWindows(ctx, *spec, in));
  std::vector<int64_t> out, pad_begin, pad_end;
  for (const ir::WindowAxis& ax : axes) {
    out.push_back(ax.out);
    pad_begin.push_back(ax.pad_begin);
    pad_end.push_back(ax.pad_end);
  }
  PoolF32Params p;
  p.planes = x.dim(0) * x.dim(1);
  QCC_ASSIGN_OR_RETURN(p.in, Spatial3(ctx, in, 1));
  QCC_ASSIGN_OR_RETURN(p.out, Spatial3(ctx, out, 1));
  QCC_ASSIGN_OR_RETURN(p.kernel, Spatial3(ctx, spec->kernel, 1));
  QCC_ASSIGN_OR_RETURN(p.stride, Spatial3(ctx, spec->strides, 1));
  QCC_ASSIGN_OR_RETURN(p.dilation, Spatial3(ctx, spec->dilations, 1));
  QCC_ASSIGN_OR_RETURN(p.pad_begin, Spatial3(ctx, pad_begin, 0));
  QCC_ASSIGN_OR_RETURN(p.pad_end, Spatial3(ctx, pad_end, 0));
  p.num_threads = ctx.num_threads;
  return p;
}

/// 8-bit integers pool exactly in fp32 (max and the window comparisons are order-preserving).
bool IsByteType(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }

/// Whether every window of p has a tap inside x (none lies wholly in the padding or, dilated,
/// between the input's elements).
bool EveryWindowHasATap(const PoolF32Params& p) {
  for (int a = 0; a < 3; ++a) {
    for (int64_t o = 0; o < p.out[a]; ++o) {
      bool any = false;
      for (int64_t t = 0; t < p.kernel[a] && !any; ++t) {
        const int64_t i = o * p.stride[a] - p.pad_begin[a] + t * p.dilation[a];
        any = i >= 0 && i < p.in[a];
      }
      if (!any) return false;
    }
  }
  return true;
}

absl::Status RunMaxPool(OpContext& ctx) {
  const Tensor& x_in = ctx.input(0);
  const bool bytes = IsByteType(x_in.dtype());
  if (!bytes) QCC_RETURN_IF_ERROR(RequireF32Inputs(ctx));
  const Tensor x = bytes ? CastTensor(x_in, DType::kFloat32) : x_in;
  Tensor y = bytes ? Tensor(DType::kFloat32, ctx.output(0).dims()) : ctx.output(0);
  QCC_ASSIGN_OR_RETURN(PoolF32Params p, PoolParams(ctx, x));
  const bool with_indices = ctx.outputs.size() > 1;
  const bool column_major = ctx.attrs<ir::PoolAttrs>().storage_order == 1;
  MaxPoolF32(p, x.data<float>(), y.data<float>(),
             with_indices ? ctx.output(1).data<int64_t>() : nullptr, column_major);
  if (bytes) ctx.output(0) = CastTensor(y, x_in.dtype());
  // In an fp16 model x holds fp16 values (their fp32 forms), and each output is one of them:
  // rounding it to fp16 changes nothing, so the evaluator's pass over the output is skipped
  // (squeezenet1.1's three pools, 330,000 values, 42 us a run at 1 thread). A window wholly in
  // the padding gives the lowest float, which rounds to -inf: those keep the pass.
  ctx.rounded_to_f16 = ctx.round_to_f16 && !bytes && EveryWindowHasATap(p);
  return absl::OkStatus();
}

absl::Status RunAveragePool(OpContext& ctx) {
  QCC_RETURN_IF_ERROR(RequireF32Inputs(ctx));
  const Tensor& x = ctx.input(0);
  QCC_ASSIGN_OR_RETURN(PoolF32Params p, PoolParams(ctx, x));
  AveragePoolF32(p, ctx.attrs<ir::PoolAttrs>().count_include_pad != 0, x.data<float>(),
                 ctx.output(0).data<float>());
  return absl::OkStatus();
}

template <bool kMax>
absl::Status RunGlobalPool(OpContext& ctx) {
  QCC_RETURN_IF_ERROR(RequireF32Inputs(ctx));
  const Tensor& x = ctx.input(0);
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t size = planes == 0 ? 0 : x.numel() / planes;
  if (kMax && size == 0 && planes > 0) return ctx.Error("GlobalMaxPool over an empty extent");
  (kMax ? GlobalMaxPoolF32 : GlobalAveragePoolF32)(planes, size, x.data<float>(),
                                                   ctx.output(0).data<float>(), ctx.num_threads);
  return absl::OkStatus();
}

}  // namespace

void RegisterPoolOps(OpRegistry& registry) {
  registry.Add(ir::OpKind::kMaxPool, RunMaxPool);
  registry.Add(ir::OpKind::kAveragePool, RunAveragePool);
  registry.Add(ir::OpKind::kGlobalAveragePool, RunGlobalPool<false>);
  registry.Add(ir::OpKind::kGlobalMaxPool, RunGlobalPool<true>);
}

}  // namespace qcc::cpu::nn
