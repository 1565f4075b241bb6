// The AVX-512 VNNI depthwise path of the int8 convolution (C == group, any channel multiplier;
// the MobileNet case), bit-identical to QConvReference; the algebra (x + 128 and the packed
// -128 * sum(w) correction, all modulo 2^32) is qconv_vnni.cc's.
//
// Per (image, channel) plane, the padded plane is rewritten once as bytes x ^ 0x80 into a
// per-thread buffer. 16 outputs of a row take, per kernel row, one 64-byte load of the row
// window and, per 4 taps, one vpermb (gathering each output's 4 taps into its dword: byte
// 4l + j = l * stride + (4q + j) * dilation) and one vpdpbusd against the 4 weights, broadcast.
// Four output rows run together so that four accumulator chains overlap; for 3x3 and 5x5
// kernels (dilation_h 1) each padded row the four read is loaded and permuted once and serves
// every output row that reads it (DotSpannedRows). Packed weights:
// [K][R][ceil(S / 4)] dwords of 4 taps, zero-padded, then (C == K) the channel-blocked
// kernel's (qconv_depthwise_blocked_vnni.cc), which runs instead on small maps.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/qint8_vnni_internal.h"
#include "support/int_math.h"
#include "support/tensor.h"

namespace qcc::cpu::internal {

namespace {

/// The per-plane kernel's padded plane, a 64-byte multiple: the last window load reads up to
/// 63 bytes past the last output's first tap.
int64_t PaddedPlaneBytes(const QConvParams& p) {
  const int64_t bytes = (p.h + p.pad_top + p.pad_bottom) * (p.w + p.pad_left + p.pad_right) + 64;
  return (bytes + 63) / 64 * 64;
}

struct DepthwiseGeometry {
  int64_t mult, oh, ow, pw, sq, plane_bytes;
  // Output rows per 16-lane segment: rows of at most 8 outputs fold 2 (or more) rows into one
  // segment, lane l holding output (l / ow, l % ow) of the fold, when the one 64-byte window
  // load still covers every tap of them.
  int64_t fold;
};

DepthwiseGeometry DepthwiseGeometryOf(const QConvParams& p) {
  DepthwiseGeometry g;
  g.mult = p.k / p.group;
  g.oh = p.out_h();
  g.ow = p.out_w();
  g.pw = p.w + p.pad_left + p.pad_right;
  g.sq = CeilDiv(p.s, 4);
  g.plane_bytes = PaddedPlaneBytes(p);
  g.fold = 1;
  for (int64_t f = std::min<int64_t>(16 / std::max<int64_t>(g.ow, 1), g.oh); f > 1; --f) {
    if ((f - 1) * p.stride_h * g.pw + (g.ow - 1) * p.stride_w + (p.s - 1) * p.dilation_w <= 63) {
      g.fold = f;
      break;
    }
  }
  return g;
}

/// The requantized lanes of one fold of rows, outputs [first, first + lanes) of the plane cut at
/// `end` (nothing when first >= end).
QCC_VNNI inline void StoreFold(int8_t* out, int64_t first, int64_t end, int64_t lanes, __m512i acc,
                               __m512 multiplier, __m512i zp, __m512 lo, __m512 hi) {
  const int64_t n = std::min(lanes, end - first);
  if (n <= 0) return;
  _mm_mask_storeu_epi8(out + first, static_cast<__mmask16>(LowBits64(n)),
                       RequantizeX16(acc, multiplier, zp, lo, hi));
}

/// One kernel row's taps for 16 outputs of each of four output rows: the 64-byte windows at
/// w0 .. w3, per 4 taps q one vpermb (idx[q]) and one vpdpbusd against wr[q], broadcast.
QCC_VNNI inline void DotRows4(const uint8_t* w0, const uint8_t* w1, const uint8_t* w2,
                              const uint8_t* w3, const uint32_t* wr, int64_t sq, const __m512i* idx,
                              __m512i& a0, __m512i& a1, __m512i& a2, __m512i& a3) {
  constexpr __mmask64 kAll = ~__mmask64{0};
  const __m512i x0 = _mm512_loadu_si512(w0), x1 = _mm512_loadu_si512(w1);
  const __m512i x2 = _mm512_loadu_si512(w2), x3 = _mm512_loadu_si512(w3);
  for (int64_t q = 0; q < sq; ++q) {
    const __m512i wq = _mm512_set1_epi32(static_cast<int>(wr[q]));
    a0 = _mm512_dpbusd_epi32(a0, _mm512_maskz_permutexvar_epi8(kAll, idx[q], x0), wq);
    a1 = _mm512_dpbusd_epi32(a1, _mm512_maskz_permutexvar_epi8(kAll, idx[q], x1), wq);
    a2 = _mm512_dpbusd_epi32(a2, _mm512_maskz_permutexvar_epi8(kAll, idx[q], x2), wq);
    a3 = _mm512_dpbusd_epi32(a3, _mm512_maskz_permutexvar_epi8(kAll, idx[q], x3), wq);
  }
}

/// DotRows4 over every kernel row for output rows oy .. oy + 3 of a kR x kR kernel at stride
/// (kSh, any) and dilation_h 1, one 16-column segment at `top` (padded row oy * kSh) and, when
/// kTwo, a second at top + dx2: each padded row these read is loaded and permuted once per tap
/// quad and serves every (output row i, kernel row j - i * kSh) that reads it, where DotRows4
/// loads and permutes it for each kernel row (3x3, stride 1: 6 rows for 12; stride 2: 9; 5x5,
/// stride 1: 8 for 20). The loops unroll at compile time, so no test of which (row, kernel
/// row) pairs exist runs. Reads padded rows up to oy * kSh + 3 * kSh + kR - 1 (the caller
/// ensures they exist).
template <int kR, int kSh, bool kTwo>
QCC_VNNI inline void DotSpannedRows(const uint8_t* top, int64_t pw, const uint32_t* wk,
                                    const __m512i* idx, int64_t dx2, __m512i& a0, __m512i& a1,
                                    __m512i& a2, __m512i& a3, __m512i& b0, __m512i& b1, __m512i& b2,
                                    __m512i& b3) {
  constexpr __mmask64 kAll = ~__mmask64{0};
  constexpr int kSq = (kR + 3) / 4;
  __m512i* a[4] = {&a0, &a1, &a2, &a3};
  __m512i* b[4] = {&b0, &b1, &b2, &b3};
#pragma GCC unroll 16
  for (int j = 0; j < 3 * kSh + kR; ++j) {
    const __m512i x = _mm512_loadu_si512(top + j * pw);
    const __m512i x2 = kTwo ? _mm512_loadu_si512(top + j * pw + dx2) : x;
#pragma GCC unroll 4
    for (int q = 0; q < kSq; ++q) {
      const __m512i v = _mm512_maskz_permutexvar_epi8(kAll, idx[q], x);
      const __m512i v2 = kTwo ? _mm512_maskz_permutexvar_epi8(kAll, idx[q], x2) : v;
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) {
        const int r = j - i * kSh;
        if (r < 0 || r >= kR) continue;
        const __m512i w = _mm512_set1_epi32(static_cast<int>(wk[r * kSq + q]));
        *a[i] = _mm512_dpbusd_epi32(*a[i], v, w);
        if (kTwo) *b[i] = _mm512_dpbusd_epi32(*b[i], v2, w);
      }
    }
  }
}

/// Which DotSpannedRows instance serves p (kNone: DotRows4 per kernel row instead).
enum class SpannedRows { kNone, k3S1, k3S2, k5S1, k5S2 };

SpannedRows SpannedRowsOf(const QConvParams& p) {
  if (p.dilation_h != 1 || p.r != p.s || p.stride_h > 2) return SpannedRows::kNone;
  if (p.r == 3) return p.stride_h == 1 ? SpannedRows::k3S1 : SpannedRows::k3S2;
  if (p.r == 5) return p.stride_h == 1 ? SpannedRows::k5S1 : SpannedRows::k5S2;
  return SpannedRows::kNone;
}

/// DotSpannedRows for `which` (not kNone).
template <bool kTwo>
QCC_VNNI inline void DotSpannedRowsOf(SpannedRows which, const uint8_t* top, int64_t pw,
                                      const uint32_t* wk, const __m512i* idx, int64_t dx2,
                                      __m512i& a0, __m512i& a1, __m512i& a2, __m512i& a3,
                                      __m512i& b0, __m512i& b1, __m512i& b2, __m512i& b3) {
  switch (which) {
    case SpannedRows::k3S1:
      DotSpannedRows<3, 1, kTwo>(top, pw, wk, idx, dx2, a0, a1, a2, a3, b0, b1, b2, b3);
      break;
    case SpannedRows::k3S2:
      DotSpannedRows<3, 2, kTwo>(top, pw, wk, idx, dx2, a0, a1, a2, a3, b0, b1, b2, b3);
      break;
    case SpannedRows::k5S1:
      DotSpannedRows<5, 1, kTwo>(top, pw, wk, idx, dx2, a0, a1, a2, a3, b0, b1, b2, b3);
      break;
    default:
      DotSpannedRows<5, 2, kTwo>(top, pw, wk, idx, dx2, a0, a1, a2, a3, b0, b1, b2, b3);
      break;
  }
}

/// The requantized lanes of `rows` (1..4) output rows of one 16-column segment (`cols` of
/// them real, any count above 16 meaning 16), at y, y + ow, ...
QCC_VNNI inline void StoreSegment(int8_t* y, int64_t ow, int64_t rows, int64_t cols, __m512i a0,
                                  __m512i a1, __m512i a2, __m512i a3, __m512 multiplier, __m512i zp,
                                  __m512 lo, __m512 hi) {
  const __mmask16 m = static_cast<__mmask16>(LowBits64(cols < 16 ? cols : 16));
  _mm_mask_storeu_epi8(y, m, RequantizeX16(a0, multiplier, zp, lo, hi));
  if (rows > 1) _mm_mask_storeu_epi8(y + ow, m, RequantizeX16(a1, multiplier, zp, lo, hi));
  if (rows > 2) _mm_mask_storeu_epi8(y + 2 * ow, m, RequantizeX16(a2, multiplier, zp, lo, hi));
  if (rows > 3) _mm_mask_storeu_epi8(y + 3 * ow, m, RequantizeX16(a3, multiplier, zp, lo, hi));
}

/// Planes [begin, end) of (image, input channel) of the depthwise path.
/// kFold: g.fold > 1 (an instance each, so that the unfolded loop stays as lean as it was).
template <bool kFold>
QCC_VNNI void DepthwisePlanes(const QConvParams& p, const PackedQConvWeights& w,
                              const DepthwiseGeometry& g, uint8_t* buf, int64_t begin,
                              int64_t end) {
  const uint32_t* packed = reinterpret_cast<const uint32_t*>(w.packed.get());
  const uint8_t pad = static_cast<uint8_t>(p.pad_value) ^ 0x80;
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i zp = _mm512_set1_epi32(p.zp_out);
  const __m512 lo = _mm512_set1_ps(static_cast<float>(p.lo - p.zp_out));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(p.hi - p.zp_out));
  // sq <= 16 (DepthwiseFits). Byte 4l + j: lane l's tap 4q + j, lane l = f * ow + lx holding
  // output column lx of the fold's row f (f = 0 and lx = l without a fold).
  __m512i idx[16];
  const int64_t fold_lanes = g.fold > 1 ? g.fold * g.ow : 16;
  for (int64_t q = 0; q < g.sq; ++q) {
    alignas(64) uint8_t bytes[64];
    for (int i = 0; i < 64; ++i) {
      const int64_t l = i / 4, tap = 4 * q + i % 4;
      const int64_t f = g.fold > 1 ? l / g.ow : 0, lx = g.fold > 1 ? l % g.ow : l;
      const int64_t at = f * p.stride_h * g.pw + lx * p.stride_w;
      bytes[i] =
          static_cast<uint8_t>(l < fold_lanes ? at + (tap < p.s ? tap * p.dilation_w : 0) : 0);
    }
    idx[q] = _mm512_load_si512(bytes);
  }
  const int64_t h = p.h, w_in = p.w;  // locals: the stores below may alias p as far as GCC knows
  // DotSpannedRows instead of DotRows4 per kernel row, for the 4-row groups whose last row
  // exists (the last group may have fewer: DotRows4, which repeats the last row).
  const SpannedRows spanned_rows = SpannedRowsOf(p);
  for (int64_t plane = begin; plane < end; ++plane) {
    const int8_t* x = p.input + plane * h * w_in;
    std::memset(buf, pad, g.plane_bytes);
    uint8_t* dst = buf + p.pad_top * g.pw + p.pad_left;
    for (int64_t y = 0; y < h; ++y, x += w_in, dst += g.pw) {
      for (int64_t x0 = 0; x0 < w_in; x0 += 64) {
        // The same row of the next plane, which follows this one in x (past the last plane,
        // nothing: prefetch.h).
        PrefetchAt(x, h * w_in + x0);
        const __mmask64 m = LowBits64(w_in - x0);
        const __m512i v = _mm512_maskz_loadu_epi8(m, x + x0);
        _mm512_mask_storeu_epi8(dst + x0, m, _mm512_xor_si512(v, flip));
      }
    }
    const int64_t n = plane / p.c, ch = plane % p.c;
    for (int64_t k = ch * g.mult; k < (ch + 1) * g.mult; ++k) {
      const uint32_t* wk = packed + k * p.r * g.sq;
      const __m512i init =
          _mm512_set1_epi32(WrapAdd(p.bias != nullptr ? p.bias[k] : 0, w.correction[k]));
      const __m512 multiplier = _mm512_set1_ps(p.multiplier[k]);
      int8_t* out = p.output + (n * p.k + k) * g.oh * g.ow;
      // Four segments of output rows at a time (4 * fold rows): four independent accumulator
      // chains (rows past the end repeat the last one and are not stored).
      const int64_t fold = kFold ? g.fold : 1;
      for (int64_t oy = 0; oy < g.oh; oy += 4 * fold) {
        const SpannedRows spanned = oy + 4 <= g.oh ? spanned_rows : SpannedRows::kNone;
        const int64_t row_step = p.stride_h * g.pw;
        const uint8_t* row0 = buf + oy * row_step;
        const uint8_t* row1 = buf + std::min(oy + fold, g.oh - 1) * row_step;
        const uint8_t* row2 = buf + std::min(oy + 2 * fold, g.oh - 1) * row_step;
        const uint8_t* row3 = buf + std::min(oy + 3 * fold, g.oh - 1) * row_step;
        for (int64_t ox0 = 0; ox0 < g.ow; ox0 += 16) {
          const int64_t dx = ox0 * p.stride_w;
          if (!kFold && ox0 + 16 < g.ow) {
            // Two 16-column segments at once: eight accumulator chains, where four leave the
            // dot products waiting on each other (rows of 17 or more outputs).
            const int64_t dx2 = dx + 16 * p.stride_w;
            __m512i a0 = init, a1 = init, a2 = init, a3 = init;
            __m512i b0 = init, b1 = init, b2 = init, b3 = init;
            if (spanned != SpannedRows::kNone) {
              DotSpannedRowsOf<true>(spanned, row0 + dx, g.pw, wk, idx, dx2 - dx, a0, a1, a2, a3,
                                     b0, b1, b2, b3);
            }
            // DotRows4 per kernel row where no DotSpannedRows instance ran (a loop of no
            // turns, not an else: GCC's code for the else ran blocks 0-4 of efficientnet-lite0
            // 5% slower).
            for (int64_t r = 0; r < (spanned != SpannedRows::kNone ? 0 : p.r); ++r) {
              const int64_t dy = r * p.dilation_h * g.pw;
              const uint32_t* wr = wk + r * g.sq;
              DotRows4(row0 + dy + dx, row1 + dy + dx, row2 + dy + dx, row3 + dy + dx, wr, g.sq,
                       idx, a0, a1, a2, a3);
              DotRows4(row0 + dy + dx2, row1 + dy + dx2, row2 + dy + dx2, row3 + dy + dx2, wr, g.sq,
                       idx, b0, b1, b2, b3);
            }
            int8_t* y = out + oy * g.ow + ox0;
            const int64_t rows = std::min<int64_t>(4, g.oh - oy);
            StoreSegment(y, g.ow, rows, 16, a0, a1, a2, a3, multiplier, zp, lo, hi);
            StoreSegment(y + 16, g.ow, rows, g.ow - ox0 - 16, b0, b1, b2, b3, multiplier, zp, lo,
                         hi);
            ox0 += 16;
            continue;
          }
          __m512i acc0 = init, acc1 = init, acc2 = init, acc3 = init;
          const bool spans = !kFold && spanned != SpannedRows::kNone;
          if (spans) {
            DotSpannedRowsOf<false>(spanned, row0 + dx, g.pw, wk, idx, 0, acc0, acc1, acc2, acc3,
                                    acc0, acc1, acc2, acc3);
          }
          for (int64_t r = 0; r < (spans ? 0 : p.r); ++r) {
            const int64_t dy = r * p.dilation_h * g.pw + dx;
            DotRows4(row0 + dy, row1 + dy, row2 + dy, row3 + dy, wk + r * g.sq, g.sq, idx, acc0,
                     acc1, acc2, acc3);
          }
          int8_t* y = out + oy * g.ow + ox0;
          if (!kFold) {
            StoreSegment(y, g.ow, std::min<int64_t>(4, g.oh - oy), g.ow - ox0, acc0, acc1, acc2,
                         acc3, multiplier, zp, lo, hi);
          } else {
            // A fold's rows are consecutive in the output plane: its fold * ow lanes are one
            // run, cut at the plane's end.
            const int64_t plane_end = g.oh * g.ow, first = oy * g.ow, step = fold * g.ow;
            StoreFold(out, first, plane_end, fold_lanes, acc0, multiplier, zp, lo, hi);
            StoreFold(out, first + step, plane_end, fold_lanes, acc1, multiplier, zp, lo, hi);
            StoreFold(out, first + 2 * step, plane_end, fold_lanes, acc2, multiplier, zp, lo, hi);
            StoreFold(out, first + 3 * step, plane_end, fold_lanes, acc3, multiplier, zp, lo, hi);
          }
        }
      }
    }
  }
}

}  // namespace

bool QConvDepthwiseVnniFits(const QConvParams& p) {
  return p.c == p.group && 15 * p.stride_w + (p.s - 1) * p.dilation_w <= 63;
}

int64_t QConvDepthwiseVnniThreadBytes(const QConvParams& p) {
  return QConvDepthwiseBlockedRuns(p) ? QConvDepthwiseBlockedThreadBytes(p) : PaddedPlaneBytes(p);
}

namespace {

/// Where the channel-blocked kernel's weights start in the packed buffer (C == K only).
int64_t BlockedWeightsOffset(const QConvParams& p) {
  return (p.k * p.r * CeilDiv(p.s, 4) * 4 + 63) / 64 * 64;
}

}  // namespace

void PackQConvDepthwiseVnni(const QConvParams& p, PackedQConvWeights* w) {
  const int64_t sq = CeilDiv(p.s, 4);
  // The blocked weights too when C == K (which kernel runs depends on the map, known per call).
  const bool blocked = p.k == p.c;
  w->packed = Tensor::AllocateStorage(BlockedWeightsOffset(p) +
                                      (blocked ? QConvDepthwiseBlockedPackedBytes(p) : 0));
  if (blocked) PackQConvDepthwiseBlocked(p, w->packed.get() + BlockedWeightsOffset(p));
  uint8_t* dst = w->packed.get();
  for (int64_t k = 0; k < p.k; ++k) {
    for (int64_t r = 0; r < p.r; ++r) {
      for (int64_t t = 0; t < sq * 4; ++t) {
        *dst++ = t < p.s ? static_cast<uint8_t>(p.weights[(k * p.r + r) * p.s + t]) : 0;
      }
    }
  }
  w->layout = PackedQConvWeights::Layout::kVnniDepthwise;
}

QCC_VNNI void QConvDepthwiseVnni(const QConvParams& p, const PackedQConvWeights& w,
                                 uint8_t* workspace) {
  if (QConvDepthwiseBlockedRuns(p)) {
    QConvDepthwiseBlocked(p, w.correction.data(), w.packed.get() + BlockedWeightsOffset(p),
                          workspace);
    return;
  }
  const DepthwiseGeometry g = DepthwiseGeometryOf(p);
  const int64_t cost = g.mult * g.oh * g.ow * p.r * p.s;
  NnParallelFor(p.num_threads, p.n * p.c, cost, [&](int64_t begin, int64_t end, int thread) {
    if (g.fold > 1) {
      DepthwisePlanes<true>(p, w, g, workspace + thread * g.plane_bytes, begin, end);
    } else {
      DepthwisePlanes<false>(p, w, g, workspace + thread * g.plane_bytes, begin, end);
    }
  });
}

}  // namespace qcc::cpu::internal
