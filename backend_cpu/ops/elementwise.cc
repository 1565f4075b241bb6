// Elementwise ops on the CPU: the unary activations and math ops, Clip, IsNaN, IsInf and Not
// here; the broadcasting binary and variadic ops in elementwise_arith.cc and
// elementwise_compare.cc.
#include <limits>
#include <optional>

#include "backend_cpu/op_registry.h"
#include "backend_cpu/ops/elementwise_internal.h"
#include "kernels/cpu/elementwise_unary.h"
#include "support/status.h"

namespace qcc::cpu {
namespace {

using internal::NoKernelFor;
using internal::TagType;

/// An op with a unary function (ops.def's Unary column) other than Clip: the function with its
/// attributes' constants, on floating types, and on integer types where UnaryInt has it.
absl::Status RunUnary(OpContext& ctx) {
  const std::optional<UnaryCall> call = ir::UnaryCallOf(ctx.node);
  if (!call) return ctx.Error("not an elementwise function");  // registered for one: our bug
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t n = x.numel();
  const bool done = internal::VisitFloatType(x.dtype(), [&](auto tag) {
    using T = TagType<decltype(tag)>;
    UnaryFloat<T>(*call, x.data<T>(), y.data<T>(), n, ctx.num_threads);
  });
  if (done) return absl::OkStatus();
  if (HasUnaryIntKernel(call->fn) && internal::VisitIntType(x.dtype(), [&](auto tag) {
        using T = TagType<decltype(tag)>;
        UnaryInt<T>(call->fn, x.data<T>(), y.data<T>(), n, ctx.num_threads);
      })) {
    return absl::OkStatus();
  }
  return NoKernelFor(ctx, x.dtype());
}

/// Clip: inputs 1 and 2 are optional scalar bounds of X's dtype; an absent one does not bound.
absl::Status RunClip(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  for (int i = 1; i <= 2; ++i) {
    if (!ctx.has_input(i)) continue;
    if (ctx.input(i).numel() != 1) {
      return ctx.Error(absl::StrCat(i == 1 ? "min" : "max", " must be a scalar, got shape ",
                                    DimsToString(ctx.input(i).dims())));
    }
    QCC_RETURN_IF_ERROR(internal::CheckSameDType(ctx, 0, i));
  }
  const bool done = internal::VisitNumericType(x.dtype(), [&](auto tag) {
    using T = TagType<decltype(tag)>;
    using Lim = std::numeric_limits<T>;
    const T lo = ctx.has_input(1) ? ctx.input(1).data<T>()[0]
                                  : (Lim::has_infinity ? -Lim::infinity() : Lim::lowest());
    const T hi = ctx.has_input(2) ? ctx.input(2).data<T>()[0]
                                  : (Lim::has_infinity ? Lim::infinity() : Lim::max());
    Clip<T>(x.data<T>(), ctx.output(0).data<T>(), x.numel(), lo, hi, ctx.num_threads);
  });
  return done ? absl::OkStatus() : NoKernelFor(ctx, x.dtype());
}

absl::Status RunIsNaN(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool done = internal::VisitFloatType(x.dtype(), [&](auto tag) {
    using T = TagType<decltype(tag)>;
    IsNaN<T>(x.data<T>(), ctx.output(0).data<uint8_t>(), x.numel());
  });
  return done ? absl::OkStatus() : NoKernelFor(ctx, x.dtype());
}

absl::Status RunIsInf(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const auto& attrs = ctx.attrs<ir::IsInfAttrs>();
  const bool done = internal::VisitFloatType(x.dtype(), [&](auto tag) {
    using T = TagType<decltype(tag)>;
    IsInf<T>(x.data<T>(), ctx.output(0).data<uint8_t>(), x.numel(), attrs.detect_negative != 0,
             attrs.detect_positive != 0);
  });
  return done ? absl::OkStatus() : NoKernelFor(ctx, x.dtype());
}

absl::Status RunNot(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::kBool) return NoKernelFor(ctx, x.dtype());
  NotBool(x.data<uint8_t>(), ctx.output(0).data<uint8_t>(), x.numel());
  return absl::OkStatus();
}

}  // namespace

void RegisterElementwiseOps(OpRegistry& registry) {
  using ir::OpKind;
  // Every op with a unary function; Clip reads its bounds from inputs and has integer kernels.
  // y[i] depends on x[i] alone: the output may take over a dying input's storage.
  for (int i = 0; i < ir::kNumOpKinds; ++i) {
    const auto kind = static_cast<OpKind>(i);
    if (!ir::UnaryFnOf(kind)) continue;
    registry.Add(kind, kind == OpKind::kClip ? &RunClip : &RunUnary);
    registry.AllowInPlace(kind);
  }
  registry.Add(OpKind::kNot, &RunNot);
  registry.Add(OpKind::kIsNaN, &RunIsNaN);
  registry.Add(OpKind::kIsInf, &RunIsInf);

  internal::RegisterArithmeticOps(registry);
  internal::RegisterCompareOps(registry);
}

}  // namespace qcc::cpu
