// BatchNormalization (inference), InstanceNormalization and LayerNormalization on the CPU.
#include "absl/strings/str_cat.h"
#include "backend_cpu/ops/nn_internal.h"
#include "kernels/cpu/norm.h"
#include "support/status.h"

namespace qcc::cpu::nn {

namespace {

/// Error unless input `i` is 1-D with `want` elements.
absl::Status CheckChannelVector(const OpContext& ctx, int i, absl::string_view name, int64_t want) {
  const Tensor& t = ctx.input(i);
  if (t.rank() != 1 || t.dim(0) != want) {
    return ctx.Error(
        absl::StrCat(name, " must be 1-D of extent ", want, ", got ", DimsToString(t.dims())));
  }
  return absl::OkStatus();
}

absl::Status RunBatchNorm(OpContext& ctx) {
  QCC_RETURN_IF_ERROR(RequireF32Inputs(ctx));
  const ir::BatchNormAttrs& a = ctx.attrs<ir::BatchNormAttrs>();
  if (a.training_mode != 0) {
    return ctx.Unsupported("training_mode=1: only inference BatchNormalization runs on the CPU");
  }
  if (ctx.outputs.size() > 1) {
    return ctx.Unsupported(
        "the running mean/variance outputs are training-mode outputs; inference gives only Y");
  }
  const Tensor& x = ctx.input(0);
  const int64_t n = x.dim(0), c = x.dim(1);
  const int64_t size = n * c == 0 ? 0 : x.numel() / (n * c);
  BatchNormF32Inference(n, c, size, x.data<float>(), ctx.input(1).data<float>(),
                        ctx.input(2).data<float>(), ctx.input(3).data<float>(),
                        ctx.input(4).data<float>(), a.epsilon, ctx.output(0).data<float>(),
                        ctx.num_threads);
  return absl::OkStatus();
}

absl::Status RunInstanceNorm(OpContext& ctx) {
  QCC_RETURN_IF_ERROR(RequireF32Inputs(ctx));
  const Tensor& x = ctx.input(0);
  if (x.rank() < 3) {
    return ctx.Error(
        absl::StrCat("input must have rank >= 3 (N, C, spatial...), got ", DimsToString(x.dims())));
  }
  const int64_t n = x.dim(0), c = x.dim(1);
  QCC_RETURN_IF_ERROR(CheckChannelVector(ctx, 1, "scale", c));
  QCC_RETURN_IF_ERROR(CheckChannelVector(ctx, 2, "B", c));
  const int64_t size = n * c == 0 ? 0 : x.numel() / (n * c);
  InstanceNormF32(n, c, size, x.data<float>(), ctx.input(1).data<float>(),
                  ctx.input(2).data<float>(), ctx.attrs<ir::EpsilonAttrs>().epsilon,
                  ctx.output(0).data<float>(), ctx.num_threads);
  return absl::OkStatus();
}

/// Expands `t` (broadcastable to `shape`, already checked by the shape function) to
/// NumElements(shape) floats in `out`.
void BroadcastTo(const Tensor& t, const std::vector<int64_t>& shape, float* out) {
  const int64_t total = NumElements(shape);
  const float* src = t.data<float>();
  if (t.numel() == total) {
    std::copy(src, src + total, out);
    return;
  }
  const size_t r = shape.size(), offset = r - static_cast<size_t>(t.rank());
  std::vector<int64_t> stride(r, 0);
  for (int64_t i = t.rank() - 1, s = 1; i >= 0; --i) {
    stride[offset + i] = t.dim(i) == 1 ? 0 : s;
    s *= t.dim(i);
  }
  for (int64_t j = 0; j < total; ++j) {
    int64_t rem = j, at = 0;
    for (size_t i = r; i-- > 0;) {
      at += rem % shape[i] * stride[i];
      rem /= shape[i];
    }
    out[j] = src[at];
  }
}

absl::Status RunLayerNorm(OpContext& ctx) {
  QCC_RETURN_IF_ERROR(RequireF32Inputs(ctx));
  const ir::LayerNormAttrs& a = ctx.attrs<ir::LayerNormAttrs>();
  const Tensor& x = ctx.input(0);
  const int64_t axis = a.axis < 0 ? a.axis + x.rank() : a.axis;
  const std::vector<int64_t> normalized(x.dims().begin() + axis, x.dims().end());
  const int64_t cols = NumElements(normalized);
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  float* scratch = ScratchF32(2 * cols);
  BroadcastTo(ctx.input(1), normalized, scratch);
  const bool has_bias = ctx.has_input(2);
  if (has_bias) BroadcastTo(ctx.input(2), normalized, scratch + cols);
  float* mean = ctx.outputs.size() > 1 ? ctx.output(1).data<float>() : nullptr;
  float* inv_std = ctx.outputs.size() > 2 ? ctx.output(2).data<float>() : nullptr;
  LayerNormF32(rows, cols, x.data<float>(), scratch, has_bias ? scratch + cols : nullptr, a.epsilon,
               ctx.output(0).data<float>(), mean, inv_std, ctx.num_threads);
  return absl::OkStatus();
}

}  // namespace

void RegisterNormOps(OpRegistry& registry) {
  registry.Add(ir::OpKind::kBatchNormalization, RunBatchNorm);
  registry.AllowInPlace(ir::OpKind::kBatchNormalization);  // the kernel allows y == x
  registry.Add(ir::OpKind::kInstanceNormalization, RunInstanceNorm);
  registry.Add(ir::OpKind::kLayerNormalization, RunLayerNorm);
}

}  // namespace qcc::cpu::nn
