// Lowering of a fused graph with its precision decisions (passes/quantize.h) to a CPU plan: one
// kernel step per node (runtime/steps.def), Quantize/Dequantize steps where precision changes,
// weights in the plan's weights section, and the arena planned from buffer lifetimes.
#ifndef QCC_BACKEND_CPU_LOWERING_H_
#define QCC_BACKEND_CPU_LOWERING_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "runtime/plan.h"

namespace qcc::cpu {

struct LowerOptions {
  /// The batch range of the plan (a dynamic leading extent takes any value in it; a model with a
  /// fixed batch must be compiled with that batch).
  int64_t batch_min = 1;
  int64_t batch_max = 1;
  /// fp16 plan: float weights stored as f16 and every float activation rounded to f16 between
  /// steps (Cast steps around each fp32 step; the CPU computes in fp32 from fp16 storage, so the
  /// numbers are the ones an fp16 GPU plan gives). Graph inputs are rounded too; outputs stay
  /// in the model's type.
  bool fp16 = false;
  /// Fuse pairs of steps into one pass over their tensor (a transformer's GELU and the Quantize
  /// of the int8 GEMM it feeds; an fp32 Conv or fp32-result GEMM and the residual Add after it),
  /// with the same bits. Off for the CUDA target, which has no kernels for the fused forms.
  bool fuse_steps = true;
};

/// The plan of `graph`: a fused graph (after passes::DefaultPipeline, shapes inferred), whose
/// nodes run in fp32 (fp16 storage for LowerOptions::fp16), or an int8 compile's quantized graph
/// (passes::RealizeInt8), whose int8 ops become int8 steps and whose Quantize and Dequantize
/// become steps where a step first reads their output. Unimplemented naming the node for an op
/// no step implements yet; InvalidArgument for extents other than the batch that are not known.
absl::StatusOr<runtime::Plan> LowerToCpuPlan(const ir::Graph& graph, const LowerOptions& options);

}  // namespace qcc::cpu

#endif  // QCC_BACKEND_CPU_LOWERING_H_
