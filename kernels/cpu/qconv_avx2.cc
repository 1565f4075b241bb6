// AVX2 paths of the int8 convolution (contract in qconv.h) for CPUs without AVX-512 VNNI:
// packing, a direct convolution (any group, stride, dilation, pad) and a depthwise one (C ==
// group); bit-identical to QConvReference by construction (exact int16 products, int32 sums
// modulo 2^32, RequantizeX8), which tests/backend_cpu/int8_conv_test.cc checks.
//
// Direct path: the VNNI direct path's scheme (qconv_vnni.cc) with channel pairs instead of
// quads. Each (image, group) is rewritten once into a per-thread buffer of stride_h x stride_w
// phase planes, each a row-major grid of dwords holding 2 consecutive channels of one position
// sign-extended to int16 (a "channel pair"; a missing odd channel is 0, padded positions hold
// pad_value). Output (y, x) at virtual position v = y * PW' + x reads tap (r, s) at v plus a
// constant offset, so 8 consecutive virtual positions are one 32-byte load per (tap, pair);
// columns x >= out_w of the virtual grid are computed and dropped at the store. Register tile:
// 4 output channels x 24 positions (12 ymm accumulators); per (tap, pair): 3 loads, 4 weight
// broadcasts, 12 vpmaddwd and 12 vpaddd. Packed weights: [group][k block][tap][pair][4] dwords
// of int16 pairs, zero for channels past C/group and rows past K/group.
//
// Depthwise path: per (image, channel) plane, the padded plane is rewritten once into stride_w
// column-phase planes of "tap pairs": dword j of phase b holds padded columns c = j * sw + b and
// c + dilation_w as int16, the inputs of taps s and s + 1 of an output whose tap s reads c. The
// 8 outputs of a row then read 8 consecutive dwords per pair of taps (s, s + 1) for any stride
// and dilation: one vpmaddwd against the broadcast weight pair (w[s], w[s + 1]; 0 for the
// missing tap of an odd S) and one vpaddd. Four output rows run together. Packed weights:
// [K][R][ceil(S / 2)] dwords of int16 pairs.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/qint8_avx2_internal.h"
#include "support/int_math.h"
#include "support/tensor.h"

namespace qcc::cpu::internal {

namespace {

constexpr int64_t kMr = 4;     // output channels per register tile
constexpr int64_t kMaxNv = 3;  // 8-position vectors per register tile
constexpr int64_t kTileLanes = 8 * kMaxNv;

// ---------------------------------------------------------------------------------------------
// Direct path.

struct DirectGeometry {
  int64_t cg, kg, c2, k_blocks, taps, oh, ow;
  int64_t phase_h, phase_w;  // rows and columns of a phase plane
  int64_t v;                 // virtual positions of an image: (oh - 1) * phase_w + ow
  int64_t plane;             // dwords per (phase, channel pair) plane, a multiple of 8
  int64_t max_offset;        // the farthest tap from a position within a plane, in dwords
  int64_t tiles, image_bytes;
};

DirectGeometry DirectGeometryOf(const QConvParams& p) {
  DirectGeometry g;
  g.cg = p.c / p.group;
  g.kg = p.k / p.group;
  g.c2 = CeilDiv(g.cg, 2);
  g.k_blocks = CeilDiv(g.kg, kMr);
  g.taps = p.r * p.s;
  g.oh = p.out_h();
  g.ow = p.out_w();
  g.phase_h = CeilDiv(p.h + p.pad_top + p.pad_bottom, p.stride_h);
  g.phase_w = CeilDiv(p.w + p.pad_left + p.pad_right, p.stride_w);
  g.v = (g.oh - 1) * g.phase_w + g.ow;
  g.max_offset =
      (p.r - 1) * p.dilation_h / p.stride_h * g.phase_w + (p.s - 1) * p.dilation_w / p.stride_w;
  // A tile reads up to 7 lanes past the last virtual position.
  g.plane = RoundUp(std::max(g.phase_h * g.phase_w, g.v + 8 + g.max_offset), 8);
  g.tiles = CeilDiv(g.v, kTileLanes);
  g.image_bytes = p.stride_h * p.stride_w * g.c2 * g.plane * 4;
  return g;
}

/// One phase-plane row of channel pairs from input rows `rows` (null: channel past C/group,
/// read as 0), lane j reading column x_first + j * sw (pad outside [0, w)).
QCC_AVX2 void TransformRow(const int8_t* const rows[2], int64_t w, int64_t x_first, int64_t sw,
                           int64_t n, int8_t pad, uint32_t* dst) {
  const uint32_t pad_pair = Int16Pair(pad, pad);
  int64_t j = 0;
  const auto scalar_until = [&](int64_t end) {
    for (; j < end; ++j) {
      const int64_t col = x_first + j * sw;
      if (col < 0 || col >= w) {
        dst[j] = pad_pair;
      } else {
        dst[j] =
            Int16Pair(rows[0] != nullptr ? rows[0][col] : 0, rows[1] != nullptr ? rows[1][col] : 0);
      }
    }
  };
  if (sw == 1) {
    // Lanes [j_in, j_end) read columns inside [0, w): 8 at a time with vectors.
    const int64_t j_in = std::min(n, std::max<int64_t>(0, -x_first));
    const int64_t j_end = std::max(j_in, std::min(n, w - x_first));
    scalar_until(j_in);
    for (; j + 8 <= j_end; j += 8) {
      const int64_t col = x_first + j;
      const __m128i a =
          rows[0] != nullptr
              ? _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(rows[0] + col)))
              : _mm_setzero_si128();
      const __m128i b =
          rows[1] != nullptr
              ? _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(rows[1] + col)))
              : _mm_setzero_si128();
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j), _mm_unpacklo_epi16(a, b));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j + 4), _mm_unpackhi_epi16(a, b));
    }
  }
  scalar_until(n);
}

/// Everything a piece of the direct path needs.
struct DirectContext {
  const QConvParams* p;
  const PackedQConvWeights* w;
  DirectGeometry g;
  const int64_t* tap_offset;  // bytes from a tile's base to its (tap, pair 0) data
  uint8_t* buffers;           // g.image_bytes per thread
};

/// Rewrites channels [0, C/group) of `x` (one image's group) into phase planes of pairs: in
/// every plane, the dwords [lo, hi) (rows that hold them whole, and the padding past the last
/// row when hi reaches it), what the tiles of one thread read.
QCC_AVX2 void TransformImage(const DirectContext& ctx, const int8_t* x, uint32_t* buf, int64_t lo,
                             int64_t hi) {
  const QConvParams& p = *ctx.p;
  const DirectGeometry& g = ctx.g;
  const uint32_t pad_pair = Int16Pair(p.pad_value, p.pad_value);
  const int64_t row_begin = lo / g.phase_w;
  const int64_t row_end = std::min(g.phase_h, CeilDiv(hi, g.phase_w));
  const bool tail = hi > g.phase_h * g.phase_w;
  const bool flat = p.stride_h == 1 && p.stride_w == 1 && p.pad_left == 0 && p.pad_right == 0;
  for (int64_t a = 0; a < p.stride_h; ++a) {
    for (int64_t b = 0; b < p.stride_w; ++b) {
      for (int64_t c2 = 0; c2 < g.c2; ++c2) {
        uint32_t* plane = buf + ((a * p.stride_w + b) * g.c2 + c2) * g.plane;
        for (int64_t i = row_begin; i < row_end;) {
          const int64_t y = i * p.stride_h + a - p.pad_top;
          uint32_t* dst = plane + i * g.phase_w;
          if (y < 0 || y >= p.h) {
            std::fill(dst, dst + g.phase_w, pad_pair);
            ++i;
            continue;
          }
          const int8_t* rows[2];
          for (int q = 0; q < 2; ++q) {
            const int64_t ch = c2 * 2 + q;
            rows[q] = ch < g.cg ? x + (ch * p.h + y) * p.w : nullptr;
          }
          // Rows inside the input follow each other without a gap in both the input and the
          // phase plane when the plane row is the input row: one run, vectors across rows
          // (a 7-wide row alone would be all scalar).
          const int64_t run = flat ? std::min(row_end - i, p.h - y) : 1;
          TransformRow(rows, run * p.w, b - p.pad_left, p.stride_w, run * g.phase_w, p.pad_value,
                       dst);
          i += run;
        }
        if (tail) std::fill(plane + g.phase_h * g.phase_w, plane + g.plane, pad_pair);
      }
    }
  }
}

/// Where and how a register tile's results go.
struct TileOut {
  int8_t* y;            // output channel 0 of the tile at its first valid position
  int64_t y_stride;     // bytes between output channels
  int64_t rows;         // output channels of the tile that exist (1..kMr)
  const int32_t* init;  // kMr accumulator starts (bias)
  const float* multiplier;
  const uint8_t* lanes;  // the tile's lanes that are real outputs, in order
  int64_t count;         // how many
  int32_t zp, lo, hi;
};

/// Requantizes one output channel's NV vectors and stores its valid lanes contiguously.
template <int NV>
QCC_AVX2 inline void StoreRow(__m256i v0, __m256i v1, __m256i v2, const float* multiplier,
                              int8_t* y, const TileOut& o) {
  const __m256i zp = _mm256_set1_epi32(o.zp);
  const __m256 lo = _mm256_set1_ps(static_cast<float>(o.lo - o.zp));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(o.hi - o.zp));
  const __m256 m = _mm256_set1_ps(*multiplier);
  const __m128i q0 = RequantizeX8(v0, m, zp, lo, hi);
  const __m128i q1 = NV > 1 ? RequantizeX8(v1, m, zp, lo, hi) : q0;
  const __m128i q2 = NV > 2 ? RequantizeX8(v2, m, zp, lo, hi) : q0;
  if (o.count == 8 * NV) {
    // Straight from registers: a 16-byte load of bytes written as two 8-byte stores to a stack
    // array would miss store-to-load forwarding and stall.
    if (NV == 1) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(y), q0);
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y), _mm_unpacklo_epi64(q0, q1));
      if (NV > 2) _mm_storel_epi64(reinterpret_cast<__m128i*>(y + 16), q2);
    }
    return;
  }
  alignas(16) int8_t bytes[kTileLanes];
  _mm_storel_epi64(reinterpret_cast<__m128i*>(bytes), q0);
  if (NV > 1) _mm_storel_epi64(reinterpret_cast<__m128i*>(bytes + 8), q1);
  if (NV > 2) _mm_storel_epi64(reinterpret_cast<__m128i*>(bytes + 16), q2);
  for (int64_t i = 0; i < o.count; ++i) y[i] = bytes[o.lanes[i]];
}

// The tile's accumulators are named registers, c<row><vector> (as in qconv_vnni.cc); rows past
// o.rows have zero weights and are computed but not stored.
#define QCC_TILE_INIT(r)                          \
  __m256i c##r##0 = _mm256_set1_epi32(o.init[r]); \
  __m256i c##r##1 = c##r##0, c##r##2 = c##r##0;
#define QCC_TILE_MADD(r)                                                       \
  {                                                                            \
    const __m256i b = _mm256_set1_epi32(static_cast<int>(w[r]));               \
    c##r##0 = _mm256_add_epi32(c##r##0, _mm256_madd_epi16(a0, b));             \
    if (NV > 1) c##r##1 = _mm256_add_epi32(c##r##1, _mm256_madd_epi16(a1, b)); \
    if (NV > 2) c##r##2 = _mm256_add_epi32(c##r##2, _mm256_madd_epi16(a2, b)); \
  }
#define QCC_TILE_STORE(r) \
  if (r < o.rows)         \
    StoreRow<NV>(c##r##0, c##r##1, c##r##2, o.multiplier + r, o.y + r * o.y_stride, o);

/// kMr output channels x NV * 8 virtual positions: accumulate over every (tap, pair), then
/// requantize and store the valid lanes. `w` is the block's packed weights [tap][pair][kMr].
template <int NV>
QCC_AVX2 void ConvTile(const uint32_t* w, const uint8_t* x, const int64_t* tap_offset, int64_t taps,
                       int64_t c2s, int64_t plane_bytes, const TileOut& o) {
  QCC_TILE_INIT(0);
  QCC_TILE_INIT(1);
  QCC_TILE_INIT(2);
  QCC_TILE_INIT(3);
  for (int64_t t = 0; t < taps; ++t) {
    const uint8_t* xt = x + tap_offset[t];
    for (int64_t c = 0; c < c2s; ++c, xt += plane_bytes, w += kMr) {
      const __m256i a0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xt));
      const __m256i a1 =
          NV > 1 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xt + 32)) : a0;
      const __m256i a2 =
          NV > 2 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xt + 64)) : a0;
      QCC_TILE_MADD(0);
      QCC_TILE_MADD(1);
      QCC_TILE_MADD(2);
      QCC_TILE_MADD(3);
    }
  }
  QCC_TILE_STORE(0);
  QCC_TILE_STORE(1);
  QCC_TILE_STORE(2);
  QCC_TILE_STORE(3);
}

#undef QCC_TILE_INIT
#undef QCC_TILE_MADD
#undef QCC_TILE_STORE

using TileFn = void (*)(const uint32_t*, const uint8_t*, const int64_t*, int64_t, int64_t, int64_t,
                        const TileOut&);
constexpr TileFn kTiles[kMaxNv] = {ConvTile<1>, ConvTile<2>, ConvTile<3>};

/// Where one register tile of a chunk sits: its first virtual position, its valid lanes and
/// the output offset of the first of them.
struct TilePlace {
  int64_t v0, out0, nv, count;
  uint8_t valid[kTileLanes];
};

/// Up to this many tiles of one image run together, each output-channel block over all of them
/// before the next block: the tiles' inputs stay in L1 across the blocks, and each output plane
/// is written in one run of up to kChunkTiles * kTileLanes bytes instead of kTileLanes-byte
/// pieces in every plane (a stream per output channel that the hardware prefetcher loses).
constexpr int64_t kChunkTiles = 16;
/// The most input bytes a chunk's tiles read per (tap, channel pair) plane before it is cut
/// shorter (16 KiB over all planes: half of L1).
constexpr int64_t kChunkInputBytes = 16 * 1024;

/// Units [begin, end) of the direct path: unit = (image * group + group index) * tiles + tile.
void DirectUnits(const DirectContext& ctx, int64_t begin, int64_t end, int thread) {
  const QConvParams& p = *ctx.p;
  const DirectGeometry& g = ctx.g;
  uint32_t* buf = reinterpret_cast<uint32_t*>(ctx.buffers + thread * g.image_bytes);
  const uint32_t* packed = reinterpret_cast<const uint32_t*>(ctx.w->packed.get());
  const int64_t out_plane = g.oh * g.ow, block_dwords = g.taps * g.c2 * kMr;
  const int64_t chunk_tiles =
      std::clamp<int64_t>(kChunkInputBytes / (g.c2 * kTileLanes * 4), 1, kChunkTiles);
  TilePlace places[kChunkTiles];
  int64_t loaded = -1;
  for (int64_t u = begin; u < end;) {
    const int64_t image = u / g.tiles, tile = u % g.tiles;
    const int64_t n = image / p.group, grp = image % p.group;
    if (image != loaded) {
      // Only the part of the image this thread's tiles of it read (all of it unless the image
      // is split among threads, as at batch 1): from its first tile's first position to its
      // last tile's last lane plus the farthest tap.
      const int64_t last = std::min(end, (image + 1) * g.tiles) - 1 - image * g.tiles;
      TransformImage(ctx, p.input + (n * p.c + grp * g.cg) * p.h * p.w, buf, tile * kTileLanes,
                     (last + 1) * kTileLanes + g.max_offset);
      loaded = image;
    }
    // This chunk: tiles [tile, tile + count) of this image.
    const int64_t chunk_end = std::min({end, (image + 1) * g.tiles, u + chunk_tiles});
    int64_t placed = 0;
    for (int64_t t = tile; t < tile + (chunk_end - u); ++t) {
      TilePlace& pl = places[placed];
      pl.v0 = t * kTileLanes;
      const int64_t lanes = std::min(kTileLanes, g.v - pl.v0);
      pl.count = 0;
      for (int64_t l = 0, col = pl.v0 % g.phase_w; l < lanes; ++l) {
        if (col < g.ow) pl.valid[pl.count++] = static_cast<uint8_t>(l);
        if (++col == g.phase_w) col = 0;
      }
      if (pl.count == 0) continue;
      pl.nv = CeilDiv(lanes, 8);
      pl.out0 = pl.v0 / g.phase_w * g.ow + std::min(pl.v0 % g.phase_w, g.ow);
      ++placed;
    }
    u = chunk_end;
    TileOut o;
    o.y_stride = out_plane;
    o.zp = p.zp_out;
    o.lo = p.lo;
    o.hi = p.hi;
    for (int64_t kb = 0; kb < g.k_blocks; ++kb) {
      const int64_t k0 = grp * g.kg + kb * kMr, mr = std::min(kMr, g.kg - kb * kMr);
      int32_t init[kMr] = {0, 0, 0, 0};
      for (int64_t r = 0; r < mr; ++r) init[r] = p.bias != nullptr ? p.bias[k0 + r] : 0;
      o.rows = mr;
      o.init = init;
      o.multiplier = p.multiplier + k0;
      const uint32_t* wb = packed + (grp * g.k_blocks + kb) * block_dwords;
      int8_t* y = p.output + (n * p.k + k0) * out_plane;
      for (int64_t i = 0; i < placed; ++i) {
        const TilePlace& pl = places[i];
        o.y = y + pl.out0;
        o.lanes = pl.valid;
        o.count = pl.count;
        kTiles[pl.nv - 1](wb, reinterpret_cast<const uint8_t*>(buf) + pl.v0 * 4, ctx.tap_offset,
                          g.taps, g.c2, g.plane * 4, o);
      }
    }
  }
}

void DirectConv(const QConvParams& p, const PackedQConvWeights& w, uint8_t* workspace) {
  DirectContext ctx;
  ctx.p = &p;
  ctx.w = &w;
  ctx.g = DirectGeometryOf(p);
  const DirectGeometry& g = ctx.g;
  int64_t* tap_offset = reinterpret_cast<int64_t*>(workspace);
  for (int64_t r = 0; r < p.r; ++r) {
    for (int64_t s = 0; s < p.s; ++s) {
      const int64_t dy = r * p.dilation_h, dx = s * p.dilation_w;
      const int64_t phase = dy % p.stride_h * p.stride_w + dx % p.stride_w;
      tap_offset[r * p.s + s] =
          (phase * g.c2 * g.plane + dy / p.stride_h * g.phase_w + dx / p.stride_w) * 4;
    }
  }
  ctx.tap_offset = tap_offset;
  ctx.buffers = workspace + RoundUp(g.taps * 8, 64);
  const int64_t cost = kTileLanes * g.kg * g.cg * g.taps;
  NnParallelFor(
      p.num_threads, p.n * p.group * g.tiles, cost,
      [&ctx](int64_t begin, int64_t end, int thread) { DirectUnits(ctx, begin, end, thread); });
}

// ---------------------------------------------------------------------------------------------
// Depthwise path.

constexpr int64_t kDwRows = 4;  // output rows computed together
/// Padded input rows in flight in TransformPlane, and how many rows a row's rewrite trails its
/// copy.
constexpr int64_t kRingRows = 4;
constexpr int64_t kRingDelay = 2;

struct DepthwiseGeometry {
  int64_t mult, oh, ow, ph;
  int64_t sp;           // tap pairs per kernel row: ceil(S / 2)
  int64_t row;          // dwords per row of a column-phase plane, a multiple of 8
  int64_t phase;        // dwords per column-phase plane (ph * row)
  int64_t row_bytes;    // a padded input row of int8, with slack for 16-byte loads
  int64_t plane_bytes;  // one thread's buffer: stride_w phase planes, then kRingRows padded rows
};

DepthwiseGeometry DepthwiseGeometryOf(const QConvParams& p) {
  DepthwiseGeometry g;
  g.mult = p.k / p.group;
  g.oh = p.out_h();
  g.ow = p.out_w();
  g.ph = p.h + p.pad_top + p.pad_bottom;
  g.sp = CeilDiv(p.s, 2);
  const int64_t pw = p.w + p.pad_left + p.pad_right;
  // Output x, tap s reads phase (s * dw) % sw at index x + s * dw / sw; the last vector of a
  // row reads up to RoundUp(ow, 8) - 1 + (S - 1) * dw / sw (an odd S's last pair starts at
  // tap S - 1).
  g.row = RoundUp(
      std::max(CeilDiv(pw, p.stride_w), RoundUp(g.ow, 8) + (p.s - 1) * p.dilation_w / p.stride_w),
      8);
  g.phase = g.ph * g.row;
  // Index j of phase b reads padded columns j * sw + b and that + dw: up to
  // row * sw + sw + dw, and the vector rewrites load 16 bytes from there.
  g.row_bytes = RoundUp(std::max(pw, g.row * p.stride_w + p.stride_w + p.dilation_w) + 16, 64);
  g.plane_bytes = p.stride_w * g.phase * 4 + kRingRows * g.row_bytes;
  return g;
}

/// Rewrites padded row `i` (the int8 `row`) into row i of each column-phase plane of `buf`.
QCC_AVX2 void RewriteRow(const QConvParams& p, const DepthwiseGeometry& g, const int8_t* row,
                         int64_t i, uint32_t* buf) {
  const int64_t sw = p.stride_w, dw = p.dilation_w;
  // Even bytes of 16 (stride 2): the 8 columns of one phase.
  const __m128i even = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1);
  for (int64_t b = 0; b < sw; ++b) {
    uint32_t* dst = buf + b * g.phase + i * g.row;
    const int8_t* src = row + b;  // index j reads src[j * sw] and src[j * sw + dw]
    if (sw <= 2) {
      for (int64_t j = 0; j < g.row; j += 8) {
        __m128i lo, hi;
        if (sw == 1) {
          lo = _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + j)));
          hi = _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + j + dw)));
        } else {
          const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * j));
          const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * j + dw));
          lo = _mm_cvtepi8_epi16(_mm_shuffle_epi8(a, even));
          hi = _mm_cvtepi8_epi16(_mm_shuffle_epi8(b, even));
        }
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j), _mm_unpacklo_epi16(lo, hi));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j + 4), _mm_unpackhi_epi16(lo, hi));
      }
    } else {
      for (int64_t j = 0; j < g.row; ++j) dst[j] = Int16Pair(src[j * sw], src[j * sw + dw]);
    }
  }
}

/// Rewrites plane `x` ([h, w] int8) as padded column-phase planes of tap pairs into `buf`,
/// each input row through a padded int8 row of `ring` (kRingRows rows of g.row_bytes, their
/// padding set by the caller) so that the rewrite needs no bounds. A row is rewritten
/// kRingDelay rows after its copy: the rewrite's 8- and 16-byte loads overlap the copy's
/// smaller stores, which cannot forward to them, and a load issued while those stores are
/// still in flight stalls (a quarter of the time of a 1152-channel 7x7 layer, row by row).
QCC_AVX2 void TransformPlane(const QConvParams& p, const DepthwiseGeometry& g, const int8_t* x,
                             uint32_t* buf, int8_t* ring) {
  const uint32_t pad = Int16Pair(p.pad_value, p.pad_value);
  // Rows [pad_top, pad_top + h) come from the input; the rest are padding.
  const int64_t first = p.pad_top, last = p.pad_top + p.h;
  int64_t next = first;  // the next input row to rewrite
  for (int64_t i = 0; i < g.ph; ++i) {
    if (i < first || i >= last) {
      for (int64_t b = 0; b < p.stride_w; ++b) {
        uint32_t* dst = buf + b * g.phase + i * g.row;
        std::fill(dst, dst + g.row, pad);
      }
      continue;
    }
    std::memcpy(ring + i % kRingRows * g.row_bytes + p.pad_left, x + (i - first) * p.w, p.w);
    for (; next <= i - kRingDelay; ++next) {
      RewriteRow(p, g, ring + next % kRingRows * g.row_bytes, next, buf);
    }
  }
  for (; next < last; ++next) RewriteRow(p, g, ring + next % kRingRows * g.row_bytes, next, buf);
}

/// Stores the low `n` (< 8) bytes of `q` to `y` straight from a register (4, 2 and 1 bytes),
/// not through a stack copy.
QCC_AVX2 inline void StoreLowBytes(__m128i q, int64_t n, int8_t* y) {
  uint64_t v = static_cast<uint64_t>(_mm_cvtsi128_si64(q));
  if (n & 4) {
    const uint32_t part = static_cast<uint32_t>(v);
    std::memcpy(y, &part, 4);
    y += 4;
    v >>= 32;
  }
  if (n & 2) {
    const uint16_t part = static_cast<uint16_t>(v);
    std::memcpy(y, &part, 2);
    y += 2;
    v >>= 16;
  }
  if (n & 1) *y = static_cast<int8_t>(v);
}

QCC_AVX2 inline __m256i Load8(const uint32_t* a) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
}

/// Planes [begin, end) of (image, input channel) of the depthwise path; `tap_offset` holds
/// each (kernel row, tap pair)'s dword offset from an output row's first input row at x = 0.
QCC_AVX2 void DepthwisePlanes(const QConvParams& p, const PackedQConvWeights& w,
                              const DepthwiseGeometry& g, const int64_t* tap_offset, uint32_t* buf,
                              int64_t begin, int64_t end) {
  const uint32_t* packed = reinterpret_cast<const uint32_t*>(w.packed.get());
  const __m256i zp = _mm256_set1_epi32(p.zp_out);
  const __m256 lo = _mm256_set1_ps(static_cast<float>(p.lo - p.zp_out));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(p.hi - p.zp_out));
  const int64_t pair_taps = p.r * g.sp, row_step = p.stride_h * g.row;
  // The ring's padding (every byte but the columns TransformPlane copies) holds for all planes.
  int8_t* ring = reinterpret_cast<int8_t*>(buf + p.stride_w * g.phase);
  std::memset(ring, p.pad_value, kRingRows * g.row_bytes);
  for (int64_t plane = begin; plane < end; ++plane) {
    TransformPlane(p, g, p.input + plane * p.h * p.w, buf, ring);
    const int64_t n = plane / p.c, ch = plane % p.c;
    for (int64_t k = ch * g.mult; k < (ch + 1) * g.mult; ++k) {
      const uint32_t* wk = packed + k * pair_taps;
      const __m256i init = _mm256_set1_epi32(p.bias != nullptr ? p.bias[k] : 0);
      const __m256 multiplier = _mm256_set1_ps(p.multiplier[k]);
      int8_t* out = p.output + (n * p.k + k) * g.oh * g.ow;
      for (int64_t oy = 0; oy < g.oh; oy += kDwRows) {
        // Rows past the end repeat the last one and are not stored.
        const uint32_t* row0 = buf + oy * row_step;
        const uint32_t* row1 = buf + std::min(oy + 1, g.oh - 1) * row_step;
        const uint32_t* row2 = buf + std::min(oy + 2, g.oh - 1) * row_step;
        const uint32_t* row3 = buf + std::min(oy + 3, g.oh - 1) * row_step;
        for (int64_t ox = 0; ox < g.ow; ox += 8) {
          __m256i acc0 = init, acc1 = init, acc2 = init, acc3 = init;
          for (int64_t t = 0; t < pair_taps; ++t) {
            const int64_t off = tap_offset[t] + ox;
            const __m256i wt = _mm256_set1_epi32(static_cast<int>(wk[t]));
            acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(Load8(row0 + off), wt));
            acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(Load8(row1 + off), wt));
            acc2 = _mm256_add_epi32(acc2, _mm256_madd_epi16(Load8(row2 + off), wt));
            acc3 = _mm256_add_epi32(acc3, _mm256_madd_epi16(Load8(row3 + off), wt));
          }
          const int64_t cols = std::min<int64_t>(8, g.ow - ox);
          const __m256i accs[kDwRows] = {acc0, acc1, acc2, acc3};
          for (int64_t i = 0; i < kDwRows && oy + i < g.oh; ++i) {
            const __m128i q = RequantizeX8(accs[i], multiplier, zp, lo, hi);
            int8_t* y = out + (oy + i) * g.ow + ox;
            if (cols == 8) {
              _mm_storel_epi64(reinterpret_cast<__m128i*>(y), q);
            } else {
              StoreLowBytes(q, cols, y);
            }
          }
        }
      }
    }
  }
}

int64_t DepthwiseOffsetBytes(const QConvParams& p) {
  return RoundUp(p.r * CeilDiv(p.s, 2) * 8, 64);
}

void DepthwiseConv(const QConvParams& p, const PackedQConvWeights& w, uint8_t* workspace) {
  const DepthwiseGeometry g = DepthwiseGeometryOf(p);
  int64_t* tap_offset = reinterpret_cast<int64_t*>(workspace);
  for (int64_t r = 0; r < p.r; ++r) {
    for (int64_t q = 0; q < g.sp; ++q) {
      const int64_t dx = 2 * q * p.dilation_w;
      tap_offset[r * g.sp + q] =
          dx % p.stride_w * g.phase + r * p.dilation_h * g.row + dx / p.stride_w;
    }
  }
  uint8_t* buffers = workspace + DepthwiseOffsetBytes(p);
  const int64_t cost = g.mult * g.oh * g.ow * p.r * p.s;
  NnParallelFor(p.num_threads, p.n * p.c, cost, [&](int64_t begin, int64_t end, int thread) {
    DepthwisePlanes(p, w, g, tap_offset,
                    reinterpret_cast<uint32_t*>(buffers + thread * g.plane_bytes), begin, end);
  });
}

}  // namespace

void PackQConvAvx2(const QConvParams& p, PackedQConvWeights* w) {
  const int64_t cg = p.c / p.group, kg = p.k / p.group, taps = p.r * p.s;
  if (p.c == p.group) {
    const int64_t sp = CeilDiv(p.s, 2);
    w->packed = Tensor::AllocateStorage(p.k * p.r * sp * 4);
    uint32_t* dst = reinterpret_cast<uint32_t*>(w->packed.get());
    for (int64_t k = 0; k < p.k; ++k) {
      for (int64_t r = 0; r < p.r; ++r) {
        const int8_t* wr = p.weights + (k * p.r + r) * p.s;
        for (int64_t q = 0; q < sp; ++q) {
          *dst++ = Int16Pair(wr[2 * q], 2 * q + 1 < p.s ? wr[2 * q + 1] : 0);
        }
      }
    }
    w->layout = PackedQConvWeights::Layout::kAvx2Depthwise;
    return;
  }
  const int64_t c2 = CeilDiv(cg, 2), k_blocks = CeilDiv(kg, kMr);
  w->packed = Tensor::AllocateStorage(p.group * k_blocks * taps * c2 * kMr * 4);
  uint32_t* dst = reinterpret_cast<uint32_t*>(w->packed.get());
  const auto weight = [&](int64_t grp, int64_t k, int64_t ch, int64_t tap) -> int8_t {
    return k < kg && ch < cg ? p.weights[((grp * kg + k) * cg + ch) * taps + tap] : 0;
  };
  for (int64_t grp = 0; grp < p.group; ++grp) {
    for (int64_t kb = 0; kb < k_blocks; ++kb) {
      for (int64_t tap = 0; tap < taps; ++tap) {
        for (int64_t pair = 0; pair < c2; ++pair) {
          for (int64_t r = 0; r < kMr; ++r) {
            const int64_t k = kb * kMr + r;
            *dst++ = Int16Pair(weight(grp, k, 2 * pair, tap), weight(grp, k, 2 * pair + 1, tap));
          }
        }
      }
    }
  }
  w->layout = PackedQConvWeights::Layout::kAvx2Direct;
}

int64_t QConvAvx2WorkspaceBytes(const QConvParams& p, const PackedQConvWeights& w) {
  const int64_t threads = std::max(1, p.num_threads);
  if (w.layout == PackedQConvWeights::Layout::kAvx2Depthwise) {
    return 64 + DepthwiseOffsetBytes(p) + threads * DepthwiseGeometryOf(p).plane_bytes;
  }
  const DirectGeometry g = DirectGeometryOf(p);
  return 64 + RoundUp(g.taps * 8, 64) + threads * g.image_bytes;
}

void QConvAvx2(const QConvParams& p, const PackedQConvWeights& w, void* workspace) {
  // Align the caller's scratch to a cache line.
  auto* ws = reinterpret_cast<uint8_t*>(RoundUp(reinterpret_cast<uintptr_t>(workspace), 64));
  if (w.layout == PackedQConvWeights::Layout::kAvx2Depthwise) {
    DepthwiseConv(p, w, ws);
  } else {
    DirectConv(p, w, ws);
  }
}

}  // namespace qcc::cpu::internal
