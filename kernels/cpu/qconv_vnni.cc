// AVX-512 VNNI paths of the int8 convolution (contract in qconv.h): packing, dispatch and the
// direct path (the depthwise one is qconv_depthwise_vnni.cc); bit-identical to QConvReference
// by construction, which tests/backend_cpu/int8_conv_test.cc checks.
//
// The algebra. vpdpbusd multiplies unsigned by signed bytes, so activations enter as
// x_u8 = x + 128 (x ^ 0x80) and sum(w * x) = sum(w * x_u8) - 128 * sum(w); packing stores
// correction[k] = -128 * sum(w[k]) and the accumulators start at bias[k] + correction[k]. A
// padded position holds pad_value + 128, so it too contributes w * pad_value. All of it is
// int32 arithmetic modulo 2^32 (vpdpbusd wraps), as the reference's, so any overflow wraps alike.
//
// Direct path (any group, stride, dilation, pad). Each (image, group) is rewritten once into a
// per-thread buffer of phase planes of channel quads (qconv_planes_vnni.h), in which output
// (y, x) at virtual position v = y * PW' + x reads tap (r, s) at v plus a constant offset, for
// every stride; so 16 consecutive virtual positions are one 64-byte load per (tap, channel
// quad), and no im2col is ever written. Columns x >= out_w of the virtual grid are computed and
// dropped (compressed out at the store). The 16-position vectors ("windows") a tile computes
// need not be consecutive: each starts at the first output position after the previous one's
// lanes (DirectWindows), so a window never begins on dropped columns; where out_w is a
// multiple of 16 no lane is dropped at all (consecutive vectors cost PW' / out_w: 1.06 and
// 1.12 on resnet20's 32- and 16-wide maps). The register tile is 8 output channels x up to 3
// windows (24 zmm accumulators): per (tap, quad), 3 loads, 8 weight broadcasts and 24
// vpdpbusd; an image's tiles share its windows evenly. A tile's valid lanes are consecutive
// outputs, so its stores are as for consecutive vectors.
// Not cache-blocked over channels: a tile streams all C/group * R * S of its inputs and
// weights, which suits the small CNNs this targets (C <= ~256 per group).
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/qconv_planes_vnni.h"
#include "kernels/cpu/qint8_vnni_internal.h"
#include "support/int_math.h"
#include "support/tensor.h"

namespace qcc::cpu::internal {

namespace {

constexpr int64_t kMr = 8;     // output channels per register tile
constexpr int64_t kMaxNv = 3;  // 16-position vectors per register tile
constexpr int64_t kTileLanes = 16 * kMaxNv;

/// Bit l set for each of the `lanes` (<= 64) virtual positions from one at column `col` of its
/// phase-plane row that is an output (its column is < out_w). A run of bits per virtual row:
/// lane by lane, it was 5-6% of resnet20's 16-channel 3x3 layers at batch 32 (a dependent chain
/// of 48 steps a tile).
uint64_t ValidLanesAt(const PhasePlanes& g, int64_t col, int64_t lanes) {
  if (g.phase_w == g.ow) return LowBits64(lanes);  // no column is dropped (1x1, no pads)
  uint64_t valid = 0;
  for (int64_t l = 0; l < lanes; l += g.phase_w - col, col = 0) {
    // Lanes l .. of this row: its columns col .. phase_w - 1, outputs while < out_w.
    if (col < g.ow) valid |= LowBits64(std::min(g.ow - col, lanes - l)) << l;
  }
  return valid;
}

/// ValidLanesAt for the lanes from virtual position v0.
uint64_t ValidLanes(const PhasePlanes& g, int64_t v0, int64_t lanes) {
  return ValidLanesAt(g, v0 % g.phase_w, lanes);
}

/// One 16-lane window of an image's virtual positions (DirectWindows).
struct Window {
  int32_t v;       // its first virtual position, an output
  int32_t out;     // that output's position in the output plane
  uint32_t valid;  // ValidLanes of its 16 lanes (none past the last output)
  int32_t unused;
};

/// The windows of an image's virtual positions: each 16 lanes from the first output position
/// (column < out_w) at or after the previous window's end, the first at 0. Writes them to
/// `windows` unless null; returns how many. Consecutive windows when no column is dropped.
int64_t DirectWindows(const PhasePlanes& g, Window* windows) {
  int64_t n = 0;
  // Virtual position v = row * phase_w + col, output row * ow + col.
  for (int64_t row = 0, col = 0; row * g.phase_w + col < g.v; ++n) {
    const int64_t v = row * g.phase_w + col;
    if (windows != nullptr) {
      windows[n].v = static_cast<int32_t>(v);
      windows[n].out = static_cast<int32_t>(row * g.ow + col);
      windows[n].valid =
          static_cast<uint32_t>(ValidLanesAt(g, col, std::min<int64_t>(16, g.v - v)));
      windows[n].unused = 0;
    }
    for (col += 16; col >= g.phase_w; col -= g.phase_w) ++row;
    if (col >= g.ow) {  // a dropped column: on to the next row's first
      col = 0;
      ++row;
    }
  }
  return n;
}

struct DirectGeometry : PhasePlanes {
  int64_t kg, k_blocks, taps;
  int64_t windows;  // DirectWindows: the 16-position vectors covering the outputs
  int64_t tiles;    // tiles share the windows evenly (kMaxNv or one fewer each)
};

/// The first window of tile `t` (t == g.tiles: g.windows).
int64_t TileWindow(const DirectGeometry& g, int64_t t) { return t * g.windows / g.tiles; }

DirectGeometry DirectGeometryOf(const QConvParams& p) {
  DirectGeometry g;
  static_cast<PhasePlanes&>(g) = PhasePlanesOf(p);
  g.kg = p.k / p.group;
  g.k_blocks = CeilDiv(g.kg, kMr);
  g.taps = p.r * p.s;
  g.windows = DirectWindows(g, nullptr);
  g.tiles = CeilDiv(g.windows, kMaxNv);
  return g;
}

/// What the direct and AMX paths' pieces share: the rewrite's row index and the epilogue's
/// constants.
struct PlaneConstants {
  alignas(64) uint8_t idx[64];  // PhaseRowIndex
  ResidualAddV add;             // p.residual's Add, when set
  PackedRequantV pack;
  bool packed_requant;  // PackedRequantApplies
};

QCC_VNNI void PreparePlaneConstants(const QConvParams& p, PlaneConstants* k) {
  PhaseRowIndex(p, k->idx);
  if (p.residual != nullptr) k->add = MakeResidualAddV(p.add);
  k->packed_requant = PackedRequantApplies(p.multiplier, p.k, p.lo, p.hi);
  if (k->packed_requant) k->pack = MakePackedRequantV(p.zp_out, p.lo, p.hi);
}

/// Everything a piece of the direct path needs.
struct DirectContext {
  const QConvParams* p;
  const PackedQConvWeights* w;
  DirectGeometry g;
  const int64_t* tap_offset;  // bytes from a tile's base to its (tap, quad 0) data
  uint8_t* buffers;           // g.image_bytes per thread
  PlaneConstants k;
  const int32_t* init;    // bias + correction per output channel, then kMr zeros
  const Window* windows;  // DirectWindows'
  int64_t slices;         // DirectSlices
  int64_t slice_blocks;   // blocks of 8 output channels per slice (the last ones may have fewer)
};

/// Where and how a register tile's results go.
struct TileOut {
  int8_t* y;            // output channel 0 of the tile at its first valid position
  int64_t y_stride;     // bytes between output channels
  int64_t rows;         // output channels of the tile that exist (1..kMr)
  const int32_t* init;  // kMr accumulator starts (bias + correction)
  const float* multiplier;
  uint64_t valid;  // the tile's lanes that are real outputs (compressed together when stored)
  int64_t count;   // popcount(valid)
  int32_t zp, lo, hi;
  const int8_t* residual;      // the fused Add's residual at y's position; null: none
  const ResidualAddV* add;     // its constants
  const PackedRequantV* pack;  // RequantizePackX48's constants; null: RequantizeX16
};

/// A TileOut's fields that hold for every tile of a convolution.
TileOut ConvTileOut(const QConvParams& p, const PlaneConstants& k, int64_t out_plane) {
  TileOut o;
  o.y_stride = out_plane;
  o.zp = p.zp_out;
  o.lo = p.lo;
  o.hi = p.hi;
  o.add = &k.add;
  o.pack = k.packed_requant ? &k.pack : nullptr;
  return o;
}

/// A tile's store constants for StoreRow, in a local of the tile's function built before its
/// first store: an int8 store may alias any memory as far as GCC knows, so constants read
/// through the TileOut (and its pack) would be read and rebuilt after every row's store (10 to
/// 20 scalar instructions a row, against 12 vpdpbusd a row for a 1x1 conv of 16 channels).
struct RowStore {
  PackedRequantV pack;  // a copy of *TileOut::pack, when packed
  __m512i zp;
  __m512 lo, hi;
  uint64_t valid;
  __mmask64 count_mask;  // the low popcount(valid) bytes
  const ResidualAddV* add;
  bool packed, whole;
};

template <int NV>
QCC_VNNI inline RowStore RowStoreOf(const TileOut& o) {
  RowStore s;
  s.packed = o.pack != nullptr;
  if (s.packed) s.pack = *o.pack;
  s.zp = _mm512_set1_epi32(o.zp);
  s.lo = _mm512_set1_ps(static_cast<float>(o.lo - o.zp));
  s.hi = _mm512_set1_ps(static_cast<float>(o.hi - o.zp));
  s.valid = o.valid;
  s.count_mask = LowBits64(o.count);
  s.add = o.add;
  s.whole = o.count == 16 * NV;  // every lane is an output
  return s;
}

/// Requantizes one output channel's NV vectors (scaled by `m`, adding the residual `r` at the
/// same outputs when it is not null) and stores its valid lanes contiguously.
template <int NV>
QCC_VNNI inline void StoreRow(__m512i v0, __m512i v1, __m512i v2, float multiplier, int8_t* y,
                              const int8_t* r, const RowStore& s) {
  const __m512 m = _mm512_set1_ps(multiplier);
  if (r == nullptr && s.packed) {
    __m512i bytes = RequantizePackX48<NV>(v0, v1, v2, m, m, m, s.pack);
    if (!s.whole) bytes = _mm512_maskz_compress_epi8(s.valid, bytes);
    _mm512_mask_storeu_epi8(y, s.count_mask, bytes);
    return;
  }
  __m128i b0, b1, b2;
  if (r == nullptr) {
    b0 = RequantizeX16(v0, m, s.zp, s.lo, s.hi);
    b1 = NV > 1 ? RequantizeX16(v1, m, s.zp, s.lo, s.hi) : b0;
    b2 = NV > 2 ? RequantizeX16(v2, m, s.zp, s.lo, s.hi) : b0;
  } else {
    // The residual of output i is at r[i]; spread over the tile's lanes unless all are outputs.
    __m128i r0, r1, r2;
    if (s.whole) {
      r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r));
      r1 = NV > 1 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 16)) : r0;
      r2 = NV > 2 ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 32)) : r0;
    } else {
      alignas(64) int8_t spread[64];
      _mm512_store_si512(
          spread, _mm512_maskz_expand_epi8(s.valid, _mm512_maskz_loadu_epi8(s.count_mask, r)));
      r0 = _mm_load_si128(reinterpret_cast<const __m128i*>(spread));
      r1 = _mm_load_si128(reinterpret_cast<const __m128i*>(spread + 16));
      r2 = _mm_load_si128(reinterpret_cast<const __m128i*>(spread + 32));
    }
    b0 = AddResidualX16(RequantizeI32X16(v0, m, s.zp, s.lo, s.hi), r0, *s.add);
    b1 = NV > 1 ? AddResidualX16(RequantizeI32X16(v1, m, s.zp, s.lo, s.hi), r1, *s.add) : b0;
    b2 = NV > 2 ? AddResidualX16(RequantizeI32X16(v2, m, s.zp, s.lo, s.hi), r2, *s.add) : b0;
  }
  if (s.whole) {
    // Every lane is an output (as for any unpadded stride-1 conv but at the image's end): plain
    // stores, which cost far less than a byte compress and a masked store.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y), b0);
    if (NV > 1) _mm_storeu_si128(reinterpret_cast<__m128i*>(y + 16), b1);
    if (NV > 2) _mm_storeu_si128(reinterpret_cast<__m128i*>(y + 32), b2);
    return;
  }
  __m512i bytes = _mm512_zextsi128_si512(b0);
  if (NV > 1) bytes = _mm512_inserti32x4(bytes, b1, 1);
  if (NV > 2) bytes = _mm512_inserti32x4(bytes, b2, 2);
  bytes = _mm512_maskz_compress_epi8(s.valid, bytes);
  _mm512_mask_storeu_epi8(y, s.count_mask, bytes);
}

// The tile's accumulators are named registers, c<row><vector> (an array of them is kept in
// memory by GCC); rows past o.rows have zero weights and are computed but not stored.
#define QCC_TILE_INIT(r)                          \
  __m512i c##r##0 = _mm512_set1_epi32(o.init[r]); \
  __m512i c##r##1 = c##r##0, c##r##2 = c##r##0;
#define QCC_TILE_DP(r)                                           \
  {                                                              \
    const __m512i b = _mm512_set1_epi32(static_cast<int>(w[r])); \
    c##r##0 = _mm512_dpbusd_epi32(c##r##0, a0, b);               \
    if (NV > 1) c##r##1 = _mm512_dpbusd_epi32(c##r##1, a1, b);   \
    if (NV > 2) c##r##2 = _mm512_dpbusd_epi32(c##r##2, a2, b);   \
  }
#define QCC_TILE_STORE(r)                                                     \
  if (r < rows)                                                               \
    StoreRow<NV>(c##r##0, c##r##1, c##r##2, multipliers[r], y + r * y_stride, \
                 residual != nullptr ? residual + r * y_stride : nullptr, s);

/// kMr output channels x NV windows of 16 virtual positions, at x, x + d1 and x + d2 (bytes):
/// accumulate over every (tap, quad), then requantize and store the valid lanes. `w` is the
/// block's packed weights [tap][quad][kMr].
template <int NV>
QCC_VNNI void ConvTile(const uint32_t* w, const uint8_t* x, int64_t d1, int64_t d2,
                       const int64_t* tap_offset, int64_t taps, int64_t c4s, int64_t plane_bytes,
                       const TileOut& o) {
  QCC_TILE_INIT(0);
  QCC_TILE_INIT(1);
  QCC_TILE_INIT(2);
  QCC_TILE_INIT(3);
  QCC_TILE_INIT(4);
  QCC_TILE_INIT(5);
  QCC_TILE_INIT(6);
  QCC_TILE_INIT(7);
  for (int64_t t = 0; t < taps; ++t) {
    const uint8_t* xt = x + tap_offset[t];
    for (int64_t c = 0; c < c4s; ++c, xt += plane_bytes, w += kMr) {
      const __m512i a0 = _mm512_loadu_si512(xt);
      const __m512i a1 = NV > 1 ? _mm512_loadu_si512(xt + d1) : a0;
      const __m512i a2 = NV > 2 ? _mm512_loadu_si512(xt + d2) : a0;
      QCC_TILE_DP(0);
      QCC_TILE_DP(1);
      QCC_TILE_DP(2);
      QCC_TILE_DP(3);
      QCC_TILE_DP(4);
      QCC_TILE_DP(5);
      QCC_TILE_DP(6);
      QCC_TILE_DP(7);
    }
  }
  // Everything the stores need, in locals first (RowStore).
  const RowStore s = RowStoreOf<NV>(o);
  int8_t* const y = o.y;
  const int8_t* const residual = o.residual;
  const int64_t y_stride = o.y_stride, rows = o.rows;
  float multipliers[kMr];
  for (int64_t r = 0; r < kMr; ++r) multipliers[r] = r < rows ? o.multiplier[r] : 0.0f;
  QCC_TILE_STORE(0);
  QCC_TILE_STORE(1);
  QCC_TILE_STORE(2);
  QCC_TILE_STORE(3);
  QCC_TILE_STORE(4);
  QCC_TILE_STORE(5);
  QCC_TILE_STORE(6);
  QCC_TILE_STORE(7);
}

#undef QCC_TILE_INIT
#undef QCC_TILE_DP
#undef QCC_TILE_STORE

using TileFn = void (*)(const uint32_t*, const uint8_t*, int64_t, int64_t, const int64_t*, int64_t,
                        int64_t, int64_t, const TileOut&);
constexpr TileFn kTiles[kMaxNv] = {ConvTile<1>, ConvTile<2>, ConvTile<3>};

/// The output position of the first output at or after virtual position v0.
int64_t FirstOutput(const PhasePlanes& g, int64_t v0) {
  return v0 / g.phase_w * g.ow + std::min(v0 % g.phase_w, g.ow);
}

/// Where one tile's outputs go, apart from its output channels.
struct TilePlace {
  uint64_t valid;  // TileOut::valid
  int64_t out0;    // the output position of its first valid lane
  int64_t nv;      // windows it computes
  int64_t v0;      // its first window's virtual position
  int64_t d1, d2;  // bytes from its first window to its second and third
};

/// Tile `t`'s place: its windows' lanes that are outputs side by side, which are consecutive
/// outputs since each window starts at the output after the last one's.
TilePlace TilePlaceOf(const DirectGeometry& g, const Window* windows, int64_t t) {
  TilePlace pl;
  const Window* w = windows + TileWindow(g, t);
  pl.nv = TileWindow(g, t + 1) - TileWindow(g, t);
  pl.v0 = w[0].v;
  pl.out0 = w[0].out;
  pl.valid = w[0].valid;
  pl.d1 = 64;
  pl.d2 = 128;
  if (pl.nv > 1) {
    pl.valid |= static_cast<uint64_t>(w[1].valid) << 16;
    pl.d1 = (w[1].v - pl.v0) * 4;
  }
  if (pl.nv > 2) {
    pl.valid |= static_cast<uint64_t>(w[2].valid) << 32;
    pl.d2 = (w[2].v - pl.v0) * 4;
  }
  return pl;
}

/// Tiles per group of the block-major order (DirectUnits): 12,288 positions (16 -> 96 1x1 on
/// 112 x 112 at batch 32, 1 thread: groups of 32 tiles 8.5 ms, 128 7.6, 256 7.2, 512 7.1).
constexpr int64_t kGroupTiles = 256;

/// Units [begin, end) of the direct path: unit = ((image * group + group index) * slices +
/// slice) * tiles + tile, where a slice is a range of ctx.slice_blocks blocks of 8 output
/// channels (DirectSlices; one slice of all of them but at batch 1). The units of an image go
/// in groups of up to kGroupTiles tiles. A 1x1 conv of up to 144 channels with several blocks of
/// 8 output channels runs a group block-major (every tile for 8 channels, then the next 8): its
/// stores then go to 8 output rows at a time, sequentially, where tile-major order kept K rows
/// open with 48 bytes written to each per tile, which cost efficientnet-lite0's 16 -> 96 channel
/// 1x1 on 112 x 112 at batch 32 2.3x its batch-1 time per image (output lines evicted before
/// they were filled). Its inputs, 4 bytes a channel quad per position, are then read once per
/// block from L2. Everything else runs tile-major, each tile's inputs read from L1 for all its
/// blocks (block-major made 3x3 convs of 3 to 16 channels 2-7% slower). Either order computes
/// each (tile, block) with the same sums.
QCC_VNNI void DirectUnits(const DirectContext& ctx, int64_t begin, int64_t end, int thread) {
  const QConvParams& p = *ctx.p;
  const DirectGeometry& g = ctx.g;
  uint32_t* buf = reinterpret_cast<uint32_t*>(ctx.buffers + thread * g.image_bytes);
  const uint32_t* packed = reinterpret_cast<const uint32_t*>(ctx.w->packed.get());
  const int64_t out_plane = g.oh * g.ow, block_dwords = g.taps * g.c4 * kMr;
  const bool block_major = g.k_blocks > 1 && g.taps == 1 && g.c4 <= 36;
  TileOut o = ConvTileOut(p, ctx.k, out_plane);
  TilePlace places[kGroupTiles];
  bool pads_filled = false;  // by this thread's first image (FillPhasePlanes)
  // The image and tiles this thread's buffer holds: a later slice of them is not rewritten.
  int64_t filled_image = -1, filled_first = 0, filled_last = -1;
  for (int64_t u = begin; u < end;) {
    const int64_t image_slice = u / g.tiles, tile = u % g.tiles;
    const int64_t image = image_slice / ctx.slices, slice = image_slice % ctx.slices;
    const int64_t n = image / p.group, grp = image % p.group;
    const int64_t kb_begin = slice * ctx.slice_blocks;
    const int64_t kb_end = std::min(g.k_blocks, kb_begin + ctx.slice_blocks);
    // Only the part of the image this thread's tiles of it read (all of it unless the image is
    // split among threads by positions, as at batch 1): from its first tile's first position to
    // its last tile's last lane plus the farthest tap.
    const int64_t slice_end = std::min(end, (image_slice + 1) * g.tiles);
    const int64_t last = slice_end - 1 - image_slice * g.tiles;
    if (kb_begin >= kb_end) {  // a last slice left without blocks (5 blocks on 4 threads)
      u = slice_end;
      continue;
    }
    if (image != filled_image || tile < filled_first || last > filled_last) {
      FillPhasePlanes(p, g, ctx.k.idx, p.input + (n * p.c + grp * g.cg) * p.h * p.w, buf,
                      ctx.windows[TileWindow(g, tile)].v,
                      ctx.windows[TileWindow(g, last + 1) - 1].v + 16 + g.max_offset, pads_filled);
      pads_filled = true;
      filled_image = image;
      filled_first = tile;
      filled_last = last;
    }
    for (int64_t t0 = tile; t0 <= last; t0 += kGroupTiles) {
      const int64_t count = std::min(kGroupTiles, last + 1 - t0);
      for (int64_t i = 0; i < count; ++i) places[i] = TilePlaceOf(g, ctx.windows, t0 + i);
      auto run = [&](const TilePlace& pl, int64_t kb) {
        if (pl.valid == 0) return;
        const int64_t k0 = grp * g.kg + kb * kMr, mr = std::min(kMr, g.kg - kb * kMr);
        o.valid = pl.valid;
        o.count = __builtin_popcountll(pl.valid);
        const int64_t at = (n * p.k + k0) * out_plane + pl.out0;
        o.y = p.output + at;
        o.residual = p.residual != nullptr ? p.residual + at : nullptr;
        o.rows = mr;
        o.init = ctx.init + k0;
        o.multiplier = p.multiplier + k0;
        kTiles[pl.nv - 1](packed + (grp * g.k_blocks + kb) * block_dwords,
                          reinterpret_cast<const uint8_t*>(buf) + pl.v0 * 4, pl.d1, pl.d2,
                          ctx.tap_offset, g.taps, g.c4, g.plane * 4, o);
      };
      if (block_major) {
        for (int64_t kb = kb_begin; kb < kb_end; ++kb) {
          for (int64_t i = 0; i < count; ++i) run(places[i], kb);
        }
      } else {
        for (int64_t i = 0; i < count; ++i) {
          for (int64_t kb = kb_begin; kb < kb_end; ++kb) run(places[i], kb);
        }
      }
    }
    u = slice_end;
  }
}

/// What rewriting one byte of input into the phase planes costs, in multiply-adds of the tiles
/// (about 1/8 cycle a byte against 64 multiply-adds a cycle).
constexpr int64_t kFillCost = 8;
/// What splitting an output plane between two threads costs, in multiply-adds: each writes
/// lines near the other's (its half ends where the other's begins, and the next plane's first
/// half follows the second), and the cores' prefetchers then pull lines the other is writing.
/// Measured on 2 vCPUs (Zen 4), two threads writing halves of each of 144 planes of 3136 bytes
/// took 31-39 us where writing 72 whole planes each took 4.4-5.3 us (7.3-10.4 on one thread);
/// 4000 puts the 1x1 convs below on the side they measured faster.
constexpr int64_t kSplitPlaneCost = 4000;

/// Slices of output channels per image for the direct path: 1 (threads split an image's tiles,
/// which is its positions) unless the batch is one image of one group, the conv is 1x1, and
/// splitting its blocks of 8 output channels among the threads leaves the largest piece less
/// work, counting that each thread then rewrites the whole image while a split by positions
/// pays kSplitPlaneCost per output channel; then one slice per thread. Minimum of 3 processes,
/// batch 1, 2 threads, us, tiles against slices: 16 -> 64 on 55 x 55 24.6 / 16.3, 24 -> 144 on
/// 56 x 56 49.8 / 44.7, 16 -> 96 on 112 x 112 93.9 / 92.3, 144 -> 24 on 56 x 56 33.0 / 45.3,
/// 240 -> 40 on 28 x 28 20.8 / 25.1; efficientnet-lite0's 1x1 convs on 14 x 14 have 5 tiles
/// (3 + 2 on 2 threads) and 10 to 84 blocks. Not 3x3 convs, whose tiles run tile-major and
/// read their inputs once for all of their blocks: 16 -> 64 on 55 x 55 71.7 / 76.6.
int64_t DirectSlices(const QConvParams& p, const DirectGeometry& g) {
  const int64_t t = p.num_threads;
  if (p.n * p.group != 1 || t < 2 || g.k_blocks < t || g.taps != 1) return 1;
  // The largest piece's work either way, in multiply-adds.
  const double compute = static_cast<double>(g.windows * 16 * g.kg * g.cg);
  const double fill = static_cast<double>(kFillCost * g.image_bytes);
  const auto share = [t](int64_t units) {
    return static_cast<double>(CeilDiv(units, t)) / static_cast<double>(units);
  };
  const double by_tiles = share(g.tiles) * (compute + fill) + kSplitPlaneCost * g.kg;
  const double by_slices = share(g.k_blocks) * compute + fill;
  return by_slices < by_tiles ? t : 1;
}

/// The direct path's accumulator starts in its workspace, after the tap offsets: K, then kMr
/// zeros for the rows past K of the last block (computed, never stored); then its windows'
/// starts (DirectWindows).
int64_t DirectInitBytes(const QConvParams& p, const DirectGeometry& g) {
  return RoundUp((p.k + kMr) * 4, 64) + RoundUp(g.windows * sizeof(Window), 64);
}

QCC_VNNI void DirectConv(const QConvParams& p, const PackedQConvWeights& w, uint8_t* workspace) {
  DirectContext ctx;
  ctx.p = &p;
  ctx.w = &w;
  ctx.g = DirectGeometryOf(p);
  const DirectGeometry& g = ctx.g;
  auto* init = reinterpret_cast<int32_t*>(TapOffsetsAt(p, g, workspace, &ctx.tap_offset));
  for (int64_t k = 0; k < p.k + kMr; ++k) {
    init[k] = k < p.k ? WrapAdd(p.bias != nullptr ? p.bias[k] : 0, w.correction[k]) : 0;
  }
  ctx.init = init;
  auto* windows = reinterpret_cast<Window*>(init + RoundUp(p.k + kMr, 16));
  DirectWindows(g, windows);
  ctx.windows = windows;
  ctx.buffers = reinterpret_cast<uint8_t*>(init) + DirectInitBytes(p, g);
  PreparePlaneConstants(p, &ctx.k);
  ctx.slices = DirectSlices(p, g);
  ctx.slice_blocks = CeilDiv(g.k_blocks, ctx.slices);
  const int64_t cost = kTileLanes * CeilDiv(g.kg, ctx.slices) * g.cg * g.taps;
  NnParallelFor(
      p.num_threads, p.n * p.group * ctx.slices * g.tiles, cost,
      [&ctx](int64_t begin, int64_t end, int thread) { DirectUnits(ctx, begin, end, thread); });
}

// ---------------------------------------------------------------------------------------------
// AMX path (QConvAmxTakes: CPUs with AMX-INT8). The same phase planes as the direct path: a
// plane of channel quads is, for 16 consecutive virtual positions, 16 dwords of 4 channels, and
// quads are plane * 4 bytes apart, which is the layout of an AMX B tile (K / 4 rows of N
// dwords) with that row stride. So one tileloadd takes 16 positions x up to 16 quads of a tap
// straight from the buffer, and tdpbsud multiplies the signed weights (A: 16 output channels x
// up to 64 input channels) by them: 16 x 16 sums of up to 64 products per instruction, where
// vpdpbusd does 16 of 4. A unit is 32 virtual positions; for each 32 output channels, four C
// tiles (2 channel blocks x 2 position halves) accumulate over every (tap, chunk of quads),
// are stored to the stack and requantized row by row through StoreRow, the direct path's
// epilogue (residual included). Quads go in `chunks` equal chunks of `kq` (<= 16); the last
// chunk's quads past C/group read whatever follows in the buffer (the next phase's planes, or
// extra bytes past the last) against zero weights, so they add nothing. Sums are int32 modulo
// 2^32 in a different order than the reference's, which modular addition does not see.
#define QCC_AMX                                                                      \
  __attribute__((                                                                    \
      target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,avx512vbmi2,amx-tile," \
             "amx-int8")))

constexpr int64_t kAmxRows = 16;       // output channels of an A or C tile
constexpr int64_t kAmxPositions = 32;  // virtual positions of a unit: two B tiles

struct AmxGeometry : PhasePlanes {
  int64_t kg, taps;
  int64_t kq, chunks;    // quads per K chunk, chunks per tap: kq * chunks >= c4
  int64_t pairs;         // blocks of 32 output channels of a group (weights zero past kg)
  int64_t blocks;        // units of 32 virtual positions per (image, group)
  int64_t a_bytes;       // one A tile: 16 rows of kq * 4 bytes
  int64_t thread_bytes;  // image_bytes plus the planes the last chunk reads past c4
};

AmxGeometry AmxGeometryOf(const QConvParams& p) {
  AmxGeometry g;
  static_cast<PhasePlanes&>(g) = PhasePlanesOf(p);
  // A unit's second B tile reads up to 31 lanes past its first virtual position.
  g.plane = RoundUp(std::max(g.phase_h * g.phase_w, g.v + kAmxPositions + g.max_offset), 16);
  g.image_bytes = p.stride_h * p.stride_w * g.c4 * g.plane * 4;
  g.kg = p.k / p.group;
  g.taps = p.r * p.s;
  g.chunks = CeilDiv(g.c4, 16);
  g.kq = CeilDiv(g.c4, g.chunks);
  g.pairs = CeilDiv(g.kg, 2 * kAmxRows);
  g.blocks = CeilDiv(g.v, kAmxPositions);
  g.a_bytes = kAmxRows * g.kq * 4;
  g.thread_bytes = g.image_bytes + (g.kq * g.chunks - g.c4) * g.plane * 4;
  return g;
}

/// The AMX palette-1 configuration: C tiles 0-3 (16 x 16 int32), A tiles 4, 5 (16 rows of
/// kq * 4 bytes), B tiles 6, 7 (kq rows of 64 bytes).
struct alignas(64) AmxTileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

AmxTileConfig AmxConfigOf(const AmxGeometry& g) {
  AmxTileConfig c;
  for (int t = 0; t < 4; ++t) {
    c.rows[t] = kAmxRows;
    c.colsb[t] = 64;
  }
  for (int t = 4; t < 6; ++t) {
    c.rows[t] = kAmxRows;
    c.colsb[t] = static_cast<uint16_t>(g.kq * 4);
  }
  for (int t = 6; t < 8; ++t) {
    c.rows[t] = static_cast<uint8_t>(g.kq);
    c.colsb[t] = 64;
  }
  return c;
}

struct AmxContext {
  const QConvParams* p;
  const PackedQConvWeights* w;
  AmxGeometry g;
  AmxTileConfig config;
  const int64_t* tap_offset;
  uint8_t* buffers;  // g.thread_bytes per thread
  PlaneConstants k;
};

QCC_AMX void AmxUnits(const AmxContext& ctx, int64_t begin, int64_t end, int thread) {
  const QConvParams& p = *ctx.p;
  const AmxGeometry& g = ctx.g;
  uint8_t* buf = ctx.buffers + thread * g.thread_bytes;
  const int8_t* packed = reinterpret_cast<const int8_t*>(ctx.w->packed.get());
  const int64_t out_plane = g.oh * g.ow, b_stride = g.plane * 4, a_stride = g.kq * 4;
  const int64_t pair_bytes = 2 * g.taps * g.chunks * g.a_bytes;  // 2 channel blocks
  const int64_t block_bytes = g.taps * g.chunks * g.a_bytes;
  _tile_loadconfig(&ctx.config);
  TileOut o = ConvTileOut(p, ctx.k, out_plane);
  alignas(64) int32_t acc[4][kAmxRows][16];
  for (int64_t u = begin; u < end;) {
    const int64_t image = u / g.blocks, first = u % g.blocks;
    const int64_t n = image / p.group, grp = image % p.group;
    const int64_t image_end = std::min(end, (image + 1) * g.blocks);
    const int64_t last = image_end - 1 - image * g.blocks;
    FillPhasePlanes(p, g, ctx.k.idx, p.input + (n * p.c + grp * g.cg) * p.h * p.w,
                    reinterpret_cast<uint32_t*>(buf), first * kAmxPositions,
                    (last + 1) * kAmxPositions + g.max_offset, /*pads_filled=*/false);
    for (int64_t b = first; b <= last; ++b) {
      const int64_t v0 = b * kAmxPositions, lanes = std::min(kAmxPositions, g.v - v0);
      const uint64_t valid = ValidLanes(g, v0, lanes);
      if (valid == 0) continue;
      const int64_t out0 = FirstOutput(g, v0);
      const bool two = lanes > 16;
      o.valid = valid;
      o.count = __builtin_popcountll(valid);
      const RowStore store = two ? RowStoreOf<2>(o) : RowStoreOf<1>(o);
      const uint8_t* x = buf + v0 * 4;
      for (int64_t pair = 0; pair < g.pairs; ++pair) {
        const int8_t* a = packed + (grp * g.pairs + pair) * pair_bytes;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int64_t t = 0; t < g.taps; ++t) {
          const uint8_t* xt = x + ctx.tap_offset[t];
          for (int64_t c = 0; c < g.chunks; ++c, a += g.a_bytes) {
            const uint8_t* xc = xt + c * g.kq * b_stride;
            _tile_loadd(6, xc, b_stride);
            _tile_loadd(7, xc + 64, b_stride);
            _tile_loadd(4, a, a_stride);
            _tile_loadd(5, a + block_bytes, a_stride);
            _tile_dpbsud(0, 4, 6);
            _tile_dpbsud(1, 4, 7);
            _tile_dpbsud(2, 5, 6);
            _tile_dpbsud(3, 5, 7);
          }
        }
        _tile_stored(0, acc[0], 64);
        _tile_stored(1, acc[1], 64);
        _tile_stored(2, acc[2], 64);
        _tile_stored(3, acc[3], 64);
        for (int64_t half = 0; half < 2; ++half) {
          const int64_t kb = (pair * 2 + half) * kAmxRows;
          const int64_t rows = std::min(kAmxRows, g.kg - kb);
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t k0 = grp * g.kg + kb + r;
            const __m512i init = _mm512_set1_epi32(
                WrapAdd(p.bias != nullptr ? p.bias[k0] : 0, ctx.w->correction[k0]));
            const __m512i s0 = _mm512_add_epi32(_mm512_load_si512(acc[2 * half][r]), init);
            const __m512i s1 = _mm512_add_epi32(_mm512_load_si512(acc[2 * half + 1][r]), init);
            const int64_t at = (n * p.k + k0) * out_plane + out0;
            const int8_t* res = p.residual != nullptr ? p.residual + at : nullptr;
            if (two) {
              StoreRow<2>(s0, s1, s1, p.multiplier[k0], p.output + at, res, store);
            } else {
              StoreRow<1>(s0, s0, s0, p.multiplier[k0], p.output + at, res, store);
            }
          }
        }
      }
    }
    u = image_end;
  }
  _tile_release();
}

QCC_AMX void DirectConvAmx(const QConvParams& p, const PackedQConvWeights& w, uint8_t* workspace) {
  AmxContext ctx;
  ctx.p = &p;
  ctx.w = &w;
  ctx.g = AmxGeometryOf(p);
  const AmxGeometry& g = ctx.g;
  ctx.config = AmxConfigOf(g);
  ctx.buffers = TapOffsetsAt(p, g, workspace, &ctx.tap_offset);
  PreparePlaneConstants(p, &ctx.k);
  const int64_t cost = kAmxPositions * g.kg * g.cg * g.taps;
  NnParallelFor(
      p.num_threads, p.n * p.group * g.blocks, cost,
      [&ctx](int64_t begin, int64_t end, int thread) { AmxUnits(ctx, begin, end, thread); });
}

/// The AMX layout: [group][pair][channel block of 16][tap][chunk] A tiles, each 16 output
/// channels x kq quads of 4 input channels (row stride kq * 4), zero past K/group and C/group.
void PackQConvAmx(const QConvParams& p, PackedQConvWeights* w) {
  const AmxGeometry g = AmxGeometryOf(p);
  const int64_t cg = g.cg;
  w->packed = Tensor::AllocateStorage(p.group * g.pairs * 2 * g.taps * g.chunks * g.a_bytes);
  uint8_t* dst = w->packed.get();
  for (int64_t grp = 0; grp < p.group; ++grp) {
    for (int64_t blk = 0; blk < 2 * g.pairs; ++blk) {
      for (int64_t tap = 0; tap < g.taps; ++tap) {
        for (int64_t chunk = 0; chunk < g.chunks; ++chunk) {
          for (int64_t r = 0; r < kAmxRows; ++r) {
            for (int64_t i = 0; i < g.kq * 4; ++i) {
              const int64_t k = blk * kAmxRows + r, ch = chunk * g.kq * 4 + i;
              *dst++ =
                  k < g.kg && ch < cg
                      ? static_cast<uint8_t>(p.weights[((grp * g.kg + k) * cg + ch) * g.taps + tap])
                      : 0;
            }
          }
        }
      }
    }
  }
  w->layout = PackedQConvWeights::Layout::kAmxDirect;
}

}  // namespace

int64_t QConvDirectSlices(const QConvParams& p) { return DirectSlices(p, DirectGeometryOf(p)); }

bool QConvAmxTakes(const QConvParams& p) {
  return !QConvDepthwiseVnniFits(p) && p.c / p.group >= 32;
}

void PackQConvVnni(const QConvParams& p, PackedQConvWeights* w, bool amx) {
  const int64_t cg = p.c / p.group, kg = p.k / p.group;
  if (QConvDepthwiseVnniFits(p)) {
    PackQConvDepthwiseVnni(p, w);
    return;
  }
  if (amx && QConvAmxTakes(p)) {
    PackQConvAmx(p, w);
    return;
  }
  if (QConvPointwiseVnniPacks(p)) {
    PackQConvPointwiseVnni(p, w);
    return;
  }
  if (QConvSmallMapVnniPacks(p)) {
    PackQConvSmallMapVnni(p, w);
    return;
  }
  const int64_t c4 = CeilDiv(cg, 4), k_blocks = CeilDiv(kg, kMr);
  w->packed = Tensor::AllocateStorage(p.group * k_blocks * p.r * p.s * c4 * kMr * 4);
  uint8_t* dst = w->packed.get();
  for (int64_t grp = 0; grp < p.group; ++grp) {
    for (int64_t kb = 0; kb < k_blocks; ++kb) {
      for (int64_t tap = 0; tap < p.r * p.s; ++tap) {
        for (int64_t q = 0; q < c4 * 4 * kMr; ++q) {
          // Dword (quad q / 32, row q / 4 % 8), byte q % 4: channel quad * 4 + byte.
          const int64_t k = kb * kMr + q / 4 % kMr, ch = q / (4 * kMr) * 4 + q % 4;
          *dst++ =
              k < kg && ch < cg
                  ? static_cast<uint8_t>(p.weights[((grp * kg + k) * cg + ch) * p.r * p.s + tap])
                  : 0;
        }
      }
    }
  }
  w->layout = PackedQConvWeights::Layout::kVnniDirect;
}

bool QConvFusesResidual(const QConvParams& p, const PackedQConvWeights& w) {
  using Layout = PackedQConvWeights::Layout;
  return (w.layout == Layout::kVnniDirect || w.layout == Layout::kVnniPointwise ||
          w.layout == Layout::kVnniSmallMap || w.layout == Layout::kAmxDirect) &&
         VnniRequantApplies(p.multiplier, p.k, p.zp_out) && ResidualAddApplies(p.add);
}

int64_t QConvVnniWorkspaceBytes(const QConvParams& p, const PackedQConvWeights& w) {
  const int64_t threads = std::max(1, p.num_threads);
  if (w.layout == PackedQConvWeights::Layout::kVnniDepthwise) {
    return 64 + threads * QConvDepthwiseVnniThreadBytes(p);
  }
  if (w.layout == PackedQConvWeights::Layout::kVnniPointwise) {
    return 64 + threads * QConvPointwiseVnniThreadBytes(p);
  }
  if (w.layout == PackedQConvWeights::Layout::kVnniSmallMap) {
    return 64 + TapOffsetsBytes(p) + threads * QConvSmallMapVnniThreadBytes(p);
  }
  if (w.layout == PackedQConvWeights::Layout::kAmxDirect) {
    return 64 + TapOffsetsBytes(p) + threads * AmxGeometryOf(p).thread_bytes;
  }
  const DirectGeometry g = DirectGeometryOf(p);
  return 64 + TapOffsetsBytes(p) + DirectInitBytes(p, g) + threads * g.image_bytes;
}

QCC_VNNI void QConvVnni(const QConvParams& p, const PackedQConvWeights& w, void* workspace) {
  // Align the caller's scratch to a cache line.
  auto* ws = reinterpret_cast<uint8_t*>(RoundUp(reinterpret_cast<uintptr_t>(workspace), 64));
  if (w.layout == PackedQConvWeights::Layout::kVnniDepthwise) {
    QConvDepthwiseVnni(p, w, ws);
  } else if (w.layout == PackedQConvWeights::Layout::kVnniPointwise) {
    QConvPointwiseVnni(p, w, ws);
  } else if (w.layout == PackedQConvWeights::Layout::kVnniSmallMap) {
    QConvSmallMapVnni(p, w, ws);
  } else if (w.layout == PackedQConvWeights::Layout::kAmxDirect) {
    DirectConvAmx(p, w, ws);
  } else {
    DirectConv(p, w, ws);
  }
}

}  // namespace qcc::cpu::internal
