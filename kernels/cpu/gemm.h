// fp32 GEMM on Eigen's matrix product (gemm_eigen_internal.h): the one sgemm qcc calls.
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

/// Row-major sgemm. With beta == 0, C need not be initialised; with alpha == 0 or k == 0, A and B
/// are not read (C = beta * C, as BLAS does: a NaN in A or B does not reach C). Large products are
/// split over p.threads threads (by rows or columns of C), each slice one single-threaded sgemm on
/// the calling pool's threads: no BLAS worker pool exists to spin between calls, and no
/// process-wide setting is shared between callers. The widest build this CPU runs (AVX-512F, AVX2 +
/// FMA, or the baseline) computes it, so the last bits depend on the CPU, not on p.threads. Eigen
/// allocates its packing buffers on the heap in each call (up to a few MB for large products;
/// nothing over 16 KB on the stack, for embedders' threads with small stacks).
void GemmF32(const GemmF32Params& p, const float* a, const float* b, float* c);

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_GEMM_H_
