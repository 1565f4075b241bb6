// The fork-join loop of the CPU kernels (conv, GEMM, pooling, norms, elementwise): ParallelFor
// on the persistent thread pool, skipped when the work is too small to share.
#ifndef QCC_KERNELS_CPU_NN_PARALLEL_H_
#define QCC_KERNELS_CPU_NN_PARALLEL_H_

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/thread_pool.h"

namespace qcc::cpu {

/// Work units (about one multiply-add or one streamed float each) below which a thread's piece
/// costs less than handing it to a pool worker (some microseconds of work).
inline constexpr int64_t kMinParallelWork = 1 << 15;

/// Calls fn(begin, end) over disjoint contiguous pieces of [0, n), on up to `num_threads`
/// threads (the caller's thread takes part). Uses fewer threads when `n * cost_per_item` gives
/// a thread less than kMinParallelWork, and runs inline when one suffices. A callable taking a
/// third int argument also gets the piece's thread index in [0, num_threads), for per-thread
/// scratch. Nested calls run inline (see thread_pool.h).
template <typename Fn>
void NnParallelFor(int num_threads, int64_t n, int64_t cost_per_item, Fn&& fn) {
  int64_t threads = std::min<int64_t>(num_threads, n);
  threads = std::min<int64_t>(threads, std::max<int64_t>(1, n * cost_per_item / kMinParallelWork));
  if (threads <= 1) {
    if (n <= 0) return;
    if constexpr (std::is_invocable_v<Fn&, int64_t, int64_t, int>) {
      fn(int64_t{0}, n, 0);
    } else {
      fn(int64_t{0}, n);
    }
    CleanUpperVectorState();
    return;
  }
  ParallelFor(static_cast<int>(threads), n, [&fn](int64_t begin, int64_t end, int thread) {
    if constexpr (std::is_invocable_v<Fn&, int64_t, int64_t, int>) {
      fn(begin, end, thread);
    } else {
      fn(begin, end);
    }
    CleanUpperVectorState();
  });
}

/// NnParallelFor over the elements [0, n) of a streaming kernel, in pieces that start at
/// multiples of 64 elements (whole cache lines of 1-, 2- and 4-byte types, so threads never
/// write one line): fn(begin, end). At cost 1 per element, tensors under 2 * kMinParallelWork
/// elements stay on one thread.
template <typename Fn>
void ParallelForElements(int num_threads, int64_t n, int64_t cost_per_element, Fn&& fn) {
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  NnParallelFor(num_threads, blocks, kBlock * cost_per_element,
                [&fn, n](int64_t b0, int64_t b1) { fn(b0 * kBlock, std::min(n, b1 * kBlock)); });
}

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_NN_PARALLEL_H_
