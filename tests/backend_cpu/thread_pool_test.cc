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

/// Runs ParallelFor(threads, n, ..., pieces_per_thread) and returns its pieces sorted by begin,
/// checking that every index in [0, n) was visited exactly once.
std::vector<Piece> RunAndCheck(int threads, int64_t n, int pieces_per_thread = 1) {
  std::vector<std::atomic<int>> visits(static_cast<size_t>(n));
  std::mutex mu;
  std::vector<Piece> pieces;
  ParallelFor(
      threads, n,
      [&](int64_t begin, int64_t end, int thread) {
        for (int64_t i = begin; i < end; ++i) visits[i].fetch_add(1, std::memory_order_relaxed);
        std::lock_guard<std::mutex> lock(mu);
        pieces.push_back({begin, end, thread});
      },
      pieces_per_thread);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(visits[i].load(), 1) << "index " << i << " of n=" << n << " threads=" << threads;
  }
  std::sort(pieces.begin(), pieces.end(),
            [](const Piece& a, const Piece& b) { return a.begin < b.begin; });
  return pieces;
}

/// Checks that sorted `pieces` tile [0, n) in runs of `chunk` (the last shorter), each on a
/// thread index in [0, threads).
void ExpectContiguous(const std::vector<Piece>& pieces, int64_t n, int64_t chunk, int threads) {
  int64_t expect_begin = 0;
  for (const Piece& p : pieces) {
    EXPECT_EQ(p.begin, expect_begin);
    EXPECT_LT(p.begin, p.end);
    EXPECT_EQ(p.end, std::min(n, p.begin + chunk));
    EXPECT_GE(p.thread, 0);
    EXPECT_LT(p.thread, threads);
    expect_begin = p.end;
  }
  EXPECT_EQ(expect_begin, n);
}

TEST(ThreadPoolTest, VisitsEveryIndexOnceInContiguousPieces) {
  for (int threads : {1, 2, 3, 4, 7, 16}) {
    for (int64_t n : {0, 1, 2, 3, 5, 7, 8, 15, 16, 17, 100, 1000, 100003}) {
      SCOPED_TRACE(testing::Message() << "n=" << n << " threads=" << threads);
      const std::vector<Piece> pieces = RunAndCheck(threads, n);
      const int64_t used = std::min<int64_t>(threads, n);
      const int64_t chunk = used > 0 ? (n + used - 1) / used : 0;
      EXPECT_LE(static_cast<int64_t>(pieces.size()), used);
      ExpectContiguous(pieces, n, chunk, threads);
    }
  }
}

// With pieces_per_thread, [0, n) is cut into up to threads * pieces_per_thread even pieces,
// still run once each by thread indices below `threads`.
TEST(ThreadPoolTest, FinerPiecesVisitEveryIndexOnce) {
  for (int threads : {1, 2, 3, 4}) {
    for (int per_thread : {2, 4}) {
      for (int64_t n : {1, 2, 5, 8, 9, 17, 100, 1000}) {
        SCOPED_TRACE(testing::Message() << "n=" << n << " threads=" << threads << " x"
                                        << per_thread);
        const std::vector<Piece> pieces = RunAndCheck(threads, n, per_thread);
        const int64_t want = threads == 1 ? 1 : std::min<int64_t>(threads * per_thread, n);
        const int64_t chunk = (n + want - 1) / want;
        EXPECT_EQ(static_cast<int64_t>(pieces.size()), (n + chunk - 1) / chunk);
        ExpectContiguous(pieces, n, chunk, threads);
      }
    }
  }
}

// A participant that stalls in a piece holds up only that piece: the others take the rest. The
// caller's pieces take a millisecond each, so the worker claims one; it then sleeps in it while
// the caller runs the other seven (in two pieces of four indices, it would hold four).
TEST(ThreadPoolTest, AStalledThreadLeavesItsUnclaimedPiecesToTheOthers) {
  for (int round = 0; round < 3; ++round) {
    std::atomic<int64_t> by_worker{0};
    ParallelFor(
        2, 8,
        [&](int64_t begin, int64_t end, int thread) {
          if (thread == 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            return;
          }
          by_worker.fetch_add(end - begin);
          std::this_thread::sleep_for(std::chrono::milliseconds(30));
        },
        4);
    // One piece of one index (two if the caller itself stalls for 30 ms).
    EXPECT_LE(by_worker.load(), 2) << "round " << round;
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
  for (int per_thread : {1, 4}) {
    for (int round = 0; round < 50; ++round) {
      ParallelFor(
          kThreads, 64,
          [&](int64_t, int64_t, int thread) {
            if (busy[thread].exchange(true)) overlaps.fetch_add(1);
            std::this_thread::sleep_for(std::chrono::microseconds(20));
            busy[thread].store(false);
          },
          per_thread);
    }
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
