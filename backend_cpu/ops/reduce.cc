// Softmax family, reductions and arg-reductions on the CPU.
#include "kernels/cpu/reduce.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backend_cpu/op_registry.h"
#include "backend_cpu/ops/elementwise_internal.h"
#include "kernels/cpu/softmax.h"
#include "support/status.h"

namespace qcc::cpu {
namespace {

using internal::NoKernelFor;
using internal::TagType;

/// Normalises `axis` into [0, rank) or fails naming the node.
absl::StatusOr<int64_t> AxisOf(const OpContext& ctx, int64_t axis, int64_t rank) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    return ctx.Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return a;
}

/// Product of dims[begin, end).
int64_t Product(const Dims& dims, int64_t begin, int64_t end) {
  int64_t p = 1;
  for (int64_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

template <SoftmaxKind kKind>
absl::Status RunSoftmax(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const auto& attrs = ctx.attrs<ir::SoftmaxAttrs>();
  QCC_ASSIGN_OR_RETURN(const int64_t axis, AxisOf(ctx, attrs.axis, x.rank()));
  SoftmaxParams p;
  p.kind = kKind;
  p.outer = Product(x.dims(), 0, axis);
  if (attrs.coerce_2d != 0) {  // opset < 13: normalise over the flattened trailing axes
    p.n = Product(x.dims(), axis, x.rank());
  } else {
    p.n = x.dim(axis);
    p.inner = Product(x.dims(), axis + 1, x.rank());
  }
  const bool done = internal::VisitFloatType(x.dtype(), [&](auto tag) {
    using T = TagType<decltype(tag)>;
    Softmax<T>(p, x.data<T>(), ctx.output(0).data<T>());
  });
  return done ? absl::OkStatus() : NoKernelFor(ctx, x.dtype());
}

template <ReduceKind kKind>
absl::Status RunReduce(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  ReduceParams p;
  p.kind = kKind;
  p.dims = x.dims();
  p.reduced.assign(x.rank(), false);
  bool any = false;
  if (ctx.has_input(1)) {
    for (int64_t a : ctx.input(1).ToInt64Vector()) {
      QCC_ASSIGN_OR_RETURN(const int64_t axis, AxisOf(ctx, a, x.rank()));
      p.reduced[axis] = true;
      any = true;
    }
  }
  if (!any) {
    if (ctx.attrs<ir::ReduceAttrs>().noop_with_empty_axes != 0) {
      if (x.nbytes() > 0) std::memcpy(y.raw(), x.raw(), x.nbytes());
      return absl::OkStatus();
    }
    p.reduced.assign(x.rank(), true);
  }
  const bool done = internal::VisitNumericType(x.dtype(), [&](auto tag) {
    using T = TagType<decltype(tag)>;
    Reduce<T>(p, x.data<T>(), y.data<T>());
  });
  return done ? absl::OkStatus() : NoKernelFor(ctx, x.dtype());
}

template <bool kMax>
absl::Status RunArgReduce(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const auto& attrs = ctx.attrs<ir::ArgReduceAttrs>();
  QCC_ASSIGN_OR_RETURN(const int64_t axis, AxisOf(ctx, attrs.axis, x.rank()));
  ArgReduceParams p;
  p.outer = Product(x.dims(), 0, axis);
  p.n = x.dim(axis);
  p.inner = Product(x.dims(), axis + 1, x.rank());
  p.is_max = kMax;
  p.select_last_index = attrs.select_last_index != 0;
  if (p.n == 0 && p.outer * p.inner > 0) {
    return ctx.Error(absl::StrCat("cannot take the arg-", kMax ? "max" : "min", " along axis ",
                                  axis, " of extent 0"));
  }
  const bool done = internal::VisitNumericType(x.dtype(), [&](auto tag) {
    using T = TagType<decltype(tag)>;
    ArgReduce<T>(p, x.data<T>(), ctx.output(0).data<int64_t>());
  });
  return done ? absl::OkStatus() : NoKernelFor(ctx, x.dtype());
}

}  // namespace

void RegisterReduceOps(OpRegistry& registry) {
  using ir::OpKind;
  registry.Add(OpKind::kSoftmax, &RunSoftmax<SoftmaxKind::kSoftmax>);
  registry.Add(OpKind::kLogSoftmax, &RunSoftmax<SoftmaxKind::kLogSoftmax>);
  registry.Add(OpKind::kHardmax, &RunSoftmax<SoftmaxKind::kHardmax>);
  registry.Add(OpKind::kReduceMean, &RunReduce<ReduceKind::kMean>);
  registry.Add(OpKind::kReduceSum, &RunReduce<ReduceKind::kSum>);
  registry.Add(OpKind::kReduceMax, &RunReduce<ReduceKind::kMax>);
  registry.Add(OpKind::kReduceMin, &RunReduce<ReduceKind::kMin>);
  registry.Add(OpKind::kReduceProd, &RunReduce<ReduceKind::kProd>);
  registry.Add(OpKind::kReduceL1, &RunReduce<ReduceKind::kL1>);
  registry.Add(OpKind::kReduceL2, &RunReduce<ReduceKind::kL2>);
  registry.Add(OpKind::kReduceLogSum, &RunReduce<ReduceKind::kLogSum>);
  registry.Add(OpKind::kReduceLogSumExp, &RunReduce<ReduceKind::kLogSumExp>);
  registry.Add(OpKind::kReduceSumSquare, &RunReduce<ReduceKind::kSumSquare>);
  registry.Add(OpKind::kArgMax, &RunArgReduce<true>);
  registry.Add(OpKind::kArgMin, &RunArgReduce<false>);
}

}  // namespace qcc::cpu
