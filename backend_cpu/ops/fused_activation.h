// The ops' side of fused activations: turns the activation fields the fusion passes set on
// Conv, Gemm and Add (ir/attrs.h, QCC_FUSED_ACTIVATION_FIELDS) into the kernels' ActivationF32.
#ifndef QCC_BACKEND_CPU_OPS_FUSED_ACTIVATION_H_
#define QCC_BACKEND_CPU_OPS_FUSED_ACTIVATION_H_

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "backend_cpu/op_registry.h"
#include "ir/attrs.h"
#include "kernels/cpu/activation.h"

namespace qcc::cpu {

/// The activation `attrs` (any struct with the fused-activation fields) asks for. A fused
/// activation is defined on float data only: on an op whose output is not float, or a Clip whose
/// bounds are NaN or reversed, it is InvalidArgument naming the node.
template <typename A>
absl::StatusOr<ActivationF32> FusedActivationOf(const OpContext& ctx, const A& attrs) {
  ActivationF32 act;
  if (attrs.activation == ir::Activation::kNone) return act;
  if (ctx.outputs.empty() || !IsFloat(ctx.outputs[0].dtype())) {
    return ctx.Error("a fused activation needs a float output");
  }
  switch (attrs.activation) {
    case ir::Activation::kNone:
      break;
    case ir::Activation::kRelu:
      act.lo = 0.0f;
      break;
    case ir::Activation::kClip:
      if (!(attrs.activation_min <= attrs.activation_max)) {
        return ctx.Error(absl::StrCat("fused Clip bounds [", attrs.activation_min, ", ",
                                      attrs.activation_max, "] are not an interval"));
      }
      act.lo = attrs.activation_min;
      act.hi = attrs.activation_max;
      break;
    case ir::Activation::kLeakyRelu:
      act.negative_slope = attrs.activation_alpha;
      break;
  }
  return act;
}

}  // namespace qcc::cpu

#endif  // QCC_BACKEND_CPU_OPS_FUSED_ACTIVATION_H_
