// Compile-time arena planning: offsets in one arena for buffers with known lifetimes.
#ifndef QCC_RUNTIME_MEMORY_PLAN_H_
#define QCC_RUNTIME_MEMORY_PLAN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace qcc::runtime {

/// A buffer of `bytes` bytes live from step `first_step` through step `last_step` (inclusive).
struct BufferLifetime {
  uint64_t bytes = 0;
  int32_t first_step = 0;
  int32_t last_step = 0;
};

/// Where each buffer goes in the arena.
struct MemoryPlan {
  std::vector<uint64_t> offsets;  ///< one per buffer, a multiple of `alignment`
  uint64_t arena_bytes = 0;       ///< the arena size, a multiple of `alignment`
  uint64_t no_reuse_bytes = 0;    ///< the arena size without reuse (sum of aligned sizes)
};

/// Assigns offsets so that buffers whose lifetimes intersect never share bytes, greedily by size
/// (TFLite's "greedy by size"): largest first, each at the lowest offset that fits between the
/// already placed buffers live at the same time. Sizes are rounded up to `alignment` (a power of
/// two); zero-byte buffers get offset 0 and occupy nothing. InvalidArgument for a lifetime with
/// first_step < 0 or last_step < first_step, or when the sizes overflow.
absl::StatusOr<MemoryPlan> PlanMemory(absl::Span<const BufferLifetime> buffers,
                                      uint64_t alignment = 64);

}  // namespace qcc::runtime

#endif  // QCC_RUNTIME_MEMORY_PLAN_H_
