// Broadcasting arithmetic on the CPU: Add, Sub, Mul, Div, Pow, Mod, PRelu and the variadic
// Min, Max, Sum, Mean. Inputs share one dtype (Pow's exponent excepted); floats arrive as
// f32 or f64, every integer type runs natively.
#include "backend_cpu/op_registry.h"
#include "backend_cpu/ops/elementwise_internal.h"
#include "backend_cpu/ops/fused_activation.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/elementwise_binary.h"
#include "kernels/cpu/nn_parallel.h"
#include "support/status.h"

namespace qcc::cpu::internal {
namespace {

/// y = fn(a, b) for two inputs of one numeric dtype.
template <typename Fn>
absl::Status RunBinary(OpContext& ctx) {
  QCC_RETURN_IF_ERROR(CheckSameDType(ctx, 0, 1));
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  const BroadcastPlan plan = MakeBroadcastPlan({a.dims(), b.dims()}, y.dims());
  const bool done = VisitNumericType(a.dtype(), [&](auto tag) {
    using T = TagType<decltype(tag)>;
    BinaryBroadcast(plan, a.data<T>(), b.data<T>(), y.data<T>(), Fn(), ctx.num_threads);
  });
  return done ? absl::OkStatus() : NoKernelFor(ctx, a.dtype());
}

/// Add, then the activation fusion may have given it (residual Add + Relu) on the output.
absl::Status RunAdd(OpContext& ctx) {
  QCC_ASSIGN_OR_RETURN(const ActivationF32 act, FusedActivationOf(ctx, ctx.attrs<ir::AddAttrs>()));
  QCC_RETURN_IF_ERROR(RunBinary<AddFn>(ctx));
  if (act.is_identity()) return absl::OkStatus();
  Tensor& y = ctx.output(0);
  if (y.dtype() != DType::kFloat32) return ctx.Unsupported("fused activation on f64 data");
  float* data = y.data<float>();
  ParallelForElements(
      ctx.num_threads, y.numel(), /*cost_per_element=*/1,
      [&](int64_t begin, int64_t end) { ApplyActivationF32(act, data + begin, end - begin); });
  return absl::OkStatus();
}

absl::Status RunMod(OpContext& ctx) {
  return ctx.attrs<ir::ModAttrs>().fmod != 0 ? RunBinary<FmodFn>(ctx) : RunBinary<ModFn>(ctx);
}

/// Pow: the output has the base's dtype. A floating base takes the exponent converted to its
/// type; an integer base takes an integer exponent exactly (as i64) and a floating one in double.
absl::Status RunPow(OpContext& ctx) {
  const Tensor& base = ctx.input(0);
  const Tensor& exponent = ctx.input(1);
  Tensor& y = ctx.output(0);
  const DType et = exponent.dtype();
  if (!IsFloat(et) && !IsInteger(et)) return NoKernelFor(ctx, et);
  const BroadcastPlan plan = MakeBroadcastPlan({base.dims(), exponent.dims()}, y.dims());

  bool done = VisitFloatType(base.dtype(), [&](auto tag) {
    using T = TagType<decltype(tag)>;
    const Tensor e = CastTensor(exponent, base.dtype());
    if (e.numel() == 1 && e.data<T>()[0] == T(2)) {  // the common x^2, exact as x * x
      BinaryBroadcast(
          plan, base.data<T>(), e.data<T>(), y.data<T>(), [](T v, T) { return v * v; },
          ctx.num_threads);
    } else {
      BinaryBroadcast(plan, base.data<T>(), e.data<T>(), y.data<T>(), PowFloatFn(),
                      ctx.num_threads);
    }
  });
  if (done) return absl::OkStatus();
  done = VisitIntType(base.dtype(), [&](auto tag) {
    using T = TagType<decltype(tag)>;
    if (IsInteger(et)) {
      const Tensor e = CastTensor(exponent, DType::kInt64);
      BinaryBroadcast(
          plan, base.data<T>(), e.data<int64_t>(), y.data<T>(),
          [](T v, int64_t k) { return PowIntFn()(v, k); }, ctx.num_threads);
    } else {
      const Tensor e = CastTensor(exponent, DType::kFloat64);
      BinaryBroadcast(
          plan, base.data<T>(), e.data<double>(), y.data<T>(),
          [](T v, double k) { return PowIntByFloatFn()(v, k); }, ctx.num_threads);
    }
  });
  return done ? absl::OkStatus() : NoKernelFor(ctx, base.dtype());
}

/// Folds fn over every input, broadcast to the output: y = fn(fn(x0, x1), x2) ...; Mean then
/// divides by the input count.
template <typename Fn, bool kMean = false>
absl::Status RunVariadic(OpContext& ctx) {
  for (int i = 1; i < ctx.num_inputs(); ++i) QCC_RETURN_IF_ERROR(CheckSameDType(ctx, 0, i));
  Tensor& y = ctx.output(0);
  const Tensor& x0 = ctx.input(0);
  const bool done = VisitNumericType(x0.dtype(), [&](auto tag) {
    using T = TagType<decltype(tag)>;
    T* out = y.data<T>();
    int next = 1;
    if (ctx.num_inputs() >= 2) {
      const Tensor& x1 = ctx.input(1);
      BinaryBroadcast(MakeBroadcastPlan({x0.dims(), x1.dims()}, y.dims()), x0.data<T>(),
                      x1.data<T>(), out, Fn(), ctx.num_threads);
      next = 2;
    } else {
      BroadcastCopy(MakeBroadcastPlan({x0.dims()}, y.dims()), x0.data<T>(), out, ctx.num_threads);
    }
    for (int i = next; i < ctx.num_inputs(); ++i) {
      const Tensor& xi = ctx.input(i);
      BinaryBroadcast(MakeBroadcastPlan({y.dims(), xi.dims()}, y.dims()), out, xi.data<T>(), out,
                      Fn(), ctx.num_threads);
    }
    if constexpr (kMean) {
      const T count = static_cast<T>(ctx.num_inputs());
      for (int64_t i = 0; i < y.numel(); ++i) out[i] = DivFn()(out[i], count);
    }
  });
  return done ? absl::OkStatus() : NoKernelFor(ctx, x0.dtype());
}

}  // namespace

void RegisterArithmeticOps(OpRegistry& registry) {
  using ir::OpKind;
  registry.Add(OpKind::kAdd, &RunAdd);
  registry.Add(OpKind::kSub, &RunBinary<SubFn>);
  registry.Add(OpKind::kMul, &RunBinary<MulFn>);
  registry.Add(OpKind::kDiv, &RunBinary<DivFn>);
  registry.Add(OpKind::kPow, &RunPow);
  registry.Add(OpKind::kMod, &RunMod);
  registry.Add(OpKind::kPRelu, &RunBinary<PReluFn>);
  // BinaryBroadcast may write over an operand that spans the output (not so the variadic fold,
  // which reads its later inputs after writing the output).
  for (OpKind kind : {OpKind::kAdd, OpKind::kSub, OpKind::kMul, OpKind::kDiv, OpKind::kPRelu}) {
    registry.AllowInPlace(kind);
  }
  registry.Add(OpKind::kMin, &RunVariadic<MinFn>);
  registry.Add(OpKind::kMax, &RunVariadic<MaxFn>);
  registry.Add(OpKind::kSum, &RunVariadic<AddFn>);
  registry.Add(OpKind::kMean, &RunVariadic<AddFn, /*kMean=*/true>);
}

}  // namespace qcc::cpu::internal
