// The AVX-512 VNNI 1x1 int8 convolution for small maps (packed for maps of at most 64
// positions, as the 7 x 7 layers of ImageNet networks; any map runs), output channels to the
// lanes: the direct path (qconv_vnni.cc) puts positions in the lanes, and 49 positions fill
// only 49 of its 64 (a 77% share of every vpdpbusd). Integer sums are exact modulo 2^32 in any
// order, so this is bit-identical to QConvReference as the other paths are (the x + 128
// algebra of qconv_vnni.cc).
//
// Per image and chunk of 64 positions, the input is rewritten as channel quads: [C / 4][64]
// dwords of 4 channels (x ^ 0x80), once per thread while the chunk is the image's only one.
// A unit is (image, block of 48 output channels): register tiles of up to 7 positions x 3
// vectors of 16 output channels (21 accumulators) take, per quad, 3 weight loads, one broadcast
// per position and 21 vpdpbusd; their requantized bytes go to a [position][48] staging buffer,
// and 16 x 16 byte transposes write the output rows. On 14 x 14 maps the direct path stays
// faster (480 -> 80 channels: 0.018 against 0.023 ms), so only maps of <= 64 positions pack
// this way.
// Packed weights: [block][C / 4][48] dwords of 4 input channels, zero-padded past K and C.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/qint8_vnni_internal.h"
#include "support/int_math.h"
#include "support/tensor.h"

namespace qcc::cpu::internal {

namespace {

constexpr int64_t kMaxPositions = 64;
constexpr int64_t kBlock = 48;  // output channels per unit: 3 vectors
constexpr int kMaxTile = 7;     // positions per register tile

struct PointwiseGeometry {
  int64_t positions, chunks, c4, blocks;
  int64_t quads_bytes;    // per thread: c4 planes of 64 dwords
  int64_t staging_bytes;  // per thread: 64 positions x kBlock bytes
};

PointwiseGeometry PointwiseGeometryOf(const QConvParams& p) {
  PointwiseGeometry g;
  g.positions = p.h * p.w;
  g.chunks = CeilDiv(g.positions, kMaxPositions);
  g.c4 = CeilDiv(p.c, 4);
  g.blocks = CeilDiv(p.k, kBlock);
  g.quads_bytes = g.c4 * kMaxPositions * 4;
  g.staging_bytes = kMaxPositions * kBlock;
  return g;
}

struct PointwiseContext {
  const QConvParams* p;
  const PackedQConvWeights* w;
  PointwiseGeometry g;
  uint8_t* buffers;  // per thread: quads_bytes, then staging_bytes
  ByteTransposeIndex transpose;
};

/// The channel quads of positions [first, first + count) of image n into `quads` (count <= 64;
/// lanes past it are zero).
QCC_VNNI void RewriteChunk(const PointwiseContext& ctx, int64_t n, int64_t first, int64_t count,
                           uint32_t* quads) {
  const QConvParams& p = *ctx.p;
  const PointwiseGeometry& g = ctx.g;
  const __mmask64 bytes = LowBits64(count);
  const int8_t* x = p.input + n * p.c * g.positions + first;
  for (int64_t c4 = 0; c4 < g.c4; ++c4) {
    __m512i r[4], out[4];
    for (int q = 0; q < 4; ++q) {
      const int64_t c = 4 * c4 + q;
      r[q] = c < p.c ? _mm512_maskz_loadu_epi8(bytes, x + c * g.positions) : _mm512_setzero_si512();
    }
    InterleaveQuads64(r, out);
    for (int i = 0; i < 4; ++i) _mm512_store_si512(quads + c4 * kMaxPositions + 16 * i, out[i]);
  }
}

/// A unit's constants for its tiles, read from memory after the accumulation (in registers
/// they would crowd out the accumulators).
struct TileConstants {
  alignas(64) int32_t init[kBlock];  // bias + correction per output channel (0 past K)
  alignas(64) float multiplier[kBlock];
  int32_t zp, lo, hi;
};

/// One position's 48 accumulators (started at 0; bias + correction join them here, int32
/// addition modulo 2^32 in any order), requantized into its staging row. The constants are
/// read here, not held across the tile's loop, where they would crowd out its accumulators.
QCC_VNNI inline void StorePosition(__m512i a0, __m512i a1, __m512i a2, const TileConstants& k,
                                   uint8_t* row) {
  const __m512i zp = _mm512_set1_epi32(k.zp);
  const __m512 lo = _mm512_set1_ps(static_cast<float>(k.lo - k.zp));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(k.hi - k.zp));
  __m128i* out = reinterpret_cast<__m128i*>(row);
  const __m512i a[3] = {a0, a1, a2};
  for (int j = 0; j < 3; ++j) {
    const __m512i acc = _mm512_add_epi32(a[j], _mm512_load_si512(k.init + 16 * j));
    _mm_store_si128(out + j, RequantizeX16(acc, _mm512_load_ps(k.multiplier + 16 * j), zp, lo, hi));
  }
}

// The tile's accumulators are named registers, c<position><vector> (GCC keeps an array of them
// in memory); positions past TP are not computed.
#define QCC_PW_INIT(i) \
  __m512i c##i##0 = _mm512_setzero_si512(), c##i##1 = c##i##0, c##i##2 = c##i##0;
#define QCC_PW_DP(i)                                                 \
  if (i < TP) {                                                      \
    const __m512i x = _mm512_set1_epi32(static_cast<int>(quads[i])); \
    c##i##0 = _mm512_dpbusd_epi32(c##i##0, x, w0);                   \
    c##i##1 = _mm512_dpbusd_epi32(c##i##1, x, w1);                   \
    c##i##2 = _mm512_dpbusd_epi32(c##i##2, x, w2);                   \
  }
#define QCC_PW_STORE(i) \
  if (i < TP) StorePosition(c##i##0, c##i##1, c##i##2, k, staging + i * kBlock);

/// TP positions (quads + p0 ..) x kBlock output channels: accumulate over every quad, then
/// requantize into staging rows p0 .. p0 + TP - 1.
template <int TP>
QCC_VNNI void PointwiseTile(const uint32_t* quads, int64_t c4s, const __m512i* w,
                            const TileConstants& k, uint8_t* staging) {
  QCC_PW_INIT(0);
  QCC_PW_INIT(1);
  QCC_PW_INIT(2);
  QCC_PW_INIT(3);
  QCC_PW_INIT(4);
  QCC_PW_INIT(5);
  QCC_PW_INIT(6);
  for (int64_t c = 0; c < c4s; ++c, quads += kMaxPositions, w += 3) {
    const __m512i w0 = _mm512_load_si512(w), w1 = _mm512_load_si512(w + 1);
    const __m512i w2 = _mm512_load_si512(w + 2);
    QCC_PW_DP(0);
    QCC_PW_DP(1);
    QCC_PW_DP(2);
    QCC_PW_DP(3);
    QCC_PW_DP(4);
    QCC_PW_DP(5);
    QCC_PW_DP(6);
  }
  QCC_PW_STORE(0);
  QCC_PW_STORE(1);
  QCC_PW_STORE(2);
  QCC_PW_STORE(3);
  QCC_PW_STORE(4);
  QCC_PW_STORE(5);
  QCC_PW_STORE(6);
}

#undef QCC_PW_INIT
#undef QCC_PW_DP
#undef QCC_PW_STORE

using TileFn = void (*)(const uint32_t*, int64_t, const __m512i*, const TileConstants&, uint8_t*);
constexpr TileFn kTiles[kMaxTile] = {PointwiseTile<1>, PointwiseTile<2>, PointwiseTile<3>,
                                     PointwiseTile<4>, PointwiseTile<5>, PointwiseTile<6>,
                                     PointwiseTile<7>};

QCC_VNNI void PointwiseUnits(const PointwiseContext& ctx, int64_t begin, int64_t end, int thread) {
  const QConvParams& p = *ctx.p;
  const PointwiseGeometry& g = ctx.g;
  uint8_t* buf = ctx.buffers + thread * (g.quads_bytes + g.staging_bytes);
  uint32_t* quads = reinterpret_cast<uint32_t*>(buf);
  uint8_t* staging = buf + g.quads_bytes;
  const __m512i* packed = reinterpret_cast<const __m512i*>(ctx.w->packed.get());
  int64_t loaded = -1;  // the image whose only chunk `quads` holds
  for (int64_t u = begin; u < end; ++u) {
    const int64_t n = u / g.blocks, blk = u % g.blocks;
    const int64_t k0 = blk * kBlock, kn = std::min(kBlock, p.k - k0);
    TileConstants k;
    k.zp = p.zp_out;
    k.lo = p.lo;
    k.hi = p.hi;
    for (int64_t i = 0; i < kBlock; ++i) {
      k.init[i] =
          i < kn ? WrapAdd(p.bias != nullptr ? p.bias[k0 + i] : 0, ctx.w->correction[k0 + i]) : 0;
      k.multiplier[i] = i < kn ? p.multiplier[k0 + i] : 0.0f;
    }
    const __m512i* w = packed + blk * g.c4 * 3;
    for (int64_t chunk = 0; chunk < g.chunks; ++chunk) {
      const int64_t first = chunk * kMaxPositions;
      const int64_t count = std::min(kMaxPositions, g.positions - first);
      if (g.chunks > 1 || n != loaded) {
        RewriteChunk(ctx, n, first, count, quads);
        loaded = n;
      }
      for (int64_t p0 = 0; p0 < count; p0 += kMaxTile) {
        const int64_t tp = std::min<int64_t>(kMaxTile, count - p0);
        kTiles[tp - 1](quads + p0, g.c4, w, k, staging + p0 * kBlock);
      }
      WriteStagedOutput(p, ctx.transpose, staging, kBlock, n, k0, kn, first, count);
    }
  }
}

}  // namespace

QCC_VNNI void WriteStagedOutput(const QConvParams& p, const ByteTransposeIndex& transpose,
                                const uint8_t* staging, int64_t stride, int64_t n, int64_t k0,
                                int64_t kn, int64_t first, int64_t count) {
  const int64_t positions = p.out_h() * p.out_w();
  ResidualAddV add;
  if (p.residual != nullptr) add = MakeResidualAddV(p.add);
  __m512i idx[4];
  for (int i = 0; i < 4; ++i) idx[i] = _mm512_load_si512(transpose.v[i]);
  for (int64_t p0 = 0; p0 < count; p0 += 16) {
    const __mmask16 store = static_cast<__mmask16>(LowBits64(count - p0));
    for (int64_t j = 0; 16 * j < kn; ++j) {
      __m512i z[4];
      for (int k = 0; k < 4; ++k) {
        // Positions p0 + 4k .. p0 + 4k + 3, 16 channels each (rows past the map: garbage,
        // never stored).
        const uint8_t* row = staging + (p0 + 4 * k) * stride + 16 * j;
        z[k] = _mm512_zextsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row)));
        for (int i = 1; i < 4; ++i) {
          z[k] =
              _mm512_mask_loadu_epi32(z[k], static_cast<__mmask16>(0xF << (4 * i)),
                                      reinterpret_cast<const int32_t*>(row + i * stride) - 4 * i);
        }
      }
      __m512i o[4];
      Transpose16x16Bytes(z, idx, o);
      alignas(64) uint8_t rows[4][64];
      for (int m = 0; m < 4; ++m) _mm512_store_si512(rows[m], o[m]);
      const int64_t channels = std::min<int64_t>(16, kn - 16 * j);
      const int64_t at = (n * p.k + k0 + 16 * j) * positions + first + p0;
      int8_t* y = p.output + at;
      for (int64_t c = 0; c < channels; ++c) {
        __m128i v = _mm_load_si128(reinterpret_cast<const __m128i*>(rows[c / 4] + c % 4 * 16));
        if (p.residual != nullptr) {
          const __m128i r = _mm_maskz_loadu_epi8(store, p.residual + at + c * positions);
          v = AddResidualX16(_mm512_maskz_cvtepi8_epi32(0xFFFF, v), r, add);
        }
        _mm_mask_storeu_epi8(y + c * positions, store, v);
      }
    }
  }
}

bool QConvPointwiseVnniPacks(const QConvParams& p) {
  return p.r == 1 && p.s == 1 && p.group == 1 && p.stride_h == 1 && p.stride_w == 1 &&
         p.pad_top == 0 && p.pad_left == 0 && p.pad_bottom == 0 && p.pad_right == 0 &&
         p.h * p.w <= kMaxPositions && p.k >= 16;
}

void PackQConvPointwiseVnni(const QConvParams& p, PackedQConvWeights* w) {
  const int64_t c4 = CeilDiv(p.c, 4), blocks = CeilDiv(p.k, kBlock);
  w->packed = Tensor::AllocateStorage(blocks * c4 * kBlock * 4);
  uint8_t* dst = w->packed.get();
  for (int64_t blk = 0; blk < blocks; ++blk) {
    for (int64_t q = 0; q < c4; ++q) {
      for (int64_t i = 0; i < kBlock * 4; ++i) {
        const int64_t k = blk * kBlock + i / 4, c = 4 * q + i % 4;
        *dst++ = k < p.k && c < p.c ? static_cast<uint8_t>(p.weights[k * p.c + c]) : 0;
      }
    }
  }
  w->layout = PackedQConvWeights::Layout::kVnniPointwise;
}

int64_t QConvPointwiseVnniThreadBytes(const QConvParams& p) {
  const PointwiseGeometry g = PointwiseGeometryOf(p);
  return g.quads_bytes + g.staging_bytes;
}

QCC_VNNI void QConvPointwiseVnni(const QConvParams& p, const PackedQConvWeights& w,
                                 uint8_t* workspace) {
  PointwiseContext ctx;
  ctx.p = &p;
  ctx.w = &w;
  ctx.g = PointwiseGeometryOf(p);
  ctx.buffers = workspace;
  ctx.transpose = MakeByteTransposeIndex();
  const int64_t cost = kBlock * ctx.g.positions * p.c;
  NnParallelFor(
      p.num_threads, p.n * ctx.g.blocks, cost,
      [&ctx](int64_t begin, int64_t end, int thread) { PointwiseUnits(ctx, begin, end, thread); });
}

}  // namespace qcc::cpu::internal
