// Lane masks and the stride-2 gather that the AVX-512 float and int8 kernels share: the first n
// lanes of a mask, and the even floats of a span read with two masked loads (stride-2 convolution
// and pooling rows), so that no kernel writes them out again.
#ifndef QCC_KERNELS_CPU_LANE_MASKS_H_
#define QCC_KERNELS_CPU_LANE_MASKS_H_

#include <immintrin.h>

#include <cstdint>

namespace qcc::cpu {

/// The first `n` bits set (none for n <= 0, all 64 for n >= 64).
inline uint64_t LowBits64(int64_t n) {
  return n <= 0 ? 0 : n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
}

/// The first `n` of 16 lanes (none for n <= 0, all for n >= 16).
inline __mmask16 LowBits16(int64_t n) { return static_cast<__mmask16>(LowBits64(n < 16 ? n : 16)); }

/// Lanes [lo, hi) of 16 (clamped to [0, 16]; none when hi <= lo).
inline __mmask16 LaneRange16(int64_t lo, int64_t hi) {
  return static_cast<__mmask16>(LowBits16(hi) & ~LowBits16(lo));
}

/// The two load masks that read floats [0, floats) of a span as lanes of two 16-float loads.
struct SpanMasks {
  __mmask16 lo, hi;
};
inline SpanMasks SpanMasksOf(int64_t floats) { return {LowBits16(floats), LowBits16(floats - 16)}; }

/// Lane l = at[2 l] for the lanes whose float `m` reads (0 elsewhere), from two masked loads:
/// nothing outside `m` is read.
__attribute__((target("avx512f"))) inline __m512 EvenFloats(const float* at, SpanMasks m) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  return _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(m.lo, at), even,
                                _mm512_maskz_loadu_ps(m.hi, at + 16));
}

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_LANE_MASKS_H_
