#include "kernels/cpu/gemm.h"

#include <algorithm>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm_eigen_internal.h"
#include "kernels/cpu/nn_parallel.h"

namespace qcc::cpu {

namespace {

using SgemmFn = void (*)(const GemmF32Params&, const float*, const float*, float*);

/// The widest build of Eigen's sgemm this CPU runs (gemm_eigen_internal.h), chosen once.
SgemmFn SgemmSingleThread() {
  static const SgemmFn fn = Cpu().avx512f && Cpu().fma ? internal::SgemmEigenAvx512
                            : Cpu().avx2 && Cpu().fma  ? internal::SgemmEigenAvx2
                                                       : internal::SgemmEigenBaseline;
  return fn;
}

}  // namespace

void GemmF32(const GemmF32Params& p, const float* a, const float* b, float* c) {
  if (p.m == 0 || p.n == 0) return;
  if (p.k == 0 || p.alpha == 0.0f) {
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        c[i * p.ldc + j] = p.beta == 0.0f ? 0.0f : p.beta * c[i * p.ldc + j];
      }
    }
    return;
  }
  // Split the larger of M and N into chunks, one sgemm per chunk. The chunks depend on the shape
  // only, never on the thread count: a sgemm's result for a row or column depends on the extent
  // of the call that computes it (its blocking and edge kernels sum in another order; measured
  // with OpenBLAS on AVX2, and Eigen's blocking depends on M, N and K too), so a split by thread
  // count made fp32 results, and calibration tables, differ between 1 and 2 threads. A chunk is a
  // multiple of 16 and at least 64 wide; at most 8 per product.
  constexpr int64_t kAlign = 16, kMinChunk = 64, kMaxChunks = 8;
  const bool split_rows = p.m >= p.n;
  const int64_t extent = split_rows ? p.m : p.n;
  const int64_t chunk = std::max<int64_t>(
      kMinChunk, ((extent + kMaxChunks - 1) / kMaxChunks + kAlign - 1) / kAlign * kAlign);
  const int64_t chunks = (extent + chunk - 1) / chunk;
  const int64_t cost = chunk * (split_rows ? p.n : p.m) * p.k / 16;
  const SgemmFn sgemm = SgemmSingleThread();
  NnParallelFor(std::max(1, p.threads), chunks, cost, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t lo = i * chunk, hi = std::min(extent, lo + chunk);
      GemmF32Params q = p;
      if (split_rows) {
        q.m = hi - lo;
        sgemm(q, a + (p.trans_a ? lo : lo * p.lda), b, c + lo * p.ldc);
      } else {
        q.n = hi - lo;
        sgemm(q, a, b + (p.trans_b ? lo * p.ldb : lo), c + lo);
      }
    }
  });
}

}  // namespace qcc::cpu
