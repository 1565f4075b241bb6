// AVX-512 VNNI path of the int8 GEMM (contract in qgemm.h); bit-identical to QGemmReference,
// which tests/backend_cpu/int8_gemm_test.cc checks.
//
// Output columns (n) run along the vector lanes, so y rows are stored directly. vpdpbusd takes
// unsigned x signed bytes and only the signed operand can be a broadcast, so here the weights
// are the unsigned operand: packing stores b_u8 = b + 128, and
//   sum_k a[m, k] * b[n, k] = sum_k a[m, k] * b_u8[n, k] - 128 * rowsum(a[m]),
// with rowsum computed per row at run time (one vpdpbusd per 64 bytes of a). All of it modulo
// 2^32, like the reference. Packed layout: blocks of 16 columns, [block][k / 4][lane][k % 4],
// columns past N and k past K padded (their products are dropped or multiply a's zero padding).
// Register tile: 6 rows x 64 columns (24 zmm accumulators); per 4 k: 4 loads, 6 broadcasts of a
// dword of a, 24 vpdpbusd.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/qint8_vnni_internal.h"
#include "support/int_math.h"
#include "support/tensor.h"

namespace qcc::cpu::internal {

namespace {

constexpr int64_t kMr = 6;  // rows of a per register tile
constexpr int64_t kNv = 4;  // 16-column vectors per register tile

/// The `n` (0..3) bytes at p as the low bytes of a dword, the rest zero.
int32_t LoadPartialDword(const int8_t* p, int64_t n) {
  uint8_t bytes[4] = {0, 0, 0, 0};
  if (n > 0) std::memcpy(bytes, p, n);
  int32_t v;
  std::memcpy(&v, bytes, 4);
  return v;
}

int32_t LoadDword(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

/// sum_k a[k] modulo 2^32 (exact for any realistic K).
QCC_VNNI int32_t RowSum(const int8_t* a, int64_t k) {
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i acc = _mm512_setzero_si512();
  for (int64_t i = 0; i < k; i += 64) {
    acc = _mm512_dpbusd_epi32(acc, ones, _mm512_maskz_loadu_epi8(LowBits64(k - i), a + i));
  }
  alignas(64) int32_t lanes[16];
  _mm512_store_si512(lanes, acc);
  uint32_t sum = 0;
  for (int32_t v : lanes) sum += static_cast<uint32_t>(v);
  return static_cast<int32_t>(sum);
}

struct GemmOut {
  int8_t* y;               // row 0, column 0 of the tile (int8 result), or null
  float* yf;               // the same for an fp32 result (QGemmParams::y_f32), or null
  const float* fbias;      // at the tile's column 0 with yf, or null
  const float* yadd;       // with yf: the residual at the tile's row 0, column 0 (ldy), or null
  const float* row_scale;  // with yf: kMr per-row factors (QGemmParams::row_scale), or null
  int64_t ldy;
  int64_t rows;         // rows of the tile that exist (1..kMr)
  const int32_t* bias;  // at the tile's column 0, or null
  const float* multiplier;
  int64_t n_valid;          // columns of the tile that exist (may exceed the tile's width)
  const int32_t* row_corr;  // kMr values: -128 * rowsum(a[m])
  int32_t zp, lo, hi;
};

/// Column vector j of row r: adds the row's correction, requantizes (or scales to fp32 and adds
/// the float bias, then the residual), stores the valid columns at `offset` from the tile's row 0,
/// column 0.
QCC_VNNI inline void StoreVector(__m512i acc, int32_t corr, __m512 multiplier, __m512 fbias,
                                 __mmask16 cols, int64_t offset, const GemmOut& o, int r) {
  if (o.yf != nullptr) {
    constexpr __mmask16 kAll = 0xFFFF;
    const __m512i v = _mm512_add_epi32(acc, _mm512_set1_epi32(corr));
    __m512 x = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(kAll, v), multiplier);
    if (o.row_scale != nullptr) x = _mm512_mul_ps(x, _mm512_set1_ps(o.row_scale[r]));
    __m512 y = _mm512_add_ps(x, fbias);
    if (o.yadd != nullptr) y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(cols, o.yadd + offset));
    _mm512_mask_storeu_ps(o.yf + offset, cols, y);
    return;
  }
  int8_t* y = o.y + offset;
  const __m512i zp = _mm512_set1_epi32(o.zp);
  const __m512 lo = _mm512_set1_ps(static_cast<float>(o.lo - o.zp));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(o.hi - o.zp));
  const __m512i v = _mm512_add_epi32(acc, _mm512_set1_epi32(corr));
  _mm_mask_storeu_epi8(y, cols, RequantizeX16(v, multiplier, zp, lo, hi));
}

// Named accumulators c<row><vector> (GCC keeps an array of them in memory). Rows past o.rows
// repeat the last row's data and are not stored.
#define QCC_GEMM_INIT(r) __m512i c##r##0 = bias0, c##r##1 = bias1, c##r##2 = bias2, c##r##3 = bias3;
#define QCC_GEMM_DP(r)                                          \
  {                                                             \
    const __m512i av = _mm512_set1_epi32(LoadDword(a##r));      \
    a##r += 4;                                                  \
    c##r##0 = _mm512_dpbusd_epi32(c##r##0, b0, av);             \
    if (NV > 1) c##r##1 = _mm512_dpbusd_epi32(c##r##1, b1, av); \
    if (NV > 2) c##r##2 = _mm512_dpbusd_epi32(c##r##2, b2, av); \
    if (NV > 3) c##r##3 = _mm512_dpbusd_epi32(c##r##3, b3, av); \
  }
#define QCC_GEMM_STEP                                                               \
  const __m512i b0 = _mm512_load_si512(b + i * 64);                                 \
  const __m512i b1 = NV > 1 ? _mm512_load_si512(b + block_bytes + i * 64) : b0;     \
  const __m512i b2 = NV > 2 ? _mm512_load_si512(b + 2 * block_bytes + i * 64) : b0; \
  const __m512i b3 = NV > 3 ? _mm512_load_si512(b + 3 * block_bytes + i * 64) : b0; \
  QCC_GEMM_DP(0);                                                                   \
  QCC_GEMM_DP(1);                                                                   \
  QCC_GEMM_DP(2);                                                                   \
  QCC_GEMM_DP(3);                                                                   \
  QCC_GEMM_DP(4);                                                                   \
  QCC_GEMM_DP(5);
#define QCC_GEMM_STORE(r, j) \
  if (r < o.rows) StoreVector(c##r##j, o.row_corr[r], m, fb, cols, r* o.ldy + 16 * j, o, r);
#define QCC_GEMM_STORE_COLUMN(j)                                                                  \
  if (NV > j) {                                                                                   \
    const __mmask16 cols = static_cast<__mmask16>(LowBits64(o.n_valid - 16 * j));                 \
    const __m512 m = _mm512_castsi512_ps(                                                         \
        _mm512_maskz_loadu_epi32(cols, reinterpret_cast<const int32_t*>(o.multiplier + 16 * j))); \
    const __m512 fb =                                                                             \
        o.fbias != nullptr ? _mm512_maskz_loadu_ps(cols, o.fbias + 16 * j) : _mm512_setzero_ps(); \
    QCC_GEMM_STORE(0, j);                                                                         \
    QCC_GEMM_STORE(1, j);                                                                         \
    QCC_GEMM_STORE(2, j);                                                                         \
    QCC_GEMM_STORE(3, j);                                                                         \
    QCC_GEMM_STORE(4, j);                                                                         \
    QCC_GEMM_STORE(5, j);                                                                         \
  }

/// Bias of columns [16j, 16j + 16) of the tile (0 past n_valid or without bias).
QCC_VNNI inline __m512i BiasVector(const GemmOut& o, int j) {
  const __mmask16 cols = static_cast<__mmask16>(LowBits64(o.n_valid - 16 * j));
  return o.bias != nullptr ? _mm512_maskz_loadu_epi32(cols, o.bias + 16 * j)
                           : _mm512_setzero_si512();
}

/// kMr rows x NV * 16 columns: accumulate over k, then requantize and store.
template <int NV>
QCC_VNNI void GemmTile(const int8_t* a, int64_t k, const uint8_t* b, int64_t block_bytes,
                       const GemmOut& o) {
  const int8_t* a0 = a;
  const int8_t* a1 = a + std::min<int64_t>(1, o.rows - 1) * k;
  const int8_t* a2 = a + std::min<int64_t>(2, o.rows - 1) * k;
  const int8_t* a3 = a + std::min<int64_t>(3, o.rows - 1) * k;
  const int8_t* a4 = a + std::min<int64_t>(4, o.rows - 1) * k;
  const int8_t* a5 = a + std::min<int64_t>(5, o.rows - 1) * k;
  const __m512i bias0 = BiasVector(o, 0);
  const __m512i bias1 = NV > 1 ? BiasVector(o, 1) : bias0;
  const __m512i bias2 = NV > 2 ? BiasVector(o, 2) : bias0;
  const __m512i bias3 = NV > 3 ? BiasVector(o, 3) : bias0;
  QCC_GEMM_INIT(0);
  QCC_GEMM_INIT(1);
  QCC_GEMM_INIT(2);
  QCC_GEMM_INIT(3);
  QCC_GEMM_INIT(4);
  QCC_GEMM_INIT(5);
  // The last k % 4 values of each row, zero-padded to a dword; the loop reads them through
  // the row pointers in its last step, so one loop (one register allocation) covers all of k.
  const int64_t k4 = k / 4, steps = (k + 3) / 4;
  int32_t tails[kMr];
  tails[0] = LoadPartialDword(a0 + 4 * k4, k % 4);
  tails[1] = LoadPartialDword(a1 + 4 * k4, k % 4);
  tails[2] = LoadPartialDword(a2 + 4 * k4, k % 4);
  tails[3] = LoadPartialDword(a3 + 4 * k4, k % 4);
  tails[4] = LoadPartialDword(a4 + 4 * k4, k % 4);
  tails[5] = LoadPartialDword(a5 + 4 * k4, k % 4);
  const int8_t* t = reinterpret_cast<const int8_t*>(tails);
  for (int64_t i = 0; i < steps; ++i) {
    if (i == k4) {
      a0 = t;
      a1 = t + 4;
      a2 = t + 8;
      a3 = t + 12;
      a4 = t + 16;
      a5 = t + 20;
    }
    QCC_GEMM_STEP;
  }
  QCC_GEMM_STORE_COLUMN(0);
  QCC_GEMM_STORE_COLUMN(1);
  QCC_GEMM_STORE_COLUMN(2);
  QCC_GEMM_STORE_COLUMN(3);
}

#undef QCC_GEMM_INIT
#undef QCC_GEMM_DP
#undef QCC_GEMM_STEP
#undef QCC_GEMM_STORE
#undef QCC_GEMM_STORE_COLUMN

using GemmTileFn = void (*)(const int8_t*, int64_t, const uint8_t*, int64_t, const GemmOut&);
constexpr GemmTileFn kGemmTiles[kNv] = {GemmTile<1>, GemmTile<2>, GemmTile<3>, GemmTile<4>};

/// Units [begin, end), unit = column chunk * row blocks + row block. `corr` holds every row's
/// correction -128 * sum_k a[row, k] (the weights are packed as b + 128).
QCC_VNNI void GemmUnits(const QGemmParams& p, const uint8_t* packed, const int32_t* corr,
                        int64_t begin, int64_t end) {
  const int64_t m_blocks = CeilDiv(p.m, kMr), n_blocks = CeilDiv(p.n, 16);
  const int64_t block_bytes = CeilDiv(p.k, 4) * 64;
  for (int64_t u = begin; u < end; ++u) {
    const int64_t nc = u / m_blocks, mb = u % m_blocks;
    const int64_t m0 = mb * kMr, mr = std::min(kMr, p.m - m0);
    const int64_t n0 = nc * kNv * 16, nv = std::min(kNv, n_blocks - nc * kNv);
    GemmOut o;
    o.y = p.y != nullptr ? p.y + m0 * p.n + n0 : nullptr;
    o.yf = p.y_f32 != nullptr ? p.y_f32 + m0 * p.n + n0 : nullptr;
    o.fbias = p.bias_f32 != nullptr ? p.bias_f32 + n0 : nullptr;
    o.yadd = p.add_f32 != nullptr ? p.add_f32 + m0 * p.n + n0 : nullptr;
    o.row_scale = p.row_scale != nullptr ? p.row_scale + m0 : nullptr;
    o.ldy = p.n;
    o.rows = mr;
    o.bias = p.bias != nullptr ? p.bias + n0 : nullptr;
    o.multiplier = p.multiplier + n0;
    o.n_valid = p.n - n0;
    o.row_corr = corr + m0;
    o.zp = p.zp_out;
    o.lo = p.lo;
    o.hi = p.hi;
    kGemmTiles[nv - 1](p.a + m0 * p.k, p.k, packed + nc * kNv * block_bytes, block_bytes, o);
  }
}

}  // namespace

void PackQGemmVnni(const QGemmParams& p, PackedQGemmWeights* w) {
  const int64_t n_blocks = CeilDiv(p.n, 16), k4 = CeilDiv(p.k, 4);
  w->packed = Tensor::AllocateStorage(n_blocks * k4 * 64);
  uint8_t* dst = w->packed.get();
  for (int64_t nb = 0; nb < n_blocks; ++nb) {
    for (int64_t i = 0; i < k4 * 64; ++i) {
      const int64_t n = nb * 16 + i % 64 / 4, k = i / 64 * 4 + i % 4;
      const int8_t b = n < p.n && k < p.k ? p.b[n * p.k + k] : 0;
      *dst++ = static_cast<uint8_t>(b) ^ 0x80;  // b + 128
    }
  }
  w->layout = PackedQGemmWeights::Layout::kVnni;
}

QCC_VNNI void QGemmVnni(const QGemmParams& p, const PackedQGemmWeights& w) {
  const int64_t m_blocks = CeilDiv(p.m, kMr), n_chunks = CeilDiv(CeilDiv(p.n, 16), kNv);
  const uint8_t* packed = w.packed.get();
  // The row corrections once per call (each row block meets every column chunk: computed in
  // the tile loop they were summed n_chunks times, 6% of a transformer's int8 time).
  // (The thread_local buffer is used through a pointer: named inside the lambdas the workers
  // run, it would be each worker's own, empty, vector.)
  thread_local std::vector<int32_t> corr_buffer;
  corr_buffer.resize(p.m);
  int32_t* corr = corr_buffer.data();
  NnParallelFor(p.num_threads, p.m, p.k, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      corr[r] = Wrap32(int64_t{-128} * RowSum(p.a + r * p.k, p.k));
    }
  });
  NnParallelFor(p.num_threads, m_blocks * n_chunks, kMr * kNv * 16 * p.k,
                [&](int64_t begin, int64_t end) { GemmUnits(p, packed, corr, begin, end); });
}

}  // namespace qcc::cpu::internal
