// fp32 GEMM on OpenBLAS (CBLAS). The one place qcc calls a BLAS.
#ifndef QCC_KERNELS_CPU_GEMM_H_
#define QCC_KERNELS_CPU_GEMM_H_

#include <cstdint>

namespace qcc::cpu {

/// Parameters of C = alpha * op(A) * op(B) + beta * C, row-major, op(A) is MxK, op(B) is KxN.
struct GemmF32Params {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0, ldc = 0;  // leading dimensions of A, B, C as stored
  float alpha = 1.0f, beta = 0.0f;
  /// Threads this product may use (each caller passes its own: an Engine's, the evaluator's).
  /// The result does not depend on it.
  int threads = 1;
};

/// Row-major sgemm. With beta == 0, C need not be initialised. Large products are split over
/// p.threads threads (by rows or columns of C), each slice one single-threaded sgemm. OpenBLAS's
/// own pool is kept at one thread: GemmF32 threads itself, so no BLAS worker is left spinning
/// between calls, and no process-wide setting is shared between callers.
void GemmF32(const GemmF32Params& p, const float* a, const float* b, float* c);

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_GEMM_H_
