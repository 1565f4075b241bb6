// A minimal fork-join loop for the nn kernels (im2col, depthwise conv, pooling, norms).
#ifndef QCC_BACKEND_CPU_KERNELS_NN_PARALLEL_H_
#define QCC_BACKEND_CPU_KERNELS_NN_PARALLEL_H_

#include <algorithm>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

namespace qcc::cpu {

/// Calls fn(begin, end) over disjoint contiguous pieces of [0, n), on up to `num_threads`
/// threads (the caller's thread takes the first piece). Runs inline when one thread suffices
/// or `n * cost_per_item` is too small to pay for starting a thread (about 20 us). A callable
/// taking a third int argument also gets the piece's thread index in [0, num_threads), for
/// per-thread scratch.
template <typename Fn>
void NnParallelFor(int num_threads, int64_t n, int64_t cost_per_item, Fn&& fn) {
  constexpr int64_t kMinWorkPerThread = 1 << 16;  // ~ a few tens of microseconds of work
  int64_t threads = std::min<int64_t>(num_threads, n);
  threads = std::min<int64_t>(threads, std::max<int64_t>(1, n * cost_per_item / kMinWorkPerThread));
  auto call = [&fn](int64_t begin, int64_t end, int thread) {
    if constexpr (std::is_invocable_v<Fn&, int64_t, int64_t, int>) {
      fn(begin, end, thread);
    } else {
      fn(begin, end);
    }
  };
  if (threads <= 1) {
    if (n > 0) call(0, n, 0);
    return;
  }
  std::vector<std::thread> workers;
  workers.reserve(threads - 1);
  const int64_t chunk = (n + threads - 1) / threads;
  for (int64_t t = 1; t < threads; ++t) {
    const int64_t begin = t * chunk, end = std::min(n, begin + chunk);
    if (begin < end) {
      workers.emplace_back([&call, begin, end, t] { call(begin, end, static_cast<int>(t)); });
    }
  }
  call(0, std::min(n, chunk), 0);
  for (std::thread& w : workers) w.join();
}

}  // namespace qcc::cpu

#endif  // QCC_BACKEND_CPU_KERNELS_NN_PARALLEL_H_
