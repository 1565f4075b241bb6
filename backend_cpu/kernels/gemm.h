// fp32 GEMM on OpenBLAS (CBLAS). The one place qcc calls a BLAS.
#ifndef QCC_BACKEND_CPU_KERNELS_GEMM_H_
#define QCC_BACKEND_CPU_KERNELS_GEMM_H_

#include <cstdint>

namespace qcc::cpu {

/// Parameters of C = alpha * op(A) * op(B) + beta * C, row-major, op(A) is MxK, op(B) is KxN.
struct GemmF32Params {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0, ldc = 0;  // leading dimensions of A, B, C as stored
  float alpha = 1.0f, beta = 0.0f;
};

/// Row-major sgemm. With beta == 0, C need not be initialised. Large products are split over
/// the SetGemmThreads threads (by rows or columns of C), each slice one single-threaded sgemm.
void GemmF32(const GemmF32Params& p, const float* a, const float* b, float* c);

/// Sets the number of threads GemmF32 may use (process-wide). OpenBLAS's own pool is kept at
/// one thread: GemmF32 threads itself, so no BLAS worker is left spinning between calls.
void SetGemmThreads(int num_threads);

}  // namespace qcc::cpu

#endif  // QCC_BACKEND_CPU_KERNELS_GEMM_H_
