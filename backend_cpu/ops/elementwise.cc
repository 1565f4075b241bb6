// Elementwise ops on the CPU: the unary activations and math ops, Clip, IsNaN, IsInf and Not
// here; the broadcasting binary and variadic ops in elementwise_arith.cc and
// elementwise_compare.cc.
#include <limits>

#include "backend_cpu/kernels/elementwise_unary.h"
#include "backend_cpu/op_registry.h"
#include "backend_cpu/ops/elementwise_internal.h"
#include "support/status.h"

namespace qcc::cpu {
namespace {

using internal::NoKernelFor;
using internal::TagType;

/// The constants of `kind` from the node's attributes.
UnaryParams ParamsOf(const ir::Node& node, UnaryKind kind) {
  UnaryParams p;
  p.kind = kind;
  switch (kind) {
    case UnaryKind::kLeakyRelu:
      p.alpha = node.attrs<ir::LeakyReluAttrs>().alpha;
      break;
    case UnaryKind::kHardSigmoid:
      p.alpha = node.attrs<ir::HardSigmoidAttrs>().alpha;
      p.beta = node.attrs<ir::HardSigmoidAttrs>().beta;
      break;
    case UnaryKind::kElu:
    case UnaryKind::kCelu:
      p.alpha = node.attrs<ir::EluAttrs>().alpha;
      break;
    case UnaryKind::kSelu:
      p.alpha = node.attrs<ir::SeluAttrs>().alpha;
      p.gamma = node.attrs<ir::SeluAttrs>().gamma;
      break;
    case UnaryKind::kThresholdedRelu:
      p.alpha = node.attrs<ir::ThresholdedReluAttrs>().alpha;
      break;
    case UnaryKind::kShrink:
      p.alpha = node.attrs<ir::ShrinkAttrs>().lambd;
      p.beta = node.attrs<ir::ShrinkAttrs>().bias;
      break;
    default:
      break;
  }
  return p;
}

/// The kinds that also have integer kernels.
bool HasIntKernel(UnaryKind kind) {
  return kind == UnaryKind::kRelu || kind == UnaryKind::kNeg || kind == UnaryKind::kAbs ||
         kind == UnaryKind::kSign;
}

absl::Status RunUnaryWith(OpContext& ctx, const UnaryParams& p) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t n = x.numel();
  const bool done = internal::VisitFloatType(x.dtype(), [&](auto tag) {
    using T = TagType<decltype(tag)>;
    UnaryFloat<T>(p, x.data<T>(), y.data<T>(), n, ctx.num_threads);
  });
  if (done) return absl::OkStatus();
  if (HasIntKernel(p.kind) && internal::VisitIntType(x.dtype(), [&](auto tag) {
        using T = TagType<decltype(tag)>;
        UnaryInt<T>(p.kind, x.data<T>(), y.data<T>(), n, ctx.num_threads);
      })) {
    return absl::OkStatus();
  }
  return NoKernelFor(ctx, x.dtype());
}

template <UnaryKind kKind>
absl::Status RunUnary(OpContext& ctx) {
  return RunUnaryWith(ctx, ParamsOf(ctx.node, kKind));
}

absl::Status RunGelu(OpContext& ctx) {
  const bool tanh = ctx.attrs<ir::GeluAttrs>().approximate == ir::GeluApprox::kTanh;
  return RunUnaryWith(ctx, ParamsOf(ctx.node, tanh ? UnaryKind::kGeluTanh : UnaryKind::kGelu));
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
  // Activations.
  registry.Add(OpKind::kRelu, &RunUnary<UnaryKind::kRelu>);
  registry.Add(OpKind::kLeakyRelu, &RunUnary<UnaryKind::kLeakyRelu>);
  registry.Add(OpKind::kClip, &RunClip);
  registry.Add(OpKind::kSigmoid, &RunUnary<UnaryKind::kSigmoid>);
  registry.Add(OpKind::kHardSigmoid, &RunUnary<UnaryKind::kHardSigmoid>);
  registry.Add(OpKind::kHardSwish, &RunUnary<UnaryKind::kHardSwish>);
  registry.Add(OpKind::kTanh, &RunUnary<UnaryKind::kTanh>);
  registry.Add(OpKind::kErf, &RunUnary<UnaryKind::kErf>);
  registry.Add(OpKind::kElu, &RunUnary<UnaryKind::kElu>);
  registry.Add(OpKind::kSelu, &RunUnary<UnaryKind::kSelu>);
  registry.Add(OpKind::kCelu, &RunUnary<UnaryKind::kCelu>);
  registry.Add(OpKind::kThresholdedRelu, &RunUnary<UnaryKind::kThresholdedRelu>);
  registry.Add(OpKind::kSoftplus, &RunUnary<UnaryKind::kSoftplus>);
  registry.Add(OpKind::kSoftsign, &RunUnary<UnaryKind::kSoftsign>);
  registry.Add(OpKind::kMish, &RunUnary<UnaryKind::kMish>);
  registry.Add(OpKind::kGelu, &RunGelu);
  registry.Add(OpKind::kShrink, &RunUnary<UnaryKind::kShrink>);
  // Unary math.
  registry.Add(OpKind::kSqrt, &RunUnary<UnaryKind::kSqrt>);
  registry.Add(OpKind::kExp, &RunUnary<UnaryKind::kExp>);
  registry.Add(OpKind::kLog, &RunUnary<UnaryKind::kLog>);
  registry.Add(OpKind::kNeg, &RunUnary<UnaryKind::kNeg>);
  registry.Add(OpKind::kAbs, &RunUnary<UnaryKind::kAbs>);
  registry.Add(OpKind::kReciprocal, &RunUnary<UnaryKind::kReciprocal>);
  registry.Add(OpKind::kFloor, &RunUnary<UnaryKind::kFloor>);
  registry.Add(OpKind::kCeil, &RunUnary<UnaryKind::kCeil>);
  registry.Add(OpKind::kRound, &RunUnary<UnaryKind::kRound>);
  registry.Add(OpKind::kSign, &RunUnary<UnaryKind::kSign>);
  registry.Add(OpKind::kSin, &RunUnary<UnaryKind::kSin>);
  registry.Add(OpKind::kCos, &RunUnary<UnaryKind::kCos>);
  registry.Add(OpKind::kTan, &RunUnary<UnaryKind::kTan>);
  registry.Add(OpKind::kAsin, &RunUnary<UnaryKind::kAsin>);
  registry.Add(OpKind::kAcos, &RunUnary<UnaryKind::kAcos>);
  registry.Add(OpKind::kAtan, &RunUnary<UnaryKind::kAtan>);
  registry.Add(OpKind::kSinh, &RunUnary<UnaryKind::kSinh>);
  registry.Add(OpKind::kCosh, &RunUnary<UnaryKind::kCosh>);
  registry.Add(OpKind::kAsinh, &RunUnary<UnaryKind::kAsinh>);
  registry.Add(OpKind::kAcosh, &RunUnary<UnaryKind::kAcosh>);
  registry.Add(OpKind::kAtanh, &RunUnary<UnaryKind::kAtanh>);
  registry.Add(OpKind::kNot, &RunNot);
  registry.Add(OpKind::kIsNaN, &RunIsNaN);
  registry.Add(OpKind::kIsInf, &RunIsInf);
  // y[i] depends on x[i] alone: the output may take over a dying input's storage.
  for (OpKind kind :
       {OpKind::kRelu,        OpKind::kLeakyRelu, OpKind::kClip,       OpKind::kSigmoid,
        OpKind::kHardSigmoid, OpKind::kHardSwish, OpKind::kTanh,       OpKind::kErf,
        OpKind::kElu,         OpKind::kSelu,      OpKind::kCelu,       OpKind::kThresholdedRelu,
        OpKind::kSoftplus,    OpKind::kSoftsign,  OpKind::kMish,       OpKind::kGelu,
        OpKind::kShrink,      OpKind::kSqrt,      OpKind::kExp,        OpKind::kLog,
        OpKind::kNeg,         OpKind::kAbs,       OpKind::kReciprocal, OpKind::kFloor,
        OpKind::kCeil,        OpKind::kRound,     OpKind::kSign,       OpKind::kSin,
        OpKind::kCos,         OpKind::kTan,       OpKind::kAsin,       OpKind::kAcos,
        OpKind::kAtan,        OpKind::kSinh,      OpKind::kCosh,       OpKind::kAsinh,
        OpKind::kAcosh,       OpKind::kAtanh}) {
    registry.AllowInPlace(kind);
  }

  internal::RegisterArithmeticOps(registry);
  internal::RegisterCompareOps(registry);
}

}  // namespace qcc::cpu
