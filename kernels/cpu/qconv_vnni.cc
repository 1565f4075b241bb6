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
#include "kernels/cpu/qconv_direct_vnni.h"
#include "kernels/cpu/qconv_planes_vnni.h"
#include "kernels/cpu/qint8_vnni_internal.h"
#include "support/int_math.h"
#include "support/tensor.h"

namespace qcc::cpu::internal {

namespace {

constexpr int64_t kMr = 8;     // output channels per register tile
constexpr int64_t kMaxNv = 3;  // 16-position vectors per register tile
constexpr int64_t kTileLanes = 16 * kMaxNv;

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

}  // namespace

QCC_VNNI void PreparePlaneConstants(const QConvParams& p, PlaneConstants* k) {
  PhaseRowIndex(p, k->idx);
  if (p.residual != nullptr) k->add = MakeResidualAddV(p.add);
  k->packed_requant = PackedRequantApplies(p.multiplier, p.k, p.lo, p.hi);
  if (k->packed_requant) k->pack = MakePackedRequantV(p.zp_out, p.lo, p.hi);
}

int64_t QConvDirectSlices(const QConvParams& p) { return DirectSlices(p, DirectGeometryOf(p)); }

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
    return 64 + TapOffsetsBytes(p) + threads * QConvAmxThreadBytes(p);
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
