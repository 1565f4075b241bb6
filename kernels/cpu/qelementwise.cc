// int8 elementwise kernels: scalar references over support/quantize.h, AVX-512 and AVX2 fast paths.
//
// The AVX-512 paths are the scalar formulas lane by lane, with the same fp32 operations in the
// same order, so they give the same bits:
// - float arithmetic uses the explicitly rounded intrinsics (_mm512_div_round_ps etc.), which a
//   compiler never contracts into a fused multiply-add, whatever -ffp-contract says;
// - Saturate's float clamp to +-2^22 and NaN -> 0 are done with a mask before min/max (vminps
//   would turn NaN into the limit), then vcvtps2dq with round-to-nearest-even gives the same
//   integer as RoundHalfEven's 1.5 * 2^23 trick for every |x| <= 2^22;
// - int32 -> int8 stores use vpmovsdb, whose saturation never triggers after the [lo, hi] clamp.
// Tails are masked loads and stores, so a whole range runs on one path.
//
// Compiled for any x86-64: only functions marked QCC_AVX512_INT8 use AVX-512, and they run only
// when CpuHasAvx512Int8().
#include "kernels/cpu/qelementwise.h"

#include "kernels/cpu/cpu_features.h"

// RangeF32's selects vectorize only when GCC may assume float compares do not trap (as Clang
// does by default); qcc never reads floating-point exception flags.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

// GCC 12's AVX-512 headers start unmasked results from _mm512_undefined_*(), which
// -Wmaybe-uninitialized reports at every inlined use (GCC PR 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/round_half_avx512.h"
#include "kernels/cpu/simd_dispatch.h"
#include "kernels/cpu/symmetric_s8.h"
#include "support/float16.h"
#include "support/quantize.h"

#define QCC_AVX512_INT8 __attribute__((target("avx512f,avx512bw,avx512vl")))

namespace qcc::cpu {

namespace {

using internal::AbsBits;
using internal::InverseStep;
using internal::kInfBits;
using internal::QuantizeS8;

constexpr int kRoundNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

/// Runs range(begin, end) over [0, n), split over threads from 64k elements up.
template <typename Range>
void RunElements(int num_threads, int64_t n, Range&& range) {
  ParallelForElements(num_threads, n, 1, [&](int64_t begin, int64_t end) { range(begin, end); });
}

/// Lanes [0, r) of a 16-lane mask, r in [0, 16].
inline __mmask16 TailMask(int64_t r) { return static_cast<__mmask16>((1u << r) - 1u); }

/// The 16 int32 lanes of v (already within int8) stored as int8 at y, lanes of m only. A whole
/// vector narrows in a register and stores plainly: the masked narrowing store (vpmovsdb to
/// memory) is several times slower on Zen 4.
QCC_AVX512_INT8 inline void StoreS8(int8_t* y, __mmask16 m, __m512i v) {
  if (m == 0xFFFF) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y), _mm512_cvtsepi32_epi8(v));
  } else {
    _mm512_mask_cvtsepi32_storeu_epi8(y, m, v);
  }
}

/// Saturate(v, zp, lo, hi) for 16 lanes (see the file comment).
QCC_AVX512_INT8 inline __m512i SaturateV(__m512 v, __m512i zp, __m512i lo, __m512i hi) {
  const __m512 limit = _mm512_set1_ps(4194304.0f);  // 2^22
  v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
  v = _mm512_max_ps(_mm512_min_ps(v, limit), _mm512_set1_ps(-4194304.0f));
  const __m512i q = _mm512_add_epi32(_mm512_cvt_roundps_epi32(v, kRoundNearest), zp);
  return _mm512_min_epi32(_mm512_max_epi32(q, lo), hi);
}

/// float(int8 x - zp) for 16 lanes.
QCC_AVX512_INT8 inline __m512 CenteredV(__m128i x, __m512i zp) {
  return _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepi8_epi32(x), zp));
}

/// body(i, mask) for the 16-lane vectors of [0, n): the whole ones with the constant mask 0xFFFF
/// (which GCC folds into plain loads and stores), then the tail. Masked loads in a streaming
/// loop cost up to 3.7x on AMD Zen (Quantize of a 19 MB input: 2.3 -> 0.6 ms).
template <typename Body>
QCC_AVX512_INT8 inline void ForVectors16(int64_t n, const Body& body) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) body(i, static_cast<__mmask16>(0xFFFF));
  if (i < n) body(i, TailMask(n - i));
}

QCC_AVX512_INT8 void QuantizeAvx512(const QuantizeS8Params& p, int64_t n, const float* x,
                                    int8_t* y) {
  const __m512 scale = _mm512_set1_ps(p.scale);
  const __m512i zp = _mm512_set1_epi32(p.zero_point);
  const __m512i lo = _mm512_set1_epi32(kInt8Min), hi = _mm512_set1_epi32(kInt8Max);
  ForVectors16(n, [&](int64_t i, __mmask16 m) QCC_AVX512_INT8 {
    const __m512 v = _mm512_div_round_ps(_mm512_maskz_loadu_ps(m, x + i), scale, kRoundNearest);
    StoreS8(y + i, m, SaturateV(v, zp, lo, hi));
  });
}

QCC_AVX512_INT8 void DequantizeAvx512(const QuantizeS8Params& p, int64_t n, const int8_t* x,
                                      float* y) {
  const __m512 scale = _mm512_set1_ps(p.scale);
  const __m512i zp = _mm512_set1_epi32(p.zero_point);
  ForVectors16(n, [&](int64_t i, __mmask16 m) QCC_AVX512_INT8 {
    const __m512 v = CenteredV(_mm_maskz_loadu_epi8(m, x + i), zp);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_round_ps(v, scale, kRoundNearest));
  });
}

QCC_AVX512_INT8 void RequantizeAvx512(const RequantizeS8Params& p, int64_t n, const int8_t* x,
                                      int8_t* y) {
  const __m512 mult = _mm512_set1_ps(p.multiplier);
  const __m512i zp_in = _mm512_set1_epi32(p.zp_in), zp_out = _mm512_set1_epi32(p.zp_out);
  const __m512i lo = _mm512_set1_epi32(p.lo), hi = _mm512_set1_epi32(p.hi);
  ForVectors16(n, [&](int64_t i, __mmask16 m) QCC_AVX512_INT8 {
    const __m512 v = CenteredV(_mm_maskz_loadu_epi8(m, x + i), zp_in);
    const __m512 scaled = _mm512_mul_round_ps(v, mult, kRoundNearest);
    StoreS8(y + i, m, SaturateV(scaled, zp_out, lo, hi));
  });
}

QCC_AVX512_INT8 void AddAvx512(const AddS8Params& p, int64_t n, const int8_t* a, const int8_t* b,
                               int8_t* y) {
  const __m512 mult_a = _mm512_set1_ps(p.mult_a), mult_b = _mm512_set1_ps(p.mult_b);
  const __m512i zp_a = _mm512_set1_epi32(p.zp_a), zp_b = _mm512_set1_epi32(p.zp_b);
  const __m512i zp_out = _mm512_set1_epi32(p.zp_out);
  const __m512i lo = _mm512_set1_epi32(p.lo), hi = _mm512_set1_epi32(p.hi);
  ForVectors16(n, [&](int64_t i, __mmask16 m) QCC_AVX512_INT8 {
    const __m512 ta =
        _mm512_mul_round_ps(CenteredV(_mm_maskz_loadu_epi8(m, a + i), zp_a), mult_a, kRoundNearest);
    const __m512 tb =
        _mm512_mul_round_ps(CenteredV(_mm_maskz_loadu_epi8(m, b + i), zp_b), mult_b, kRoundNearest);
    const __m512 sum = _mm512_add_round_ps(ta, tb, kRoundNearest);
    StoreS8(y + i, m, SaturateV(sum, zp_out, lo, hi));
  });
}

/// vcvtps2ph (imm 0: round to nearest even, not MXCSR), then NaN lanes replaced by FloatToHalf's
/// sign | 0x7e00 (the hardware keeps the top 10 payload bits).
QCC_AVX512_INT8 void F32ToF16Avx512(int64_t n, const float* x, uint16_t* y) {
  const __m512i sign_bit = _mm512_set1_epi32(0x8000), quiet_nan = _mm512_set1_epi32(0x7e00);
  ForVectors16(n, [&](int64_t i, __mmask16 m) QCC_AVX512_INT8 {
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    const __m512i sign = _mm512_and_si512(_mm512_srli_epi32(_mm512_castps_si512(v), 16), sign_bit);
    h = _mm256_mask_mov_epi16(h, nan, _mm512_cvtepi32_epi16(_mm512_or_si512(sign, quiet_nan)));
    _mm256_mask_storeu_epi16(y + i, m, h);
  });
}

/// vcvtph2ps, then NaN lanes rebuilt as HalfToFloat does: sign | 0x7f800000 | mantissa << 13
/// (the hardware would also set the quiet bit of a signalling NaN).
QCC_AVX512_INT8 void F16ToF32Avx512(int64_t n, const uint16_t* x, float* y) {
  const __m512i magnitude = _mm512_set1_epi32(0x7fff), sign_bit = _mm512_set1_epi32(0x8000);
  const __m512i inf_bits = _mm512_set1_epi32(0x7c00), rebias = _mm512_set1_epi32(0x70000000);
  ForVectors16(n, [&](int64_t i, __mmask16 m) QCC_AVX512_INT8 {
    const __m256i h = _mm256_maskz_loadu_epi16(m, x + i);
    const __m512i f = _mm512_castps_si512(_mm512_cvtph_ps(h));
    const __m512i h32 = _mm512_cvtepu16_epi32(h);
    const __m512i mag = _mm512_and_si512(h32, magnitude);
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(mag, inf_bits);
    // (0x7c00 | mantissa) << 13 = 0x0f800000 | mantissa << 13; + 0x70000000 gives the fp32 NaN.
    const __m512i nan_bits = _mm512_or_si512(_mm512_slli_epi32(_mm512_and_si512(h32, sign_bit), 16),
                                             _mm512_or_si512(rebias, _mm512_slli_epi32(mag, 13)));
    _mm512_mask_storeu_ps(y + i, m, _mm512_castsi512_ps(_mm512_mask_mov_epi32(f, nan, nan_bits)));
  });
}

/// F16ToF32Avx512(F32ToF16Avx512(x)) in registers: vcvtps2ph then vcvtph2ps (exact for every
/// fp16 value), and a NaN lane becomes what the two give it, the quiet NaN of its sign with no
/// payload (0x7e00 widened).
QCC_AVX512_INT8 void RoundToHalfAvx512(int64_t n, float* x) {
  ForVectors16(n, [&](int64_t i, __mmask16 m) QCC_AVX512_INT8 {
    _mm512_mask_storeu_ps(x + i, m, internal::RoundToHalfV(_mm512_maskz_loadu_ps(m, x + i)));
  });
}

// The AVX2 forms of the four kernels above: 8 lanes, the same fp32 operations in the same order
// (QCC_AVX2_INT8 has no FMA, so no product is ever fused), the last n % 8 elements through the
// scalar references. vminps/vmaxps return their second operand on NaN, so NaN lanes are zeroed
// first, as SaturateV does.
#define QCC_AVX2_INT8 __attribute__((target("avx2")))

/// Saturate(v, zp, lo, hi) for 8 lanes.
QCC_AVX2_INT8 inline __m256i SaturateV8(__m256 v, __m256i zp, __m256i lo, __m256i hi) {
  v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
  v = _mm256_max_ps(_mm256_min_ps(v, _mm256_set1_ps(4194304.0f)), _mm256_set1_ps(-4194304.0f));
  const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(v), zp);  // MXCSR: nearest even
  return _mm256_min_epi32(_mm256_max_epi32(q, lo), hi);
}

/// float(int8 x[0..7] - zp).
QCC_AVX2_INT8 inline __m256 CenteredV8(const int8_t* x, __m256i zp) {
  const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x));
  return _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepi8_epi32(bytes), zp));
}

/// The 8 int32 lanes of v (already within int8) stored as int8 at y.
QCC_AVX2_INT8 inline void StoreS8x8(int8_t* y, __m256i v) {
  const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(y), _mm_packs_epi16(words, words));
}

QCC_AVX2_INT8 void QuantizeAvx2(const QuantizeS8Params& p, int64_t n, const float* x, int8_t* y) {
  const __m256 scale = _mm256_set1_ps(p.scale);
  const __m256i zp = _mm256_set1_epi32(p.zero_point);
  const __m256i lo = _mm256_set1_epi32(kInt8Min), hi = _mm256_set1_epi32(kInt8Max);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    StoreS8x8(y + i, SaturateV8(_mm256_div_ps(_mm256_loadu_ps(x + i), scale), zp, lo, hi));
  }
  QuantizeF32ToS8Reference(p, n - i, x + i, y + i);
}

QCC_AVX2_INT8 void DequantizeAvx2(const QuantizeS8Params& p, int64_t n, const int8_t* x, float* y) {
  const __m256 scale = _mm256_set1_ps(p.scale);
  const __m256i zp = _mm256_set1_epi32(p.zero_point);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(CenteredV8(x + i, zp), scale));
  DequantizeS8ToF32Reference(p, n - i, x + i, y + i);
}

QCC_AVX2_INT8 void RequantizeAvx2(const RequantizeS8Params& p, int64_t n, const int8_t* x,
                                  int8_t* y) {
  const __m256 mult = _mm256_set1_ps(p.multiplier);
  const __m256i zp_in = _mm256_set1_epi32(p.zp_in), zp_out = _mm256_set1_epi32(p.zp_out);
  const __m256i lo = _mm256_set1_epi32(p.lo), hi = _mm256_set1_epi32(p.hi);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 scaled = _mm256_mul_ps(CenteredV8(x + i, zp_in), mult);
    StoreS8x8(y + i, SaturateV8(scaled, zp_out, lo, hi));
  }
  RequantizeS8Reference(p, n - i, x + i, y + i);
}

QCC_AVX2_INT8 void AddAvx2(const AddS8Params& p, int64_t n, const int8_t* a, const int8_t* b,
                           int8_t* y) {
  const __m256 mult_a = _mm256_set1_ps(p.mult_a), mult_b = _mm256_set1_ps(p.mult_b);
  const __m256i zp_a = _mm256_set1_epi32(p.zp_a), zp_b = _mm256_set1_epi32(p.zp_b);
  const __m256i zp_out = _mm256_set1_epi32(p.zp_out);
  const __m256i lo = _mm256_set1_epi32(p.lo), hi = _mm256_set1_epi32(p.hi);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 ta = _mm256_mul_ps(CenteredV8(a + i, zp_a), mult_a);
    const __m256 tb = _mm256_mul_ps(CenteredV8(b + i, zp_b), mult_b);
    StoreS8x8(y + i, SaturateV8(_mm256_add_ps(ta, tb), zp_out, lo, hi));
  }
  AddS8Reference(p, n - i, a + i, b + i, y + i);
}

/// AVX2 with F16C: 8 lanes of F32ToF16Avx512 (vcvtps2ph with round to nearest even, NaN lanes
/// replaced by the quiet NaN of their sign), the last n % 8 through the scalar reference.
#define QCC_AVX2_F16C __attribute__((target("avx2,f16c")))
QCC_AVX2_F16C void F32ToF16Avx2(int64_t n, const float* x, uint16_t* y) {
  const __m256i sign_bit = _mm256_set1_epi32(0x8000), quiet_nan = _mm256_set1_epi32(0x7e00);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    const __m256i nan_bits = _mm256_or_si256(
        _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(v), 16), sign_bit), quiet_nan);
    // 32-bit lanes to 16: the NaN halves (at most 0xfe00) and the all-ones masks both survive.
    const __m128i nan_bits16 =
        _mm_packus_epi32(_mm256_castsi256_si128(nan_bits), _mm256_extracti128_si256(nan_bits, 1));
    const __m128i nan16 =
        _mm_packs_epi32(_mm256_castsi256_si128(nan), _mm256_extracti128_si256(nan, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm_blendv_epi8(h, nan_bits16, nan16));
  }
  ConvertF32ToF16Reference(n - i, x + i, y + i);
}

/// AVX2 with F16C: 8 lanes of F16ToF32Avx512, the last n % 8 through the scalar reference.
QCC_AVX2_F16C void F16ToF32Avx2(int64_t n, const uint16_t* x, float* y) {
  const __m256i magnitude = _mm256_set1_epi32(0x7fff), sign_bit = _mm256_set1_epi32(0x8000);
  const __m256i inf_bits = _mm256_set1_epi32(0x7c00), rebias = _mm256_set1_epi32(0x70000000);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    const __m256 f = _mm256_cvtph_ps(h);
    const __m256i h32 = _mm256_cvtepu16_epi32(h);
    const __m256i mag = _mm256_and_si256(h32, magnitude);
    const __m256i nan = _mm256_cmpgt_epi32(mag, inf_bits);
    const __m256i nan_bits = _mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(h32, sign_bit), 16),
                                             _mm256_or_si256(rebias, _mm256_slli_epi32(mag, 13)));
    _mm256_storeu_ps(y + i,
                     _mm256_blendv_ps(f, _mm256_castsi256_ps(nan_bits), _mm256_castsi256_ps(nan)));
  }
  ConvertF16ToF32Reference(n - i, x + i, y + i);
}

/// The first min(n, 16) lanes.
QCC_AVX512_INT8 inline __mmask16 RowMask(int64_t n) {
  return n >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << n) - 1);
}

/// `rows` rows of n floats (stride ld) to int8 rows of `out_n` bytes (zero past n), each with
/// its symmetric scale max|x| / 127 and its byte sum. Returns false when a value is not finite.
inline __attribute__((always_inline)) bool QuantizeRowsBody(const float* x, int64_t rows, int64_t n,
                                                            int64_t ld, int8_t* out, int64_t out_n,
                                                            float* scale, int32_t* sum) {
  bool finite = true;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * ld;
    int8_t* qr = out + r * out_n;
    uint32_t bits = 0;
    for (int64_t j = 0; j < n; ++j) {
      const uint32_t a = AbsBits(xr[j]);
      bits = a > bits ? a : bits;
    }
    finite = finite && bits < kInfBits;
    const float m = BitCast<float>(bits);
    const float inv = InverseStep(m);
    int32_t s = 0;
    for (int64_t j = 0; j < n; ++j) {
      qr[j] = QuantizeS8(xr[j], inv);
      s += qr[j];
    }
    for (int64_t j = n; j < out_n; ++j) qr[j] = 0;
    scale[r] = m / 127.0f;
    if (sum != nullptr) sum[r] = s;
  }
  return finite;
}
QCC_SIMD_VARIANTS(bool, QuantizeRows,
                  (const float* x, int64_t rows, int64_t n, int64_t ld, int8_t* out, int64_t out_n,
                   float* scale, int32_t* sum),
                  (x, rows, n, ld, out, out_n, scale, sum))

/// QuantizeRows with AVX-512 (same operations, so the same bits): a row may be one attention
/// head (32 or 64 floats), where the vectorizer's loop set-up costs more than the loop.
QCC_AVX512_INT8 bool QuantizeRowsAvx512Int8(const float* x, int64_t rows, int64_t n, int64_t ld,
                                            int8_t* out, int64_t out_n, float* scale,
                                            int32_t* sum) {
  bool finite = true;
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * ld;
    int8_t* qr = out + r * out_n;
    __m512i bits = _mm512_setzero_si512();
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = RowMask(n - j);
      const __m512i v = _mm512_maskz_loadu_epi32(m, xr + j);
      bits = _mm512_max_epu32(bits, _mm512_and_si512(v, abs_mask));
    }
    const uint32_t max_bits = _mm512_reduce_max_epu32(bits);
    finite = finite && max_bits < kInfBits;
    const float mx = BitCast<float>(max_bits);
    const __m512 inv = _mm512_set1_ps(InverseStep(mx));
    __m512i s = _mm512_setzero_si512();
    // Whole vectors narrow in registers and store plainly (StoreS8).
    int64_t j = 0;
    if (max_bits < kInfBits) {
      // A finite row needs no clamp: |x| <= m and inv <= (127 / m)(1 + 2^-24) (or 0), so
      // |x * inv| < 127.5 rounds to at most 127. vcvtps2dq {rn-sae} is roundscale + vcvttps2dq.
      for (; j + 16 <= n; j += 16) {
        const __m512i q = _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xr + j), inv),
                                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(qr + j), _mm512_cvtepi32_epi8(q));
        s = _mm512_add_epi32(s, q);
      }
    }
    for (; j < n; j += 16) {  // rows with NaN or inf, and the tail
      const __mmask16 m = RowMask(n - j);
      __m512 v = _mm512_roundscale_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, xr + j), inv),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
      const __m512i q = _mm512_cvttps_epi32(v);
      StoreS8(qr + j, m, q);
      s = _mm512_add_epi32(s, q);  // lanes past n loaded 0 and give 0
    }
    for (int64_t j = n; j < out_n; ++j) qr[j] = 0;
    scale[r] = mx / 127.0f;
    if (sum != nullptr) sum[r] = _mm512_reduce_add_epi32(s);
  }
  return finite;
}

}  // namespace

bool CpuHasAvx512Int8() { return Cpu().avx512_int8(); }

namespace {

/// min and max of x[0, n) and 0 over 16 independent lanes (vectorizable selects; NaN compares
/// false and is skipped), in AVX-512, AVX2 and baseline builds (simd_dispatch.h).
inline __attribute__((always_inline)) void RangeSpanBody(const float* x, int64_t n, float* lo,
                                                         float* hi) {
  float l[16] = {}, h[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int k = 0; k < 16; ++k) {
      l[k] = x[i + k] < l[k] ? x[i + k] : l[k];
      h[k] = x[i + k] > h[k] ? x[i + k] : h[k];
    }
  }
  for (; i < n; ++i) {
    l[0] = x[i] < l[0] ? x[i] : l[0];
    h[0] = x[i] > h[0] ? x[i] : h[0];
  }
  float a = 0.0f, b = 0.0f;
  for (int k = 0; k < 16; ++k) {
    a = l[k] < a ? l[k] : a;
    b = h[k] > b ? h[k] : b;
  }
  *lo = a;
  *hi = b;
}
QCC_SIMD_VARIANTS(void, RangeSpan, (const float* x, int64_t n, float* lo, float* hi),
                  (x, n, lo, hi))

}  // namespace

void RangeF32(int64_t n, const float* x, float* lo, float* hi, int num_threads) {
  constexpr int64_t kBlock = 1 << 16;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<float> l(std::max<int64_t>(blocks, 1), 0.0f), h(l.size(), 0.0f);
  NnParallelFor(num_threads, blocks, kBlock, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      RangeSpan(x + b * kBlock, std::min(kBlock, n - b * kBlock), &l[b], &h[b]);
    }
  });
  *lo = *std::min_element(l.begin(), l.end());
  *hi = *std::max_element(h.begin(), h.end());
}

void QuantizeF32ToS8Reference(const QuantizeS8Params& p, int64_t n, const float* x, int8_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = QuantizeValue(x[i], p.scale, p.zero_point);
}

void QuantizeF32ToS8(const QuantizeS8Params& p, int64_t n, const float* x, int8_t* y,
                     int num_threads) {
  const bool fast = CpuHasAvx512Int8(), avx2 = Cpu().avx2;
  RunElements(num_threads, n, [&](int64_t begin, int64_t end) {
    if (fast) return QuantizeAvx512(p, end - begin, x + begin, y + begin);
    if (avx2) return QuantizeAvx2(p, end - begin, x + begin, y + begin);
    QuantizeF32ToS8Reference(p, end - begin, x + begin, y + begin);
  });
}

void DequantizeS8ToF32Reference(const QuantizeS8Params& p, int64_t n, const int8_t* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = DequantizeValue(x[i], p.scale, p.zero_point);
}

void DequantizeS8ToF32(const QuantizeS8Params& p, int64_t n, const int8_t* x, float* y,
                       int num_threads) {
  const bool fast = CpuHasAvx512Int8(), avx2 = Cpu().avx2;
  RunElements(num_threads, n, [&](int64_t begin, int64_t end) {
    if (fast) return DequantizeAvx512(p, end - begin, x + begin, y + begin);
    if (avx2) return DequantizeAvx2(p, end - begin, x + begin, y + begin);
    DequantizeS8ToF32Reference(p, end - begin, x + begin, y + begin);
  });
}

void RequantizeS8Reference(const RequantizeS8Params& p, int64_t n, const int8_t* x, int8_t* y) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] = RescaleValue(x[i], p.zp_in, p.multiplier, p.zp_out, p.lo, p.hi);
  }
}

void RequantizeS8(const RequantizeS8Params& p, int64_t n, const int8_t* x, int8_t* y,
                  int num_threads) {
  const bool fast = CpuHasAvx512Int8(), avx2 = Cpu().avx2;
  RunElements(num_threads, n, [&](int64_t begin, int64_t end) {
    if (fast) return RequantizeAvx512(p, end - begin, x + begin, y + begin);
    if (avx2) return RequantizeAvx2(p, end - begin, x + begin, y + begin);
    RequantizeS8Reference(p, end - begin, x + begin, y + begin);
  });
}

void AddS8Reference(const AddS8Params& p, int64_t n, const int8_t* a, const int8_t* b, int8_t* y) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] = AddValue(a[i], p.zp_a, p.mult_a, b[i], p.zp_b, p.mult_b, p.zp_out, p.lo, p.hi);
  }
}

void AddS8(const AddS8Params& p, int64_t n, const int8_t* a, const int8_t* b, int8_t* y,
           int num_threads) {
  const bool fast = CpuHasAvx512Int8(), avx2 = Cpu().avx2;
  RunElements(num_threads, n, [&](int64_t begin, int64_t end) {
    if (fast) return AddAvx512(p, end - begin, a + begin, b + begin, y + begin);
    if (avx2) return AddAvx2(p, end - begin, a + begin, b + begin, y + begin);
    AddS8Reference(p, end - begin, a + begin, b + begin, y + begin);
  });
}

void ConvertF32ToF16Reference(int64_t n, const float* x, uint16_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = FloatToHalf(x[i]);
}

void ConvertF32ToF16(int64_t n, const float* x, uint16_t* y, int num_threads) {
  const bool fast = CpuHasAvx512Int8(), avx2 = Cpu().avx2 && Cpu().f16c;
  RunElements(num_threads, n, [&](int64_t begin, int64_t end) {
    if (fast) return F32ToF16Avx512(end - begin, x + begin, y + begin);
    if (avx2) return F32ToF16Avx2(end - begin, x + begin, y + begin);
    ConvertF32ToF16Reference(end - begin, x + begin, y + begin);
  });
}

void ConvertF16ToF32Reference(int64_t n, const uint16_t* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = HalfToFloat(x[i]);
}

void ConvertF16ToF32(int64_t n, const uint16_t* x, float* y, int num_threads) {
  const bool fast = CpuHasAvx512Int8(), avx2 = Cpu().avx2 && Cpu().f16c;
  RunElements(num_threads, n, [&](int64_t begin, int64_t end) {
    if (fast) return F16ToF32Avx512(end - begin, x + begin, y + begin);
    if (avx2) return F16ToF32Avx2(end - begin, x + begin, y + begin);
    ConvertF16ToF32Reference(end - begin, x + begin, y + begin);
  });
}

void RoundF32ToF16InPlace(int64_t n, float* x, int num_threads) {
  const bool fast = CpuHasAvx512Int8(), avx2 = Cpu().avx2 && Cpu().f16c;
  RunElements(num_threads, n, [&](int64_t begin, int64_t end) {
    if (fast) return RoundToHalfAvx512(end - begin, x + begin);
    constexpr int64_t kChunk = 2048;  // 4 KiB of fp16 on the stack, in L1 between the passes
    uint16_t half[kChunk];
    for (int64_t i = begin; i < end; i += kChunk) {
      const int64_t m = std::min(kChunk, end - i);
      if (avx2) {
        F32ToF16Avx2(m, x + i, half);
        F16ToF32Avx2(m, half, x + i);
      } else {
        ConvertF32ToF16Reference(m, x + i, half);
        ConvertF16ToF32Reference(m, half, x + i);
      }
    }
  });
}

bool QuantizeRowsS8(const float* x, int64_t rows, int64_t n, int64_t ld, int8_t* out, int64_t out_n,
                    float* scale, int32_t* sum) {
  if (CpuHasAvx512Int8()) return QuantizeRowsAvx512Int8(x, rows, n, ld, out, out_n, scale, sum);
  return QuantizeRows(x, rows, n, ld, out, out_n, scale, sum);
}

bool QuantizeRowsS8Reference(const float* x, int64_t rows, int64_t n, int64_t ld, int8_t* out,
                             int64_t out_n, float* scale, int32_t* sum) {
  return QuantizeRows(x, rows, n, ld, out, out_n, scale, sum);
}

}  // namespace qcc::cpu
