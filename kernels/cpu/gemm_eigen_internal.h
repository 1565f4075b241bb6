// The single-threaded sgemm under GemmF32: Eigen's matrix product (header-only, no library
// linked), built three times as gemm_eigen_{avx512,avx2,baseline}.cc with that file's SIMD flags.
// Each build renames Eigen's namespace (gemm_eigen_body.inc), so the three copies of Eigen's
// templates, compiled for different instruction sets, never merge at link time (one definition
// rule: the linker would keep one copy of each, possibly the AVX-512 one on an AVX2 CPU).
// tests/backend_cpu/gemm_symbols.sh checks that the three objects define nothing else.
#ifndef QCC_KERNELS_CPU_GEMM_EIGEN_INTERNAL_H_
#define QCC_KERNELS_CPU_GEMM_EIGEN_INTERNAL_H_

#include "kernels/cpu/gemm.h"

namespace qcc::cpu::internal {

/// C = alpha * op(A) op(B) + beta * C on the calling thread (GemmF32Params' contract; p.threads
/// is ignored). The AVX-512 build needs AVX-512F and FMA, the AVX2 build AVX2 and FMA.
void SgemmEigenAvx512(const GemmF32Params& p, const float* a, const float* b, float* c);
void SgemmEigenAvx2(const GemmF32Params& p, const float* a, const float* b, float* c);
void SgemmEigenBaseline(const GemmF32Params& p, const float* a, const float* b, float* c);

}  // namespace qcc::cpu::internal

#endif  // QCC_KERNELS_CPU_GEMM_EIGEN_INTERNAL_H_
