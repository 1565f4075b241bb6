// Shared by the elementwise and reduction op files: dtype dispatch onto C++ element types and
// the registration calls of the elementwise sub-groups.
#ifndef QCC_BACKEND_CPU_OPS_ELEMENTWISE_INTERNAL_H_
#define QCC_BACKEND_CPU_OPS_ELEMENTWISE_INTERNAL_H_

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "backend_cpu/op_registry.h"
#include "support/dtype.h"

namespace qcc::cpu::internal {

/// Carries a C++ element type into a generic lambda:
/// `[&](auto tag) { using T = TagType<decltype(tag)>; ... }`.
template <typename T>
struct TypeTag {
  using type = T;
};
template <typename Tag>
using TagType = typename Tag::type;

/// Calls fn(TypeTag<T>{}) when `t` is f32 or f64; returns whether it did.
template <typename Fn>
bool VisitFloatType(DType t, Fn&& fn) {
  switch (t) {
    case DType::kFloat32:
      fn(TypeTag<float>{});
      return true;
    case DType::kFloat64:
      fn(TypeTag<double>{});
      return true;
    default:
      return false;
  }
}

/// Calls fn(TypeTag<T>{}) when `t` is an integer type (bool excluded); returns whether it did.
template <typename Fn>
bool VisitIntType(DType t, Fn&& fn) {
  switch (t) {
    case DType::kInt8:
      fn(TypeTag<int8_t>{});
      return true;
    case DType::kUInt8:
      fn(TypeTag<uint8_t>{});
      return true;
    case DType::kInt16:
      fn(TypeTag<int16_t>{});
      return true;
    case DType::kUInt16:
      fn(TypeTag<uint16_t>{});
      return true;
    case DType::kInt32:
      fn(TypeTag<int32_t>{});
      return true;
    case DType::kUInt32:
      fn(TypeTag<uint32_t>{});
      return true;
    case DType::kInt64:
      fn(TypeTag<int64_t>{});
      return true;
    case DType::kUInt64:
      fn(TypeTag<uint64_t>{});
      return true;
    default:
      return false;
  }
}

/// VisitFloatType, then VisitIntType.
template <typename Fn>
bool VisitNumericType(DType t, Fn&& fn) {
  return VisitFloatType(t, fn) || VisitIntType(t, fn);
}

/// The Unimplemented error of a dtype without a kernel.
inline absl::Status NoKernelFor(const OpContext& ctx, DType t) {
  return ctx.Unsupported(absl::StrCat("no CPU kernel for ", DTypeName(t), " inputs"));
}

/// InvalidArgument unless inputs `i` and `j` have the same dtype.
inline absl::Status CheckSameDType(const OpContext& ctx, int i, int j) {
  if (ctx.input(i).dtype() == ctx.input(j).dtype()) return absl::OkStatus();
  return ctx.Error(absl::StrCat("inputs ", i, " and ", j, " must have the same dtype, got ",
                                DTypeName(ctx.input(i).dtype()), " and ",
                                DTypeName(ctx.input(j).dtype())));
}

/// Arithmetic (Add..Pow, Mod, PRelu) and variadic (Min, Max, Sum, Mean) ops.
void RegisterArithmeticOps(OpRegistry& registry);
/// Comparisons, logic and Where.
void RegisterCompareOps(OpRegistry& registry);

}  // namespace qcc::cpu::internal

#endif  // QCC_BACKEND_CPU_OPS_ELEMENTWISE_INTERNAL_H_
