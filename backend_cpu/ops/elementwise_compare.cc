// Broadcasting comparisons (bool results), logic on bools, and Where on the CPU.
#include "backend_cpu/op_registry.h"
#include "backend_cpu/ops/elementwise_internal.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/elementwise_binary.h"
#include "support/status.h"

namespace qcc::cpu::internal {
namespace {

/// y = fn(a, b) as bool for two inputs of one numeric dtype (and bool too when kBool).
template <typename Fn, bool kBool = false>
absl::Status RunCompare(OpContext& ctx) {
  QCC_RETURN_IF_ERROR(CheckSameDType(ctx, 0, 1));
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  uint8_t* y = ctx.output(0).data<uint8_t>();
  const BroadcastPlan plan = MakeBroadcastPlan({a.dims(), b.dims()}, ctx.output(0).dims());
  if (kBool && a.dtype() == DType::kBool) {
    BinaryBroadcast(plan, a.data<uint8_t>(), b.data<uint8_t>(), y, Fn(), ctx.num_threads);
    return absl::OkStatus();
  }
  const bool done = VisitNumericType(a.dtype(), [&](auto tag) {
    using T = TagType<decltype(tag)>;
    BinaryBroadcast(plan, a.data<T>(), b.data<T>(), y, Fn(), ctx.num_threads);
  });
  return done ? absl::OkStatus() : NoKernelFor(ctx, a.dtype());
}

/// y = fn(a, b) for two bool inputs.
template <typename Fn>
absl::Status RunLogic(OpContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != DType::kBool) return NoKernelFor(ctx, a.dtype());
  QCC_RETURN_IF_ERROR(CheckSameDType(ctx, 0, 1));
  const BroadcastPlan plan = MakeBroadcastPlan({a.dims(), b.dims()}, ctx.output(0).dims());
  BinaryBroadcast(plan, a.data<uint8_t>(), b.data<uint8_t>(), ctx.output(0).data<uint8_t>(), Fn(),
                  ctx.num_threads);
  return absl::OkStatus();
}

/// Where(cond, x, y): moves elements of any dtype as same-sized words.
absl::Status RunWhere(OpContext& ctx) {
  const Tensor& cond = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  Tensor& out = ctx.output(0);
  if (cond.dtype() != DType::kBool) {
    return ctx.Error(absl::StrCat("the condition must be bool, got ", DTypeName(cond.dtype())));
  }
  QCC_RETURN_IF_ERROR(CheckSameDType(ctx, 1, 2));
  const BroadcastPlan plan = MakeBroadcastPlan({cond.dims(), x.dims(), y.dims()}, out.dims());
  const uint8_t* c = cond.data<uint8_t>();
  switch (DTypeSize(x.dtype())) {
    case 1:
      SelectBroadcast(plan, c, x.data<uint8_t>(), y.data<uint8_t>(), out.data<uint8_t>(),
                      ctx.num_threads);
      return absl::OkStatus();
    case 2:
      SelectBroadcast(plan, c, x.data<uint16_t>(), y.data<uint16_t>(), out.data<uint16_t>(),
                      ctx.num_threads);
      return absl::OkStatus();
    case 4:
      SelectBroadcast(plan, c, x.data<uint32_t>(), y.data<uint32_t>(), out.data<uint32_t>(),
                      ctx.num_threads);
      return absl::OkStatus();
    case 8:
      SelectBroadcast(plan, c, x.data<uint64_t>(), y.data<uint64_t>(), out.data<uint64_t>(),
                      ctx.num_threads);
      return absl::OkStatus();
    default:
      return NoKernelFor(ctx, x.dtype());
  }
}

}  // namespace

void RegisterCompareOps(OpRegistry& registry) {
  using ir::OpKind;
  registry.Add(OpKind::kEqual, &RunCompare<EqualFn, /*kBool=*/true>);
  registry.Add(OpKind::kLess, &RunCompare<LessFn>);
  registry.Add(OpKind::kLessOrEqual, &RunCompare<LessOrEqualFn>);
  registry.Add(OpKind::kGreater, &RunCompare<GreaterFn>);
  registry.Add(OpKind::kGreaterOrEqual, &RunCompare<GreaterOrEqualFn>);
  registry.Add(OpKind::kAnd, &RunLogic<AndFn>);
  registry.Add(OpKind::kOr, &RunLogic<OrFn>);
  registry.Add(OpKind::kXor, &RunLogic<XorFn>);
  // Where only moves bytes, so fp16 / bf16 data need no round trip through fp32.
  registry.Add(OpKind::kWhere, &RunWhere, FloatPolicy::kMovesElements);
}

}  // namespace qcc::cpu::internal
