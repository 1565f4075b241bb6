// Pieces shared by the AVX2 fp32 convolution paths (conv_avx2.cc, conv_depthwise_avx2.cc); not a
// public header. Like those files, compiled for any x86-64: the functions carry QCC_AVX2_FMA (a
// target attribute), and their callers run only on CPUs with AVX2 and FMA.
#ifndef QCC_KERNELS_CPU_CONV_AVX2_INTERNAL_H_
#define QCC_KERNELS_CPU_CONV_AVX2_INTERNAL_H_

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#define QCC_AVX2_FMA __attribute__((target("avx2,fma")))

namespace qcc::cpu::internal {

/// The fused activation on one register (see ActivationF32): NaN lanes stay NaN, because
/// max/min return their second operand when either is NaN.
QCC_AVX2_FMA inline __m256 Activate(__m256 v, __m256 lo, __m256 hi, __m256 slope) {
  const __m256 neg = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ);
  v = _mm256_blendv_ps(v, _mm256_mul_ps(v, slope), neg);
  return _mm256_min_ps(hi, _mm256_max_ps(lo, v));
}

/// Lanes [0, n) of a ymm load or store mask (n clamped to [0, 8]).
QCC_AVX2_FMA inline __m256i LaneMask(int64_t n) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int32_t k = static_cast<int32_t>(std::clamp<int64_t>(n, 0, 8));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), lanes);
}

}  // namespace qcc::cpu::internal

#endif  // QCC_KERNELS_CPU_CONV_AVX2_INTERNAL_H_
