// A process-wide pool of persistent worker threads for the CPU kernels' fork-join loops.
//
// ParallelFor splits [0, n) into contiguous pieces and runs them on the calling thread plus
// workers that stay alive between calls. Pieces are claimed dynamically, so a worker that is
// slow to wake never delays the caller by more than the piece it took. After each job a worker
// polls (yielding its core) for a fraction of a millisecond, so the next kernel's handoff is
// cheap, and then sleeps on a condition variable.
// Restriction: one job runs at a time. A ParallelFor called from inside a piece (nested), or
// from another thread while a job runs, does not wait for the pool: it runs all of its pieces
// inline on its own thread, with thread index 0.
#ifndef QCC_KERNELS_CPU_THREAD_POOL_H_
#define QCC_KERNELS_CPU_THREAD_POOL_H_

#include <cstdint>

#include "absl/functional/function_ref.h"

namespace qcc::cpu {

/// The most threads a ParallelFor uses (a larger request is clamped).
inline constexpr int kMaxParallelThreads = 256;

/// Calls fn(begin, end, thread) for the contiguous, non-empty pieces of [0, n) of
/// ceil(n / min(num_threads, n)) indices each (the last may be shorter). Each piece runs exactly
/// once; pieces that share a thread index never run at the same time, so `thread`, in
/// [0, num_threads), can select per-thread scratch. Returns when every piece has finished.
/// n <= 0 calls nothing; a single piece runs inline on the caller.
void ParallelFor(int num_threads, int64_t n, absl::FunctionRef<void(int64_t, int64_t, int)> fn);

/// Worker threads the pool has started so far (they are never stopped); for tests.
int ThreadPoolWorkerCount();

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_THREAD_POOL_H_
