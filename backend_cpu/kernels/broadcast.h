// Numpy broadcasting of up to three operands against one dense output, as a plan of merged
// axes whose innermost axis is walked as contiguous runs.
#ifndef QCC_BACKEND_CPU_KERNELS_BROADCAST_H_
#define QCC_BACKEND_CPU_KERNELS_BROADCAST_H_

#include <array>
#include <cstdint>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "support/tensor.h"

namespace qcc::cpu {

/// How each operand is read while the output is written in row-major order. Adjacent output
/// axes are merged when every operand either spans both or broadcasts along both, and extent-1
/// axes are dropped, so the common cases become short plans: same shape -> [n] with strides
/// 1; scalar -> [n] with stride 0; per-channel [1,C,1,1] against [N,C,H,W] -> [N,C,HW] with
/// strides [0,1,0]. The innermost stride of every operand is 0 or 1.
struct BroadcastPlan {
  static constexpr int kMaxOperands = 3;
  using Extents = absl::InlinedVector<int64_t, 6>;

  int num_operands = 0;
  Extents dims;                               // merged output extents, rank >= 1
  std::array<Extents, kMaxOperands> strides;  // element strides, 0 where broadcast
  int64_t numel = 0;                          // output element count

  /// The extent of the innermost merged axis: the length of each contiguous run.
  int64_t inner() const { return dims.back(); }
  /// Innermost stride of `operand`: 1 when it advances along a run, 0 when it stays put.
  int64_t inner_stride(int operand) const { return strides[operand].back(); }
};

/// Plans the broadcast of `operands` (1 to 3 shapes, each broadcastable to `out`) to `out`.
BroadcastPlan MakeBroadcastPlan(absl::Span<const Dims> operands, const Dims& out);

/// Calls fn(offsets, out_offset, n) once per contiguous output run, where offsets[k] is the
/// element offset of operand k at the start of the run and n == plan.inner().
template <typename Fn>
void ForEachBroadcastRun(const BroadcastPlan& plan, Fn&& fn) {
  if (plan.numel == 0) return;
  const int rank = static_cast<int>(plan.dims.size());
  const int64_t n = plan.inner();
  const int64_t runs = plan.numel / n;
  std::array<int64_t, BroadcastPlan::kMaxOperands> off{};
  BroadcastPlan::Extents index(rank, 0);
  for (int64_t r = 0; r < runs; ++r) {
    fn(off.data(), r * n, n);
    for (int d = rank - 2; d >= 0; --d) {
      for (int k = 0; k < plan.num_operands; ++k) off[k] += plan.strides[k][d];
      if (++index[d] < plan.dims[d]) break;
      for (int k = 0; k < plan.num_operands; ++k) off[k] -= plan.strides[k][d] * plan.dims[d];
      index[d] = 0;
    }
  }
}

}  // namespace qcc::cpu

#endif  // QCC_BACKEND_CPU_KERNELS_BROADCAST_H_
