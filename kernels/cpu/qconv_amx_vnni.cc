// The AMX path of the int8 convolution (QConvAmxTakes: CPUs with AMX-INT8), over the same phase
// planes as the VNNI direct path (qconv_vnni.cc), whose epilogue it shares
// (qconv_direct_vnni.h). Bit-identical to QConvReference, as tests/backend_cpu/int8_conv_test.cc
// checks on CPUs that have AMX.
//
// A plane of channel quads is, for 16 consecutive virtual positions, 16 dwords of 4 channels,
// and quads are plane * 4 bytes apart, which is the layout of an AMX B tile (K / 4 rows of N
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
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/qconv_direct_vnni.h"
#include "kernels/cpu/qconv_planes_vnni.h"
#include "kernels/cpu/qint8_vnni_internal.h"
#include "support/int_math.h"
#include "support/tensor.h"

#define QCC_AMX                                                                      \
  __attribute__((                                                                    \
      target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,avx512vbmi2,amx-tile," \
             "amx-int8")))

namespace qcc::cpu::internal {

namespace {

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

}  // namespace

void DirectConvAmx(const QConvParams& p, const PackedQConvWeights& w, uint8_t* workspace) {
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

int64_t QConvAmxThreadBytes(const QConvParams& p) { return AmxGeometryOf(p).thread_bytes; }

bool QConvAmxTakes(const QConvParams& p) {
  return !QConvDepthwiseVnniFits(p) && p.c / p.group >= 32;
}

}  // namespace qcc::cpu::internal
