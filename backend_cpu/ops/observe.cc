// Observe: hands its input to the evaluator's observer callback (calibration taps).
#include "backend_cpu/op_registry.h"

namespace qcc::cpu {
namespace {

absl::Status RunObserve(OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  // kComputeInF32 has already turned fp16/bf16 into fp32.
  if (x.dtype() != DType::kFloat32) {
    return ctx.Unsupported("only float tensors can be observed");
  }
  if (ctx.observe != nullptr) (*ctx.observe)(ctx.attrs<ir::ObserveAttrs>().observer_id, x);
  return absl::OkStatus();
}

}  // namespace

void RegisterCalibOps(OpRegistry& registry) { registry.Add(ir::OpKind::kObserve, RunObserve); }

}  // namespace qcc::cpu
