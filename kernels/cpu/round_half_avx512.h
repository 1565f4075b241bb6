// fp32 values rounded to fp16 and widened back, 16 lanes at a time: the epilogue of the conv
// microkernels of an fp16 model (ActivationF32::round_to_f16) and RoundF32ToF16InPlace.
#ifndef QCC_KERNELS_CPU_ROUND_HALF_AVX512_H_
#define QCC_KERNELS_CPU_ROUND_HALF_AVX512_H_

#include <immintrin.h>

namespace qcc::cpu::internal {

/// widen(narrow(v)) lane by lane, narrowing to the nearest fp16 value with ties to even
/// (overflow to infinity, fp16 subnormals kept), as ConvertF32ToF16Reference then
/// ConvertF16ToF32Reference; a NaN becomes the quiet NaN of its sign, as they make it.
__attribute__((target("avx512f"))) inline __m512 RoundToHalfV(__m512 v) {
  const __m512i sign_bit = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  const __m512i quiet_nan = _mm512_set1_epi32(0x7fc00000);
  // maskz forms with every lane set: GCC 12's plain ones read _mm512_undefined_*, which it
  // reports as maybe-uninitialized wherever they are inlined.
  const __m512 r =
      _mm512_maskz_cvtph_ps(0xFFFF, _mm512_maskz_cvtps_ph(0xFFFF, v, _MM_FROUND_TO_NEAREST_INT));
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  const __m512i nan_bits =
      _mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(v), sign_bit), quiet_nan);
  return _mm512_mask_mov_ps(r, nan, _mm512_castsi512_ps(nan_bits));
}

}  // namespace qcc::cpu::internal

#endif  // QCC_KERNELS_CPU_ROUND_HALF_AVX512_H_
