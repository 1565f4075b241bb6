// The in-register 16 x 16 float transpose that the AVX-512 kernels share (the channel-blocked
// depthwise convolution, GlobalAveragePool). Compiled for any x86-64: its callers run only on
// CPUs with AVX-512F.
#ifndef QCC_KERNELS_CPU_TRANSPOSE_AVX512_H_
#define QCC_KERNELS_CPU_TRANSPOSE_AVX512_H_

#include <immintrin.h>

namespace qcc::cpu {

/// In place: r[k] becomes the column k of the 16 x 16 matrix whose rows are r[0..15].
__attribute__((target("avx512f"))) inline void Transpose16x16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_maskz_unpacklo_ps(0xFFFF, r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_maskz_unpackhi_ps(0xFFFF, r[2 * i], r[2 * i + 1]);
  }
  // r[4i + j], 128-bit block q: column 4q + j, rows 4i..4i+3.
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_maskz_shuffle_ps(0xFFFF, t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_maskz_shuffle_ps(0xFFFF, t[4 * i], t[4 * i + 2], 0xEE);
    r[4 * i + 2] = _mm512_maskz_shuffle_ps(0xFFFF, t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_maskz_shuffle_ps(0xFFFF, t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512 x0 = _mm512_maskz_shuffle_f32x4(0xFFFF, r[j], r[4 + j], 0x44);
    const __m512 x1 = _mm512_maskz_shuffle_f32x4(0xFFFF, r[j], r[4 + j], 0xEE);
    const __m512 y0 = _mm512_maskz_shuffle_f32x4(0xFFFF, r[8 + j], r[12 + j], 0x44);
    const __m512 y1 = _mm512_maskz_shuffle_f32x4(0xFFFF, r[8 + j], r[12 + j], 0xEE);
    t[j] = _mm512_maskz_shuffle_f32x4(0xFFFF, x0, y0, 0x88);
    t[4 + j] = _mm512_maskz_shuffle_f32x4(0xFFFF, x0, y0, 0xDD);
    t[8 + j] = _mm512_maskz_shuffle_f32x4(0xFFFF, x1, y1, 0x88);
    t[12 + j] = _mm512_maskz_shuffle_f32x4(0xFFFF, x1, y1, 0xDD);
  }
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_TRANSPOSE_AVX512_H_
