#include "runtime/memory_plan.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace qcc::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

uint64_t Aligned(uint64_t n) { return (n + 63) / 64 * 64; }

// Brute force: no two buffers with intersecting lifetimes share a byte; all inside the arena.
void ExpectNoConflicts(const std::vector<BufferLifetime>& bufs, const MemoryPlan& plan) {
  ASSERT_EQ(plan.offsets.size(), bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % 64, 0u) << i;
    EXPECT_LE(plan.offsets[i] + bufs[i].bytes, plan.arena_bytes) << i;
    for (size_t j = i + 1; j < bufs.size(); ++j) {
      if (bufs[i].bytes == 0 || bufs[j].bytes == 0) continue;
      const bool live_together =
          bufs[i].first_step <= bufs[j].last_step && bufs[j].first_step <= bufs[i].last_step;
      const bool share_bytes = plan.offsets[i] < plan.offsets[j] + bufs[j].bytes &&
                               plan.offsets[j] < plan.offsets[i] + bufs[i].bytes;
      EXPECT_FALSE(live_together && share_bytes) << "buffers " << i << " and " << j;
    }
  }
}

TEST(MemoryPlanTest, ChainOfEqualBuffersNeedsTwoSlots) {
  // a -> b -> c -> d: step k reads buffer k and writes buffer k+1.
  const std::vector<BufferLifetime> bufs = {{1000, 0, 0}, {1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}};
  absl::StatusOr<MemoryPlan> plan = PlanMemory(bufs);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->offsets, ElementsAre(0, 1024, 0, 1024));
  EXPECT_EQ(plan->arena_bytes, 2048u);
  EXPECT_EQ(plan->no_reuse_bytes, 4096u);
  ExpectNoConflicts(bufs, *plan);
}

TEST(MemoryPlanTest, LargestFirstAtTheLowestFreeOffset) {
  // The 256-byte buffer lives alongside both 128-byte ones, which do not meet: it goes first at 0,
  // both small ones share offset 256; the 64-byte one meets nobody and takes offset 0.
  const std::vector<BufferLifetime> bufs = {{100, 0, 1}, {256, 1, 3}, {128, 3, 4}, {64, 6, 6}};
  absl::StatusOr<MemoryPlan> plan = PlanMemory(bufs);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->offsets, ElementsAre(256, 0, 256, 0));
  EXPECT_EQ(plan->arena_bytes, 384u);
  EXPECT_EQ(plan->no_reuse_bytes, 128u + 256 + 128 + 64);
}

TEST(MemoryPlanTest, FillsTheSpaceBelowAndBetweenPlacedBuffers) {
  // 0 and 1 go at 0 and 512. 2 meets only 1 and goes below it, at 0; 3 (steps 1-4) meets only 1
  // and also takes 0; 4 meets 1 and 3 and fits in the gap [256, 512) between them.
  const std::vector<BufferLifetime> bufs = {
      {512, 0, 0}, {512, 0, 9}, {512, 5, 9}, {256, 1, 4}, {128, 1, 4}};
  absl::StatusOr<MemoryPlan> plan = PlanMemory(bufs);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->offsets, ElementsAre(0, 512, 0, 0, 256));
  EXPECT_EQ(plan->arena_bytes, 1024u);
  ExpectNoConflicts(bufs, *plan);
}

TEST(MemoryPlanTest, ZeroBytesAndEmptyInput) {
  absl::StatusOr<MemoryPlan> none = PlanMemory({});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->arena_bytes, 0u);
  absl::StatusOr<MemoryPlan> zero = PlanMemory({{0, 0, 5}, {1, 0, 5}});
  ASSERT_TRUE(zero.ok());
  EXPECT_THAT(zero->offsets, ElementsAre(0, 0));
  EXPECT_EQ(zero->arena_bytes, 64u);
}

TEST(MemoryPlanTest, RejectsBadLifetimesAndAlignment) {
  EXPECT_THAT(PlanMemory({{64, 3, 2}}).status().message(), HasSubstr("invalid lifetime [3, 2]"));
  EXPECT_THAT(PlanMemory({{64, -1, 2}}).status().message(), HasSubstr("invalid lifetime"));
  EXPECT_THAT(PlanMemory({{64, 0, 0}}, 48).status().message(), HasSubstr("not a power of 2"));
  EXPECT_THAT(PlanMemory({{~uint64_t{0}, 0, 0}}).status().message(), HasSubstr("overflow"));
}

TEST(MemoryPlanTest, OtherAlignment) {
  absl::StatusOr<MemoryPlan> plan = PlanMemory({{10, 0, 1}, {10, 1, 2}, {10, 2, 3}}, 16);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->offsets, ElementsAre(0, 16, 0));
  EXPECT_EQ(plan->arena_bytes, 32u);
}

// 1000 random cases: never a conflict, aligned, between the peak live bytes and the no-reuse sum.
TEST(MemoryPlanTest, RandomLifetimesNeverConflict) {
  std::mt19937 rng(20261122);
  for (int trial = 0; trial < 1000; ++trial) {
    const int steps = 1 + static_cast<int>(rng() % 30);
    const int count = static_cast<int>(rng() % 40);
    std::vector<BufferLifetime> bufs(count);
    for (BufferLifetime& b : bufs) {
      // Mostly small odd sizes, sometimes large, sometimes equal (ties), sometimes zero.
      const uint32_t r = rng() % 10;
      b.bytes = r == 0 ? 0 : r < 3 ? 4096 : r < 5 ? 1 + rng() % 100000 : 1 + rng() % 700;
      b.first_step = static_cast<int32_t>(rng() % steps);
      b.last_step = b.first_step + static_cast<int32_t>(rng() % (steps - b.first_step));
    }
    SCOPED_TRACE(::testing::Message() << "trial " << trial);
    absl::StatusOr<MemoryPlan> plan = PlanMemory(bufs);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ExpectNoConflicts(bufs, *plan);
    uint64_t sum = 0;
    uint64_t peak = 0;
    for (const BufferLifetime& b : bufs) sum += Aligned(b.bytes);
    for (int s = 0; s < steps; ++s) {
      uint64_t live = 0;
      for (const BufferLifetime& b : bufs) {
        if (b.first_step <= s && s <= b.last_step) live += Aligned(b.bytes);
      }
      peak = std::max(peak, live);
    }
    EXPECT_EQ(plan->no_reuse_bytes, sum);
    EXPECT_LE(plan->arena_bytes, sum);
    EXPECT_GE(plan->arena_bytes, peak);
    EXPECT_EQ(plan->arena_bytes % 64, 0u);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace qcc::runtime
