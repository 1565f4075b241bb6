#include "runtime/memory_plan.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace qcc::runtime {
namespace {

struct Placed {
  uint64_t offset;
  uint64_t end;
};

}  // namespace

absl::StatusOr<MemoryPlan> PlanMemory(absl::Span<const BufferLifetime> buffers,
                                      uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("alignment ", alignment, " not a power of 2"));
  }
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<uint64_t> sizes(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferLifetime& b = buffers[i];
    if (b.first_step < 0 || b.last_step < b.first_step) {
      return absl::InvalidArgumentError(
          absl::StrCat("buffer ", i, ": invalid lifetime [", b.first_step, ", ", b.last_step, "]"));
    }
    if (b.bytes > (uint64_t{1} << 62) ||
        __builtin_add_overflow(plan.no_reuse_bytes, (b.bytes + alignment - 1) & ~(alignment - 1),
                               &plan.no_reuse_bytes) ||
        plan.no_reuse_bytes > (uint64_t{1} << 62)) {
      return absl::InvalidArgumentError(absl::StrCat("buffer ", i, ": sizes overflow"));
    }
    sizes[i] = (b.bytes + alignment - 1) & ~(alignment - 1);
  }

  // Largest first; ties by first use then index, so the result is deterministic.
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (sizes[a] != sizes[b]) return sizes[a] > sizes[b];
    if (buffers[a].first_step != buffers[b].first_step) {
      return buffers[a].first_step < buffers[b].first_step;
    }
    return a < b;
  });

  std::vector<size_t> placed;  // indices already given an offset
  std::vector<Placed> live;    // extents of the placed buffers whose lifetimes meet the current one
  for (size_t i : order) {
    if (sizes[i] == 0) continue;
    live.clear();
    for (size_t j : placed) {
      if (buffers[j].first_step <= buffers[i].last_step &&
          buffers[i].first_step <= buffers[j].last_step) {
        live.push_back({plan.offsets[j], plan.offsets[j] + sizes[j]});
      }
    }
    std::sort(live.begin(), live.end(),
              [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
    uint64_t offset = 0;
    for (const Placed& p : live) {
      if (offset + sizes[i] <= p.offset) break;  // fits in the gap before p
      offset = std::max(offset, p.end);
    }
    plan.offsets[i] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + sizes[i]);
    placed.push_back(i);
  }
  return plan;
}

}  // namespace qcc::runtime
