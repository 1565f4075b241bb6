// The channel-blocked AVX-512 VNNI depthwise int8 convolution, for small maps (at most 16 x 16)
// (qconv_depthwise_vnni.cc runs it when QConvDepthwiseBlockedRuns): 16 channels to a register, one
// output position per accumulator. The per-plane kernel there spends most of its time per plane
// (the padded copy, a vpermb per dot product, four accumulator chains), which a 7 x 7 map cannot
// amortize. Integer sums are exact modulo 2^32 in any order, so this is bit-identical to
// QConvReference as the other paths are (the x + 128 algebra of qconv_vnni.cc).
//
// Per (image, block of 16 channels):
// 1. Xt: the padded input, [padded row][padded column][16 channels] bytes x ^ 0x80, built by
//    16 x 16 byte transposes of the channels' rows (pad bytes elsewhere).
// 2. T: for each row phase a (< stride_h) and tap quad q, a plane of [row i][output column ox]
//    dwords per channel lane: the 4 taps 4q .. 4q + 3 of padded row i * stride_h + a from
//    column ox * stride_w + 4q (one vpermb of a 64-byte Xt load). Output (oy, ox) reads kernel
//    row r's quad q at row oy + r * dh / sh of phase (r * dh) % sh, so the 16 positions p0 ..
//    p0 + 15 (p = oy * ow + ox) are 16 consecutive vectors of one plane.
// 3. 16 accumulators (positions) x 16 lanes (channels): per (r, q) one weight vector and 16
//    vpdpbusd; then requantization per lane's channel and a 16 x 16 byte transpose back to
//    the output's channel rows.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/qint8_vnni_internal.h"
#include "support/int_math.h"

namespace qcc::cpu::internal {

namespace {

constexpr int64_t kLanes = 16;
// Where this kernel beats the per-plane one (measured on efficientnet-lite0's and ppocr-cls's
// depthwise layers, 1 and 2 threads, batch 1 and 32): maps of at most 16 x 16 outputs, at any
// stride, where the per-plane kernel's fixed costs per plane dominate and its rows fill one
// 16-lane segment or less (7 x 7, 5 x 5: 0.024 against 0.045 ms for 1152 channels; 14 x 14,
// 3 x 3: 0.017 against 0.037 ms for 480). On wider maps the per-plane kernel runs two segments
// at once and wins (28 x 28, 5 x 5: 0.044 against 0.060 ms; 3 x 96; 56 x 56).
constexpr int64_t kSmallMapSide = 16;

struct BlockedGeometry {
  int64_t oh, ow, positions, sq, blocks;
  int64_t ph, xw;    // Xt: padded rows, columns
  int64_t t_rows;    // rows of a T plane: ceil(ph / stride_h)
  int64_t t_plane;   // vectors per T plane: t_rows * ow and 16 of slack, for the last chunk
  int64_t xt_bytes;  // per thread, 64-byte multiples
  int64_t t_bytes;
};

BlockedGeometry BlockedGeometryOf(const QConvParams& p) {
  BlockedGeometry g;
  g.oh = p.out_h();
  g.ow = p.out_w();
  g.positions = g.oh * g.ow;
  g.sq = CeilDiv(p.s, 4);
  g.blocks = CeilDiv(p.c, kLanes);
  g.ph = p.h + p.pad_top + p.pad_bottom;
  // The last quad of the last column reads up to 4 * sq - 1 columns past its first.
  g.xw = std::max(p.w + p.pad_left + p.pad_right, (g.ow - 1) * p.stride_w + 4 * g.sq);
  g.t_rows = CeilDiv(g.ph, p.stride_h);
  g.t_plane = g.t_rows * g.ow + kLanes;
  // Xt's last row is read 48 bytes past its last column by the 64-byte loads of T's build.
  g.xt_bytes = RoundUp(g.ph * g.xw * kLanes + 64, 64);
  g.t_bytes = p.stride_h * g.sq * g.t_plane * 64;
  return g;
}

/// Everything a piece needs, built once per call.
struct BlockedContext {
  const QConvParams* p;
  const int32_t* correction;
  const uint8_t* packed;  // [block][r][q] 64-byte vectors: lane c = w[c][r][4q .. 4q + 3]
  BlockedGeometry g;
  uint8_t* buffers;  // per thread: two of xt_bytes, then t_bytes
  ByteTransposeIndex transpose;
  alignas(64) uint8_t transpose_packed[2][64];  // stage A's idx for Requantize4's byte order
  alignas(64) uint8_t quad[64];  // byte 4c + j = 16j + c: 4 columns of 16 channels to quads
};

/// Step 1: Xt of channels [c0, c0 + cn) of image n.
QCC_VNNI void BuildXt(const BlockedContext& ctx, int64_t n, int64_t c0, int64_t cn, uint8_t* xt) {
  const QConvParams& p = *ctx.p;
  const BlockedGeometry& g = ctx.g;
  const uint8_t pad = static_cast<uint8_t>(p.pad_value) ^ 0x80;
  std::memset(xt, pad, g.xt_bytes);
  __m512i idx[4];
  for (int i = 0; i < 4; ++i) idx[i] = _mm512_load_si512(ctx.transpose.v[i]);
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const int8_t* plane0 = p.input + (n * p.c + c0) * p.h * p.w;
  for (int64_t y = 0; y < p.h; ++y) {
    uint8_t* row = xt + ((y + p.pad_top) * g.xw + p.pad_left) * kLanes;
    for (int64_t x0 = 0; x0 < p.w; x0 += 16) {
      const int64_t cols = std::min<int64_t>(16, p.w - x0);
      const __mmask16 load = static_cast<__mmask16>(LowBits64(cols));
      __m512i z[4];
      for (int k = 0; k < 4; ++k) {
        __m128i r[4];
        for (int cc = 0; cc < 4; ++cc) {
          const int64_t c = 4 * k + cc;
          r[cc] = c < cn ? _mm_maskz_loadu_epi8(load, plane0 + (c * p.h + y) * p.w + x0)
                         : _mm_setzero_si128();
        }
        z[k] = _mm512_inserti32x4(_mm512_zextsi128_si512(r[0]), r[1], 1);
        z[k] = _mm512_inserti32x4(z[k], r[2], 2);
        z[k] = _mm512_inserti32x4(z[k], r[3], 3);
      }
      __m512i o[4];
      Transpose16x16Bytes(z, idx, o);
      for (int m = 0; m < 4; ++m) {
        // o[m] holds columns x0 + 4m .. x0 + 4m + 3, 16 channel bytes each.
        const int64_t in = std::clamp<int64_t>(cols - 4 * m, 0, 4);
        if (in == 0) break;
        _mm512_mask_storeu_epi8(row + (x0 + 4 * m) * kLanes, LowBits64(16 * in),
                                _mm512_xor_si512(o[m], flip));
      }
    }
  }
}

/// Step 2: the T planes from Xt.
QCC_VNNI void BuildT(const BlockedContext& ctx, const uint8_t* xt, uint8_t* t) {
  const QConvParams& p = *ctx.p;
  const BlockedGeometry& g = ctx.g;
  const __m512i quad = _mm512_load_si512(ctx.quad);
  // Locals: the stores below may alias ctx as far as GCC knows.
  const int64_t ow = g.ow, sh = p.stride_h, step = p.stride_w * kLanes, rows = g.t_rows;
  const int64_t ph = g.ph, xw = g.xw, sq = g.sq, t_plane = g.t_plane;
  for (int64_t a = 0; a < sh; ++a) {
    for (int64_t q = 0; q < sq; ++q) {
      __m512i* dst = reinterpret_cast<__m512i*>(t) + (a * sq + q) * t_plane;
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t row = i * sh + a;
        if (row >= ph) {
          // A phase with fewer rows: nothing reads these, but keep them defined.
          for (int64_t ox = 0; ox < ow; ++ox) *dst++ = _mm512_setzero_si512();
          continue;
        }
        const uint8_t* src = xt + (row * xw + 4 * q) * kLanes;
        for (int64_t ox = 0; ox < ow; ++ox, src += step) {
          *dst++ = _mm512_maskz_permutexvar_epi8(~__mmask64{0}, quad, _mm512_loadu_si512(src));
        }
      }
      for (int64_t i = 0; i < kLanes; ++i) *dst++ = _mm512_setzero_si512();
    }
  }
}

/// Requantize (as RequantizeX16, whose argument this repeats) of 4 accumulators of 16 lanes:
/// int32 results in [lo - zp, hi - zp] pack exactly to int16, take zp (the 16-bit `zp`) there
/// and pack exactly to int8. The packs interleave by 128-bit lanes: byte 16L + 4i + j is lane
/// 4L + j of accumulator i.
QCC_VNNI inline __m512i RoundClamped(__m512i acc, __m512 m, __m512 lo_f, __m512 hi_f) {
  constexpr __mmask16 kAll = 0xFFFF;
  __m512 x = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(kAll, acc), m);
  x = _mm512_maskz_min_ps(kAll, _mm512_maskz_max_ps(kAll, x, lo_f), hi_f);
  return _mm512_maskz_cvt_roundps_epi32(kAll, x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

QCC_VNNI inline __m512i Requantize4(__m512i a0, __m512i a1, __m512i a2, __m512i a3, __m512 m,
                                    __m512i zp16, __m512 lo_f, __m512 hi_f) {
  const __m512i w01 = _mm512_add_epi16(
      _mm512_packs_epi32(RoundClamped(a0, m, lo_f, hi_f), RoundClamped(a1, m, lo_f, hi_f)), zp16);
  const __m512i w23 = _mm512_add_epi16(
      _mm512_packs_epi32(RoundClamped(a2, m, lo_f, hi_f), RoundClamped(a3, m, lo_f, hi_f)), zp16);
  return _mm512_packs_epi16(w01, w23);
}

/// Stores rows 4M .. 4M + 3 of the output transpose (channels; those < cn) of a chunk: `count`
/// positions of each, at y + channel * stride.
template <int M>
QCC_VNNI inline void StoreRows(__m512i o, int8_t* y, int64_t stride, int64_t cn, int64_t count) {
  const __m128i rows[4] = {
      _mm512_maskz_extracti32x4_epi32(0xF, o, 0), _mm512_maskz_extracti32x4_epi32(0xF, o, 1),
      _mm512_maskz_extracti32x4_epi32(0xF, o, 2), _mm512_maskz_extracti32x4_epi32(0xF, o, 3)};
  const __mmask16 mask = static_cast<__mmask16>(LowBits64(count));
  for (int j = 0; j < 4; ++j) {
    if (4 * M + j >= cn) return;
    int8_t* dst = y + (4 * M + j) * stride;
    if (count == kLanes) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), rows[j]);
    } else {
      _mm_mask_storeu_epi8(dst, mask, rows[j]);
    }
  }
}

/// Step 3 for positions [p0, p0 + 16) of block `blk` (channels c0 .. c0 + cn) of image n.
QCC_VNNI void ConvChunk(const BlockedContext& ctx, const uint8_t* t, int64_t n, int64_t blk,
                        int64_t c0, int64_t cn, int64_t p0, __m512i init, __m512 multiplier) {
  const QConvParams& p = *ctx.p;
  const BlockedGeometry& g = ctx.g;
  // Named accumulators: with an array of them GCC copied each one out and back around its
  // vpdpbusd (32 register moves and a spill per 16 dot products).
  __m512i a0 = init, a1 = init, a2 = init, a3 = init, a4 = init, a5 = init, a6 = init, a7 = init;
  __m512i a8 = init, a9 = init, a10 = init, a11 = init, a12 = init, a13 = init, a14 = init,
          a15 = init;
  const __m512i* w = reinterpret_cast<const __m512i*>(ctx.packed) + blk * p.r * g.sq;
  for (int64_t r = 0; r < p.r; ++r) {
    const int64_t dy = r * p.dilation_h;
    const int64_t phase = dy % p.stride_h, row = dy / p.stride_h;
    for (int64_t q = 0; q < g.sq; ++q) {
      const __m512i* x =
          reinterpret_cast<const __m512i*>(t) + (phase * g.sq + q) * g.t_plane + row * g.ow + p0;
      const __m512i wv = _mm512_load_si512(w + r * g.sq + q);
#define QCC_DW_DP(i) a##i = _mm512_dpbusd_epi32(a##i, _mm512_load_si512(x + i), wv)
      QCC_DW_DP(0);
      QCC_DW_DP(1);
      QCC_DW_DP(2);
      QCC_DW_DP(3);
      QCC_DW_DP(4);
      QCC_DW_DP(5);
      QCC_DW_DP(6);
      QCC_DW_DP(7);
      QCC_DW_DP(8);
      QCC_DW_DP(9);
      QCC_DW_DP(10);
      QCC_DW_DP(11);
      QCC_DW_DP(12);
      QCC_DW_DP(13);
      QCC_DW_DP(14);
      QCC_DW_DP(15);
#undef QCC_DW_DP
    }
  }
  const __m512i zp = _mm512_set1_epi16(static_cast<int16_t>(p.zp_out));
  const __m512 lo = _mm512_set1_ps(static_cast<float>(p.lo - p.zp_out));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(p.hi - p.zp_out));
  __m512i z[4];
  z[0] = Requantize4(a0, a1, a2, a3, multiplier, zp, lo, hi);
  z[1] = Requantize4(a4, a5, a6, a7, multiplier, zp, lo, hi);
  z[2] = Requantize4(a8, a9, a10, a11, multiplier, zp, lo, hi);
  z[3] = Requantize4(a12, a13, a14, a15, multiplier, zp, lo, hi);
  __m512i idx[4];
  for (int i = 0; i < 2; ++i) idx[i] = _mm512_load_si512(ctx.transpose_packed[i]);
  for (int i = 2; i < 4; ++i) idx[i] = _mm512_load_si512(ctx.transpose.v[i]);
  __m512i o[4];
  Transpose16x16Bytes(z, idx, o);
  // o[m]'s 16-byte row j: channel 4m + j at the 16 positions.
  const int64_t count = std::min(kLanes, g.positions - p0);
  int8_t* y = p.output + (n * p.k + c0) * g.positions + p0;
  StoreRows<0>(o[0], y, g.positions, cn, count);
  StoreRows<1>(o[1], y, g.positions, cn, count);
  StoreRows<2>(o[2], y, g.positions, cn, count);
  StoreRows<3>(o[3], y, g.positions, cn, count);
}

QCC_VNNI void BlockedUnits(const BlockedContext& ctx, int64_t begin, int64_t end, int thread) {
  const QConvParams& p = *ctx.p;
  const BlockedGeometry& g = ctx.g;
  // Two Xt buffers: the next unit's Xt is built before this one's T, so that T's loads do not
  // wait on the masked stores that just wrote their bytes (which cannot be forwarded).
  uint8_t* xt[2] = {ctx.buffers + thread * (2 * g.xt_bytes + g.t_bytes), nullptr};
  xt[1] = xt[0] + g.xt_bytes;
  uint8_t* t = xt[1] + g.xt_bytes;
  const auto build_xt = [&](int64_t u) {
    const int64_t c0 = u % g.blocks * kLanes;
    BuildXt(ctx, u / g.blocks, c0, std::min(kLanes, p.c - c0), xt[(u - begin) % 2]);
  };
  if (begin < end) build_xt(begin);
  for (int64_t u = begin; u < end; ++u) {
    const int64_t n = u / g.blocks, blk = u % g.blocks;
    const int64_t c0 = blk * kLanes, cn = std::min(kLanes, p.c - c0);
    if (u + 1 < end) build_xt(u + 1);
    BuildT(ctx, xt[(u - begin) % 2], t);
    alignas(64) int32_t init[kLanes] = {};
    for (int64_t c = 0; c < cn; ++c) {
      init[c] = WrapAdd(p.bias != nullptr ? p.bias[c0 + c] : 0, ctx.correction[c0 + c]);
    }
    const __m512 multiplier =
        _mm512_maskz_loadu_ps(static_cast<__mmask16>(LowBits64(cn)), p.multiplier + c0);
    for (int64_t p0 = 0; p0 < g.positions; p0 += kLanes) {
      ConvChunk(ctx, t, n, blk, c0, cn, p0, _mm512_load_si512(init), multiplier);
    }
  }
}

}  // namespace

bool QConvDepthwiseBlockedRuns(const QConvParams& p) {
  return p.c == p.group && p.k == p.c && p.dilation_w == 1 && p.s <= 16 &&
         p.out_h() <= kSmallMapSide && p.out_w() <= kSmallMapSide;
}

int64_t QConvDepthwiseBlockedThreadBytes(const QConvParams& p) {
  const BlockedGeometry g = BlockedGeometryOf(p);
  return 2 * g.xt_bytes + g.t_bytes;
}

int64_t QConvDepthwiseBlockedPackedBytes(const QConvParams& p) {
  return CeilDiv(p.k, kLanes) * p.r * CeilDiv(p.s, 4) * 64;
}

void PackQConvDepthwiseBlocked(const QConvParams& p, uint8_t* dst) {
  const int64_t sq = CeilDiv(p.s, 4);
  for (int64_t blk = 0; blk < CeilDiv(p.k, kLanes); ++blk) {
    for (int64_t r = 0; r < p.r; ++r) {
      for (int64_t q = 0; q < sq; ++q) {
        for (int64_t i = 0; i < 64; ++i) {
          const int64_t k = blk * kLanes + i / 4, tap = 4 * q + i % 4;
          *dst++ =
              k < p.k && tap < p.s ? static_cast<uint8_t>(p.weights[(k * p.r + r) * p.s + tap]) : 0;
        }
      }
    }
  }
}

QCC_VNNI void QConvDepthwiseBlocked(const QConvParams& p, const int32_t* correction,
                                    const uint8_t* packed, uint8_t* workspace) {
  BlockedContext ctx;
  ctx.transpose = MakeByteTransposeIndex();
  ctx.p = &p;
  ctx.correction = correction;
  ctx.packed = packed;
  ctx.g = BlockedGeometryOf(p);
  ctx.buffers = workspace;
  for (int i = 0; i < 64; ++i) {
    const int j = i / 8, row = i % 8;  // stage A: byte 8 * column + row
    // Row `row` (accumulator), column j (channel) in Requantize4's order: byte 16 * (j / 4) +
    // 4 * (row % 4) + j % 4 of z[row / 4].
    const auto packed_at = [](int row, int col) {
      return 64 * (row / 4) + 16 * (col / 4) + 4 * (row % 4) + col % 4;
    };
    ctx.transpose_packed[0][i] = static_cast<uint8_t>(packed_at(row, j));
    ctx.transpose_packed[1][i] = static_cast<uint8_t>(packed_at(row, j + 8));
    ctx.quad[i] = static_cast<uint8_t>(16 * (i % 4) + i / 4);
  }
  const BlockedGeometry& g = ctx.g;
  const int64_t cost = kLanes * g.positions * p.r * p.s;
  NnParallelFor(
      p.num_threads, p.n * g.blocks, cost,
      [&ctx](int64_t begin, int64_t end, int thread) { BlockedUnits(ctx, begin, end, thread); });
}

}  // namespace qcc::cpu::internal
