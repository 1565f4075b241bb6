// The persistent thread pool behind the CPU kernels' parallel loops: every index runs exactly
// once in contiguous pieces, per-thread indices are exclusive, nested and concurrent calls are
// safe, and workers are reused rather than started per call.
#include "kernels/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/cpu/nn_parallel.h"

namespace qcc::cpu {
namespace {

struct Piece {
  int64_t begin, end;
  int thread;
};

/// Runs ParallelFor(threads, n) and returns its pieces sorted by begin, checking that every
/// index in [0, n) was visited exactly once.
std::vector<Piece> RunAndCheck(int threads, int64_t n) {
  std::vector<std::atomic<int>> visits(static_cast<size_t>(n));
  std::mutex mu;
  std::vector<Piece> pieces;
  ParallelFor(threads, n, [&](int64_t begin, int64_t end, int thread) {
    for (int64_t i = begin; i < end; ++i) visits[i].fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(mu);
    pieces.push_back({begin, end, thread});
  });
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(visits[i].load(), 1) << "index " << i << " of n=" << n << " threads=" << threads;
  }
  std::sort(pieces.begin(), pieces.end(),
            [](const Piece& a, const Piece& b) { return a.begin < b.begin; });
  return pieces;
}

TEST(ThreadPoolTest, VisitsEveryIndexOnceInContiguousPieces) {
  for (int threads : {1, 2, 3, 4, 7, 16}) {
    for (int64_t n : {0, 1, 2, 3, 5, 7, 8, 15, 16, 17, 100, 1000, 100003}) {
      const std::vector<Piece> pieces = RunAndCheck(threads, n);
      const int64_t used = std::min<int64_t>(threads, n);
      const int64_t chunk = used > 0 ? (n + used - 1) / used : 0;
      EXPECT_LE(static_cast<int64_t>(pieces.size()), used);
      int64_t expect_begin = 0;
      for (const Piece& p : pieces) {
        EXPECT_EQ(p.begin, expect_begin) << "n=" << n << " threads=" << threads;
        EXPECT_LT(p.begin, p.end);
        EXPECT_EQ(p.end, std::min(n, p.begin + chunk));
        EXPECT_GE(p.thread, 0);
        EXPECT_LT(p.thread, threads);
        expect_begin = p.end;
      }
      EXPECT_EQ(expect_begin, n);
    }
  }
}

TEST(ThreadPoolTest, NonPositiveThreadCountRunsInline) {
  for (int threads : {0, -3}) {
    const std::vector<Piece> pieces = RunAndCheck(threads, 50);
    ASSERT_EQ(pieces.size(), 1u);
    EXPECT_EQ(pieces[0].thread, 0);
  }
}

TEST(ThreadPoolTest, PiecesSharingAThreadIndexNeverOverlap) {
  constexpr int kThreads = 4;
  std::atomic<bool> busy[kThreads] = {};
  std::atomic<int> overlaps{0};
  for (int round = 0; round < 50; ++round) {
    ParallelFor(kThreads, 64, [&](int64_t, int64_t, int thread) {
      if (busy[thread].exchange(true)) overlaps.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      busy[thread].store(false);
    });
  }
  EXPECT_EQ(overlaps.load(), 0);
}

TEST(ThreadPoolTest, NestedCallsRunInlineAndComplete) {
  constexpr int64_t kOuter = 8, kInner = 1000;
  std::vector<std::atomic<int>> visits(kOuter * kInner);
  std::atomic<int> nested_nonzero_thread{0};
  ParallelFor(4, kOuter, [&](int64_t begin, int64_t end, int) {
    for (int64_t o = begin; o < end; ++o) {
      ParallelFor(4, kInner, [&](int64_t b, int64_t e, int thread) {
        if (thread != 0) nested_nonzero_thread.fetch_add(1);
        for (int64_t i = b; i < e; ++i) visits[o * kInner + i].fetch_add(1);
      });
    }
  });
  for (auto& v : visits) ASSERT_EQ(v.load(), 1);
  EXPECT_EQ(nested_nonzero_thread.load(), 0);
}

TEST(ThreadPoolTest, ConcurrentCallersEachCompleteTheirJobs) {
  constexpr int kCallers = 3, kRounds = 200;
  constexpr int64_t kN = 517;
  std::vector<std::vector<int64_t>> sums(kCallers, std::vector<int64_t>(kRounds, 0));
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int r = 0; r < kRounds; ++r) {
        std::atomic<int64_t> sum{0};
        ParallelFor(2 + c, kN, [&](int64_t begin, int64_t end, int) {
          int64_t s = 0;
          for (int64_t i = begin; i < end; ++i) s += i + r;
          sum.fetch_add(s);
        });
        sums[c][r] = sum.load();
      }
    });
  }
  for (std::thread& t : callers) t.join();
  for (int c = 0; c < kCallers; ++c) {
    for (int r = 0; r < kRounds; ++r) ASSERT_EQ(sums[c][r], kN * (kN - 1) / 2 + kN * r);
  }
}

TEST(ThreadPoolTest, WorkersPersistAcrossCalls) {
  ParallelFor(4, 4, [](int64_t, int64_t, int) {});
  const int workers = ThreadPoolWorkerCount();
  EXPECT_GE(workers, 3);
  for (int i = 0; i < 500; ++i) {
    ParallelFor(4, 100, [](int64_t, int64_t, int) {});
  }
  EXPECT_EQ(ThreadPoolWorkerCount(), workers);
}

TEST(NnParallelForTest, SmallWorkRunsAsOnePiece) {
  std::vector<std::pair<int64_t, int64_t>> pieces;
  NnParallelFor(4, 100, 1, [&](int64_t begin, int64_t end) { pieces.emplace_back(begin, end); });
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0], std::make_pair(int64_t{0}, int64_t{100}));
}

TEST(NnParallelForTest, ElementPiecesStartOnCacheLines) {
  constexpr int64_t kN = 1000003;
  std::vector<std::atomic<int>> visits(kN);
  std::atomic<int> misaligned{0};
  ParallelForElements(3, kN, 1, [&](int64_t begin, int64_t end) {
    if (begin % 64 != 0) misaligned.fetch_add(1);
    for (int64_t i = begin; i < end; ++i) visits[i].fetch_add(1, std::memory_order_relaxed);
  });
  EXPECT_EQ(misaligned.load(), 0);
  for (auto& v : visits) ASSERT_EQ(v.load(), 1);
}

}  // namespace
}  // namespace qcc::cpu
