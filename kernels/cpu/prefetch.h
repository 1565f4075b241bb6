// Software prefetch for the CPU kernels, at addresses that may lie past an array (the next tile,
// row or plane, or nothing after the last): the address is formed as an integer, so no
// out-of-bounds pointer is ever formed.
#ifndef QCC_KERNELS_CPU_PREFETCH_H_
#define QCC_KERNELS_CPU_PREFETCH_H_

#include <cstdint>

namespace qcc::cpu {

/// Prefetches into L1 (for writing when kWrite) the line holding element `offset` of `base`.
template <int kWrite = 0, typename T>
inline void PrefetchAt(const T* base, int64_t offset) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(base) +
                                                   offset * static_cast<int64_t>(sizeof(T))),
                     kWrite, 3);
}

/// Prefetches into L2 (not L1) the line holding element `offset` of `base`: data for the next
/// piece of work, which would crowd this piece's out of L1.
template <typename T>
inline void PrefetchToL2At(const T* base, int64_t offset) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(base) +
                                                   offset * static_cast<int64_t>(sizeof(T))),
                     0, 2);
}

/// PrefetchAt for every 64-byte line of elements [offset, offset + n) of `base`.
template <int kWrite = 0, typename T>
inline void PrefetchLines(const T* base, int64_t offset, int64_t n) {
  constexpr int64_t kPerLine = 64 / static_cast<int64_t>(sizeof(T));
  for (int64_t i = 0; i < n; i += kPerLine) PrefetchAt<kWrite>(base, offset + i);
}

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_PREFETCH_H_
