// AVX-512 path of the fp32 depthwise convolution (ConvF32DepthwiseAvx512, conv.h): a per-plane
// kernel of 16-wide output row segments; small maps go to the channel-blocked path (16 channels
// to a register, conv_depthwise_blocked_avx512.cc). Both give the std::fma chain's bits: each
// output is its bias, then one fused multiply-add per kernel tap in (row, column) order, a tap
// outside x multiplying 0, then the activation. Compiled for any x86-64; ConvF32 calls it only when
// the CPU reports avx512f.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv_avx512_internal.h"
#include "kernels/cpu/lane_masks.h"
#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/prefetch.h"

namespace qcc::cpu {

using internal::Activate;

namespace {

/// Bit mask of lanes [lo, hi) (clamped to [0, 16)).
inline __mmask16 LaneMask(int64_t lo, int64_t hi) {
  lo = std::clamp<int64_t>(lo, 0, 16);
  hi = std::clamp<int64_t>(hi, lo, 16);
  return static_cast<__mmask16>(((1u << hi) - 1) & ~((1u << lo) - 1));
}

/// Per 16-wide output segment and horizontal tap: where lane 0 reads and which raw lanes of
/// the (one or two) loads fall inside the input row. The same for every row of a plane.
struct SegmentTap {
  int64_t base;
  __mmask16 m0, m1;
};

constexpr int64_t kMaxDepthwiseSegmentTaps = 1024;

/// The 16 inputs of one segment tap: a masked load (stride 1), or the even lanes of two.
QCC_AVX512 inline __m512 LoadSegment(bool stride1, const SegmentTap& t, const float* xrow) {
  if (stride1) return _mm512_maskz_loadu_ps(t.m0, xrow + t.base);
  return EvenFloats(xrow + t.base, {t.m0, t.m1});
}

/// rows[j] = input row iy0 + j of the plane xp (rows of `pitch` floats), null where outside x.
inline void InputRows(const ConvF32Params& p, const float* xp, int64_t pitch, int64_t iy0, int n,
                      const float** rows) {
  for (int j = 0; j < n; ++j) {
    const int64_t iy = iy0 + j;
    rows[j] = iy >= 0 && iy < p.in[1] ? xp + iy * pitch : nullptr;
  }
}

/// p.activation in registers, for the plane kernels' stores.
struct PlaneActivation {
  bool on;
  __m512 lo, hi, slope;
};
QCC_AVX512 inline PlaneActivation PlaneActivationOf(const ConvF32Params& p) {
  return {!p.activation.is_identity(), _mm512_set1_ps(p.activation.lo),
          _mm512_set1_ps(p.activation.hi), _mm512_set1_ps(p.activation.negative_slope)};
}

/// Output rows oy .. oy + R - 1 (those below oh) of the 16-wide segment at column ox0 of plane
/// yp (rows of ow): acc[r], activated, stored (lanes past the row not). The extents and the
/// activation come as values: the stores (through __m512, which may alias anything) would
/// otherwise reload them from p each row, and a 3 x 3 plane ran 6% slower.
template <int R>
QCC_AVX512 inline __attribute__((always_inline)) void StoreSegmentRows(PlaneActivation a,
                                                                       const __m512* acc,
                                                                       int64_t oy, int64_t ox0,
                                                                       int64_t ow, int64_t oh,
                                                                       float* yp) {
  const __mmask16 m = LowBits16(ow - ox0);
  float* y0 = yp + oy * ow + ox0;
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    if (oy + r >= oh) break;
    _mm512_mask_storeu_ps(y0 + r * ow, m, a.on ? Activate(acc[r], a.lo, a.hi, a.slope) : acc[r]);
  }
}

/// 16 floats at `at`: a plain load where they are all inside the row (`whole`), else masked to
/// the lanes of `m` (the rest zero). Plain loads where they can be: the plane kernels' rows end
/// in few segments.
QCC_AVX512 inline __m512 LoadInRow(const float* at, bool whole, __mmask16 m) {
  return whole ? _mm512_loadu_ps(at) : _mm512_maskz_loadu_ps(m, at);
}

/// A K x K kernel's weights for a plane kernel's taps, weight(ky, kx) in all lanes: broadcast
/// into registers once per plane (kInRegisters), or from memory at each use.
template <int K, bool kInRegisters>
struct PlaneWeights {
  QCC_AVX512 explicit PlaneWeights(const float* w) : wm(w) {
    if constexpr (kInRegisters) {
#pragma GCC unroll 49
      for (int t = 0; t < K * K; ++t) wb[t] = _mm512_set1_ps(w[t]);
    }
  }
  QCC_AVX512 __m512 operator()(int ky, int64_t kx) const {
    return kInRegisters ? wb[ky * K + kx] : _mm512_set1_ps(wm[ky * K + kx]);
  }
  const float* wm;
  __m512 wb[kInRegisters ? K * K : 1];
};

/// Tap `tap` (kernel column kx) of input row j of a group of R output rows (stride S between
/// them) into every row that reads it: row r with kernel row ky = j - S r inside the kernel's
/// KH rows, weight(ky, kx).
template <int KH, int R, int S, typename Weight>
QCC_AVX512 inline __attribute__((always_inline)) void AddTapToRows(int j, int64_t kx, __m512 tap,
                                                                   Weight weight, __m512* acc) {
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const int ky = j - r * S;
    if (ky >= 0 && ky < KH) acc[r] = _mm512_fmadd_ps(weight(ky, kx), tap, acc[r]);
  }
}

/// One depthwise plane, 2-D, stride 1 or 2 along x: each 16-wide output segment accumulates
/// every tap in one register (x loaded masked and shifted; stride 2 keeps the even lanes of
/// two loads), then is activated (p.activation) and stored once. Four output rows go together,
/// so that four independent FMA chains hide the FMA latency and share each weight broadcast.
QCC_AVX512 void DepthwisePlane(const ConvF32Params& p, const SegmentTap* seg_taps, const float* xp,
                               const float* wm, float bias, float* yp) {
  const bool activate = !p.activation.is_identity();
  const __m512 lo = _mm512_set1_ps(p.activation.lo), hi = _mm512_set1_ps(p.activation.hi);
  const __m512 slope = _mm512_set1_ps(p.activation.negative_slope);
  const int64_t ow = p.out[2], oh = p.out[1], w_in = p.in[2], kh = p.kernel[1], kw = p.kernel[2];
  const bool stride1 = p.stride[2] == 1;
  for (int64_t oy = 0; oy < oh; oy += 4) {
    const SegmentTap* st = seg_taps;
    for (int64_t ox0 = 0; ox0 < ow; ox0 += 16, st += kw) {
      __m512 acc0 = _mm512_set1_ps(bias), acc1 = acc0, acc2 = acc0, acc3 = acc0;
      for (int64_t ky = 0; ky < kh; ++ky) {
        // Input rows of the four output rows; null where outside x (or past the last row).
        const float* rows[4];
        for (int r = 0; r < 4; ++r) {
          const int64_t iy = (oy + r) * p.stride[1] - p.pad[1] + ky * p.dilation[1];
          rows[r] = oy + r < oh && iy >= 0 && iy < p.in[1] ? xp + iy * w_in : nullptr;
        }
        const float* wrow = wm + ky * kw;
        for (int64_t kx = 0; kx < kw; ++kx) {
          const SegmentTap& t = st[kx];
          const __m512 wv = _mm512_set1_ps(wrow[kx]);
          if (rows[0] != nullptr)
            acc0 = _mm512_fmadd_ps(wv, LoadSegment(stride1, t, rows[0]), acc0);
          if (rows[1] != nullptr)
            acc1 = _mm512_fmadd_ps(wv, LoadSegment(stride1, t, rows[1]), acc1);
          if (rows[2] != nullptr)
            acc2 = _mm512_fmadd_ps(wv, LoadSegment(stride1, t, rows[2]), acc2);
          if (rows[3] != nullptr)
            acc3 = _mm512_fmadd_ps(wv, LoadSegment(stride1, t, rows[3]), acc3);
        }
      }
      if (activate) {
        acc0 = Activate(acc0, lo, hi, slope);
        acc1 = Activate(acc1, lo, hi, slope);
        acc2 = Activate(acc2, lo, hi, slope);
        acc3 = Activate(acc3, lo, hi, slope);
      }
      const __mmask16 m = LaneMask(0, ow - ox0);
      float* y0 = yp + oy * ow + ox0;
      _mm512_mask_storeu_ps(y0, m, acc0);
      if (oy + 1 < oh) _mm512_mask_storeu_ps(y0 + ow, m, acc1);
      if (oy + 2 < oh) _mm512_mask_storeu_ps(y0 + 2 * ow, m, acc2);
      if (oy + 3 < oh) _mm512_mask_storeu_ps(y0 + 3 * ow, m, acc3);
    }
  }
}

/// DepthwisePlane for kernel height KH, vertical stride SY and dilation 1, with each input row
/// segment loaded once for every output row of the group that reads it (KH, or KH/2 with stride
/// 2), where DepthwisePlane loads it once per output row and tap. Each output still adds its taps
/// in DepthwisePlane's order (kernel row, then column), so the two give the same bits. With a
/// kernel width KW (0: p.kernel[2] at run time), the weights are broadcast into registers once per
/// plane rather than once per use.
template <int KH, int SY, int KW>
QCC_AVX512 void DepthwisePlaneRows(const ConvF32Params& p, const SegmentTap* seg_taps,
                                   const float* xp, const float* wm, float bias, float* yp) {
  constexpr int R = 4;                      // output rows per group
  constexpr int kSpan = (R - 1) * SY + KH;  // input rows they read
  const PlaneActivation act = PlaneActivationOf(p);
  const int64_t ow = p.out[2], oh = p.out[1], w_in = p.in[2];
  const int64_t kw = KW > 0 ? KW : p.kernel[2];
  const bool stride1 = p.stride[2] == 1;
  const int64_t ahead = std::max<int64_t>(1, 2048 / (R * SY * w_in * 4));
  __m512 wb[KW > 0 ? KH * KW : 1];
  if constexpr (KW > 0) {
#pragma GCC unroll 49
    for (int t = 0; t < KH * KW; ++t) wb[t] = _mm512_set1_ps(wm[t]);
  }
  for (int64_t oy = 0; oy < oh; oy += R) {
    const float* rows[kSpan];
    InputRows(p, xp, w_in, oy * SY - p.pad[1], kSpan, rows);
    // Input rows a group reads first, `ahead` groups on (about 2 KiB; past the plane's last row,
    // the next plane's first rows, which follow it in x; the same for y), prefetched a segment
    // at a time.
    const int64_t next_row = oy * SY - p.pad[1] + kSpan + (ahead - 1) * R * SY;
    const SegmentTap* st = seg_taps;
    for (int64_t ox0 = 0; ox0 < ow; ox0 += 16, st += kw) {
      for (int64_t j = 0; j < R * SY; ++j) {
        const int64_t at = (next_row + j) * w_in + ox0 * p.stride[2];
        PrefetchAt(xp, at);
        if (!stride1) PrefetchAt(xp, at + 16);
      }
      // The output rows of the group `ahead` on, for writing: each store would otherwise wait
      // for its line (0.19 -> 0.11 ms for efficientnet-lite0's blocks.2 depthwise conv).
      for (int r = 0; r < R; ++r) PrefetchAt<1>(yp, (oy + ahead * R + r) * ow + ox0);
      __m512 acc[R];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[r] = _mm512_set1_ps(bias);
#pragma GCC unroll 16
      for (int j = 0; j < kSpan; ++j) {
        if (rows[j] == nullptr) continue;
        for (int64_t kx = 0; kx < kw; ++kx) {
          AddTapToRows<KH, R, SY>(
              j, kx, LoadSegment(stride1, st[kx], rows[j]),
              [&](int ky, int64_t c)
                  QCC_AVX512 { return KW > 0 ? wb[ky * KW + c] : _mm512_set1_ps(wm[ky * kw + c]); },
              acc);
        }
      }
      StoreSegmentRows<R>(act, acc, oy, ox0, ow, oh, yp);
    }
  }
}

/// Whether DepthwisePlaneNarrow takes the plane (square 5 x 5 and 7 x 7 kernels of stride 1 or 2
/// along both axes, undilated, rows of at most two segments of 16 outputs).
bool NarrowPlane(const ConvF32Params& p) {
  return p.dilation[1] == 1 && p.stride[1] <= 2 && p.stride[2] == p.stride[1] &&
         p.kernel[2] == p.kernel[1] && (p.kernel[1] == 5 || p.kernel[1] == 7) && p.out[2] <= 32;
}

/// Most floats of a split plane (SplitColumns' buffer, on the stack, 32 KiB): efficientnet-lite0's
/// 56 x 56 planes take 5376.
constexpr int64_t kMaxSplitFloats = 8192;
constexpr int kMaxSplitKernel = 7;  // NarrowPlane's largest

/// A stride-2 plane split into its even and odd columns with zeros around them, so that each
/// segment tap is one plain load of 16 floats: buffer row iy (2 * pitch floats) is input row iy's
/// even columns, then its odd ones, each half `left` zeros, its columns, then zeros.
struct SplitLayout {
  int64_t left = 0;                   // zeros before column 0 of each half
  int64_t pitch = 0;                  // floats of a half row, a multiple of 16
  int64_t tap[kMaxSplitKernel] = {};  // per kernel column: where output column 0 reads in a row
};

/// The layout for `p` with `segments` segments of 16 outputs a row: input column 2 ox - pad + kx is
/// column ox + floor((kx - pad) / 2) of the half of its parity.
SplitLayout SplitLayoutOf(const ConvF32Params& p, int64_t segments) {
  SplitLayout s;
  const int64_t pad = p.pad[2], kw = p.kernel[2];
  s.left = (pad + 1) / 2;
  const int64_t last = kw - 1 - pad;  // the last tap's input column for output 0
  const int64_t last_col = (last - (last & 1)) / 2;
  s.pitch = (s.left + last_col + 16 * segments + 15) / 16 * 16;
  for (int64_t kx = 0; kx < kw; ++kx) {
    const int64_t ix0 = kx - pad, parity = ix0 & 1;
    s.tap[kx] = parity * s.pitch + s.left + (ix0 - parity) / 2;
  }
  return s;
}

/// Whether a plane is split by columns (DepthwisePlaneSplit): DepthwisePlaneNarrow's stride-2
/// planes (5 x 5 and 7 x 7, undilated, rows of at most two segments of 16 outputs) whose split fits
/// the stack buffer, where DepthwisePlaneEvenOdd does not take them first (7 x 7, and 5 x 5 with no
/// left padding). For 3 x 3 kernels of stride 2 the split was slower than DepthwisePlaneRows
/// (efficientnet-lite0's 240 x 28 x 28: 0.040-0.050 ms unsplit, 0.053-0.071 split).
bool SplitsColumns(const ConvF32Params& p) {
  if (!NarrowPlane(p) || p.stride[1] != 2) return false;
  const SplitLayout s = SplitLayoutOf(p, (p.out[2] + 15) / 16);
  return 2 * s.pitch * p.in[1] <= kMaxSplitFloats;
}

/// The plane xp into `split` as SplitLayout `s` says, every float of its rows written (the zeros
/// too). Loads are masked to the row only where a lane falls outside it, and chunks wholly outside
/// it are zeros without a load: on Zen 4 a masked load is slow, and efficientnet-lite0's
/// 144 x 56 x 56 planes took 75 us to split with every load masked, 55 us so.
QCC_AVX512 void SplitColumns(const ConvF32Params& p, const SplitLayout& s, const float* xp,
                             float* split) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const int64_t w = p.in[2], chunks = s.pitch / 16;
  // Chunk q of a half row holds input columns 2 (16 q - left) + {0, 2, ..., 30} (+ 1 for odd):
  // ma, mb mask its two loads to the row.
  constexpr int64_t kMaxChunks = kMaxSplitFloats / 32;
  __mmask16 ma[kMaxChunks], mb[kMaxChunks];
  for (int64_t q = 0; q < chunks; ++q) {
    const int64_t src = 2 * (16 * q - s.left);
    ma[q] = LaneMask(-src, w - src);
    mb[q] = LaneMask(-src - 16, w - src - 16);
  }
  for (int64_t iy = 0; iy < p.in[1]; ++iy) {
    const float* row = xp + iy * w;
    float* e = split + iy * 2 * s.pitch;
    for (int64_t q = 0; q < chunks; ++q) {
      const int64_t src = 2 * (16 * q - s.left);
      __m512 ev = _mm512_setzero_ps(), od = ev;
      if ((ma[q] | mb[q]) != 0) {
        // No read outside the row (a masked load does not fault).
        const __m512 a =
            ma[q] == 0xFFFF ? _mm512_loadu_ps(row + src) : _mm512_maskz_loadu_ps(ma[q], row + src);
        const __m512 b = mb[q] == 0xFFFF ? _mm512_loadu_ps(row + src + 16)
                                         : _mm512_maskz_loadu_ps(mb[q], row + src + 16);
        ev = _mm512_permutex2var_ps(a, even, b);
        od = _mm512_permutex2var_ps(a, odd, b);
      }
      _mm512_store_ps(e + 16 * q, ev);
      _mm512_store_ps(e + s.pitch + 16 * q, od);
    }
  }
}

/// One group of R output rows of NS segments each (DepthwisePlaneNarrow, DepthwisePlaneSplit):
/// every output from `bias`, then one FMA per tap in (kernel row, column) order over the kSpan
/// input rows the group reads (rows[j] null: outside x, skipped), then activated and stored
/// (rows past oh not). load(row, segment, kx) is the segment's 16 inputs of tap column kx in an
/// input row; weight(ky, kx) the tap's weight in all lanes.
template <int KH, int NS, int R, int S, typename Load, typename Weight>
QCC_AVX512 inline __attribute__((always_inline)) void DepthwiseRowGroup(
    const ConvF32Params& p, const float* const* rows, Load load, Weight weight, float bias,
    const __mmask16* store, int64_t oy, float* yp) {
  constexpr int kSpan = (R - 1) * S + KH;
  __m512 acc[NS][R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    for (int s = 0; s < NS; ++s) acc[s][r] = _mm512_set1_ps(bias);
  }
#pragma GCC unroll 32
  for (int j = 0; j < kSpan; ++j) {
    if (rows[j] == nullptr) continue;
#pragma GCC unroll 8
    for (int kx = 0; kx < KH; ++kx) {
      __m512 v[NS];
      for (int s = 0; s < NS; ++s) v[s] = load(rows[j], s, kx);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const int ky = j - r * S;
        if (ky >= 0 && ky < KH) {
          const __m512 wv = weight(ky, kx);
          for (int s = 0; s < NS; ++s) acc[s][r] = _mm512_fmadd_ps(wv, v[s], acc[s][r]);
        }
      }
    }
  }
  const bool activate = !p.activation.is_identity();
  const __m512 lo = _mm512_set1_ps(p.activation.lo), hi = _mm512_set1_ps(p.activation.hi);
  const __m512 slope = _mm512_set1_ps(p.activation.negative_slope);
  const int64_t ow = p.out[2];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    if (oy + r >= p.out[1]) break;
    for (int s = 0; s < NS; ++s) {
      _mm512_mask_storeu_ps(yp + (oy + r) * ow + 16 * s, store[s],
                            activate ? Activate(acc[s][r], lo, hi, slope) : acc[s][r]);
    }
  }
}

/// DepthwisePlaneRows for stride 1 and square KH x KH kernels on maps of at most NS (1 or 2)
/// segments of 16 outputs per row, with eight register accumulators: NS segments x 8 / NS output
/// rows. DepthwisePlaneRows keeps four (one segment, four rows), and each output's taps are one
/// chain of dependent FMAs, so 25- and 49-FMA chains ran at one FMA per cycle where eight chains
/// keep two FMA pipes busy: a 5 x 5 kernel on 14- and 28-wide maps 0.089 -> 0.078 and 0.110 ->
/// 0.100 ms (efficientnet-lite0's), a 7 x 7 one 0.096 -> 0.065 and 0.171 -> 0.128 ms. The weights
/// are broadcast from memory at each use (25 in registers leave too few for eight accumulators).
/// The same taps in the same order as DepthwisePlaneRows: the same bits. S: the stride, 1 or 2
/// along both axes (stride 2: each tap's 16 inputs the even lanes of two loads; planes that fit
/// the stack split by columns instead, DepthwisePlaneSplit).
template <int KH, int NS, int S = 1>
QCC_AVX512 __attribute__((flatten)) void DepthwisePlaneNarrow(const ConvF32Params& p,
                                                              const SegmentTap* seg_taps,
                                                              const float* xp, const float* wm,
                                                              float bias, float* yp) {
  constexpr int R = 8 / NS;                // output rows per group
  constexpr int kSpan = (R - 1) * S + KH;  // input rows they read
  const int64_t ow = p.out[2], oh = p.out[1], w_in = p.in[2];
  const int64_t ahead = std::max<int64_t>(1, 2048 / (R * S * w_in * 4));
  __mmask16 store[NS];
  for (int s = 0; s < NS; ++s) store[s] = LaneMask(0, ow - 16 * s);
  for (int64_t oy = 0; oy < oh; oy += R) {
    const float* rows[kSpan];
    InputRows(p, xp, w_in, oy * S - p.pad[1], kSpan, rows);
    // The input rows a group reads first, `ahead` groups on, and its output rows for writing
    // (as DepthwisePlaneRows).
    const int64_t next_row = oy * S - p.pad[1] + kSpan + (ahead - 1) * R * S;
    for (int64_t j = 0; j < R * S; ++j) PrefetchLines(xp, (next_row + j) * w_in, w_in);
    for (int r = 0; r < R; ++r) PrefetchLines<1>(yp, (oy + ahead * R + r) * ow, ow);
    DepthwiseRowGroup<KH, NS, R, S>(
        p, rows,
        [&](const float* row, int s, int kx)
            QCC_AVX512 { return LoadSegment(S == 1, seg_taps[s * KH + kx], row); },
        [&](int ky, int kx) QCC_AVX512 { return _mm512_set1_ps(wm[ky * KH + kx]); }, bias, store,
        oy, yp);
  }
}

/// The stride-2 plane kernel for square KH x KH kernels (5 or 7) on rows of NS (1 or 2) segments
/// of 16 outputs: the plane is split by columns with zeros around them (SplitColumns), so each
/// segment tap is one plain load at a fixed offset from its row, with no mask, tap table or
/// permute; then R output rows at a time, NS segments each. The taps of an output in (row, column)
/// order from the bias, a column outside x reading one of the zeros and a row outside x skipped,
/// as in the other plane kernels: the same bits. The next plane of x (next in memory) is
/// prefetched into L2 a share per group of rows, where its split would otherwise wait for it
/// (it comes from L3 in a model). 5 x 5 weights stay in registers (25 of them, with 4 / NS rows:
/// four accumulators); 7 x 7 ones are broadcast from memory at each use, with 8 / NS rows.
/// efficientnet-lite0's 144 x 56 x 56 5 x 5 layer, fp32_conv_bench on Zen 4, 1 thread, 4
/// alternations: 146-160 us (DepthwisePlaneNarrow on masked taps of the unpadded split) ->
/// 136-144 us.
template <int KH, int NS, bool kWeightsInRegisters = KH == 5,
          int R = (kWeightsInRegisters ? 4 : 8) / NS>
QCC_AVX512 __attribute__((flatten)) void DepthwisePlaneSplit(const ConvF32Params& p,
                                                             const SegmentTap*, const float* xp,
                                                             const float* wm, float bias,
                                                             float* yp) {
  constexpr int kSpan = (R - 1) * 2 + KH;  // input rows they read
  alignas(64) float split[kMaxSplitFloats];
  const SplitLayout s = SplitLayoutOf(p, NS);
  SplitColumns(p, s, xp, split);
  const int64_t ow = p.out[2], oh = p.out[1], in_sp = p.in_size();
  const int64_t groups = (oh + R - 1) / R;
  __m512 wb[kWeightsInRegisters ? KH * KH : 1];
  if constexpr (kWeightsInRegisters) {
#pragma GCC unroll 49
    for (int t = 0; t < KH * KH; ++t) wb[t] = _mm512_set1_ps(wm[t]);
  }
  int64_t tap[KH];
  for (int kx = 0; kx < KH; ++kx) tap[kx] = s.tap[kx];
  __mmask16 store[NS];
  for (int g = 0; g < NS; ++g) store[g] = LaneMask(0, ow - 16 * g);
  for (int64_t oy = 0, group = 0; oy < oh; oy += R, ++group) {
    const float* rows[kSpan];
    InputRows(p, split, 2 * s.pitch, oy * 2 - p.pad[1], kSpan, rows);
    // This group's share of the next plane's lines, into L2 (into L1 they would crowd out this
    // plane's split, 21 KiB of the 32 KiB at 56 x 56).
    const int64_t a = (in_sp * group / groups + 15) / 16 * 16;
    const int64_t b = (in_sp * (group + 1) / groups + 15) / 16 * 16;
    for (int64_t i = a; i < b; i += 16) PrefetchToL2At(xp, in_sp + i);
    DepthwiseRowGroup<KH, NS, R, 2>(
        p, rows,
        [&](const float* row, int g, int kx)
            QCC_AVX512 { return _mm512_loadu_ps(row + tap[kx] + 16 * g); },
        [&](int ky, int kx) QCC_AVX512 {
          return kWeightsInRegisters ? wb[ky * KH + kx] : _mm512_set1_ps(wm[ky * KH + kx]);
        },
        bias, store, oy, yp);
  }
}

/// Whether DepthwisePlaneEvenOdd takes the plane: stride 2 along both axes, undilated, a square
/// 3 x 3 or 5 x 5 kernel whose taps reach at most one column pair left or right of a segment's
/// own 32 input columns (left padding 0-2 for 3 x 3, 1-2 for 5 x 5).
bool EvenOddPlane(const ConvF32Params& p) {
  const int64_t k = p.kernel[2], left = p.pad[2];
  return p.stride[1] == 2 && p.stride[2] == 2 && p.dilation[1] == 1 && p.dilation[2] == 1 &&
         p.kernel[1] == k && (k == 3 || k == 5) && left <= 2 && k - 1 - left <= 3;
}

/// The stride-2 plane kernel for square K x K kernels (3 or 5) with left padding PL, on rows of
/// any length: an output segment's 32 input columns [2 ox0, 2 ox0 + 32) of a row are two loads
/// (16-float aligned where the row is: a zmm load across two lines ran at 1.7 cycles a load here,
/// an aligned one at 1.1), split into their even and odd columns (E, O) once, and every tap of
/// the row is one of them, or one of them moved a lane with the one column next to the segment
/// (valignd with a broadcast). DepthwisePlaneRows reads each tap with two unaligned loads and a
/// permute, 6 loads for 3 taps where these are 2 and a broadcast. Column d = kx - PL of output
/// lane i is 2 (ox0 + i) + d: E or O by d's parity, moved by floor(d / 2) lanes. R output rows at
/// a time, each output's taps in (row, column) order from the bias, a column outside x reading a
/// zero and a row outside x skipped, as in the other plane kernels: the same bits. 3 x 3 weights
/// stay in registers; 5 x 5 ones are broadcast from memory at each use. efficientnet-lite0's
/// layers, fp32_conv_bench on Zen 4, 1 thread: 96 x 112 x 112 3 x 3 202 -> 143-156 us (from
/// DepthwisePlaneRows), 240 x 28 x 28 3 x 3 40.5 -> 30.4 us, 144 x 56 x 56 5 x 5 133 -> 117 us
/// (from DepthwisePlaneSplit).
template <int K, int PL>
QCC_AVX512 __attribute__((flatten)) void DepthwisePlaneEvenOdd(const ConvF32Params& p,
                                                               const SegmentTap*, const float* xp,
                                                               const float* wm, float bias,
                                                               float* yp) {
  static_assert((K == 3 || K == 5) && PL >= 0 && PL <= 2 && K - 1 - PL <= 3);
  constexpr int R = 4;
  constexpr int kSpan = (R - 1) * 2 + K;  // input rows a group reads
  constexpr bool kWeightsInRegisters = K == 3;
  const PlaneActivation act = PlaneActivationOf(p);
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const int64_t ow = p.out[2], oh = p.out[1], w_in = p.in[2];
  const int64_t ahead = std::max<int64_t>(1, 2048 / (R * 2 * w_in * 4));
  const PlaneWeights<K, kWeightsInRegisters> weight(wm);
  for (int64_t oy = 0; oy < oh; oy += R) {
    const float* rows[kSpan];
    InputRows(p, xp, w_in, oy * 2 - p.pad[1], kSpan, rows);
    // As DepthwisePlaneRows: the rows a group reads first, `ahead` groups on, and its output rows.
    const int64_t next_row = oy * 2 - p.pad[1] + kSpan + (ahead - 1) * R * 2;
    for (int64_t ox0 = 0; ox0 < ow; ox0 += 16) {
      const int64_t c0 = 2 * ox0;  // the segment's first input column
      for (int64_t j = 0; j < R * 2; ++j) {
        PrefetchAt(xp, (next_row + j) * w_in + c0);
        PrefetchAt(xp, (next_row + j) * w_in + c0 + 16);
      }
      for (int r = 0; r < R; ++r) PrefetchAt<1>(yp, (oy + ahead * R + r) * ow + ox0);
      // Columns past the row read zeros: masked loads in the last segments only.
      const bool whole = c0 + 32 <= w_in;
      const __mmask16 ma = LowBits16(w_in - c0), mb = LowBits16(w_in - c0 - 16);
      __m512 acc[R];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[r] = _mm512_set1_ps(bias);
#pragma GCC unroll 16
      for (int j = 0; j < kSpan; ++j) {
        const float* row = rows[j];
        if (row == nullptr) continue;
        const __m512 a = LoadInRow(row + c0, whole, ma), b = LoadInRow(row + c0 + 16, whole, mb);
        const __m512 e = _mm512_permutex2var_ps(a, even, b);
        const __m512 o = _mm512_permutex2var_ps(a, odd, b);
#pragma GCC unroll 8
        for (int kx = 0; kx < K; ++kx) {
          const int d = kx - PL;
          const int parity = d & 1, shift = (d - parity) / 2;  // shift: -1, 0 or 1
          const __m512 v = parity != 0 ? o : e;
          __m512 tap = v;
          if (shift != 0) {
            // The one column outside the segment: lane 0's (2 ox0 + d) or lane 15's (+ 30).
            const int64_t col = shift < 0 ? c0 + d : c0 + d + 30;
            const __m512 edge = _mm512_set1_ps(col >= 0 && col < w_in ? row[col] : 0.0f);
            const __m512i vi = _mm512_castps_si512(v), ei = _mm512_castps_si512(edge);
            tap = _mm512_castsi512_ps(shift < 0 ? _mm512_maskz_alignr_epi32(0xFFFF, vi, ei, 15)
                                                : _mm512_maskz_alignr_epi32(0xFFFF, ei, vi, 1));
          }
          AddTapToRows<K, R, 2>(j, kx, tap, weight, acc);
        }
      }
      StoreSegmentRows<R>(act, acc, oy, ox0, ow, oh, yp);
    }
  }
}

/// Whether DepthwisePlaneShifted takes the plane: stride 1 along both axes, undilated, a square
/// 3 x 3 kernel (any left padding 0-2) or 5 x 5 one padded 2 on the left: taps at most two
/// columns left or right of their output's. And no output segment starting past the row (an
/// output at most one wider than the input), so the 16 columns before a segment are inside it:
/// a third, masked, form of that load cost 8-15% on efficientnet-lite0's layers.
bool ShiftedPlane(const ConvF32Params& p) {
  const int64_t k = p.kernel[2], left = p.pad[2];
  return p.stride[1] == 1 && p.stride[2] == 1 && p.dilation[1] == 1 && p.dilation[2] == 1 &&
         p.kernel[1] == k && ((k == 3 && left <= 2) || (k == 5 && left == 2)) &&
         p.out[2] <= p.in[2] + 1;
}

/// The stride-1 plane kernel for square K x K kernels with left padding PL, from aligned loads:
/// an output segment's 16 input columns [ox0, ox0 + 16) of a row are one load, and with the 16
/// before and after it (P, N) every tap is it or it moved by d = kx - PL lanes (valignd), where
/// DepthwisePlaneRows loads each tap at its own offset, across two cache lines for all but one
/// (a zmm load across two lines ran at 1.7 cycles here, an aligned one at 1.1). R output rows at
/// a time (8 for 5 x 5, whose 25-FMA chains need eight to hide the FMA latency), each output's
/// taps in (row, column) order from the bias, a column outside x reading a zero and a row
/// outside x skipped: the other plane kernels' bits. 3 x 3 weights stay in registers.
template <int K, int PL>
QCC_AVX512 __attribute__((flatten)) void DepthwisePlaneShifted(const ConvF32Params& p,
                                                               const SegmentTap*, const float* xp,
                                                               const float* wm, float bias,
                                                               float* yp) {
  static_assert((K == 3 && PL >= 0 && PL <= 2) || (K == 5 && PL == 2));
  constexpr int R = K == 3 ? 4 : 8;
  constexpr int kSpan = R - 1 + K;  // input rows a group reads
  constexpr bool kWeightsInRegisters = K == 3;
  const PlaneActivation act = PlaneActivationOf(p);
  const int64_t ow = p.out[2], oh = p.out[1], w_in = p.in[2];
  const int64_t ahead = std::max<int64_t>(1, 2048 / (R * w_in * 4));
  const PlaneWeights<K, kWeightsInRegisters> weight(wm);
  for (int64_t oy = 0; oy < oh; oy += R) {
    const float* rows[kSpan];
    InputRows(p, xp, w_in, oy - p.pad[1], kSpan, rows);
    // As DepthwisePlaneRows: the rows a group reads first, `ahead` groups on, and its output rows.
    const int64_t next_row = oy - p.pad[1] + kSpan + (ahead - 1) * R;
    for (int64_t ox0 = 0; ox0 < ow; ox0 += 16) {
      for (int64_t j = 0; j < R; ++j) PrefetchAt(xp, (next_row + j) * w_in + ox0);
      for (int r = 0; r < R; ++r) PrefetchAt<1>(yp, (oy + ahead * R + r) * ow + ox0);
      // Columns outside the row read zeros: P is zeros for the first segment (and inside the row
      // for the others, ShiftedPlane), and the loads reaching past the row are masked.
      const __mmask16 mc = LowBits16(w_in - ox0), mn = LowBits16(w_in - ox0 - 16);
      const bool whole = ox0 + 32 <= w_in;
      __m512 acc[R];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r] = _mm512_set1_ps(bias);
#pragma GCC unroll 16
      for (int j = 0; j < kSpan; ++j) {
        const float* row = rows[j];
        if (row == nullptr) continue;
        const float* at = row + ox0;
        const __m512i c = _mm512_castps_si512(LoadInRow(at, whole, mc));
        const __m512i prev =
            _mm512_castps_si512(PL > 0 && ox0 > 0 ? _mm512_loadu_ps(at - 16) : _mm512_setzero_ps());
        const __m512i next = _mm512_castps_si512(K - 1 - PL > 0 ? LoadInRow(at + 16, whole, mn)
                                                                : _mm512_setzero_ps());
#pragma GCC unroll 8
        for (int kx = 0; kx < K; ++kx) {
          const int d = kx - PL;
          __m512i t = c;
          if (d == -2) t = _mm512_maskz_alignr_epi32(0xFFFF, c, prev, 14);
          if (d == -1) t = _mm512_maskz_alignr_epi32(0xFFFF, c, prev, 15);
          if (d == 1) t = _mm512_maskz_alignr_epi32(0xFFFF, next, c, 1);
          if (d == 2) t = _mm512_maskz_alignr_epi32(0xFFFF, next, c, 2);
          const __m512 tap = _mm512_castsi512_ps(t);
          AddTapToRows<K, R, 1>(j, kx, tap, weight, acc);
        }
      }
      StoreSegmentRows<R>(act, acc, oy, ox0, ow, oh, yp);
    }
  }
}

using DepthwisePlaneFn = void (*)(const ConvF32Params&, const SegmentTap*, const float*,
                                  const float*, float, float*);

/// The plane kernel for `p`: a DepthwisePlaneRows instance where one fits.
DepthwisePlaneFn PickDepthwisePlane(const ConvF32Params& p) {
  if (p.dilation[1] != 1 || p.stride[1] > 2) return DepthwisePlane;
  const bool s1 = p.stride[1] == 1;
  const bool square = p.kernel[2] == p.kernel[1];
  // Taps from aligned loads where they reach: stride 1 with 3 x 3 kernels and 5 x 5 ones padded 2
  // on the left (DepthwisePlaneShifted), stride 2 with 3 x 3 and 5 x 5 (DepthwisePlaneEvenOdd).
  // Other stride-2 planes of one or two segments per row where the split fits the stack:
  // DepthwisePlaneSplit. Maps of one or two segments per row otherwise, kernels of 5 x 5 and
  // 7 x 7: eight accumulators (DepthwisePlaneNarrow). DepthwisePlaneRows for the rest.
  const bool narrow = NarrowPlane(p);
  const bool one = p.out[2] <= 16;
  if (ShiftedPlane(p)) {
    if (p.kernel[1] == 5) return DepthwisePlaneShifted<5, 2>;
    return p.pad[2] == 0   ? DepthwisePlaneShifted<3, 0>
           : p.pad[2] == 1 ? DepthwisePlaneShifted<3, 1>
                           : DepthwisePlaneShifted<3, 2>;
  }
  if (EvenOddPlane(p)) {
    // Rows of two segments kept four chains of FMAs: both at once, eight chains, ran slower
    // (efficientnet-lite0's 144 x 56 x 56 5 x 5 layer, 117 -> 129 us).
    static constexpr DepthwisePlaneFn kEvenOdd[5] = {
        DepthwisePlaneEvenOdd<3, 0>, DepthwisePlaneEvenOdd<3, 1>, DepthwisePlaneEvenOdd<3, 2>,
        DepthwisePlaneEvenOdd<5, 1>, DepthwisePlaneEvenOdd<5, 2>};
    return kEvenOdd[p.kernel[1] == 3 ? p.pad[2] : 2 + p.pad[2]];
  }
  if (SplitsColumns(p)) {
    if (p.kernel[1] == 5) return one ? DepthwisePlaneSplit<5, 1> : DepthwisePlaneSplit<5, 2>;
    return one ? DepthwisePlaneSplit<7, 1> : DepthwisePlaneSplit<7, 2>;
  }
  switch (p.kernel[1]) {
    case 3:
      if (square) return s1 ? DepthwisePlaneRows<3, 1, 3> : DepthwisePlaneRows<3, 2, 3>;
      return s1 ? DepthwisePlaneRows<3, 1, 0> : DepthwisePlaneRows<3, 2, 0>;
    case 5:
      if (narrow && s1) return one ? DepthwisePlaneNarrow<5, 1> : DepthwisePlaneNarrow<5, 2>;
      if (narrow) return one ? DepthwisePlaneNarrow<5, 1, 2> : DepthwisePlaneNarrow<5, 2, 2>;
      if (square) return s1 ? DepthwisePlaneRows<5, 1, 5> : DepthwisePlaneRows<5, 2, 5>;
      return s1 ? DepthwisePlaneRows<5, 1, 0> : DepthwisePlaneRows<5, 2, 0>;
    case 7:
      if (narrow && s1) return one ? DepthwisePlaneNarrow<7, 1> : DepthwisePlaneNarrow<7, 2>;
      if (narrow) return one ? DepthwisePlaneNarrow<7, 1, 2> : DepthwisePlaneNarrow<7, 2, 2>;
      if (square) return s1 ? DepthwisePlaneRows<7, 1, 7> : DepthwisePlaneRows<7, 2, 7>;
      return s1 ? DepthwisePlaneRows<7, 1, 0> : DepthwisePlaneRows<7, 2, 0>;
    default:
      return DepthwisePlane;
  }
}

}  // namespace

bool ConvF32DepthwiseAvx512Fits(const ConvF32Params& p) {
  return p.IsDepthwise() && p.kernel[0] == 1 && p.stride[0] == 1 && p.stride[2] <= 2 &&
         (p.out[2] + 15) / 16 * p.kernel[2] <= kMaxDepthwiseSegmentTaps;
}

void ConvF32DepthwiseAvx512(const ConvF32Params& p, const float* x, const float* w,
                            const float* bias, float* y) {
  if (internal::DepthwiseBlockedFitsAvx512(p)) {
    internal::ConvF32DepthwiseBlockedAvx512(p, x, w, bias, y);
    return;
  }
  const int64_t mult = p.out_channels / p.groups;
  const int64_t in_sp = p.in_size(), out_sp = p.out_size(), kvol = p.kernel_size();
  const int64_t ow = p.out[2], w_in = p.in[2], sx = p.stride[2];
  SegmentTap seg_taps[kMaxDepthwiseSegmentTaps];
  SegmentTap* st = seg_taps;
  for (int64_t ox0 = 0; ox0 < ow; ox0 += 16) {
    const int64_t n = std::min<int64_t>(16, ow - ox0);
    for (int64_t kx = 0; kx < p.kernel[2]; ++kx, ++st) {
      st->base = ox0 * sx - p.pad[2] + kx * p.dilation[2];
      if (sx == 1) {
        st->m0 = LaneMask(-st->base, std::min(n, w_in - st->base));
        st->m1 = 0;
      } else {
        st->m0 = LaneMask(-st->base, w_in - st->base);
        st->m1 = LaneMask(-st->base - 16, w_in - st->base - 16);
      }
    }
  }
  const DepthwisePlaneFn plane_fn = PickDepthwisePlane(p);
  NnParallelFor(p.num_threads, p.batch * p.out_channels, out_sp * kvol / 4,
                [&](int64_t begin, int64_t end) {
                  for (int64_t plane = begin; plane < end; ++plane) {
                    const int64_t n = plane / p.out_channels, m = plane % p.out_channels;
                    const float* xp = x + (n * p.in_channels + m / mult) * in_sp;
                    plane_fn(p, seg_taps, xp, w + m * kvol, bias != nullptr ? bias[m] : 0.0f,
                             y + plane * out_sp);
                  }
                });
}

}  // namespace qcc::cpu
