// Lowering for `qcc compile --target cuda` (DESIGN.md s.4-5).
//
// A CUDA plan has the CPU plan's steps, buffers and weights in the canonical layout (so the CPU
// runtime, the oracle, executes it unchanged); the CUDA runtime packs weights into its kernels'
// layouts when it creates an engine. What the lowering adds is the choice of kernel and layout
// for every step, recorded in the plan's metadata, where the CUDA runtime reads it and
// `qcc inspect` shows it:
//   "cuda.kernel.<step index>" = "<token> <description>"
// The token (first word) is one of the CudaKernel names below; the rest is for people.
#ifndef QCC_BACKEND_CUDA_LOWERING_H_
#define QCC_BACKEND_CUDA_LOWERING_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "backend_cpu/lowering.h"
#include "ir/graph.h"
#include "runtime/plan.h"

namespace qcc::cuda {

/// The kernel families of the CUDA backend.
enum class CudaKernel {
  kIm2colImma,   ///< int8 conv, group 1: im2col + cuBLASLt IMMA "TN" GEMM + requant epilogue
  kImma,         ///< int8 Gemm/MatMul: row pad + cuBLASLt IMMA "TN" GEMM + requant epilogue
  kDirectQConv,  ///< int8 grouped/depthwise conv: one thread per output (own kernel)
  kIm2colGemm,   ///< float conv, group 1: im2col + cuBLASLt GEMM (fp32 accumulate) + epilogue
  kGemm,         ///< float Gemm: cuBLASLt GEMM (fp32 accumulate) + epilogue
  kDirectConv,   ///< float grouped/depthwise conv: one thread per output (own kernel)
  kAlias,        ///< Reshape: the output is the input's bytes (a device copy when not aliased)
  kIndex,        ///< every other step: our own one-thread-per-element kernel
};

/// "im2col-imma", "imma", "direct-qconv", "im2col-gemm", "gemm", "direct-conv", "alias", "index".
absl::string_view CudaKernelToken(CudaKernel kernel);
/// The kernel of `token` (the first word of a "cuda.kernel.<i>" value); NotFound otherwise.
absl::StatusOr<CudaKernel> ParseCudaKernelToken(absl::string_view token);

/// The metadata key of step `step`'s choice: "cuda.kernel.<step>".
std::string CudaKernelKey(size_t step);

/// Chooses every step's kernel and layout and records it in plan.metadata (see above); sets
/// plan.target = "cuda". InvalidArgument naming the step when a step's operands do not have the
/// shapes its kind requires.
absl::Status RecordCudaKernelChoices(runtime::Plan& plan);

/// LowerToCpuPlan, then RecordCudaKernelChoices.
absl::StatusOr<runtime::Plan> LowerToCudaPlan(const ir::Graph& graph,
                                              const cpu::LowerOptions& options);

}  // namespace qcc::cuda

#endif  // QCC_BACKEND_CUDA_LOWERING_H_
