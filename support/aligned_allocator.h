// A standard allocator of cache-line-aligned storage, for std::vector buffers that vector kernels
// read with full-width loads (packed weights): std::allocator aligns to 16 bytes, so a 64-byte
// load from one of its buffers may cross two cache lines.
#ifndef QCC_SUPPORT_ALIGNED_ALLOCATOR_H_
#define QCC_SUPPORT_ALIGNED_ALLOCATOR_H_

#include <cstddef>
#include <new>

namespace qcc {

/// Allocates from ::operator new with `kAlign`-byte alignment.
template <typename T, size_t kAlign = 64>
struct AlignedAllocator {
  static_assert(kAlign >= alignof(T) && (kAlign & (kAlign - 1)) == 0);
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = AlignedAllocator<U, kAlign>;
  };

  AlignedAllocator() = default;
  template <typename U>
  AlignedAllocator(const AlignedAllocator<U, kAlign>&) {}  // NOLINT: converting, as the standard's

  T* allocate(size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{kAlign}));
  }
  void deallocate(T* p, size_t) { ::operator delete (p, std::align_val_t{kAlign}); }

  template <typename U>
  bool operator==(const AlignedAllocator<U, kAlign>&) const {
    return true;
  }
  template <typename U>
  bool operator!=(const AlignedAllocator<U, kAlign>&) const {
    return false;
  }
};

}  // namespace qcc

#endif  // QCC_SUPPORT_ALIGNED_ALLOCATOR_H_
