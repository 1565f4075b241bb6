// AVX2 path of the int8 GEMM (contract in qgemm.h) for CPUs without AVX-512 VNNI;
// bit-identical to QGemmReference (exact int16 products by vpmaddwd, int32 sums modulo 2^32,
// RequantizeX8), which tests/backend_cpu/int8_gemm_test.cc checks.
//
// Output columns (n) run along the vector lanes, so y rows are stored directly. Packed weights:
// blocks of 8 columns, [block][k / 2][lane] dwords each holding b[n, k], b[n, k + 1] as int16
// (zero past N and K). Activations are widened per register tile into a stack buffer of int16
// pairs, a chunk of k at a time. Register tile: 4 rows x 24 columns (12 ymm accumulators); per
// 2 k: 3 loads, 4 broadcasts of a pair of a, 12 vpmaddwd and 12 vpaddd.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/qint8_avx2_internal.h"
#include "support/int_math.h"
#include "support/tensor.h"

namespace qcc::cpu::internal {

namespace {

constexpr int64_t kMr = 4;       // rows of a per register tile
constexpr int64_t kNv = 3;       // 8-column vectors per register tile
constexpr int64_t kPairs = 256;  // k pairs of a widened per chunk (2 KiB per row)

/// Widens a[k0, k0 + 2 * pairs) (zero past k) into int16 pairs.
QCC_AVX2 void WidenPairs(const int8_t* a, int64_t k, int64_t k0, int64_t pairs, uint32_t* dst) {
  int64_t i = 0;
  for (; i + 8 <= pairs && k0 + 2 * i + 16 <= k; i += 8) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + k0 + 2 * i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_cvtepi8_epi16(v));
  }
  for (; i < pairs; ++i) {
    const int64_t kk = k0 + 2 * i;
    dst[i] = Int16Pair(a[kk], kk + 1 < k ? a[kk + 1] : 0);
  }
}

// Named accumulators c<row><vector>, as in the conv tiles.
#define QCC_GEMM_LOAD(r) \
  __m256i c##r##0 = acc[r * kNv], c##r##1 = acc[r * kNv + 1], c##r##2 = acc[r * kNv + 2];
#define QCC_GEMM_MADD(r)                                                        \
  {                                                                             \
    const __m256i av = _mm256_set1_epi32(static_cast<int>(a[r * kPairs + i]));  \
    c##r##0 = _mm256_add_epi32(c##r##0, _mm256_madd_epi16(b0, av));             \
    if (NV > 1) c##r##1 = _mm256_add_epi32(c##r##1, _mm256_madd_epi16(b1, av)); \
    if (NV > 2) c##r##2 = _mm256_add_epi32(c##r##2, _mm256_madd_epi16(b2, av)); \
  }
#define QCC_GEMM_SAVE(r) \
  acc[r * kNv] = c##r##0, acc[r * kNv + 1] = c##r##1, acc[r * kNv + 2] = c##r##2;

/// Accumulates `pairs` k pairs of kMr rows (`a`: [kMr][kPairs] widened pairs) against NV column
/// vectors of `b` (at the chunk's first pair; `block_bytes` between column blocks) into `acc`
/// ([kMr][kNv] vectors).
template <int NV>
QCC_AVX2 void GemmChunk(const uint32_t* a, const uint8_t* b, int64_t block_bytes, int64_t pairs,
                        __m256i* acc) {
  QCC_GEMM_LOAD(0);
  QCC_GEMM_LOAD(1);
  QCC_GEMM_LOAD(2);
  QCC_GEMM_LOAD(3);
  for (int64_t i = 0; i < pairs; ++i) {
    const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + i * 32));
    const __m256i b1 =
        NV > 1 ? _mm256_load_si256(reinterpret_cast<const __m256i*>(b + block_bytes + i * 32)) : b0;
    const __m256i b2 =
        NV > 2 ? _mm256_load_si256(reinterpret_cast<const __m256i*>(b + 2 * block_bytes + i * 32))
               : b0;
    QCC_GEMM_MADD(0);
    QCC_GEMM_MADD(1);
    QCC_GEMM_MADD(2);
    QCC_GEMM_MADD(3);
  }
  QCC_GEMM_SAVE(0);
  QCC_GEMM_SAVE(1);
  QCC_GEMM_SAVE(2);
  QCC_GEMM_SAVE(3);
}

#undef QCC_GEMM_LOAD
#undef QCC_GEMM_MADD
#undef QCC_GEMM_SAVE

using GemmChunkFn = void (*)(const uint32_t*, const uint8_t*, int64_t, int64_t, __m256i*);
constexpr GemmChunkFn kGemmChunks[kNv] = {GemmChunk<1>, GemmChunk<2>, GemmChunk<3>};

/// Units [begin, end), unit = column chunk * row blocks + row block.
QCC_AVX2 void GemmUnits(const QGemmParams& p, const uint8_t* packed, int64_t begin, int64_t end) {
  const int64_t m_blocks = CeilDiv(p.m, kMr), n_blocks = CeilDiv(p.n, 8);
  const int64_t k2 = CeilDiv(p.k, 2), block_bytes = k2 * 32;
  const __m256i zp = _mm256_set1_epi32(p.zp_out);
  const __m256 lo = _mm256_set1_ps(static_cast<float>(p.lo - p.zp_out));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(p.hi - p.zp_out));
  alignas(32) uint32_t a[kMr * kPairs];
  for (int64_t u = begin; u < end; ++u) {
    const int64_t nc = u / m_blocks, mb = u % m_blocks;
    const int64_t m0 = mb * kMr, mr = std::min(kMr, p.m - m0);
    const int64_t n0 = nc * kNv * 8, nv = std::min(kNv, n_blocks - nc * kNv);
    const int64_t n_valid = std::min(nv * 8, p.n - n0);
    // Columns past N: bias 0 and multiplier 0 (computed, not stored).
    alignas(32) int32_t bias[kNv * 8] = {};
    alignas(32) float multiplier[kNv * 8] = {};
    alignas(32) float fbias[kNv * 8] = {};
    for (int64_t j = 0; j < n_valid; ++j) {
      bias[j] = p.bias != nullptr ? p.bias[n0 + j] : 0;
      multiplier[j] = p.multiplier[n0 + j];
      fbias[j] = p.bias_f32 != nullptr ? p.bias_f32[n0 + j] : 0.0f;
    }
    __m256i acc[kMr * kNv];
    for (int64_t r = 0; r < kMr; ++r) {
      for (int64_t j = 0; j < kNv; ++j) {
        acc[r * kNv + j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(bias + 8 * j));
      }
    }
    const uint8_t* b = packed + nc * kNv * block_bytes;
    for (int64_t i0 = 0; i0 < k2; i0 += kPairs) {
      const int64_t pairs = std::min(kPairs, k2 - i0);
      // Rows past mr repeat the last row (computed, not stored).
      for (int64_t r = 0; r < kMr; ++r) {
        WidenPairs(p.a + (m0 + std::min(r, mr - 1)) * p.k, p.k, 2 * i0, pairs, a + r * kPairs);
      }
      kGemmChunks[nv - 1](a, b + i0 * 32, block_bytes, pairs, acc);
    }
    for (int64_t j = 0; j < nv; ++j) {
      const __m256 m = _mm256_load_ps(multiplier + 8 * j);
      const int64_t cols = std::min<int64_t>(8, n_valid - 8 * j);
      if (p.y_f32 !=
          nullptr) {  // fp32 result: float(acc) * m [* row] + bias + add, as the reference
        const __m256 fb = _mm256_load_ps(fbias + 8 * j);
        for (int64_t r = 0; r < mr; ++r) {
          __m256 x = _mm256_mul_ps(_mm256_cvtepi32_ps(acc[r * kNv + j]), m);
          if (p.row_scale != nullptr) x = _mm256_mul_ps(x, _mm256_set1_ps(p.row_scale[m0 + r]));
          x = _mm256_add_ps(x, fb);
          float* y = p.y_f32 + (m0 + r) * p.n + n0 + 8 * j;
          if (p.add_f32 != nullptr) {
            alignas(32) float add[8] = {};
            std::memcpy(add, p.add_f32 + (y - p.y_f32), cols * sizeof(float));
            x = _mm256_add_ps(x, _mm256_load_ps(add));
          }
          if (cols == 8) {
            _mm256_storeu_ps(y, x);
          } else {
            alignas(32) float values[8];
            _mm256_store_ps(values, x);
            std::memcpy(y, values, cols * sizeof(float));
          }
        }
        continue;
      }
      for (int64_t r = 0; r < mr; ++r) {
        const __m128i q = RequantizeX8(acc[r * kNv + j], m, zp, lo, hi);
        int8_t* y = p.y + (m0 + r) * p.n + n0 + 8 * j;
        if (cols == 8) {
          _mm_storel_epi64(reinterpret_cast<__m128i*>(y), q);
        } else {
          alignas(16) int8_t bytes[16];
          _mm_store_si128(reinterpret_cast<__m128i*>(bytes), q);
          std::memcpy(y, bytes, cols);
        }
      }
    }
  }
}

}  // namespace

void PackQGemmAvx2(const QGemmParams& p, PackedQGemmWeights* w) {
  const int64_t n_blocks = CeilDiv(p.n, 8), k2 = CeilDiv(p.k, 2);
  w->packed = Tensor::AllocateStorage(std::max<int64_t>(1, n_blocks * k2 * 32));
  uint32_t* dst = reinterpret_cast<uint32_t*>(w->packed.get());
  const auto b = [&](int64_t n, int64_t k) -> int8_t {
    return n < p.n && k < p.k ? p.b[n * p.k + k] : 0;
  };
  for (int64_t nb = 0; nb < n_blocks; ++nb) {
    for (int64_t i = 0; i < k2; ++i) {
      for (int64_t lane = 0; lane < 8; ++lane) {
        *dst++ = Int16Pair(b(nb * 8 + lane, 2 * i), b(nb * 8 + lane, 2 * i + 1));
      }
    }
  }
  w->layout = PackedQGemmWeights::Layout::kAvx2;
}

void QGemmAvx2(const QGemmParams& p, const PackedQGemmWeights& w) {
  const int64_t m_blocks = CeilDiv(p.m, kMr), n_chunks = CeilDiv(CeilDiv(p.n, 8), kNv);
  const uint8_t* packed = w.packed.get();
  NnParallelFor(p.num_threads, m_blocks * n_chunks, kMr * kNv * 8 * p.k,
                [&](int64_t begin, int64_t end) { GemmUnits(p, packed, begin, end); });
}

}  // namespace qcc::cpu::internal
