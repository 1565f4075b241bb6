// Numpy broadcasting of up to three operands against one dense output, as a plan of merged
// axes whose innermost axis is walked as contiguous runs.
#ifndef QCC_KERNELS_CPU_BROADCAST_H_
#define QCC_KERNELS_CPU_BROADCAST_H_

#include <algorithm>
#include <array>
#include <cstdint>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "kernels/cpu/nn_parallel.h"
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

/// Calls fn(offsets, out_offset, n) once per contiguous piece of a run within the output
/// elements [begin, end), in order: offsets[k] is the element offset of operand k at the
/// piece's start and n its length (plan.inner(), except where [begin, end) cuts a run).
template <typename Fn>
void ForEachBroadcastRunIn(const BroadcastPlan& plan, int64_t begin, int64_t end, Fn&& fn) {
  if (begin >= end) return;
  constexpr int kMax = BroadcastPlan::kMaxOperands;
  const int rank = static_cast<int>(plan.dims.size());
  const int64_t n = plan.inner();
  // The multi-index of run begin / n over the outer axes, and the operands' offsets there.
  BroadcastPlan::Extents index(rank, 0);
  std::array<int64_t, kMax> off{};
  int64_t q = begin / n;
  for (int d = rank - 2; d >= 0; --d) {
    index[d] = q % plan.dims[d];
    q /= plan.dims[d];
    for (int k = 0; k < plan.num_operands; ++k) off[k] += index[d] * plan.strides[k][d];
  }
  int64_t skip = begin % n;  // elements of the first run before `begin`
  for (int64_t o = begin; o < end;) {
    const int64_t len = std::min(n - skip, end - o);
    std::array<int64_t, kMax> start = off;
    for (int k = 0; k < plan.num_operands; ++k) start[k] += skip * plan.inner_stride(k);
    fn(start.data(), o, len);
    o += len;
    skip = 0;
    for (int d = rank - 2; d >= 0; --d) {
      for (int k = 0; k < plan.num_operands; ++k) off[k] += plan.strides[k][d];
      if (++index[d] < plan.dims[d]) break;
      for (int k = 0; k < plan.num_operands; ++k) off[k] -= plan.strides[k][d] * plan.dims[d];
      index[d] = 0;
    }
  }
}

/// Calls fn(offsets, out_offset, n) once per contiguous output run, where offsets[k] is the
/// element offset of operand k at the start of the run and n == plan.inner().
template <typename Fn>
void ForEachBroadcastRun(const BroadcastPlan& plan, Fn&& fn) {
  ForEachBroadcastRunIn(plan, 0, plan.numel, fn);
}

/// ForEachBroadcastRunIn over the whole output, split into element ranges on up to
/// `num_threads` threads when the output is large (see ParallelForElements): fn must only
/// write the output elements it is given. Pieces start at multiples of 64 elements.
template <typename Fn>
void ParallelForEachBroadcastRun(const BroadcastPlan& plan, int num_threads, Fn&& fn) {
  ParallelForElements(num_threads, plan.numel, 1, [&plan, &fn](int64_t begin, int64_t end) {
    ForEachBroadcastRunIn(plan, begin, end, fn);
  });
}

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_BROADCAST_H_
