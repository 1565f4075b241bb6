// Conv and ConvTranspose on the CPU: resolve the window geometry shared with the shape
// functions, then call the fp32 kernels (im2col + sgemm, direct depthwise, sgemm + col2im). A
// fused activation runs in the conv kernels' epilogue, and so does the residual of an Add the
// evaluator runs the Conv in (OpContext::residual).
#include "absl/strings/str_cat.h"
#include "backend_cpu/ops/fused_activation.h"
#include "backend_cpu/ops/nn_internal.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv_transpose.h"
#include "support/status.h"

namespace qcc::cpu::nn {

namespace {

/// The kernel extents: the attribute, else the weight's spatial dims.
std::vector<int64_t> KernelOf(const ir::Ints& attr, const Tensor& w) {
  return attr.empty() ? SpatialDims(w) : attr;
}

/// Fills the geometry fields of `p` common to both ops.
absl::Status FillWindow(const OpContext& ctx, const ir::WindowSpec& spec,
                        const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                        const std::vector<int64_t>& pad_begin, ConvF32Params& p) {
  QCC_ASSIGN_OR_RETURN(p.in, Spatial3(ctx, in, 1));
  QCC_ASSIGN_OR_RETURN(p.out, Spatial3(ctx, out, 1));
  QCC_ASSIGN_OR_RETURN(p.kernel, Spatial3(ctx, spec.kernel, 1));
  QCC_ASSIGN_OR_RETURN(p.stride, Spatial3(ctx, spec.strides, 1));
  QCC_ASSIGN_OR_RETURN(p.dilation, Spatial3(ctx, spec.dilations, 1));
  QCC_ASSIGN_OR_RETURN(p.pad, Spatial3(ctx, pad_begin, 0));
  p.num_threads = ctx.num_threads;
  return absl::OkStatus();
}

absl::Status RunConv(OpContext& ctx) {
  QCC_RETURN_IF_ERROR(RequireF32Inputs(ctx));
  const ir::ConvAttrs& a = ctx.attrs<ir::ConvAttrs>();
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  Tensor& y = ctx.output(0);
  const std::vector<int64_t> in = SpatialDims(x);
  auto spec = ir::MakeWindowSpec(static_cast<int64_t>(in.size()), KernelOf(a.kernel_shape, w),
                                 a.strides, a.dilations, a.pads, a.auto_pad, false);
  if (!spec.ok()) return ctx.Error(spec.status().message());
  QCC_ASSIGN_OR_RETURN(std::vector<ir::WindowAxis> axes, ForwardWindows(ctx, *spec, in));
  std::vector<int64_t> pad_begin;
  for (const ir::WindowAxis& ax : axes) pad_begin.push_back(ax.pad_begin);

  ConvF32Params p;
  p.batch = x.dim(0);
  p.in_channels = x.dim(1);
  p.out_channels = w.dim(0);
  p.groups = a.group;
  // Observed runs (calibration) sum each output directly, on every CPU the same statistics.
  p.winograd = ctx.observe == nullptr;
  QCC_RETURN_IF_ERROR(FillWindow(ctx, *spec, in, SpatialDims(y), pad_begin, p));
  QCC_ASSIGN_OR_RETURN(p.activation, FusedActivationOf(ctx, a));
  if (ctx.residual != nullptr) {
    // In an Add's place: y + residual, then the Add's activation (the Conv has none).
    if (ctx.residual->dtype() != DType::kFloat32 || ctx.residual->dims() != y.dims() ||
        !p.activation.is_identity()) {
      return ctx.Error("the residual fused into this Conv does not fit its output");
    }
    p.residual = ctx.residual->data<float>();
    QCC_ASSIGN_OR_RETURN(p.activation,
                         FusedActivationOf(ctx, ctx.residual_add->attrs<ir::AddAttrs>()));
  }
  const float* bias = ctx.has_input(2) ? ctx.input(2).data<float>() : nullptr;
  // W packed by the evaluator (for these extents, where the packing depends on them), or
  // nothing: ConvF32WithPacked then packs as ConvF32 does.
  static const cpu::PackedConvF32 kNotPacked;
  const bool fits = ctx.packed_conv_in == nullptr ||
                    (*ctx.packed_conv_in == p.in && *ctx.packed_conv_out == p.out);
  const cpu::PackedConvF32& packed =
      ctx.packed_conv_weights != nullptr && fits ? *ctx.packed_conv_weights : kNotPacked;
  float* workspace = ScratchF32(ConvF32WithPackedWorkspaceSize(p, packed));
  // An fp16 model's Conv: its output rounded to fp16 in the kernels' epilogue, not in a pass.
  p.activation.round_to_f16 = ctx.round_to_f16;
  ConvF32WithPacked(p, x.data<float>(), w.data<float>(), packed, bias, y.data<float>(), workspace);
  ctx.rounded_to_f16 = ctx.round_to_f16;
  return absl::OkStatus();
}

absl::Status RunConvTranspose(OpContext& ctx) {
  QCC_RETURN_IF_ERROR(RequireF32Inputs(ctx));
  const ir::ConvTransposeAttrs& a = ctx.attrs<ir::ConvTransposeAttrs>();
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  Tensor& y = ctx.output(0);
  const std::vector<int64_t> in = SpatialDims(x), out = SpatialDims(y);
  const int64_t spatial = static_cast<int64_t>(in.size());
  auto spec = ir::MakeWindowSpec(spatial, KernelOf(a.kernel_shape, w), a.strides, a.dilations,
                                 a.pads, a.auto_pad, false);
  if (!spec.ok()) return ctx.Error(spec.status().message());
  const int64_t n_shape = static_cast<int64_t>(a.output_shape.size());
  std::vector<int64_t> pad_begin;
  for (int64_t i = 0; i < spatial; ++i) {
    const int64_t requested = n_shape == 0 ? -1 : a.output_shape[n_shape - spatial + i];
    const int64_t out_pad = a.output_padding.empty() ? 0 : a.output_padding[i];
    auto ax = ir::TransposedWindowAxis(*spec, i, in[i], out_pad, requested);
    if (!ax.ok()) return ctx.Error(ax.status().message());
    pad_begin.push_back(ax->pad_begin);
  }
  // The adjoint forward conv: y is its input, x its output (see conv_transpose.h).
  ConvF32Params fwd;
  fwd.batch = x.dim(0);
  fwd.in_channels = y.dim(1);
  fwd.out_channels = x.dim(1);
  fwd.groups = a.group;
  QCC_RETURN_IF_ERROR(FillWindow(ctx, *spec, out, in, pad_begin, fwd));
  float* workspace = ScratchF32(ConvTransposeF32WorkspaceSize(fwd));
  const float* bias = ctx.has_input(2) ? ctx.input(2).data<float>() : nullptr;
  ConvTransposeF32Col2im(fwd, x.data<float>(), w.data<float>(), bias, y.data<float>(), workspace);
  return absl::OkStatus();
}

}  // namespace

void RegisterConvOps(OpRegistry& registry) {
  registry.Add(ir::OpKind::kConv, RunConv);
  registry.Add(ir::OpKind::kConvTranspose, RunConvTranspose);
}

}  // namespace qcc::cpu::nn
