// Lowering for `qcc compile --target cuda` (DESIGN.md s.4-5).
//
// A CUDA plan has the CPU plan's steps, buffers and weights in the canonical layout (so the CPU
// runtime, the oracle, executes it unchanged); the CUDA runtime packs weights into its kernels'
// layouts when it creates an engine. What the lowering adds is the choice of kernel for every
// step: PlanStep::cuda_kernel (runtime/plan.h's CudaKernel, which the plan file stores and the
// CUDA runtime reads), and for people a description of the layout and GEMM shape in the plan's
// metadata, "cuda.kernel.<step index>", which `qcc inspect` shows.
#ifndef QCC_BACKEND_CUDA_LOWERING_H_
#define QCC_BACKEND_CUDA_LOWERING_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backend_cpu/lowering.h"
#include "ir/graph.h"
#include "runtime/plan.h"

namespace qcc::cuda {

/// The metadata key of step `step`'s description: "cuda.kernel.<step>".
std::string CudaKernelKey(size_t step);

/// Chooses every step's kernel and records it (see above); sets plan.target = "cuda".
/// InvalidArgument naming the step when a step's operands do not have the shapes its kind requires.
absl::Status RecordCudaKernelChoices(runtime::Plan& plan);

/// LowerToCpuPlan, then RecordCudaKernelChoices.
absl::StatusOr<runtime::Plan> LowerToCudaPlan(const ir::Graph& graph,
                                              const cpu::LowerOptions& options);

}  // namespace qcc::cuda

#endif  // QCC_BACKEND_CUDA_LOWERING_H_
