// The AVX-512 VNNI int8 convolution for small padded or strided maps (one group, K of blocks of
// 48 or 64 channels, at most kMaxPositions output positions: a ResNet's 8x8 stage, an ImageNet
// network's 13x13 and 14x14 3x3 layers), output channels to the lanes. The direct path
// (qconv_vnni.cc) puts virtual positions in the lanes, and computes the padding columns of its
// phase planes too: on an 8x8 map with pad 1 only 64 of its 80 lanes are outputs, on 16x16 256 of
// 288. Here every lane is an output channel of a real position, read from the same phase planes
// (qconv_planes_vnni.h): a register tile is up to 24 / NVK positions x NVK vectors of 16 output
// channels, and per (tap, channel quad) takes NVK weight loads, one broadcast per position and NVK
// vpdpbusd per position. Its requantized bytes go to a [position][channels] staging buffer that 16
// x 16 byte transposes write out as NCHW rows (WriteStagedOutput). Integer sums are exact modulo
// 2^32 in any order, so this is bit-identical to QConvReference as the other paths are (the x + 128
// algebra of qconv_vnni.cc). Measured (1 thread, Zen 4, bench/int8_conv_bench): resnet20's 64 -> 64
// 3x3 on 8x8 297-319 -> 355-371 GOPS, squeezenet1.1's 48 -> 192 and 64 -> 256 3x3 on 13x13 326-347
// -> 370-412 GOPS; on 27x27 (729 positions, 27 of 29 lanes outputs in the direct path) within 3%.
//
// A unit is (image, chunk of positions, block of 16 NVK output channels); a thread rewrites an
// image's planes once for its units of it. Packed weights: [block][tap][C / 4][16 NVK] dwords of
// 4 input channels, zero-padded past K and C.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/qconv_planes_vnni.h"
#include "kernels/cpu/qint8_vnni_internal.h"
#include "support/int_math.h"
#include "support/tensor.h"

namespace qcc::cpu::internal {

namespace {

constexpr int64_t kMaxPositions = 256;
constexpr int kMaxNvk = 4;    // vectors of 16 output channels per tile
constexpr int kMaxTile = 12;  // positions per tile (NVK 2)
constexpr int kAccumulators = 24;

/// Vectors of 16 output channels per block for K channels: the fewest padded lanes, then the
/// most vectors (more positions share each weight load the fewer there are).
int64_t VectorsPerBlock(int64_t k) {
  int64_t best = 2;
  for (int64_t nvk : {3, 4}) {
    if (RoundUp(k, 16 * nvk) <= RoundUp(k, 16 * best)) best = nvk;
  }
  return best;
}

struct SmallMapGeometry : PhasePlanes {
  int64_t taps, positions;
  int64_t nvk, block, blocks;  // block = 16 nvk output channels
  int64_t max_tile;            // positions per register tile: kAccumulators / nvk
  int64_t chunk, chunks;       // positions per unit (a multiple of 16 but for the last)
  int64_t staging_bytes;       // per thread: RoundUp(chunk, 16) rows of `block` bytes
};

SmallMapGeometry SmallMapGeometryOf(const QConvParams& p) {
  SmallMapGeometry g;
  static_cast<PhasePlanes&>(g) = PhasePlanesOf(p);
  g.taps = p.r * p.s;
  g.positions = g.oh * g.ow;
  g.nvk = VectorsPerBlock(p.k);
  g.block = 16 * g.nvk;
  g.blocks = CeilDiv(p.k, g.block);
  g.max_tile = kAccumulators / g.nvk;
  // Whole images, unless the threads need more units than images x blocks give.
  const int64_t threads = std::max(1, p.num_threads);
  const int64_t want = CeilDiv(2 * threads, std::max<int64_t>(1, p.n * g.blocks));
  g.chunk = threads > 1 && want > 1 ? RoundUp(CeilDiv(g.positions, want), 16) : g.positions;
  g.chunk = std::min(g.chunk, g.positions);
  g.chunks = CeilDiv(g.positions, g.chunk);
  g.staging_bytes = RoundUp(RoundUp(g.chunk, 16) * g.block, 64);
  return g;
}

/// A unit's constants for its tiles, read from memory after the accumulation (in registers
/// they would crowd out the accumulators).
struct TileConstants {
  alignas(64) int32_t init[16 * kMaxNvk];  // bias + correction per output channel (0 past K)
  alignas(64) float multiplier[16 * kMaxNvk];
  int32_t zp, lo, hi;
};

/// One position's NVK accumulator vectors (started at 0; bias + correction join them here,
/// int32 addition modulo 2^32 in any order), requantized into its staging row.
template <int NVK>
QCC_VNNI inline void StorePosition(__m512i a0, __m512i a1, __m512i a2, __m512i a3,
                                   const TileConstants& k, uint8_t* row) {
  const __m512i zp = _mm512_set1_epi32(k.zp);
  const __m512 lo = _mm512_set1_ps(static_cast<float>(k.lo - k.zp));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(k.hi - k.zp));
  __m128i* out = reinterpret_cast<__m128i*>(row);
  const __m512i a[4] = {a0, a1, a2, a3};
  for (int j = 0; j < NVK; ++j) {
    const __m512i acc = _mm512_add_epi32(a[j], _mm512_load_si512(k.init + 16 * j));
    _mm_storeu_si128(out + j,
                     RequantizeX16(acc, _mm512_load_ps(k.multiplier + 16 * j), zp, lo, hi));
  }
}

// The tile's accumulators are named registers, c<position>_<vector> (GCC keeps an array of them
// in memory); positions past TP and vectors past NVK are not computed.
#define QCC_SM_INIT(i)                                                                 \
  __m512i c##i##_0 = _mm512_setzero_si512(), c##i##_1 = c##i##_0, c##i##_2 = c##i##_0, \
          c##i##_3 = c##i##_0;
#define QCC_SM_DP(i)                                                                        \
  if (i < TP) {                                                                             \
    const __m512i x = _mm512_set1_epi32(*reinterpret_cast<const int32_t*>(bp[i] + offset)); \
    c##i##_0 = _mm512_dpbusd_epi32(c##i##_0, x, w0);                                        \
    if (NVK > 1) c##i##_1 = _mm512_dpbusd_epi32(c##i##_1, x, w1);                           \
    if (NVK > 2) c##i##_2 = _mm512_dpbusd_epi32(c##i##_2, x, w2);                           \
    if (NVK > 3) c##i##_3 = _mm512_dpbusd_epi32(c##i##_3, x, w3);                           \
  }
#define QCC_SM_STORE(i) \
  if (i < TP) StorePosition<NVK>(c##i##_0, c##i##_1, c##i##_2, c##i##_3, k, staging + i * block);

/// TP positions (their dwords in the first plane at bp[0..TP)) x NVK * 16 output channels:
/// accumulate over every (tap, quad), then requantize into staging rows 0..TP-1 (`block` bytes
/// apart). `w` is the block's packed weights [tap][quad][NVK].
template <int NVK, int TP>
QCC_VNNI void SmallMapTile(const uint8_t* const* bp, const int64_t* tap_offset, int64_t taps,
                           int64_t c4s, int64_t plane_bytes, const __m512i* w,
                           const TileConstants& k, uint8_t* staging, int64_t block) {
  QCC_SM_INIT(0)
  QCC_SM_INIT(1)
  QCC_SM_INIT(2)
  QCC_SM_INIT(3)
  QCC_SM_INIT(4)
  QCC_SM_INIT(5)
  QCC_SM_INIT(6)
  QCC_SM_INIT(7)
  QCC_SM_INIT(8)
  QCC_SM_INIT(9)
  QCC_SM_INIT(10)
  QCC_SM_INIT(11)
  for (int64_t t = 0; t < taps; ++t) {
    int64_t offset = tap_offset[t];
    for (int64_t c = 0; c < c4s; ++c, offset += plane_bytes, w += NVK) {
      const __m512i w0 = _mm512_load_si512(w);
      const __m512i w1 = NVK > 1 ? _mm512_load_si512(w + 1) : w0;
      const __m512i w2 = NVK > 2 ? _mm512_load_si512(w + 2) : w0;
      const __m512i w3 = NVK > 3 ? _mm512_load_si512(w + 3) : w0;
      QCC_SM_DP(0)
      QCC_SM_DP(1)
      QCC_SM_DP(2)
      QCC_SM_DP(3)
      QCC_SM_DP(4)
      QCC_SM_DP(5)
      QCC_SM_DP(6)
      QCC_SM_DP(7)
      QCC_SM_DP(8)
      QCC_SM_DP(9)
      QCC_SM_DP(10)
      QCC_SM_DP(11)
    }
  }
  QCC_SM_STORE(0)
  QCC_SM_STORE(1)
  QCC_SM_STORE(2)
  QCC_SM_STORE(3)
  QCC_SM_STORE(4)
  QCC_SM_STORE(5)
  QCC_SM_STORE(6)
  QCC_SM_STORE(7)
  QCC_SM_STORE(8)
  QCC_SM_STORE(9)
  QCC_SM_STORE(10)
  QCC_SM_STORE(11)
}

#undef QCC_SM_INIT
#undef QCC_SM_DP
#undef QCC_SM_STORE

using TileFn = void (*)(const uint8_t* const*, const int64_t*, int64_t, int64_t, int64_t,
                        const __m512i*, const TileConstants&, uint8_t*, int64_t);
#define QCC_SM_TILES(NVK)                                                                         \
  {                                                                                               \
    SmallMapTile<NVK, 1>, SmallMapTile<NVK, 2>, SmallMapTile<NVK, 3>, SmallMapTile<NVK, 4>,       \
        SmallMapTile<NVK, 5>, SmallMapTile<NVK, 6>, SmallMapTile<NVK, 7>, SmallMapTile<NVK, 8>,   \
        SmallMapTile<NVK, 9>, SmallMapTile<NVK, 10>, SmallMapTile<NVK, 11>, SmallMapTile<NVK, 12> \
  }
// [NVK - 2][TP - 1]; tiles past kAccumulators / NVK positions are never called.
constexpr TileFn kTiles[3][kMaxTile] = {QCC_SM_TILES(2), QCC_SM_TILES(3), QCC_SM_TILES(4)};
#undef QCC_SM_TILES

struct SmallMapContext {
  const QConvParams* p;
  const PackedQConvWeights* w;
  SmallMapGeometry g;
  const int64_t* tap_offset;  // bytes from a position's dword to its (tap, quad 0) one
  uint8_t* buffers;           // per thread: g.image_bytes of planes, then g.staging_bytes
  ByteTransposeIndex transpose;
  alignas(64) uint8_t idx[64];
};

/// Units [begin, end): unit = (image * chunks + chunk) * blocks + block.
QCC_VNNI void SmallMapUnits(const SmallMapContext& ctx, int64_t begin, int64_t end, int thread) {
  const QConvParams& p = *ctx.p;
  const SmallMapGeometry& g = ctx.g;
  uint8_t* planes = ctx.buffers + thread * (g.image_bytes + g.staging_bytes);
  uint8_t* staging = planes + g.image_bytes;
  const __m512i* packed = reinterpret_cast<const __m512i*>(ctx.w->packed.get());
  const int64_t block_vectors = g.taps * g.c4 * g.nvk;
  int64_t loaded = -1;  // the image whose planes `planes` holds
  for (int64_t u = begin; u < end; ++u) {
    const int64_t n = u / (g.chunks * g.blocks), chunk = u / g.blocks % g.chunks;
    const int64_t blk = u % g.blocks;
    if (n != loaded) {
      // The padding as the thread's first image of the call left it.
      FillPhasePlanes(p, g, ctx.idx, p.input + n * p.c * p.h * p.w,
                      reinterpret_cast<uint32_t*>(planes), 0, g.plane, loaded >= 0);
      loaded = n;
    }
    const int64_t k0 = blk * g.block, kn = std::min(g.block, p.k - k0);
    TileConstants k;
    k.zp = p.zp_out;
    k.lo = p.lo;
    k.hi = p.hi;
    for (int64_t i = 0; i < g.block; ++i) {
      k.init[i] =
          i < kn ? WrapAdd(p.bias != nullptr ? p.bias[k0 + i] : 0, ctx.w->correction[k0 + i]) : 0;
      k.multiplier[i] = i < kn ? p.multiplier[k0 + i] : 0.0f;
    }
    const int64_t first = chunk * g.chunk, count = std::min(g.chunk, g.positions - first);
    const int64_t tiles = CeilDiv(count, g.max_tile);
    for (int64_t t = 0; t < tiles; ++t) {
      // Tiles of sizes one apart at most.
      const int64_t p0 = t * count / tiles, tp = (t + 1) * count / tiles - p0;
      const uint8_t* bp[kMaxTile];
      for (int64_t i = 0; i < tp; ++i) {
        const int64_t pos = first + p0 + i;
        bp[i] = planes + (pos / g.ow * g.phase_w + pos % g.ow) * 4;
      }
      kTiles[g.nvk - 2][tp - 1](bp, ctx.tap_offset, g.taps, g.c4, g.plane * 4,
                                packed + blk * block_vectors, k, staging + p0 * g.block, g.block);
    }
    WriteStagedOutput(p, ctx.transpose, staging, g.block, n, k0, kn, first, count);
  }
}

}  // namespace

bool QConvSmallMapVnniPacks(const QConvParams& p) {
  // Where the direct path's lanes include padding columns (phase planes wider than the output),
  // and blocks of 3 or 4 vectors fit K (with 2, the tile's 12 positions and 2 weight loads were
  // no faster than the direct path on 16x16 maps of K = 32).
  if (p.group != 1 || p.out_h() * p.out_w() > kMaxPositions || QConvPointwiseVnniPacks(p) ||
      VectorsPerBlock(p.k) < 3) {
    return false;
  }
  return CeilDiv(p.w + p.pad_left + p.pad_right, p.stride_w) > p.out_w();
}

void PackQConvSmallMapVnni(const QConvParams& p, PackedQConvWeights* w) {
  const SmallMapGeometry g = SmallMapGeometryOf(p);
  w->packed = Tensor::AllocateStorage(g.blocks * g.taps * g.c4 * g.block * 4);
  uint8_t* dst = w->packed.get();
  for (int64_t blk = 0; blk < g.blocks; ++blk) {
    for (int64_t tap = 0; tap < g.taps; ++tap) {
      for (int64_t q = 0; q < g.c4; ++q) {
        for (int64_t i = 0; i < g.block * 4; ++i) {
          const int64_t k = blk * g.block + i / 4, c = 4 * q + i % 4;
          *dst++ = k < p.k && c < p.c
                       ? static_cast<uint8_t>(p.weights[(k * p.c + c) * g.taps + tap])
                       : 0;
        }
      }
    }
  }
  w->layout = PackedQConvWeights::Layout::kVnniSmallMap;
}

int64_t QConvSmallMapVnniThreadBytes(const QConvParams& p) {
  const SmallMapGeometry g = SmallMapGeometryOf(p);
  return g.image_bytes + g.staging_bytes;  // both 64-byte multiples
}

QCC_VNNI void QConvSmallMapVnni(const QConvParams& p, const PackedQConvWeights& w,
                                uint8_t* workspace) {
  SmallMapContext ctx;
  ctx.p = &p;
  ctx.w = &w;
  ctx.g = SmallMapGeometryOf(p);
  const SmallMapGeometry& g = ctx.g;
  ctx.buffers = TapOffsetsAt(p, g, workspace, &ctx.tap_offset);
  ctx.transpose = MakeByteTransposeIndex();
  PhaseRowIndex(p, ctx.idx);
  const int64_t cost = g.block * g.chunk * g.c4 * 4 * g.taps;
  NnParallelFor(
      p.num_threads, p.n * g.chunks * g.blocks, cost,
      [&ctx](int64_t begin, int64_t end, int thread) { SmallMapUnits(ctx, begin, end, thread); });
}

}  // namespace qcc::cpu::internal
