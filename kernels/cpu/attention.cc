#include "kernels/cpu/attention.h"

// As in softmax.cc: lets GCC vectorize the selects of the int8 path's row loops.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

// GCC 12's AVX-512 headers start unmasked results from _mm512_undefined_*(), which
// -Wmaybe-uninitialized reports at every inlined use (GCC PR 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/elementwise_math.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/qelementwise.h"
#include "kernels/cpu/qint8_vnni_internal.h"
#include "kernels/cpu/simd_dispatch.h"
#include "kernels/cpu/softmax.h"
#include "kernels/cpu/symmetric_s8.h"
#include "support/int_math.h"

// The int8 attention's AVX-512 functions: F, BW, VL and VNNI only (QCC_VNNI of the GEMM also
// allows VBMI, which some VNNI CPUs lack); they run when Cpu().avx512_vnni().
#define QCC_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

namespace qcc::cpu {
namespace {

using internal::AbsBits;
using internal::InverseStep;
using internal::kInfBits;
using internal::QuantizeS8;

/// Query rows per block: a block's scores (rows x kv_len floats) stay within 64 KiB, in L2.
int64_t BlockRows(const AttentionF32Params& p) {
  constexpr int64_t kScoreFloats = 16 * 1024;
  return std::max<int64_t>(1, std::min(p.q_len, kScoreFloats / std::max<int64_t>(1, p.kv_len)));
}

int ScratchThreads(const AttentionF32Params& p) { return std::max(1, p.num_threads); }

/// One unit of AttentionF32: query rows [row0, row0 + rows) of head h of batch b; `scores` holds
/// rows * kv_len floats.
void AttentionUnitF32(const AttentionF32Params& p, int64_t b, int64_t h, int64_t row0, int64_t rows,
                      const float* q, const float* k, const float* v, const float* mask, float* y,
                      float* scores) {
  const int64_t g = h / (p.q_heads / p.kv_heads);
  if (p.kv_len == 0) {  // P [rows, 0] times V [0, Dv]: a sum over nothing, as MatMul gives
    for (int64_t i = 0; i < rows; ++i) {
      float* yr = y + b * p.y.batch + h * p.y.head + (row0 + i) * p.y.row;
      std::fill(yr, yr + p.v_head_size, 0.0f);
    }
    return;
  }
  GemmF32Params s;  // scores = scale * Q Kᵀ
  s.m = rows;
  s.n = p.kv_len;
  s.k = p.head_size;
  s.trans_b = true;
  s.lda = p.q.row;
  s.ldb = p.k.row;
  s.ldc = p.kv_len;
  s.alpha = p.scale;
  GemmF32(s, q + b * p.q.batch + h * p.q.head + row0 * p.q.row, k + b * p.k.batch + g * p.k.head,
          scores);
  const float* mask_rows =
      mask == nullptr ? nullptr : mask + b * p.mask.batch + h * p.mask.head + row0 * p.mask.row;
  if (mask_rows != nullptr && p.mask.col != 1) {  // a mask constant along each row
    for (int64_t i = 0; i < rows; ++i) {
      const float* m = mask_rows + i * p.mask.row;
      for (int64_t j = 0; j < p.kv_len; ++j) scores[i * p.kv_len + j] += m[j * p.mask.col];
    }
    mask_rows = nullptr;
  }
  SoftmaxAddRows(rows, p.kv_len, scores, mask_rows, p.mask.row);
  GemmF32Params o;  // Y = P V
  o.m = rows;
  o.n = p.v_head_size;
  o.k = p.kv_len;
  o.lda = p.kv_len;
  o.ldb = p.v.row;
  o.ldc = p.y.row;
  GemmF32(o, scores, v + b * p.v.batch + g * p.v.head,
          y + b * p.y.batch + h * p.y.head + row0 * p.y.row);
}

// ---- int8 attention (AttentionInt8) ----
//
// Both products are u8 x s8 dot products of 4 bytes (vpdpbusd), with the unsigned operand a
// vector of 16 columns and the signed one a broadcast dword of a row:
//   C[i, n] = sum_t sum_{e<4} B[t, n, e] * A[i, 4t + e],  B packed [t][n][e] as u8, A as s8.
// Scores: A = q8 (rows of Q), B = k8 + 128 (K transposed), so q8 . k8 = C - 128 rowsum(q8).
// P V: A = p8 - 128 (s8), B = v8 + 128 (V transposed in groups of 4 rows), and with N the
// padded length, sum_j p8 v8 = C - 128 sum_j p8 + 128 sum_j v8 + 16384 N: padded positions
// have p8 = 0 and v8 = 0, which the identity takes as it takes any other. All of it modulo 2^32
// (uint32 arithmetic), exact while |sum| < 2^31 (kInt8MaxLength).

/// The longest head sizes the int8 path takes: 255 * 127 * 65536 < 2^31.
constexpr int64_t kInt8MaxLength = 65536;
/// The longest kv_len it takes. An 8-bit probability drops every term below 1/510 of the row's
/// largest; over many keys those terms can hold much of the mass (2,048 keys at e^-8 of the
/// largest hold 41%), so longer rows run in fp32. At 512 such terms hold at most half the mass of
/// the largest term alone, and in trained encoders far less (minilm, 128 keys: cosine 0.99383 to
/// fp32 with int8 attention against 0.99384 without).
constexpr int64_t kInt8MaxKeys = 512;

int32_t WrapMul(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
}

/// The per-thread buffers of one unit, carved from the scratch (64-byte aligned pieces).
struct Int8Scratch {
  int64_t d4 = 0;               // dwords of a Q/K row (head_size / 4, rounded up)
  int64_t kv16 = 0;             // kv_len rounded up to 16 (score columns)
  int64_t kv4 = 0;              // dwords of a probability row (kv_len / 4, rounded up)
  int64_t dv16 = 0;             // v_head_size rounded up to 16 (output columns)
  int8_t* q8 = nullptr;         // [rows][d4 * 4]
  int32_t* q_corr = nullptr;    // [rows] 128 * rowsum(q8)
  float* q_factor = nullptr;    // [rows] sq_i * scale
  int8_t* k8 = nullptr;         // [kv_len][d4 * 4], row-major before packing
  uint8_t* k_packed = nullptr;  // [d4][kv16][4]
  float* k_scale = nullptr;     // [kv16]
  int8_t* v8 = nullptr;         // [kv4 * 4][dv16], row-major before packing
  uint8_t* v_packed = nullptr;  // [kv4][dv16][4]
  int32_t* v_corr = nullptr;    // [dv16] 128 * colsum(v8)
  float* v_scale = nullptr;     // [dv16]
  uint32_t* v_bits = nullptr;   // [dv16] max |v| bits of each column (QuantizeColumns)
  float* v_inv = nullptr;       // [dv16] 127 / max |v| (QuantizeColumns)
  int32_t* acc = nullptr;       // [rows][max(kv16, dv16)]
  float* scores = nullptr;      // [rows][kv16] (the fp32 fallback's scores too)
  int8_t* p8 = nullptr;         // [rows][kv4 * 4], p8 - 128
  int32_t* p_sum = nullptr;     // [rows]
  int64_t bytes = 0;
};

Int8Scratch LayOutInt8Scratch(const AttentionF32Params& p, char* base) {
  Int8Scratch s;
  const int64_t rows = BlockRows(p);
  s.d4 = (p.head_size + 3) / 4;
  s.kv16 = RoundUp(p.kv_len, 16);
  s.kv4 = (p.kv_len + 3) / 4;
  s.dv16 = RoundUp(p.v_head_size, 16);
  int64_t at = 0;
  auto take = [&](auto*& ptr, int64_t count) {
    using T = std::remove_pointer_t<std::remove_reference_t<decltype(ptr)>>;
    ptr = base == nullptr ? nullptr : reinterpret_cast<T*>(base + at);
    at += RoundUp(count * static_cast<int64_t>(sizeof(T)), 64);
  };
  take(s.q8, rows * s.d4 * 4);
  take(s.q_corr, rows);
  take(s.q_factor, rows);
  take(s.k8, p.kv_len * s.d4 * 4);
  take(s.k_packed, s.d4 * s.kv16 * 4);
  take(s.k_scale, s.kv16);
  take(s.v8, s.kv4 * 4 * s.dv16);
  take(s.v_packed, s.kv4 * s.dv16 * 4);
  take(s.v_corr, s.dv16);
  take(s.v_scale, s.dv16);
  take(s.v_bits, s.dv16);
  take(s.v_inv, s.dv16);
  take(s.acc, rows * std::max(s.kv16, s.dv16));
  take(s.scores, rows * s.kv16);
  take(s.p8, rows * s.kv4 * 4);
  take(s.p_sum, rows);
  s.bytes = at;
  return s;
}

bool Int8Applies(const AttentionF32Params& p) {
  return p.kv_len > 0 && p.kv_len <= kInt8MaxKeys && p.head_size <= kInt8MaxLength &&
         p.v_head_size <= kInt8MaxLength;
}

/// V [kv_len, dv] (row stride ld) to int8 per column: v8 [kv4 * 4][dv16] (zero padded), the
/// column scales max_j |v| / 127 and 128 * colsum(v8). Returns false when a value is not finite.
inline __attribute__((always_inline)) bool QuantizeColumnsBody(
    const float* v, int64_t kv_len, int64_t dv, int64_t ld, int64_t padded_rows, int64_t dv16,
    int8_t* v8, float* scale, int32_t* corr, uint32_t* bits, float* inv) {
  for (int64_t d = 0; d < dv16; ++d) bits[d] = 0;
  for (int64_t j = 0; j < kv_len; ++j) {
    const float* vr = v + j * ld;
    for (int64_t d = 0; d < dv; ++d) {
      const uint32_t a = AbsBits(vr[d]);
      bits[d] = a > bits[d] ? a : bits[d];
    }
  }
  uint32_t all = 0;
  for (int64_t d = 0; d < dv16; ++d) all = bits[d] > all ? bits[d] : all;
  if (all >= kInfBits) return false;
  for (int64_t d = 0; d < dv16; ++d) {
    scale[d] = BitCast<float>(bits[d]);
    inv[d] = InverseStep(scale[d]);
  }
  for (int64_t j = 0; j < kv_len; ++j) {
    const float* vr = v + j * ld;
    int8_t* qr = v8 + j * dv16;
    for (int64_t d = 0; d < dv; ++d) qr[d] = QuantizeS8(vr[d], inv[d]);
    for (int64_t d = dv; d < dv16; ++d) qr[d] = 0;
  }
  for (int64_t j = kv_len; j < padded_rows; ++j) {
    for (int64_t d = 0; d < dv16; ++d) v8[j * dv16 + d] = 0;
  }
  for (int64_t d = 0; d < dv16; ++d) {
    scale[d] /= 127.0f;
    corr[d] = 0;
  }
  for (int64_t j = 0; j < kv_len; ++j) {
    for (int64_t d = 0; d < dv16; ++d) corr[d] += v8[j * dv16 + d];
  }
  for (int64_t d = 0; d < dv16; ++d) corr[d] = WrapMul(corr[d], 128);
  return true;
}
QCC_SIMD_VARIANTS(bool, QuantizeColumns,
                  (const float* v, int64_t kv_len, int64_t dv, int64_t ld, int64_t padded_rows,
                   int64_t dv16, int8_t* v8, float* scale, int32_t* corr, uint32_t* bits,
                   float* inv),
                  (v, kv_len, dv, ld, padded_rows, dv16, v8, scale, corr, bits, inv))

/// C[i, n] for n < 16 * nvec (the contract above), in plain C++ (exact integers: every build
/// gives the same results).
inline __attribute__((always_inline)) void ProductPlainBody(int64_t rows, int64_t t_count,
                                                            int64_t nvec, const int8_t* a,
                                                            int64_t lda, const uint8_t* b,
                                                            int32_t* c, int64_t ldc) {
  const int64_t n = 16 * nvec;
  for (int64_t i = 0; i < rows; ++i) {
    int32_t* ci = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) ci[j] = 0;
    for (int64_t t = 0; t < t_count; ++t) {
      const int8_t* at = a + i * lda + 4 * t;
      const uint8_t* bt = b + t * n * 4;
      for (int64_t j = 0; j < n; ++j) {
        int32_t s = 0;
        for (int e = 0; e < 4; ++e) s += int32_t{bt[4 * j + e]} * int32_t{at[e]};
        ci[j] = static_cast<int32_t>(static_cast<uint32_t>(ci[j]) + static_cast<uint32_t>(s));
      }
    }
  }
}
QCC_SIMD_VARIANTS(void, ProductPlain,
                  (int64_t rows, int64_t t_count, int64_t nvec, const int8_t* a, int64_t lda,
                   const uint8_t* b, int32_t* c, int64_t ldc),
                  (rows, t_count, nvec, a, lda, b, c, ldc))

/// ProductPlain's integers with AVX2 vpmaddwd on bytes widened to int16 (products of at most
/// 255 * 128 and pairs of them are exact in int32; vpmaddubsw would saturate). Per 4 bytes of a
/// column: its pairs (b0, b1) and (b2, b3) against a row's (a0, a1) and (a2, a3).
__attribute__((target("avx2"))) void ProductAvx2(int64_t rows, int64_t t_count, int64_t nvec,
                                                 const int8_t* a, int64_t lda, const uint8_t* b,
                                                 int32_t* c, int64_t ldc) {
  const int64_t n = 16 * nvec;
  // Within each 128-bit half: the bytes 0, 1 (then 2, 3) of each dword, zero-extended to int16.
  const __m256i lo_pairs =
      _mm256_setr_epi8(0, -1, 1, -1, 4, -1, 5, -1, 8, -1, 9, -1, 12, -1, 13, -1, 0, -1, 1, -1, 4,
                       -1, 5, -1, 8, -1, 9, -1, 12, -1, 13, -1);
  const __m256i hi_pairs =
      _mm256_setr_epi8(2, -1, 3, -1, 6, -1, 7, -1, 10, -1, 11, -1, 14, -1, 15, -1, 2, -1, 3, -1, 6,
                       -1, 7, -1, 10, -1, 11, -1, 14, -1, 15, -1);
  auto pair = [](int8_t lo, int8_t hi) {  // two int16 in a dword, lo first
    return static_cast<int32_t>(static_cast<uint16_t>(int16_t{lo}) |
                                (static_cast<uint32_t>(static_cast<uint16_t>(int16_t{hi})) << 16));
  };
  constexpr int64_t kRows = 4;
  for (int64_t i0 = 0; i0 < rows; i0 += kRows) {
    const int64_t mr = std::min(kRows, rows - i0);
    for (int64_t j0 = 0; j0 < n; j0 += 16) {
      __m256i acc[kRows][2];
      for (int64_t r = 0; r < kRows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
      for (int64_t t = 0; t < t_count; ++t) {
        const uint8_t* bt = b + (t * n + j0) * 4;
        const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bt));
        const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bt + 32));
        const __m256i b0l = _mm256_shuffle_epi8(b0, lo_pairs),
                      b0h = _mm256_shuffle_epi8(b0, hi_pairs);
        const __m256i b1l = _mm256_shuffle_epi8(b1, lo_pairs),
                      b1h = _mm256_shuffle_epi8(b1, hi_pairs);
        for (int64_t r = 0; r < mr; ++r) {
          const int8_t* at = a + (i0 + r) * lda + 4 * t;
          const __m256i al = _mm256_set1_epi32(pair(at[0], at[1]));
          const __m256i ah = _mm256_set1_epi32(pair(at[2], at[3]));
          acc[r][0] = _mm256_add_epi32(
              acc[r][0], _mm256_add_epi32(_mm256_madd_epi16(b0l, al), _mm256_madd_epi16(b0h, ah)));
          acc[r][1] = _mm256_add_epi32(
              acc[r][1], _mm256_add_epi32(_mm256_madd_epi16(b1l, al), _mm256_madd_epi16(b1h, ah)));
        }
      }
      for (int64_t r = 0; r < mr; ++r) {
        int32_t* cr = c + (i0 + r) * ldc + j0;
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(cr), acc[r][0]);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(cr + 8), acc[r][1]);
      }
    }
  }
}

/// The register tile of ProductVnni: kRows rows x kVecs vectors of 16 columns.
template <int kRows, int kVecs>
QCC_AVX512_VNNI void ProductTileVnni(int64_t t_count, int64_t n, const int8_t* a, int64_t lda,
                                     const uint8_t* b, int32_t* c, int64_t ldc) {
  __m512i acc[kRows][kVecs];
  for (int r = 0; r < kRows; ++r) {
    for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_setzero_si512();
  }
  for (int64_t t = 0; t < t_count; ++t) {
    __m512i bv[kVecs];
    for (int v = 0; v < kVecs; ++v) bv[v] = _mm512_loadu_si512(b + (t * n + 16 * v) * 4);
    for (int r = 0; r < kRows; ++r) {
      int32_t dword;
      std::memcpy(&dword, a + r * lda + 4 * t, 4);
      const __m512i av = _mm512_set1_epi32(dword);
      for (int v = 0; v < kVecs; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], bv[v], av);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int v = 0; v < kVecs; ++v) _mm512_storeu_si512(c + r * ldc + 16 * v, acc[r][v]);
  }
}

template <int kRows>
QCC_AVX512_VNNI void ProductRowsVnni(int64_t t_count, int64_t nvec, const int8_t* a, int64_t lda,
                                     const uint8_t* b, int32_t* c, int64_t ldc) {
  const int64_t n = 16 * nvec;
  int64_t v = 0;
  for (; v + 4 <= nvec; v += 4)
    ProductTileVnni<kRows, 4>(t_count, n, a, lda, b + v * 64, c + v * 16, ldc);
  switch (nvec - v) {
    case 3:
      return ProductTileVnni<kRows, 3>(t_count, n, a, lda, b + v * 64, c + v * 16, ldc);
    case 2:
      return ProductTileVnni<kRows, 2>(t_count, n, a, lda, b + v * 64, c + v * 16, ldc);
    case 1:
      return ProductTileVnni<kRows, 1>(t_count, n, a, lda, b + v * 64, c + v * 16, ldc);
    default:
      return;
  }
}

/// ProductPlain's integers with vpdpbusd (call only when QInt8HasVnni()).
QCC_AVX512_VNNI void ProductVnni(int64_t rows, int64_t t_count, int64_t nvec, const int8_t* a,
                                 int64_t lda, const uint8_t* b, int32_t* c, int64_t ldc) {
  int64_t i = 0;
  for (; i + 4 <= rows; i += 4)
    ProductRowsVnni<4>(t_count, nvec, a + i * lda, lda, b, c + i * ldc, ldc);
  switch (rows - i) {
    case 3:
      return ProductRowsVnni<3>(t_count, nvec, a + i * lda, lda, b, c + i * ldc, ldc);
    case 2:
      return ProductRowsVnni<2>(t_count, nvec, a + i * lda, lda, b, c + i * ldc, ldc);
    case 1:
      return ProductRowsVnni<1>(t_count, nvec, a + i * lda, lda, b, c + i * ldc, ldc);
    default:
      return;
  }
}

/// Scores of `rows` query rows: s[i, j] = float(C[i, j] - q_corr[i]) * q_factor[i] * k_scale[j],
/// plus add[i * add_row + j] when `add` is given.
inline __attribute__((always_inline)) void ScoresBody(int64_t rows, int64_t n, const int32_t* c,
                                                      int64_t ldc, const int32_t* q_corr,
                                                      const float* q_factor, const float* k_scale,
                                                      const float* add, int64_t add_row, float* s,
                                                      int64_t lds) {
  for (int64_t i = 0; i < rows; ++i) {
    const int32_t* ci = c + i * ldc;
    float* si = s + i * lds;
    const int32_t corr = q_corr[i];
    const float f = q_factor[i];
    for (int64_t j = 0; j < n; ++j) {
      const int32_t dot =
          static_cast<int32_t>(static_cast<uint32_t>(ci[j]) - static_cast<uint32_t>(corr));
      si[j] = static_cast<float>(dot) * f * k_scale[j];
    }
    if (add != nullptr) {
      const float* ai = add + i * add_row;
      for (int64_t j = 0; j < n; ++j) si[j] += ai[j];
    }
  }
}
QCC_SIMD_VARIANTS(void, Scores,
                  (int64_t rows, int64_t n, const int32_t* c, int64_t ldc, const int32_t* q_corr,
                   const float* q_factor, const float* k_scale, const float* add, int64_t add_row,
                   float* s, int64_t lds),
                  (rows, n, c, ldc, q_corr, q_factor, k_scale, add, add_row, s, lds))

/// Below it, round(255 e^x) is 0 (255 e^-16 = 2.9e-5).
constexpr float kProbExpLo = -16.0f;

// e^x for the x <= 0 of a score row minus its maximum, where only round(255 e^x) is kept, so
// float accuracy is not needed: e^x = 2^n e^r with n = round(x / ln2) and r = x - n ln2 (ln2 in
// ExpF32's two parts), e^r = 1 + r + r^2 (c0 + c1 r + c2 r^2), a minimax fit of relative error
// 5.9e-6 on |r| <= ln2 / 2 made for qcc (255 e^x off by under 0.0015), by fused multiply-adds:
// 14 operations where ExpF32's reduction and polynomial take 26. x is clamped to kProbExpLo, so
// that no result is denormal (slow on some CPUs: a masked position is e^-3.4e38) and a NaN (a
// row of -inf scores, inf - inf) gives 0. ExpProbX16 below is the same, operation for operation.
constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: (v + kRound) - kRound rounds v to int
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
constexpr float kExpC0 = 0.5000553131103516f, kExpC1 = 0.16756972670555115f;
constexpr float kExpC2 = 0.04126216098666191f;

inline __attribute__((always_inline)) float ExpProbF32(float x) {
  const float xc = x > kProbExpLo ? x : kProbExpLo;
  const float n = FmaF32(xc, kLog2e, kRound) - kRound;
  float r = FmaF32(n, -kLn2Hi, xc);
  r = FmaF32(n, -kLn2Lo, r);
  float q = FmaF32(kExpC2, r, kExpC1);
  q = FmaF32(q, r, kExpC0);
  const float p = FmaF32(q, r * r, r) + 1.0f;
  return p * BitCast<float>(static_cast<int32_t>((static_cast<int32_t>(n) + 127) << 23));
}

/// Probabilities of `rows` score rows: p = round(255 e^(s - max s)) in [0, 255], stored as
/// p - 128 with -128 (p = 0) past n up to `padded`, and each row's sum of p.
inline __attribute__((always_inline)) void ProbsBody(int64_t rows, int64_t n, int64_t padded,
                                                     const float* s, int64_t lds, int8_t* p8,
                                                     int32_t* p_sum) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* si = s + i * lds;
    int8_t* pi = p8 + i * padded;
    const float m = RowMax(si, n);
    int32_t sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      const float e = ExpProbF32(si[j] - m) * 255.0f;  // in [0, 255]: e^x <= 1 for x <= 0
      const int32_t pu = static_cast<int32_t>(std::nearbyint(e));
      pi[j] = static_cast<int8_t>(pu - 128);
      sum += pu;
    }
    for (int64_t j = n; j < padded; ++j) pi[j] = -128;
    p_sum[i] = sum;
  }
}
QCC_SIMD_VARIANTS(void, Probs,
                  (int64_t rows, int64_t n, int64_t padded, const float* s, int64_t lds, int8_t* p8,
                   int32_t* p_sum),
                  (rows, n, padded, s, lds, p8, p_sum))

/// ExpProbF32 on 16 lanes, operation for operation.
QCC_AVX512_VNNI inline __m512 ExpProbX16(__m512 x) {
  const __m512 round = _mm512_set1_ps(kRound);
  const __m512 xc = _mm512_max_ps(x, _mm512_set1_ps(kProbExpLo));  // NaN takes the bound
  const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(xc, _mm512_set1_ps(kLog2e), round), round);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kLn2Hi), xc);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(-kLn2Lo), r);
  __m512 q = _mm512_fmadd_ps(_mm512_set1_ps(kExpC2), r, _mm512_set1_ps(kExpC1));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(kExpC0));
  const __m512 p = _mm512_add_ps(_mm512_fmadd_ps(q, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
  const __m512i e =
      _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

/// ProbsBody with AVX-512, operation for operation (the maximum in RowMax's lane order).
QCC_AVX512_VNNI void ProbsVnni(int64_t rows, int64_t n, int64_t padded, const float* s, int64_t lds,
                               int8_t* p8, int32_t* p_sum) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* si = s + i * lds;
    int8_t* pi = p8 + i * padded;
    __m512 mv = _mm512_set1_ps(si[0]);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) mv = _mm512_max_ps(_mm512_loadu_ps(si + j), mv);
    float lanes[16];
    _mm512_storeu_ps(lanes, mv);
    for (; j < n; ++j) lanes[0] = si[j] > lanes[0] ? si[j] : lanes[0];
    float m = lanes[0];
    for (int k = 1; k < 16; ++k) m = lanes[k] > m ? lanes[k] : m;
    const __m512 mx = _mm512_set1_ps(m);
    const __m512 k255 = _mm512_set1_ps(255.0f);
    const __m512i k128 = _mm512_set1_epi32(128);
    __m512i sum = _mm512_setzero_si512();
    // Whole vectors narrow in registers and store plainly: the masked narrowing store
    // (vpmovdb to memory) cost a third of this function on Zen 4. Rounding is to nearest even,
    // as std::nearbyint's.
    for (j = 0; j + 16 <= n; j += 16) {
      const __m512 e = _mm512_mul_ps(ExpProbX16(_mm512_sub_ps(_mm512_loadu_ps(si + j), mx)), k255);
      const __m512i pu = _mm512_cvt_roundps_epi32(e, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      sum = _mm512_add_epi32(sum, pu);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(pi + j),
                       _mm512_cvtepi32_epi8(_mm512_sub_epi32(pu, k128)));
    }
    if (j < n) {
      const __mmask16 mask = LowBits16(n - j);
      const __m512 e =
          _mm512_mul_ps(ExpProbX16(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, si + j), mx)), k255);
      const __m512i pu =
          _mm512_maskz_cvt_roundps_epi32(mask, e, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      sum = _mm512_add_epi32(sum, pu);
      _mm512_mask_cvtepi32_storeu_epi8(pi + j, mask, _mm512_sub_epi32(pu, k128));
    }
    for (j = n; j < padded; ++j) pi[j] = -128;
    p_sum[i] = _mm512_reduce_add_epi32(sum);
  }
}

/// Y rows: y[i, d] = float(C[i, d] - 128 p_sum[i] + 16384 N + v_corr[d]) / p_sum[i] * v_scale[d].
inline __attribute__((always_inline)) void OutputBody(int64_t rows, int64_t dv, int64_t padded,
                                                      const int32_t* c, int64_t ldc,
                                                      const int32_t* p_sum, const int32_t* v_corr,
                                                      const float* v_scale, float* y, int64_t ldy) {
  for (int64_t i = 0; i < rows; ++i) {
    const int32_t* ci = c + i * ldc;
    float* yi = y + i * ldy;
    const uint32_t row_corr = static_cast<uint32_t>(WrapMul(p_sum[i], 128)) -
                              static_cast<uint32_t>(WrapMul(static_cast<int32_t>(padded), 16384));
    const float inv = 1.0f / static_cast<float>(p_sum[i]);
    for (int64_t d = 0; d < dv; ++d) {
      const int32_t dot = static_cast<int32_t>(static_cast<uint32_t>(ci[d]) - row_corr +
                                               static_cast<uint32_t>(v_corr[d]));
      yi[d] = static_cast<float>(dot) * inv * v_scale[d];
    }
  }
}
QCC_SIMD_VARIANTS(void, Output,
                  (int64_t rows, int64_t dv, int64_t padded, const int32_t* c, int64_t ldc,
                   const int32_t* p_sum, const int32_t* v_corr, const float* v_scale, float* y,
                   int64_t ldy),
                  (rows, dv, padded, c, ldc, p_sum, v_corr, v_scale, y, ldy))

/// K's int8 rows (k8 [kv_len][d4 * 4]) to the B layout [d4][kv16][4] as u8 (k8 + 128); the
/// padded positions hold 128 (k8 = 0).
void PackK(const Int8Scratch& s, int64_t kv_len) {
  for (int64_t t = 0; t < s.d4; ++t) {
    uint8_t* row = s.k_packed + t * s.kv16 * 4;
    for (int64_t j = 0; j < kv_len; ++j) {
      uint32_t dword;  // 4 bytes of k8 (memcpy: the buffers hold bytes, not uint32 objects)
      std::memcpy(&dword, s.k8 + (j * s.d4 + t) * 4, 4);
      dword ^= 0x80808080u;
      std::memcpy(row + 4 * j, &dword, 4);
    }
    std::memset(row + 4 * kv_len, 0x80, 4 * (s.kv16 - kv_len));
  }
}

/// V's int8 rows (v8 [kv4 * 4][dv16]) to the B layout [kv4][dv16][4] as u8 (v8 + 128).
void PackV(const Int8Scratch& s) {
  for (int64_t t = 0; t < s.kv4; ++t) {
    const uint8_t* r0 = reinterpret_cast<const uint8_t*>(s.v8) + 4 * t * s.dv16;
    uint8_t* out = s.v_packed + t * s.dv16 * 4;
    for (int64_t d = 0; d < s.dv16; ++d) {
      for (int e = 0; e < 4; ++e) out[4 * d + e] = r0[e * s.dv16 + d] ^ 0x80u;
    }
  }
}

/// One unit of AttentionInt8 (AttentionUnitF32's rows); false when Q, K or V holds a value that
/// is not finite (the caller then runs the unit in fp32).
bool AttentionUnitInt8(const AttentionF32Params& p, int64_t b, int64_t h, int64_t row0,
                       int64_t rows, const float* q, const float* k, const float* v,
                       const float* mask, float* y, const Int8Scratch& s, QKernelPath path) {
  // kFastest here means AVX-512 VNNI (the caller checked); kAvx2 the AVX2 products.
  const bool vnni = path == QKernelPath::kFastest;
  const int64_t g = h / (p.q_heads / p.kv_heads);
  const int64_t dk = s.d4 * 4, padded = s.kv4 * 4;
  const auto quantize_rows = vnni ? QuantizeRowsS8 : QuantizeRowsS8Reference;
  if (!quantize_rows(q + b * p.q.batch + h * p.q.head + row0 * p.q.row, rows, p.head_size, p.q.row,
                     s.q8, dk, s.q_factor, s.q_corr) ||
      !quantize_rows(k + b * p.k.batch + g * p.k.head, p.kv_len, p.head_size, p.k.row, s.k8, dk,
                     s.k_scale, s.acc) ||
      !QuantizeColumns(v + b * p.v.batch + g * p.v.head, p.kv_len, p.v_head_size, p.v.row, padded,
                       s.dv16, s.v8, s.v_scale, s.v_corr, s.v_bits, s.v_inv)) {
    return false;
  }
  for (int64_t i = 0; i < rows; ++i) {
    s.q_factor[i] *= p.scale;
    s.q_corr[i] = WrapMul(s.q_corr[i], 128);
  }
  for (int64_t j = p.kv_len; j < s.kv16; ++j) s.k_scale[j] = 0.0f;
  PackK(s, p.kv_len);
  PackV(s);
  const auto product = vnni ? ProductVnni : path == QKernelPath::kAvx2 ? ProductAvx2 : ProductPlain;
  product(rows, s.d4, s.kv16 / 16, s.q8, dk, s.k_packed, s.acc, s.kv16);
  const float* mask_rows =
      mask == nullptr ? nullptr : mask + b * p.mask.batch + h * p.mask.head + row0 * p.mask.row;
  const bool row_mask = mask_rows != nullptr && p.mask.col == 1;
  Scores(rows, p.kv_len, s.acc, s.kv16, s.q_corr, s.q_factor, s.k_scale,
         row_mask ? mask_rows : nullptr, p.mask.row, s.scores, s.kv16);
  if (mask_rows != nullptr && !row_mask) {  // a mask constant along each row
    for (int64_t i = 0; i < rows; ++i) {
      const float* m = mask_rows + i * p.mask.row;
      for (int64_t j = 0; j < p.kv_len; ++j) s.scores[i * s.kv16 + j] += m[j * p.mask.col];
    }
  }
  (vnni ? ProbsVnni : Probs)(rows, p.kv_len, padded, s.scores, s.kv16, s.p8, s.p_sum);
  product(rows, s.kv4, s.dv16 / 16, s.p8, padded, s.v_packed, s.acc, s.dv16);
  Output(rows, p.v_head_size, padded, s.acc, s.dv16, s.p_sum, s.v_corr, s.v_scale,
         y + b * p.y.batch + h * p.y.head + row0 * p.y.row, p.y.row);
  return true;
}

void AttentionInt8On(const AttentionF32Params& p, const float* q, const float* k, const float* v,
                     const float* mask, float* y, void* scratch, QKernelPath path) {
  if (p.batch == 0 || p.q_heads == 0 || p.q_len == 0 || p.v_head_size == 0) return;
  char* base = static_cast<char*>(scratch);
  if (!Int8Applies(p)) {
    AttentionF32(p, q, k, v, mask, y, reinterpret_cast<float*>(base));
    return;
  }
  const int64_t rows_per_block = BlockRows(p);
  const int64_t blocks = (p.q_len + rows_per_block - 1) / rows_per_block;
  const int64_t units = p.batch * p.q_heads * blocks;
  const int64_t per_thread = LayOutInt8Scratch(p, nullptr).bytes;
  const int64_t cost = rows_per_block * p.kv_len * (p.head_size + p.v_head_size + 32) / 4;
  NnParallelFor(ScratchThreads(p), units, cost, [&](int64_t begin, int64_t end, int thread) {
    const Int8Scratch s = LayOutInt8Scratch(p, base + thread * per_thread);
    for (int64_t u = begin; u < end; ++u) {
      const int64_t block = u % blocks, bh = u / blocks;
      const int64_t b = bh / p.q_heads, h = bh % p.q_heads;
      const int64_t row0 = block * rows_per_block;
      const int64_t rows = std::min(rows_per_block, p.q_len - row0);
      if (!AttentionUnitInt8(p, b, h, row0, rows, q, k, v, mask, y, s, path)) {
        AttentionUnitF32(p, b, h, row0, rows, q, k, v, mask, y, s.scores);
      }
    }
  });
}

}  // namespace

AttentionF32Params Attention3dParams(int64_t batch, int64_t q_len, int64_t kv_len, int64_t q_hidden,
                                     int64_t v_hidden, int64_t q_heads, int64_t kv_heads,
                                     const std::vector<int64_t>& mask_dims, float scale,
                                     int num_threads) {
  AttentionF32Params p;
  p.batch = batch;
  p.q_heads = q_heads;
  p.kv_heads = kv_heads;
  p.q_len = q_len;
  p.kv_len = kv_len;
  p.head_size = q_hidden / q_heads;
  p.v_head_size = v_hidden / kv_heads;
  const int64_t kv_hidden = p.head_size * kv_heads, y_hidden = p.v_head_size * q_heads;
  p.q = {q_len * q_hidden, p.head_size, q_hidden};
  p.k = {kv_len * kv_hidden, p.head_size, kv_hidden};
  p.v = {kv_len * v_hidden, p.v_head_size, v_hidden};
  p.y = {q_len * y_hidden, p.v_head_size, y_hidden};
  // Dense strides of the mask right-aligned to [batch, heads, q_len, kv_len]; 0 where it is 1.
  int64_t strides[4] = {0, 0, 0, 0};
  int64_t stride = 1;
  for (size_t i = mask_dims.size(); i-- > 0;) {
    const size_t axis = 4 - mask_dims.size() + i;
    strides[axis] = mask_dims[i] == 1 ? 0 : stride;
    stride *= mask_dims[i];
  }
  p.mask.batch = strides[0];
  p.mask.head = strides[1];
  p.mask.row = strides[2];
  p.mask.col = strides[3];
  p.scale = scale;
  p.num_threads = num_threads;
  return p;
}

int64_t AttentionF32ScratchFloats(const AttentionF32Params& p) {
  return ScratchThreads(p) * BlockRows(p) * p.kv_len;
}

void AttentionF32(const AttentionF32Params& p, const float* q, const float* k, const float* v,
                  const float* mask, float* y, float* scratch) {
  if (p.batch == 0 || p.q_heads == 0 || p.q_len == 0 || p.v_head_size == 0) return;
  const int64_t rows_per_block = BlockRows(p);
  const int64_t blocks = (p.q_len + rows_per_block - 1) / rows_per_block;
  const int64_t units = p.batch * p.q_heads * blocks;
  const int64_t cost = rows_per_block * p.kv_len * (p.head_size + p.v_head_size + 8);
  NnParallelFor(ScratchThreads(p), units, cost, [&](int64_t begin, int64_t end, int thread) {
    float* scores = scratch + thread * rows_per_block * p.kv_len;
    for (int64_t u = begin; u < end; ++u) {
      const int64_t block = u % blocks, bh = u / blocks;
      const int64_t b = bh / p.q_heads, h = bh % p.q_heads;
      const int64_t row0 = block * rows_per_block;
      const int64_t rows = std::min(rows_per_block, p.q_len - row0);
      AttentionUnitF32(p, b, h, row0, rows, q, k, v, mask, y, scores);
    }
  });
}

int64_t AttentionInt8ScratchBytes(const AttentionF32Params& p) {
  const int64_t f32 = AttentionF32ScratchFloats(p) * static_cast<int64_t>(sizeof(float));
  if (!Int8Applies(p)) return f32;
  return std::max(f32, ScratchThreads(p) * LayOutInt8Scratch(p, nullptr).bytes);
}

void AttentionInt8(const AttentionF32Params& p, const float* q, const float* k, const float* v,
                   const float* mask, float* y, void* scratch, QKernelPath path) {
  // kFastest: VNNI where the CPU has it, else AVX2, else plain; kVnni: VNNI, else plain; kAvx2:
  // AVX2 where the CPU has it, else plain; kReference: plain.
  QKernelPath run = QKernelPath::kReference;
  if ((path == QKernelPath::kFastest || path == QKernelPath::kVnni) && Cpu().avx512_vnni()) {
    run = QKernelPath::kFastest;
  } else if ((path == QKernelPath::kFastest || path == QKernelPath::kAvx2) && Cpu().avx2) {
    run = QKernelPath::kAvx2;
  }
  AttentionInt8On(p, q, k, v, mask, y, scratch, run);
}

}  // namespace qcc::cpu
