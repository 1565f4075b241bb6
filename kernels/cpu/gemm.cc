#include "kernels/cpu/gemm.h"

#include <cblas.h>

#include <algorithm>

#include "kernels/cpu/nn_parallel.h"

// OpenBLAS's pthread build (the one Debian's alternatives pick) stops its worker pool here. Not
// in cblas.h but exported by that build; weak, so a build without it (serial) leaves it null.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

namespace qcc::cpu {

namespace {

/// Pins OpenBLAS to one thread and stops its worker pool. GemmF32 splits a product over its
/// caller's threads itself and calls OpenBLAS on one thread only: OpenBLAS's idle workers spin in
/// sched_yield after every threaded call, and on a 2-core machine that spinning steals the cores
/// from every kernel that runs next (measured: small convolutions 10x slower). The pool also
/// starts when the library loads and spins for about 0.1 s of every process (measured:
/// efficientnet-lite0's int8 plan at batch 1 on 2 threads, 10 runs after 3 warm-ups, 4.4 ms
/// against 2.9 ms without it), so this runs before main, as the program's statics start. A later
/// threaded OpenBLAS call elsewhere in the process would start the pool again by itself. (The
/// serial build would have no pool, but it is not safe to call from several threads at once:
/// EngineConcurrencyTest fails with it.)
bool PinOpenBlasToOneThread() {
  openblas_set_num_threads(1);
  if (blas_thread_shutdown_ != nullptr) blas_thread_shutdown_();
  return true;
}

const bool kOpenBlasPinned = PinOpenBlasToOneThread();

void SgemmSingleThread(const GemmF32Params& p, const float* a, const float* b, float* c) {
  if (p.m == 1) {
    // One row of C (a batch-1 Gemm, a classifier's): sgemv, which streams B once. sgemm packs
    // B into panels first, a second pass over it: efficientnet-lite0's 1280 x 1000 classifier
    // took 0.83 ms against ORT's 0.50 at batch 1 on an AVX2 Zen 3. C is zeroed first when beta
    // is 0, as sgemm's contract lets C start uninitialised (a NaN there times 0 stays NaN in
    // some OpenBLAS versions' sgemv).
    if (p.beta == 0.0f) std::fill(c, c + p.n, 0.0f);
    const blasint inc_a = p.trans_a ? static_cast<blasint>(p.lda) : 1;
    if (p.trans_b) {  // B is N x K: c = B a
      cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<blasint>(p.n), static_cast<blasint>(p.k),
                  p.alpha, b, static_cast<blasint>(p.ldb), a, inc_a, p.beta, c, 1);
    } else {  // B is K x N: c = B^T a
      cblas_sgemv(CblasRowMajor, CblasTrans, static_cast<blasint>(p.k), static_cast<blasint>(p.n),
                  p.alpha, b, static_cast<blasint>(p.ldb), a, inc_a, p.beta, c, 1);
    }
    return;
  }
  cblas_sgemm(CblasRowMajor, p.trans_a ? CblasTrans : CblasNoTrans,
              p.trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(p.m),
              static_cast<blasint>(p.n), static_cast<blasint>(p.k), p.alpha, a,
              static_cast<blasint>(p.lda), b, static_cast<blasint>(p.ldb), p.beta, c,
              static_cast<blasint>(p.ldc));
}

}  // namespace

void GemmF32(const GemmF32Params& p, const float* a, const float* b, float* c) {
  if (p.m == 0 || p.n == 0) return;
  (void)kOpenBlasPinned;
  if (p.k == 0) {
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        c[i * p.ldc + j] = p.beta == 0.0f ? 0.0f : p.beta * c[i * p.ldc + j];
      }
    }
    return;
  }
  // Split the larger of M and N into chunks, one sgemm per chunk. The chunks depend on the shape
  // only, never on the thread count: OpenBLAS's results for a row or column depend on the extent
  // of the call that computes it (its edge kernels sum in another order; measured on AVX2), so a
  // split by thread count made fp32 results, and calibration tables, differ between 1 and 2
  // threads. A chunk is a multiple of 16 and at least 64 wide; at most 8 per product.
  constexpr int64_t kAlign = 16, kMinChunk = 64, kMaxChunks = 8;
  const bool split_rows = p.m >= p.n;
  const int64_t extent = split_rows ? p.m : p.n;
  const int64_t chunk = std::max<int64_t>(
      kMinChunk, ((extent + kMaxChunks - 1) / kMaxChunks + kAlign - 1) / kAlign * kAlign);
  const int64_t chunks = (extent + chunk - 1) / chunk;
  const int64_t cost = chunk * (split_rows ? p.n : p.m) * p.k / 16;
  NnParallelFor(std::max(1, p.threads), chunks, cost, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t lo = i * chunk, hi = std::min(extent, lo + chunk);
      GemmF32Params q = p;
      if (split_rows) {
        q.m = hi - lo;
        SgemmSingleThread(q, a + (p.trans_a ? lo : lo * p.lda), b, c + lo * p.ldc);
      } else {
        q.n = hi - lo;
        SgemmSingleThread(q, a, b + (p.trans_b ? lo * p.ldb : lo), c + lo);
      }
    }
  });
}

}  // namespace qcc::cpu
