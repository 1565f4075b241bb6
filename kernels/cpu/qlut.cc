// int8 lookup tables: building them from the function's fp32 formula, and applying them.
//
// AVX-512 VBMI apply: the 256-byte table is four zmm registers t0..t3; for an index byte
// u = x + 128 (x XOR 0x80), vpermt2b(t0, u, t1) picks table[u & 127] and vpermt2b(t2, u, t3)
// picks table[128 + (u & 127)] (it reads the low 7 index bits); bit 7 of u chooses between them.
#include "kernels/cpu/qlut.h"

#include "kernels/cpu/cpu_features.h"

// GCC 12's AVX-512 headers start unmasked results from _mm512_undefined_*(), which
// -Wmaybe-uninitialized reports at every inlined use (GCC PR 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/cpu/nn_parallel.h"
#include "support/quantize.h"

#define QCC_AVX512_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))

namespace qcc::cpu {

namespace {

QCC_AVX512_VBMI void ApplyLutAvx512(const Int8Lut& table, int64_t n, const int8_t* x, int8_t* y) {
  const __m512i t0 = _mm512_loadu_si512(table.data());
  const __m512i t1 = _mm512_loadu_si512(table.data() + 64);
  const __m512i t2 = _mm512_loadu_si512(table.data() + 128);
  const __m512i t3 = _mm512_loadu_si512(table.data() + 192);
  const __m512i flip = _mm512_set1_epi8(-128);
  for (int64_t i = 0; i < n; i += 64) {
    const int64_t r = std::min<int64_t>(64, n - i);
    const __mmask64 m = r == 64 ? ~__mmask64{0} : (__mmask64{1} << r) - 1;
    const __m512i u = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, x + i), flip);
    const __m512i low = _mm512_permutex2var_epi8(t0, u, t1);
    const __m512i high = _mm512_permutex2var_epi8(t2, u, t3);
    const __m512i v = _mm512_mask_blend_epi8(_mm512_movepi8_mask(u), low, high);
    _mm512_mask_storeu_epi8(y + i, m, v);
  }
}

}  // namespace

Int8Lut BuildLut(const UnaryCall& call, float s_in, int32_t zp_in, float s_out, int32_t zp_out) {
  Int8Lut table;
  for (int32_t q = kInt8Min; q <= kInt8Max; ++q) {
    const float x = DequantizeValue(static_cast<int8_t>(q), s_in, zp_in);
    table[q + 128] = QuantizeValue(UnaryValue<float>(call, x), s_out, zp_out);
  }
  return table;
}

bool CpuHasAvx512Vbmi() { return Cpu().avx512f && Cpu().avx512bw && Cpu().avx512vbmi; }

void ApplyLutReference(const Int8Lut& table, int64_t n, const int8_t* x, int8_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i] + 128];
}

void ApplyLut(const Int8Lut& table, int64_t n, const int8_t* x, int8_t* y, int num_threads) {
  const bool fast = CpuHasAvx512Vbmi();
  ParallelForElements(num_threads, n, 1, [&](int64_t begin, int64_t end) {
    if (fast) return ApplyLutAvx512(table, end - begin, x + begin, y + begin);
    ApplyLutReference(table, end - begin, x + begin, y + begin);
  });
}

}  // namespace qcc::cpu
