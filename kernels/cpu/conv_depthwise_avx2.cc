// AVX2 path of the fp32 depthwise convolution (ConvF32DepthwiseAvx2, conv.h), for CPUs without
// AVX-512.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv_avx2_internal.h"
#include "kernels/cpu/conv_internal.h"
#include "kernels/cpu/nn_parallel.h"

namespace qcc::cpu {

using internal::Activate;
using internal::LaneMask;

// ---------------------------------------------------------------------------------------------
// Depthwise path.
//
// ConvF32DepthwiseDirect's bits, vectorized: each output is its bias, then for every kernel tap
// in (row, column) order that falls inside x, plus the rounded product w * x (a multiply and an
// add, not a fused multiply-add: the direct path's `y += w * x` under -ffp-contract=off). A tap
// outside x is skipped, not added as zero (w * 0 could turn an accumulated -0 into +0, and an
// infinite weight would make it NaN): lanes it does not reach keep their sum through a blend.
// Then the activation (Activate is ActivationF32's rule lane by lane). Eight outputs of a row per
// register, four rows together (four add chains in flight, one weight broadcast for them).
// Which NaN a NaN output holds may differ (x86 keeps the first NaN operand's payload, and the
// direct path's own loops order the operands differently).

namespace {

/// One (8-output segment, kernel column) of a row, the same for every row: lane i reads
/// x[base + i * stride] when it is in `lanes` (its input inside the row, its output inside y).
struct alignas(32) DepthwiseTap {
  __m256i lanes;   // the lanes as a mask
  __m256i raw[2];  // stride 2: the floats of the two loads those lanes need
  int64_t base;
  bool full, any;     // every lane; at least one lane
  bool segment_full;  // every tap of this segment is full
};

// segments x kernel width: 32 KiB of table on the caller's stack (rows up to 680 outputs wide
// with a 3x3 kernel, 292 with a 7x7; wider ones take the direct path).
constexpr int64_t kMaxDepthwiseTaps = 256;

/// Lanes [lo, hi) of a ymm mask.
QCC_AVX2_FMA inline __m256i RangeMask(int64_t lo, int64_t hi) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i from = _mm256_set1_epi32(static_cast<int32_t>(std::clamp<int64_t>(lo, -1, 8)));
  const __m256i to = _mm256_set1_epi32(static_cast<int32_t>(std::clamp<int64_t>(hi, -1, 8)));
  return _mm256_andnot_si256(_mm256_cmpgt_epi32(from, lanes), _mm256_cmpgt_epi32(to, lanes));
}

/// x[base + i * SX] for the lanes of `t` (all of them when FULL), zero elsewhere; reads no float
/// that no lane needs (stride 2: two loads, their even floats gathered by a shuffle).
template <int SX, bool FULL>
QCC_AVX2_FMA inline __m256 LoadTap(const float* xrow, const DepthwiseTap& t) {
  const float* src = xrow + t.base;
  if (SX == 1) return FULL ? _mm256_loadu_ps(src) : _mm256_maskload_ps(src, t.lanes);
  const __m256 a = FULL ? _mm256_loadu_ps(src) : _mm256_maskload_ps(src, t.raw[0]);
  const __m256 b = _mm256_maskload_ps(src + 8, t.raw[1]);
  // [a0 a2 b0 b2 | a4 a6 b4 b6], then the 64-bit pairs reordered to a0 a2 a4 a6 b0 b2 b4 b6.
  const __m256 even = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), _MM_SHUFFLE(3, 1, 2, 0)));
}

/// acc[r] += wv * x of tap `t` in row rows[r] (skipped where null), for the tap's lanes.
template <int SX, bool FULL>
QCC_AVX2_FMA inline void AddTap(const float* const rows[4], const DepthwiseTap& t, __m256 wv,
                                __m256 acc[4]) {
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    if (rows[r] == nullptr) continue;
    const __m256 sum = _mm256_add_ps(acc[r], _mm256_mul_ps(wv, LoadTap<SX, FULL>(rows[r], t)));
    acc[r] = FULL ? sum : _mm256_blendv_ps(acc[r], sum, _mm256_castsi256_ps(t.lanes));
  }
}

/// Output rows oy .. oy + 3 of segment s (those that exist): the activation, then the store.
QCC_AVX2_FMA inline void StoreSegment(const ConvF32Params& p, const __m256 acc[4], int64_t oy,
                                      int64_t s, float* yp) {
  const int64_t ow = p.out[2], oh = p.out[1];
  const int64_t ox0 = s * 8, n = std::min<int64_t>(8, ow - ox0);
  const bool activate = !p.activation.is_identity();
  const __m256 lo = _mm256_set1_ps(p.activation.lo), hi = _mm256_set1_ps(p.activation.hi);
  const __m256 slope = _mm256_set1_ps(p.activation.negative_slope);
  const __m256i store = LaneMask(n);
#pragma GCC unroll 4
  for (int r = 0; r < 4; ++r) {
    if (oy + r >= oh) break;
    const __m256 v = activate ? Activate(acc[r], lo, hi, slope) : acc[r];
    float* dst = yp + (oy + r) * ow + ox0;
    if (n == 8) {
      _mm256_storeu_ps(dst, v);
    } else {
      _mm256_maskstore_ps(dst, store, v);
    }
  }
}

/// One (image, channel) plane: four output rows at a time, one 8-wide segment at a time.
template <int SX>
QCC_AVX2_FMA void DepthwisePlaneAvx2(const ConvF32Params& p, const DepthwiseTap* taps,
                                     int64_t segments, const float* xp, const float* wm, float bias,
                                     float* yp) {
  const int64_t oh = p.out[1], kh = p.kernel[1], kw = p.kernel[2];
  for (int64_t oy = 0; oy < oh; oy += 4) {
    for (int64_t s = 0; s < segments; ++s) {
      const DepthwiseTap* st = taps + s * kw;
      __m256 acc[4];
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) acc[r] = _mm256_set1_ps(bias);
      for (int64_t ky = 0; ky < kh; ++ky) {
        const float* rows[4];  // null: outside x, or past the last output row
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r) {
          const int64_t iy = (oy + r) * p.stride[1] - p.pad[1] + ky * p.dilation[1];
          rows[r] = oy + r < oh && iy >= 0 && iy < p.in[1] ? xp + iy * p.in[2] : nullptr;
        }
        const float* wrow = wm + ky * kw;
        for (int64_t kx = 0; kx < kw; ++kx) {
          const __m256 wv = _mm256_set1_ps(wrow[kx]);
          if (st[kx].full) {
            AddTap<SX, true>(rows, st[kx], wv, acc);
          } else if (st[kx].any) {
            AddTap<SX, false>(rows, st[kx], wv, acc);
          }
        }
      }
      StoreSegment(p, acc, oy, s, yp);
    }
  }
}

/// acc[r] of DepthwisePlaneRowsAvx2 for one segment (`st`, its taps): every input row j of the
/// group that lies inside x, each of its taps loaded once and added to each output row r that
/// reads it (kernel row j - r * SY), with the weights `wv` broadcast. FULL: every tap of the
/// segment reaches all 8 lanes (no masks, no blends).
template <int SX, int KH, int SY, int KW, bool FULL>
QCC_AVX2_FMA inline void RowsSegment(const float* const* rows, const DepthwiseTap* st,
                                     const __m256* wv, __m256* acc) {
  constexpr int R = 4;
  constexpr int kSpan = (R - 1) * SY + KH;
#pragma GCC unroll 16
  for (int j = 0; j < kSpan; ++j) {
    if (rows[j] == nullptr) continue;
#pragma GCC unroll 8
    for (int kx = 0; kx < KW; ++kx) {
      const DepthwiseTap& t = st[kx];
      if (!FULL && !t.any) continue;
      const __m256 v = LoadTap<SX, FULL>(rows[j], t);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) {
        const int ky = j - r * SY;
        if (ky < 0 || ky >= KH) continue;
        const __m256 sum = _mm256_add_ps(acc[r], _mm256_mul_ps(wv[ky * KW + kx], v));
        acc[r] = FULL ? sum : _mm256_blendv_ps(acc[r], sum, _mm256_castsi256_ps(t.lanes));
      }
    }
  }
}

/// DepthwisePlaneAvx2 for a KH x KW kernel, vertical stride SY and vertical dilation 1: the four
/// output rows of a group read (4 - 1) * SY + KH input rows, and each segment of each of those is
/// loaded once for every output row that reads it, where DepthwisePlaneAvx2 loads it once per
/// output row and tap. Each output still adds its taps in (row, column) order, so the two give the
/// same bits.
template <int SX, int KH, int SY, int KW>
QCC_AVX2_FMA void DepthwisePlaneRowsAvx2(const ConvF32Params& p, const DepthwiseTap* taps,
                                         int64_t segments, const float* xp, const float* wm,
                                         float bias, float* yp) {
  constexpr int R = 4;
  constexpr int kSpan = (R - 1) * SY + KH;
  const int64_t oh = p.out[1];
  __m256 wv[KH * KW];
#pragma GCC unroll 64
  for (int i = 0; i < KH * KW; ++i) wv[i] = _mm256_set1_ps(wm[i]);
  for (int64_t oy = 0; oy < oh; oy += R) {
    const float* rows[kSpan];  // null: outside x
#pragma GCC unroll 16
    for (int j = 0; j < kSpan; ++j) {
      const int64_t iy = oy * SY - p.pad[1] + j;
      rows[j] = iy >= 0 && iy < p.in[1] ? xp + iy * p.in[2] : nullptr;
    }
    for (int64_t s = 0; s < segments; ++s) {
      const DepthwiseTap* st = taps + s * KW;
      __m256 acc[R];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[r] = _mm256_set1_ps(bias);
      if (st[0].segment_full) {
        RowsSegment<SX, KH, SY, KW, true>(rows, st, wv, acc);
      } else {
        RowsSegment<SX, KH, SY, KW, false>(rows, st, wv, acc);
      }
      StoreSegment(p, acc, oy, s, yp);
    }
  }
}

using DepthwisePlaneAvx2Fn = void (*)(const ConvF32Params&, const DepthwiseTap*, int64_t,
                                      const float*, const float*, float, float*);

/// The plane kernel for `p`: a DepthwisePlaneRowsAvx2 instance for square 3x3, 5x5 and 7x7
/// kernels with vertical stride 1 or 2 and no vertical dilation, else DepthwisePlaneAvx2.
template <int SX>
DepthwisePlaneAvx2Fn PickDepthwisePlaneAvx2(const ConvF32Params& p) {
  if (p.dilation[1] != 1 || p.stride[1] > 2 || p.kernel[1] != p.kernel[2]) {
    return DepthwisePlaneAvx2<SX>;
  }
  const bool s1 = p.stride[1] == 1;
  switch (p.kernel[1]) {
    case 3:
      return s1 ? DepthwisePlaneRowsAvx2<SX, 3, 1, 3> : DepthwisePlaneRowsAvx2<SX, 3, 2, 3>;
    case 5:
      return s1 ? DepthwisePlaneRowsAvx2<SX, 5, 1, 5> : DepthwisePlaneRowsAvx2<SX, 5, 2, 5>;
    case 7:
      return s1 ? DepthwisePlaneRowsAvx2<SX, 7, 1, 7> : DepthwisePlaneRowsAvx2<SX, 7, 2, 7>;
    default:
      return DepthwisePlaneAvx2<SX>;
  }
}

/// The (segment, kernel column) table of `p` into `taps` (ConvF32DepthwiseAvx2Fits(p)).
QCC_AVX2_FMA void DepthwiseTaps(const ConvF32Params& p, DepthwiseTap* taps) {
  const int64_t ow = p.out[2], w_in = p.in[2], sx = p.stride[2], kw = p.kernel[2];
  const int64_t segments = (ow + 7) / 8;
  for (int64_t s = 0; s < segments; ++s) {
    const int64_t lanes = std::min<int64_t>(8, ow - s * 8);
    for (int64_t kx = 0; kx < kw; ++kx) {
      DepthwiseTap& t = taps[s * kw + kx];
      t.base = s * 8 * sx - p.pad[2] + kx * p.dilation[2];
      int64_t l, h;  // lanes [l, h) read inside the row
      internal::ValidRange(t.base, sx, w_in, lanes, l, h);
      t.lanes = RangeMask(l, h);
      // Stride 2: lane i reads float 2i of the 16 the two loads span.
      t.raw[0] = RangeMask(2 * l, 2 * h - 1);
      t.raw[1] = RangeMask(2 * l - 8, 2 * h - 9);
      t.full = l == 0 && h == 8;
      t.any = l < h;
    }
    bool all = true;
    for (int64_t kx = 0; kx < kw; ++kx) all = all && taps[s * kw + kx].full;
    for (int64_t kx = 0; kx < kw; ++kx) taps[s * kw + kx].segment_full = all;
  }
}

}  // namespace

bool ConvF32DepthwiseAvx2Fits(const ConvF32Params& p) {
  return p.IsDepthwise() && p.in[0] == 1 && p.out[0] == 1 && p.kernel[0] == 1 && p.pad[0] == 0 &&
         p.stride[2] <= 2 && (p.out[2] + 7) / 8 * p.kernel[2] <= kMaxDepthwiseTaps;
}

void ConvF32DepthwiseAvx2(const ConvF32Params& p, const float* x, const float* w, const float* bias,
                          float* y) {
  if (p.batch == 0 || p.out_size() == 0 || p.out_channels == 0) return;
  const int64_t mult = p.out_channels / p.groups;
  const int64_t in_sp = p.in_size(), out_sp = p.out_size(), kvol = p.kernel_size();
  const int64_t segments = (p.out[2] + 7) / 8, sx = p.stride[2];
  DepthwiseTap taps[kMaxDepthwiseTaps];
  DepthwiseTaps(p, taps);
  const DepthwisePlaneAvx2Fn plane_fn =
      sx == 1 ? PickDepthwisePlaneAvx2<1>(p) : PickDepthwisePlaneAvx2<2>(p);
  NnParallelFor(p.num_threads, p.batch * p.out_channels, out_sp * kvol / 4,
                [&](int64_t begin, int64_t end) {
                  for (int64_t plane = begin; plane < end; ++plane) {
                    const int64_t n = plane / p.out_channels, m = plane % p.out_channels;
                    const float* xp = x + (n * p.in_channels + m / mult) * in_sp;
                    plane_fn(p, taps, segments, xp, w + m * kvol, bias != nullptr ? bias[m] : 0.0f,
                             y + plane * out_sp);
                  }
                });
}

}  // namespace qcc::cpu
