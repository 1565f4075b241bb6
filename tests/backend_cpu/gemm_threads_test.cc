// GemmF32 splits a product into chunks that depend on its shape only: the same bits at every
// thread count (a sgemm's result for a row or column depends on the extent of the call that
// computes it, so a split by thread count changed fp32 outputs and calibration tables).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <iterator>
#include <random>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/thread_pool.h"

namespace qcc::cpu {
namespace {

/// Row-major C [m, n] = A [m, k] B [k, n] on `threads` threads.
GemmF32Params Product(int m, int n, int k, int threads) {
  GemmF32Params p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.lda = k;
  p.ldb = n;
  p.ldc = n;
  p.beta = 0.0f;
  p.threads = threads;
  return p;
}

TEST(GemmThreadsTest, StartsNoWorkerThreadsOfItsOwn) {
  // A product runs on the calling thread and qcc's own pool: no BLAS worker pool (OpenBLAS's,
  // which qcc used before Eigen, spun on the other cores for about 0.1 s after every threaded
  // call). So this process has only its main thread and qcc's own pool workers. (ctest runs
  // every test in a process of its own.)
  std::vector<float> a(64 * 64, 1.0f), b(64 * 64, 1.0f), c(64 * 64);
  GemmF32(Product(64, 64, 64, 1), a.data(), b.data(), c.data());
  EXPECT_EQ(c[0], 64.0f);
  const auto tasks = std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                                   std::filesystem::directory_iterator());
  EXPECT_EQ(tasks, 1 + ThreadPoolWorkerCount());
}

TEST(GemmThreadsTest, SameBitsAtEveryThreadCount) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  // Conv-like products (M out channels, N pixels, K taps) on both split axes, ragged edges.
  const int shapes[][3] = {{16, 1024, 144}, {64, 64, 576}, {32, 256, 288}, {10, 1, 64},
                           {64, 300, 27},   {200, 24, 50}, {17, 777, 33},  {513, 9, 70}};
  for (const auto& s : shapes) {
    const int m = s[0], n = s[1], k = s[2];
    SCOPED_TRACE(::testing::Message() << m << "x" << n << "x" << k);
    std::vector<float> a(m * k), b(k * n);
    for (float& x : a) x = u(rng);
    for (float& x : b) x = u(rng);
    GemmF32Params p = Product(m, n, k, 1);
    std::vector<float> want(m * n);
    GemmF32(p, a.data(), b.data(), want.data());
    for (int threads : {2, 3, 4}) {
      std::vector<float> got(m * n, -1.0f);
      p.threads = threads;
      GemmF32(p, a.data(), b.data(), got.data());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
          << threads << " threads";
    }
    // And the product itself is right (a loose check: the split must not drop a chunk).
    for (int i = 0; i < m; i += 7) {
      for (int j = 0; j < n; j += 5) {
        double ref = 0;
        for (int t = 0; t < k; ++t) ref += double(a[i * k + t]) * b[t * n + j];
        EXPECT_NEAR(want[i * n + j], ref, 1e-4 * k);
      }
    }
  }
}

}  // namespace
}  // namespace qcc::cpu
