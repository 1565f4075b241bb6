// Pieces shared by the AVX-512 fp32 convolution paths (conv_avx512.cc, conv_pointwise_avx512.cc,
// conv_depthwise_avx512.cc); not a public header. Like those files, compiled for any x86-64: the
// functions carry QCC_AVX512 (a target attribute), and their callers run only on CPUs with
// AVX-512F.
#ifndef QCC_KERNELS_CPU_CONV_AVX512_INTERNAL_H_
#define QCC_KERNELS_CPU_CONV_AVX512_INTERNAL_H_

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/conv.h"

#define QCC_AVX512 __attribute__((target("avx512f")))

namespace qcc::cpu::internal {

/// The fused activation on one register (see ActivationF32): NaN lanes stay NaN, because
/// max/min return their second operand when either is NaN.
QCC_AVX512 inline __m512 Activate(__m512 v, __m512 lo, __m512 hi, __m512 slope) {
  const __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
  v = _mm512_mask_mul_ps(v, neg, v, slope);
  // maskz forms with every lane set: the plain ones read _mm512_undefined_ps, which GCC 12
  // reports as maybe-uninitialized.
  return _mm512_maskz_min_ps(0xFFFF, hi, _mm512_maskz_max_ps(0xFFFF, lo, v));
}

/// Whether a convolution runs the transposed 1x1 path (conv_pointwise_avx512.cc): pointwise on
/// a small map, 64+ channels in and out. Shape-only, as the packing depends on it.
bool UseTransposedAvx512(const ConvF32Params& p);
/// Floats of its packed weights, and the packing: blocks of 32 output channels, k-major.
int64_t TransposedPackedSizeAvx512(const ConvF32Params& p);
void PackTransposedAvx512(const ConvF32Params& p, const float* w, float* packed);
/// y = conv(x) on that path, weights packed by PackTransposedAvx512.
void ConvF32PointwiseTransposedAvx512(const ConvF32Params& p, const float* x, const float* packed,
                                      const float* bias, float* y);

}  // namespace qcc::cpu::internal

#endif  // QCC_KERNELS_CPU_CONV_AVX512_INTERNAL_H_
