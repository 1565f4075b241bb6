// Pieces shared by the AVX2 int8 fast paths (qconv_avx2.cc, qgemm_avx2.cc) and their dispatchers
// (qconv.cc, qgemm.cc); not a public header.
//
// Like the VNNI files, the AVX2 files are compiled for any x86-64: their functions carry
// QCC_AVX2 (a target attribute) and the dispatchers call them only when QInt8HasAvx2(), so the
// binary runs on CPUs without AVX2 (a per-file -mavx2 could leak AVX2 code of shared inline
// functions into every caller through the linker).
//
// Exactness. AVX2 has no dot product of bytes that cannot saturate (vpmaddubsw sums two u8 x s8
// products into a saturating int16), so the paths sign-extend activations and weights to int16
// and use vpmaddwd: two int16 x int16 products summed into an int32, exact for int8 operands
// (|sum| <= 2 * 128 * 128). Accumulation is vpaddd, modulo 2^32 like the reference. No +128
// offset and no correction term are needed, unlike the VNNI paths.
#ifndef QCC_KERNELS_CPU_QINT8_AVX2_INTERNAL_H_
#define QCC_KERNELS_CPU_QINT8_AVX2_INTERNAL_H_

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/qconv.h"
#include "kernels/cpu/qgemm.h"

#define QCC_AVX2 __attribute__((target("avx2")))

namespace qcc::cpu::internal {

/// Requantize (support/quantize.h) of 8 int32 lanes to 8 int8 (the low 8 bytes of the result)
/// under VnniRequantApplies (finite multipliers, int8 zp_out); `lo_f`, `hi_f` are
/// float(lo - zp), float(hi - zp). The same argument as RequantizeX16's
/// (qint8_vnni_internal.h): one fp32 multiply, never NaN; clamping to the integers
/// [lo - zp, hi - zp] before rounding half to even equals Saturate's clamp to +-2^22, rounding,
/// adding zp and clamping to [lo, hi]. The rounding is explicit (vroundps to nearest even), and
/// the result, an integer in [-128, 127] after adding zp, converts and packs without saturation.
QCC_AVX2 inline __m128i RequantizeX8(__m256i acc, __m256 multiplier, __m256i zp, __m256 lo_f,
                                     __m256 hi_f) {
  __m256 x = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), multiplier);
  x = _mm256_min_ps(_mm256_max_ps(x, lo_f), hi_f);
  x = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256i q = _mm256_add_epi32(_mm256_cvttps_epi32(x), zp);
  const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  return _mm_packs_epi16(words, words);
}

/// An int16 pair (lo, hi) of sign-extended int8 values as one dword, `lo` in the low half (the
/// operand layout of vpmaddwd).
inline uint32_t Int16Pair(int8_t lo, int8_t hi) {
  return static_cast<uint32_t>(static_cast<uint16_t>(int16_t{lo})) |
         static_cast<uint32_t>(static_cast<uint16_t>(int16_t{hi})) << 16;
}

/// Fills w's AVX2 layout (depthwise when C == group, else direct) from p.weights.
void PackQConvAvx2(const QConvParams& p, PackedQConvWeights* w);
/// QConvWorkspaceBytes for the AVX2 layouts.
int64_t QConvAvx2WorkspaceBytes(const QConvParams& p, const PackedQConvWeights& w);
/// QConv for the AVX2 layouts; call only when QInt8HasAvx2().
void QConvAvx2(const QConvParams& p, const PackedQConvWeights& w, void* workspace);

/// Fills w->packed with the AVX2 layout of p.b.
void PackQGemmAvx2(const QGemmParams& p, PackedQGemmWeights* w);
/// QGemm for the AVX2 layout; call only when QInt8HasAvx2().
void QGemmAvx2(const QGemmParams& p, const PackedQGemmWeights& w);

}  // namespace qcc::cpu::internal

#endif  // QCC_KERNELS_CPU_QINT8_AVX2_INTERNAL_H_
