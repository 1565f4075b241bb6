// Shared helpers of the nn op adapters (backend_cpu/ops/nn*.cc); not a public header.
#ifndef QCC_BACKEND_CPU_OPS_NN_INTERNAL_H_
#define QCC_BACKEND_CPU_OPS_NN_INTERNAL_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "backend_cpu/op_registry.h"
#include "ir/shape_fns/nn_window.h"

namespace qcc::cpu::nn {

/// Registration of each nn sub-group (RegisterNnOps calls them all).
void RegisterConvOps(OpRegistry& registry);   // Conv, ConvTranspose
void RegisterPoolOps(OpRegistry& registry);   // MaxPool, AveragePool, Global{Average,Max}Pool
void RegisterNormOps(OpRegistry& registry);   // Batch/Instance/LayerNormalization
void RegisterDenseOps(OpRegistry& registry);  // Gemm, MatMul, qcc.Attention

/// OK when every present input is fp32 (fp16/bf16 arrive as fp32 under kComputeInF32), else
/// Unimplemented naming the dtype.
absl::Status RequireF32Inputs(const OpContext& ctx);

/// A scratch buffer of at least `n` floats owned by the calling thread and reused across calls,
/// so steady-state evaluation does not allocate. Valid until the next call on this thread.
float* ScratchF32(int64_t n);

/// Right-aligns `v` (one entry per spatial axis, at most 3) into a 3-D array filled with `fill`.
absl::StatusOr<std::array<int64_t, 3>> Spatial3(const OpContext& ctx, const std::vector<int64_t>& v,
                                                int64_t fill);

/// The spatial extents (axes 2...) of `t`.
std::vector<int64_t> SpatialDims(const Tensor& t);

/// Calls ForwardWindowAxis for each spatial axis of `in`, naming the node on error.
absl::StatusOr<std::vector<ir::WindowAxis>> ForwardWindows(const OpContext& ctx,
                                                           const ir::WindowSpec& spec,
                                                           const std::vector<int64_t>& in);

}  // namespace qcc::cpu::nn

#endif  // QCC_BACKEND_CPU_OPS_NN_INTERNAL_H_
