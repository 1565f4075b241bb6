#include "kernels/cpu/pool.h"

// GCC 12's AVX-512 headers start unmasked results from _mm512_undefined_*(), which
// -Wmaybe-uninitialized reports at every inlined use (GCC PR 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/lane_masks.h"
#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/transpose_avx512.h"

namespace qcc::cpu {

namespace {

/// Taps [k0, k1) of a window starting at `start` whose positions start + k * d lie in [lo, hi).
void TapRange(int64_t start, int64_t d, int64_t kernel, int64_t lo, int64_t hi, int64_t& k0,
              int64_t& k1) {
  k0 = start >= lo ? 0 : (lo - start + d - 1) / d;
  k1 = start >= hi ? 0 : std::min(kernel, (hi - start + d - 1) / d);
  k1 = std::max(k0, k1);
}

/// Per axis and output position, the window start and its tap range [k0, k1) inside [lo, hi):
/// computed once per call, not per plane and output (TapRange divides).
struct WindowTable {
  std::array<std::vector<int64_t>, 3> start, k0, k1;

  WindowTable(const PoolF32Params& p, const std::array<int64_t, 3>& lo,
              const std::array<int64_t, 3>& hi) {
    for (int a = 0; a < 3; ++a) {
      start[a].resize(p.out[a]);
      k0[a].resize(p.out[a]);
      k1[a].resize(p.out[a]);
      for (int64_t o = 0; o < p.out[a]; ++o) {
        start[a][o] = o * p.stride[a] - p.pad_begin[a];
        TapRange(start[a][o], p.dilation[a], p.kernel[a], lo[a], hi[a], k0[a][o], k1[a][o]);
      }
    }
  }
};

/// Calls fn(out_index, start, k0, k1) for each output position of one plane, where start and
/// the tap ranges [k0, k1) are per axis (from `table`).
template <typename Fn>
void ForEachWindow(const PoolF32Params& p, const WindowTable& table, Fn&& fn) {
  std::array<int64_t, 3> start, k0, k1;
  int64_t o = 0;
  for (int64_t oz = 0; oz < p.out[0]; ++oz) {
    start[0] = table.start[0][oz];
    k0[0] = table.k0[0][oz];
    k1[0] = table.k1[0][oz];
    for (int64_t oy = 0; oy < p.out[1]; ++oy) {
      start[1] = table.start[1][oy];
      k0[1] = table.k0[1][oy];
      k1[1] = table.k1[1][oy];
      for (int64_t ox = 0; ox < p.out[2]; ++ox, ++o) {
        start[2] = table.start[2][ox];
        k0[2] = table.k0[2][ox];
        k1[2] = table.k1[2][ox];
        fn(o, start, k0, k1);
      }
    }
  }
}

constexpr std::array<int64_t, 3> kZero{0, 0, 0};

#define QCC_AVX512_POOL_F32 __attribute__((target("avx512f")))

/// The taps at `at` of the first `lanes` of 16 outputs `sx` (1 or 2) apart, `span` the masks of
/// the floats they read (stride 2: their even lanes): nothing is read past the last one's tap, and
/// the other lanes are 0.
QCC_AVX512_POOL_F32 inline __m512 TapsX16(const float* at, int64_t sx, __mmask16 lanes,
                                          SpanMasks span) {
  if (sx == 1) return _mm512_maskz_loadu_ps(lanes, at);
  return EvenFloats(at, span);
}

/// Per input row of one plane, the max over each output's taps in that row (MaxPlaneAvx512).
struct RowMaxima {
  std::vector<float> h;           // [row][vector][16]
  std::vector<__mmask16> nan_at;  // [row][vector]: the lanes whose first tap in the row is NaN
};

/// The taps kx of 16 outputs `sx` (1 or 2) apart from `first` (lane j: first[sx j + kx]), by
/// plain loads, which read up to first[30 + kw] (stride 1: first[14 + kw]), past the last
/// lane's last tap: the caller keeps that inside the input. Their max is taken as the scalar
/// loop would from the lowest float, so NaN never wins. Stride 2: one pair of loads split into
/// even and odd floats gives taps 0 and 1, and tap 2 is the even floats moved down a lane with
/// first[32] after them. `t0` gets tap 0.
QCC_AVX512_POOL_F32 __attribute__((always_inline)) inline __m512 RowMax(const float* first,
                                                                        int64_t sx, int64_t kw,
                                                                        __m512& t0) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  if (sx == 1) {
    t0 = _mm512_loadu_ps(first);
    __m512 best = _mm512_max_ps(t0, lowest);
    for (int64_t kx = 1; kx < kw; ++kx) best = _mm512_max_ps(_mm512_loadu_ps(first + kx), best);
    return best;
  }
  const __m512 a = _mm512_loadu_ps(first), b = _mm512_loadu_ps(first + 16);
  t0 = _mm512_permutex2var_ps(a, even, b);
  __m512 best = _mm512_max_ps(t0, lowest);
  if (kw > 1) best = _mm512_max_ps(_mm512_permutex2var_ps(a, odd, b), best);
  if (kw > 2) {
    const __m512 next = _mm512_set1_ps(first[32]);
    const __m512 t2 = _mm512_castsi512_ps(
        _mm512_alignr_epi32(_mm512_castps_si512(next), _mm512_castps_si512(t0), 1));
    best = _mm512_max_ps(t2, best);
  }
  for (int64_t kx = 3; kx < kw; ++kx) {
    const __m512 t =
        _mm512_permutex2var_ps(_mm512_loadu_ps(first + kx), even, _mm512_loadu_ps(first + kx + 16));
    best = _mm512_max_ps(t, best);
  }
  return best;
}

/// RowMax of the `m` outputs of one vector (16 or fewer) from `first`, through masked loads of
/// their taps only where the plain loads would pass `end`, the input's end. Always inlined: as a
/// call it cost squeezenet's 27 x 27 and 13 x 13 MaxPools 10%.
QCC_AVX512_POOL_F32 __attribute__((always_inline)) inline __m512 RowMaxBefore(
    const float* end, const float* first, int64_t sx, int64_t kw, int64_t m, __m512& t0) {
  const int64_t reach = sx == 1 ? 15 + kw : 31 + kw;  // floats RowMax reads from `first`
  if (first + reach <= end) return RowMax(first, sx, kw, t0);
  const __mmask16 lanes = LowBits16(m);
  const SpanMasks span = SpanMasksOf((m - 1) * sx + 1);
  t0 = TapsX16(first, sx, lanes, span);
  __m512 best = _mm512_max_ps(t0, _mm512_set1_ps(-std::numeric_limits<float>::infinity()));
  for (int64_t kx = 1; kx < kw; ++kx) {
    best = _mm512_max_ps(TapsX16(first + kx, sx, lanes, span), best);
  }
  return best;
}

/// Outputs [ox0, ox1) of every output row of one plane (2-D, dilation 1, stride 1 or 2, windows
/// whole in x; the rows with a tap inside y), from maxima per input row that the output rows
/// reading that row share (3 x 3 stride 2: 6 row maxima per output vector, not 9 taps). Loads
/// are plain (masked loads in a stream cost several times more here) except where one would
/// pass `end`, the input's end: those vectors read through masks.
///
/// Bits: the scalar loop takes the window's first tap, then each later tap that is greater: the
/// earliest of the greatest non-NaN taps (a +0 before a -0 stays +0), or the first tap itself
/// when that is NaN. Folding each row from the lowest float with `t > best ? t : best`
/// (_mm512_max_ps(t, best)), then the rows in order the same way, gives the earliest greatest
/// non-NaN tap: NaN never replaces, and a later equal never replaces. The lanes whose first tap
/// is NaN then take that tap.
QCC_AVX512_POOL_F32 void MaxPlaneAvx512(const PoolF32Params& p, const WindowTable& table,
                                        const float* plane, const float* end, int64_t ox0,
                                        int64_t ox1, float* yp, RowMaxima& scratch) {
  const int64_t kw = p.kernel[2], sx = p.stride[2], w = p.in[2];
  const int64_t n = ox1 - ox0, vectors = (n + 15) / 16;
  const float* column0 = plane + table.start[2][ox0];  // output ox0's first tap in row 0
  int64_t row_lo = p.in[1], row_hi = -1;
  for (int64_t oy = 0; oy < p.out[1]; ++oy) {
    if (table.k0[1][oy] >= table.k1[1][oy]) continue;
    row_lo = std::min(row_lo, table.start[1][oy] + table.k0[1][oy]);
    row_hi = std::max(row_hi, table.start[1][oy] + table.k1[1][oy] - 1);
  }
  if (row_hi < row_lo) return;
  scratch.h.resize((row_hi - row_lo + 1) * vectors * 16);
  scratch.nan_at.resize((row_hi - row_lo + 1) * vectors);
  // Tap 0 of the `m` outputs of vector v in row iy through masks: nothing read past the last
  // output's taps.
  auto masked_tap0 = [&](int64_t iy, int64_t v) QCC_AVX512_POOL_F32 {
    const int64_t m = std::min<int64_t>(16, n - v * 16);
    return TapsX16(column0 + iy * w + v * 16 * sx, sx, LowBits16(m), SpanMasksOf((m - 1) * sx + 1));
  };
  for (int64_t iy = row_lo; iy <= row_hi; ++iy) {
    float* h = scratch.h.data() + (iy - row_lo) * vectors * 16;
    __mmask16* nan_at = scratch.nan_at.data() + (iy - row_lo) * vectors;
    for (int64_t v = 0; v < vectors; ++v) {
      const int64_t m = std::min<int64_t>(16, n - v * 16);
      __m512 t0;
      const __m512 best = RowMaxBefore(end, column0 + iy * w + v * 16 * sx, sx, kw, m, t0);
      nan_at[v] = _mm512_cmp_ps_mask(t0, t0, _CMP_UNORD_Q) & LowBits16(m);
      _mm512_storeu_ps(h + v * 16, best);
    }
  }
  for (int64_t oy = 0; oy < p.out[1]; ++oy) {
    const int64_t ky0 = table.k0[1][oy], ky1 = table.k1[1][oy];
    if (ky0 >= ky1) continue;
    const int64_t iy0 = table.start[1][oy] + ky0;
    const float* h0 = scratch.h.data() + (iy0 - row_lo) * vectors * 16;
    float* yr = yp + oy * p.out[2] + ox0;
    for (int64_t v = 0; v < vectors; ++v) {
      __m512 best = _mm512_loadu_ps(h0 + v * 16);
      for (int64_t ky = 1; ky < ky1 - ky0; ++ky) {
        best = _mm512_max_ps(_mm512_loadu_ps(h0 + (ky * vectors + v) * 16), best);
      }
      const __mmask16 nan = scratch.nan_at[(iy0 - row_lo) * vectors + v];
      if (nan != 0) best = _mm512_mask_mov_ps(best, nan, masked_tap0(iy0, v));
      if (v * 16 + 16 <= n) {
        _mm512_storeu_ps(yr + v * 16, best);
      } else {
        _mm512_mask_storeu_ps(yr + v * 16, LowBits16(n - v * 16), best);
      }
    }
  }
}

/// MaxPlaneAvx512 where output rows share at most one input row (the stride in y at least the
/// kernel's height less one: 3 x 3 stride 2): each vector of 16 outputs walks down the plane
/// with its maxima of the last row it read in a register, instead of through a table of every
/// row's (the same maxima, folded in the same order: the same bits).
QCC_AVX512_POOL_F32 void MaxPlaneRollingAvx512(const PoolF32Params& p, const WindowTable& table,
                                               const float* plane, const float* end, int64_t ox0,
                                               int64_t ox1, float* yp) {
  const int64_t kw = p.kernel[2], sx = p.stride[2], w = p.in[2];
  const int64_t n = ox1 - ox0;
  const float* column0 = plane + table.start[2][ox0];  // output ox0's first tap in row 0
  for (int64_t v = 0; v * 16 < n; ++v) {
    const int64_t m = std::min<int64_t>(16, n - v * 16);
    const __mmask16 lanes = LowBits16(m);
    // The maxima of row iy's taps of these outputs; t0: their first taps.
    auto row_max = [&](int64_t iy, __m512& t0) QCC_AVX512_POOL_F32 {
      return RowMaxBefore(end, column0 + iy * w + v * 16 * sx, sx, kw, m, t0);
    };
    int64_t kept_row = -1;  // the last row read, its maxima and first taps
    __m512 kept = _mm512_setzero_ps(), kept_t0 = _mm512_setzero_ps();
    float* yc = yp + ox0 + v * 16;
    for (int64_t oy = 0; oy < p.out[1]; ++oy, yc += p.out[2]) {
      const int64_t ky0 = table.k0[1][oy], ky1 = table.k1[1][oy];
      if (ky0 >= ky1) continue;
      const int64_t iy0 = table.start[1][oy] + ky0, iy1 = iy0 + (ky1 - ky0);
      __m512 t0;
      __m512 best = iy0 == kept_row ? (t0 = kept_t0, kept) : row_max(iy0, t0);
      kept = best;
      kept_t0 = t0;
      for (int64_t iy = iy0 + 1; iy < iy1; ++iy) {
        kept = row_max(iy, kept_t0);
        best = _mm512_max_ps(kept, best);
      }
      kept_row = iy1 - 1;
      const __mmask16 nan = _mm512_cmp_ps_mask(t0, t0, _CMP_UNORD_Q) & lanes;
      if (nan != 0) best = _mm512_mask_mov_ps(best, nan, t0);
      if (m == 16) {
        _mm512_storeu_ps(yc, best);
      } else {
        _mm512_mask_storeu_ps(yc, lanes, best);
      }
    }
  }
}

/// MaxPlaneRollingAvx512 for a KH x KW kernel of stride SX along x (constants: the row maxima
/// without branches on them) on NV vectors of 16 outputs at once: vector v's first output's
/// first tap in row 0 is column0 + v * x_step, its outputs start at yc + v * y_step, and `lanes`
/// holds the lanes stored of each; their plain loads stay inside x in every row. Row by row, the
/// vectors' maxima of the last row read kept in registers for the next output row: the same
/// maxima as MaxPlaneRollingAvx512, folded in the same order (the same bits), with NV chains
/// of loads and maxima side by side instead of one.
template <int KH, int KW, int SX, int NV>
QCC_AVX512_POOL_F32 void MaxRowsAvx512(const PoolF32Params& p, const WindowTable& table,
                                       const float* column0, int64_t x_step, float* yc,
                                       int64_t y_step, const __mmask16* lanes) {
  const int64_t w = p.in[2];
  __m512 kept[NV], kept_t0[NV];
  int64_t kept_row = -1;
  for (int64_t oy = 0; oy < p.out[1]; ++oy, yc += p.out[2]) {
    const int64_t ky0 = table.k0[1][oy], ky1 = table.k1[1][oy];
    if (ky0 >= ky1) continue;
    const int64_t iy0 = table.start[1][oy] + ky0, rows = ky1 - ky0;
    const float* row0 = column0 + iy0 * w;
    __m512 best[NV], t0[NV];
    for (int v = 0; v < NV; ++v) {
      if (iy0 == kept_row) {
        best[v] = kept[v];
        t0[v] = kept_t0[v];
      } else {
        best[v] = RowMax(row0 + v * x_step, SX, KW, t0[v]);
      }
      kept[v] = best[v];
      kept_t0[v] = t0[v];
    }
    // The window's other rows: KH - 1 of them (unrolled) but at the edges of a padded plane.
    auto fold_row = [&](int64_t r) QCC_AVX512_POOL_F32 {
      for (int v = 0; v < NV; ++v) {
        kept[v] = RowMax(row0 + r * w + v * x_step, SX, KW, kept_t0[v]);
        best[v] = _mm512_max_ps(kept[v], best[v]);
      }
    };
    if (rows == KH) {
      for (int r = 1; r < KH; ++r) fold_row(r);
    } else {
      for (int64_t r = 1; r < rows; ++r) fold_row(r);
    }
    kept_row = iy0 + rows - 1;
    for (int v = 0; v < NV; ++v) {
      const __mmask16 nan = _mm512_cmp_ps_mask(t0[v], t0[v], _CMP_UNORD_Q) & lanes[v];
      _mm512_mask_storeu_ps(yc + v * y_step, lanes[v], _mm512_mask_mov_ps(best[v], nan, t0[v]));
    }
  }
}

/// MaxRowsAvx512 with NV = `count` (1 to 4).
template <int KH, int KW, int SX>
QCC_AVX512_POOL_F32 void MaxRowsAvx512Of(int64_t count, const PoolF32Params& p,
                                         const WindowTable& table, const float* column0,
                                         int64_t x_step, float* yc, int64_t y_step,
                                         const __mmask16* lanes) {
  switch (count) {
    case 4:
      MaxRowsAvx512<KH, KW, SX, 4>(p, table, column0, x_step, yc, y_step, lanes);
      break;
    case 3:
      MaxRowsAvx512<KH, KW, SX, 3>(p, table, column0, x_step, yc, y_step, lanes);
      break;
    case 2:
      MaxRowsAvx512<KH, KW, SX, 2>(p, table, column0, x_step, yc, y_step, lanes);
      break;
    default:
      MaxRowsAvx512<KH, KW, SX, 1>(p, table, column0, x_step, yc, y_step, lanes);
      break;
  }
}

/// Outputs [ox0, ox1) of planes [begin, end) by MaxRowsAvx512, four vectors at a time: of one
/// plane, or of four planes where a row has one vector (squeezenet's 13 x 13 outputs); returns
/// the first plane not done, whose plain loads would pass `x_end` (only the last planes of x).
/// `last_row`: the last input row a window reads. Squeezenet's pools at 1 thread, each in the
/// model, against MaxPlaneRollingAvx512 (one vector walking down a plane, the kernel's extents
/// read at run time): 64 x 111 x 111 0.09 -> 0.067 ms, 128 x 55 x 55 0.040 -> 0.037 ms, 256 x 27
/// x 27 0.020 -> 0.022 ms by vectors of one plane, 0.022 ms by four planes at a time.
template <int KH, int KW, int SX>
QCC_AVX512_POOL_F32 int64_t MaxPlanesRowsAvx512(const PoolF32Params& p, const WindowTable& table,
                                                int64_t last_row, const float* x,
                                                const float* x_end, int64_t begin, int64_t end,
                                                int64_t ox0, int64_t ox1, float* y) {
  const int64_t in_sp = p.in_size(), out_sp = p.out_size();
  const int64_t n = ox1 - ox0, vectors = (n + 15) / 16;
  // The floats a plane's loads span from its start: RowMax reads 31 + KW past a vector's first.
  const int64_t reach =
      table.start[2][ox0] + last_row * p.in[2] + (vectors - 1) * 16 * SX + 31 + KW;
  int64_t plain_end = begin;
  while (plain_end < end && reach <= x_end - (x + plain_end * in_sp)) ++plain_end;
  __mmask16 lanes[4];
  if (vectors == 1) {
    for (int v = 0; v < 4; ++v) lanes[v] = LowBits16(n);
    for (int64_t plane = begin; plane < plain_end; plane += 4) {
      MaxRowsAvx512Of<KH, KW, SX>(std::min<int64_t>(4, plain_end - plane), p, table,
                                  x + plane * in_sp + table.start[2][ox0], in_sp,
                                  y + plane * out_sp + ox0, out_sp, lanes);
    }
    return plain_end;
  }
  for (int64_t plane = begin; plane < plain_end; ++plane) {
    for (int64_t v = 0; v < vectors; v += 4) {
      for (int i = 0; i < 4; ++i) lanes[i] = LowBits16(n - (v + i) * 16);
      MaxRowsAvx512Of<KH, KW, SX>(std::min<int64_t>(4, vectors - v), p, table,
                                  x + plane * in_sp + table.start[2][ox0] + v * 16 * SX, 16 * SX,
                                  y + plane * out_sp + ox0 + v * 16, 16, lanes);
    }
  }
  return plain_end;
}

#define QCC_AVX2_POOL_F32 __attribute__((target("avx2")))

/// Lanes [0, n) of an 8-lane AVX2 mask, n in [0, 8].
QCC_AVX2_POOL_F32 inline __m256i LanesBelow(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// TapsX16 on 8 lanes: `tail` < 8 reads through masks the floats of the first `tail` outputs
/// only (8: plain loads). Stride 2 takes floats 0, 2, 4, 6 of at[0..7] and 8, 10, 12, 14 as
/// the odd lanes of at[7..14], so nothing past lane 7's tap is read.
QCC_AVX2_POOL_F32 inline __m256 TapsX8(const float* at, int64_t sx, int64_t tail) {
  if (sx == 1) return tail == 8 ? _mm256_loadu_ps(at) : _mm256_maskload_ps(at, LanesBelow(tail));
  const int64_t span = (tail - 1) * 2 + 1;  // floats the first `tail` outputs read
  const __m256 a = tail == 8 ? _mm256_loadu_ps(at) : _mm256_maskload_ps(at, LanesBelow(span));
  const __m256 c =
      tail == 8 ? _mm256_loadu_ps(at + 7) : _mm256_maskload_ps(at + 7, LanesBelow(span - 7));
  // [a0 a2 c1 c3 | a4 a6 c5 c7] = floats [0 2 8 10 | 4 6 12 14], then the 64-bit pairs reordered.
  const __m256 mixed = _mm256_shuffle_ps(a, c, _MM_SHUFFLE(3, 1, 2, 0));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(mixed), _MM_SHUFFLE(3, 1, 2, 0)));
}

/// The outputs [ox0, ox1) of one output row whose windows lie inside the row in x (2-D,
/// dilation 1, stride 1 or 2) with AVX2: 8 outputs at a time, the last 1..7 through masked loads
/// and a masked store. _mm256_max_ps(v, best) is `v > best ? v : best`, as MAXPS is at every width.
QCC_AVX2_POOL_F32 void MaxPoolRowAvx2(const PoolF32Params& p, const float* plane, int64_t iy0,
                                      int64_t ky_taps, int64_t ox0, int64_t ox1, int64_t start_x0,
                                      float* y) {
  const int64_t kw = p.kernel[2], sx = p.stride[2], w = p.in[2];
  for (int64_t ox = ox0; ox < ox1; ox += 8) {
    const int64_t n = std::min<int64_t>(8, ox1 - ox);
    const float* first = plane + iy0 * w + start_x0 + (ox - ox0) * sx;  // lane 0's first tap
    __m256 best = TapsX8(first, sx, n);
    for (int64_t ky = 0; ky < ky_taps; ++ky) {
      for (int64_t kx = 0; kx < kw; ++kx) {
        best = _mm256_max_ps(TapsX8(first + ky * w + kx, sx, n), best);
      }
    }
    if (n == 8) {
      _mm256_storeu_ps(y + ox, best);
    } else {
      _mm256_maskstore_ps(y + ox, LanesBelow(n), best);
    }
  }
}

}  // namespace

namespace {

/// The max of one window by the scalar rule (its first tap, then any greater one; the lowest
/// float for a window with no tap inside x).
float MaxOfWindow(const PoolF32Params& p, const float* xp, const WindowTable& table, int64_t oz,
                  int64_t oy, int64_t ox) {
  const int64_t z0 = table.k0[0][oz], z1 = table.k1[0][oz], y0 = table.k0[1][oy],
                y1 = table.k1[1][oy], x0 = table.k0[2][ox], x1 = table.k1[2][ox];
  if (z0 >= z1 || y0 >= y1 || x0 >= x1) return std::numeric_limits<float>::lowest();
  const int64_t sz = table.start[0][oz], sy = table.start[1][oy], sx = table.start[2][ox];
  float best = xp[((sz + z0 * p.dilation[0]) * p.in[1] + sy + y0 * p.dilation[1]) * p.in[2] + sx +
                  x0 * p.dilation[2]];
  for (int64_t kz = z0; kz < z1; ++kz) {
    for (int64_t ky = y0; ky < y1; ++ky) {
      const float* row =
          xp + ((sz + kz * p.dilation[0]) * p.in[1] + sy + ky * p.dilation[1]) * p.in[2] + sx;
      for (int64_t kx = x0; kx < x1; ++kx) {
        const float v = row[kx * p.dilation[2]];
        best = v > best ? v : best;
      }
    }
  }
  return best;
}

}  // namespace

void MaxPoolF32(const PoolF32Params& p, const float* x, float* y, int64_t* indices,
                bool column_major) {
  const int64_t in_sp = p.in_size(), out_sp = p.out_size();
  const int64_t kvol = p.kernel[0] * p.kernel[1] * p.kernel[2];
  const WindowTable table(p, kZero, p.in);
  // The row code reads depth 0 only: one depth window, and it covers that depth (a pad before
  // it can leave it empty, which the scalar rule turns into the lowest float).
  const bool fast_rows = (Cpu().avx512f || Cpu().avx2) && p.in[0] == 1 && p.out[0] == 1 &&
                         p.kernel[0] == 1 && table.k0[0][0] < table.k1[0][0] &&
                         p.dilation[1] == 1 && p.dilation[2] == 1 &&
                         (p.stride[2] == 1 || p.stride[2] == 2);
  // The outputs [whole_begin, whole_end) of a row whose windows are whole along x (the same
  // for every row): a run, since window starts grow with the output.
  int64_t whole_begin = 0;
  while (whole_begin < p.out[2] &&
         (table.k0[2][whole_begin] != 0 || table.k1[2][whole_begin] != p.kernel[2])) {
    ++whole_begin;
  }
  int64_t whole_end = whole_begin;
  while (whole_end < p.out[2] && table.k0[2][whole_end] == 0 &&
         table.k1[2][whole_end] == p.kernel[2]) {
    ++whole_end;
  }
  // Rows prefetched ahead: about 2 KiB of input.
  const int64_t ahead =
      std::max<int64_t>(1, 2048 / (std::max<int64_t>(1, p.stride[1] * p.in[2]) * 4));
  const float* x_end = x + p.planes * in_sp;
  // AVX-512, 3 x 3 and 2 x 2 windows of stride 2 (the common pools) and no indices: the whole
  // windows by MaxPlanesRowsAvx512 first.
  const bool rows_avx512 = indices == nullptr && fast_rows && Cpu().avx512f &&
                           whole_begin < whole_end && p.stride[1] + 1 >= p.kernel[1] &&
                           p.stride[2] == 2 && p.kernel[1] == p.kernel[2] &&
                           (p.kernel[2] == 3 || p.kernel[2] == 2);
  int64_t last_row = -1;
  for (int64_t oy = 0; oy < p.out[1]; ++oy) {
    if (table.k0[1][oy] < table.k1[1][oy]) last_row = table.start[1][oy] + table.k1[1][oy] - 1;
  }
  NnParallelFor(p.num_threads, p.planes, out_sp * kvol, [&](int64_t begin, int64_t end) {
    RowMaxima row_maxima;
    int64_t rows_done = begin;  // planes [begin, rows_done) have their whole windows done
    if (rows_avx512 && last_row >= 0) {
      rows_done = p.kernel[2] == 3
                      ? MaxPlanesRowsAvx512<3, 3, 2>(p, table, last_row, x, x_end, begin, end,
                                                     whole_begin, whole_end, y)
                      : MaxPlanesRowsAvx512<2, 2, 2>(p, table, last_row, x, x_end, begin, end,
                                                     whole_begin, whole_end, y);
    }
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* xp = x + plane * in_sp;
      float* yp = y + plane * out_sp;
      if (indices == nullptr && fast_rows && Cpu().avx512f) {
        // The outputs whose windows are whole in x from row maxima (MaxPlaneAvx512), the rest
        // through the scalar loop.
        if (plane < rows_done) {
          // MaxPlanesRowsAvx512 did this plane's whole windows above.
        } else if (whole_begin < whole_end && p.stride[1] + 1 >= p.kernel[1]) {
          MaxPlaneRollingAvx512(p, table, xp, x_end, whole_begin, whole_end, yp);
        } else if (whole_begin < whole_end) {
          MaxPlaneAvx512(p, table, xp, x_end, whole_begin, whole_end, yp, row_maxima);
        }
        for (int64_t oy = 0; oy < p.out[1]; ++oy) {
          float* yr = yp + oy * p.out[2];
          if (table.k0[1][oy] >= table.k1[1][oy]) {
            for (int64_t o = 0; o < p.out[2]; ++o) yr[o] = std::numeric_limits<float>::lowest();
            continue;
          }
          for (int64_t o = 0; o < whole_begin; ++o) yr[o] = MaxOfWindow(p, xp, table, 0, oy, o);
          for (int64_t o = whole_end; o < p.out[2]; ++o) {
            yr[o] = MaxOfWindow(p, xp, table, 0, oy, o);
          }
        }
        continue;
      }
      if (indices == nullptr && fast_rows) {
        // AVX2: the outputs whose windows are whole in x go 8 at a time (MaxPoolRowAvx2), the
        // rest through the scalar loop below.
        for (int64_t oy = 0; oy < p.out[1]; ++oy) {
          float* yr = yp + oy * p.out[2];
          const int64_t ky0 = table.k0[1][oy], ky1 = table.k1[1][oy];
          // The input rows the row `ahead` on reads first and that row's outputs (past the
          // plane's end, the next plane's: planes follow each other), a line at a time.
          const int64_t next_in = table.start[1][oy] + p.kernel[1] + (ahead - 1) * p.stride[1];
          for (int64_t j = 0; j < p.stride[1]; ++j) {
            PrefetchLines(xp, (next_in + j) * p.in[2], p.in[2]);
          }
          PrefetchLines<1>(yp, (oy + ahead) * p.out[2], p.out[2]);
          if (ky0 < ky1) {
            if (whole_begin < whole_end) {
              MaxPoolRowAvx2(p, xp, table.start[1][oy] + ky0, ky1 - ky0, whole_begin, whole_end,
                             table.start[2][whole_begin], yr);
            }
            for (int64_t o = 0; o < whole_begin; ++o) yr[o] = MaxOfWindow(p, xp, table, 0, oy, o);
            for (int64_t o = whole_end; o < p.out[2]; ++o) {
              yr[o] = MaxOfWindow(p, xp, table, 0, oy, o);
            }
          } else {
            for (int64_t o = 0; o < p.out[2]; ++o) yr[o] = std::numeric_limits<float>::lowest();
          }
        }
        continue;
      }
      if (indices == nullptr) {
        // The first tap, then every tap that is greater: the loop below without its index.
        int64_t o = 0;
        for (int64_t oz = 0; oz < p.out[0]; ++oz) {
          for (int64_t oy = 0; oy < p.out[1]; ++oy) {
            for (int64_t ox = 0; ox < p.out[2]; ++ox)
              yp[o++] = MaxOfWindow(p, xp, table, oz, oy, ox);
          }
        }
        continue;
      }
      ForEachWindow(p, table, [&](int64_t o, auto& start, auto& k0, auto& k1) {
        float best = std::numeric_limits<float>::lowest();
        int64_t best_at = -1;
        for (int64_t kz = k0[0]; kz < k1[0]; ++kz) {
          const int64_t iz = start[0] + kz * p.dilation[0];
          for (int64_t ky = k0[1]; ky < k1[1]; ++ky) {
            const int64_t iy = start[1] + ky * p.dilation[1];
            const float* row = xp + (iz * p.in[1] + iy) * p.in[2];
            for (int64_t kx = k0[2]; kx < k1[2]; ++kx) {
              const int64_t ix = start[2] + kx * p.dilation[2];
              if (row[ix] > best || best_at < 0) {
                best = row[ix];
                best_at = (iz * p.in[1] + iy) * p.in[2] + ix;
              }
            }
          }
        }
        yp[o] = best;
        if (best_at < 0) {
          indices[plane * out_sp + o] = -1;
          return;
        }
        if (column_major) {
          const int64_t ix = best_at % p.in[2], iy = best_at / p.in[2] % p.in[1];
          const int64_t iz = best_at / (p.in[2] * p.in[1]);
          best_at = iz + iy * p.in[0] + ix * p.in[0] * p.in[1];
        }
        indices[plane * out_sp + o] = plane * in_sp + best_at;
      });
    }
  });
}

void AveragePoolF32(const PoolF32Params& p, bool count_include_pad, const float* x, float* y) {
  const int64_t in_sp = p.in_size(), out_sp = p.out_size();
  const int64_t kvol = p.kernel[0] * p.kernel[1] * p.kernel[2];
  std::array<int64_t, 3> padded_lo, padded_hi;
  for (int a = 0; a < 3; ++a) {
    padded_lo[a] = -p.pad_begin[a];
    padded_hi[a] = p.in[a] + p.pad_end[a];
  }
  const WindowTable table(p, kZero, p.in);
  NnParallelFor(p.num_threads, p.planes, out_sp * kvol, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* xp = x + plane * in_sp;
      float* yp = y + plane * out_sp;
      ForEachWindow(p, table, [&](int64_t o, auto& start, auto& k0, auto& k1) {
        float sum = 0.0f;
        for (int64_t kz = k0[0]; kz < k1[0]; ++kz) {
          const int64_t iz = start[0] + kz * p.dilation[0];
          for (int64_t ky = k0[1]; ky < k1[1]; ++ky) {
            const int64_t iy = start[1] + ky * p.dilation[1];
            const float* row = xp + (iz * p.in[1] + iy) * p.in[2];
            for (int64_t kx = k0[2]; kx < k1[2]; ++kx) sum += row[start[2] + kx * p.dilation[2]];
          }
        }
        int64_t count = 1;
        for (int a = 0; a < 3; ++a) {
          int64_t c0 = k0[a], c1 = k1[a];
          if (count_include_pad) {
            TapRange(start[a], p.dilation[a], p.kernel[a], padded_lo[a], padded_hi[a], c0, c1);
          }
          count *= c1 - c0;
        }
        yp[o] = count > 0 ? sum / static_cast<float>(count) : 0.0f;
      });
    }
  });
}

namespace {

/// Planes [begin, end) of GlobalAveragePoolF32, 16 at a time: each block of 16 positions of the
/// 16 planes transposed in registers, so that a vector holds one position of 8 planes, widened
/// to double and added to the planes' sums in position order: the scalar loop's sums, bit for
/// bit. Squeezenet1.1's 1000 x 13 x 13 in the model 54 -> 38 us at 1 thread, 34 -> 22 at 2
/// (efficientnet-lite0's 1280 x 7 x 7 23 -> 18 and 30 -> 24) against the scalar loop's eight
/// chains of scalar adds. Returns the first plane left to the caller (past the last 16).
QCC_AVX512_POOL_F32 int64_t GlobalAveragePoolAvx512(int64_t begin, int64_t end, int64_t size,
                                                    const float* x, float* y) {
  const __m512d count = _mm512_set1_pd(static_cast<double>(size));
  int64_t i = begin;
  for (; i + 16 <= end; i += 16) {
    const float* xp = x + i * size;
    __m512d lo = _mm512_setzero_pd(), hi = lo;  // planes 0..7, 8..15
    for (int64_t j0 = 0; j0 < size; j0 += 16) {
      const __mmask16 m = LowBits16(size - j0);
      __m512 r[16];
      for (int q = 0; q < 16; ++q) r[q] = _mm512_maskz_loadu_ps(m, xp + q * size + j0);
      Transpose16x16(r);
      const int64_t n = std::min<int64_t>(16, size - j0);
      for (int64_t k = 0; k < n; ++k) {
        lo = _mm512_add_pd(lo, _mm512_cvtps_pd(_mm512_castps512_ps256(r[k])));
        hi = _mm512_add_pd(
            hi,
            _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(r[k]), 1))));
      }
    }
    const __m256 mean_lo = _mm512_cvtpd_ps(_mm512_div_pd(lo, count));
    const __m256 mean_hi = _mm512_cvtpd_ps(_mm512_div_pd(hi, count));
    _mm256_storeu_ps(y + i, mean_lo);
    _mm256_storeu_ps(y + i + 8, mean_hi);
  }
  return i;
}

}  // namespace

void GlobalAveragePoolF32(int64_t planes, int64_t size, const float* x, float* y, int num_threads) {
  auto mean = [size](double sum) {
    return size > 0 ? static_cast<float>(sum / static_cast<double>(size)) : 0.0f;
  };
  const bool avx512 = Cpu().avx512f && size > 0;
  // Two work units a float: at one unit efficientnet-lite0's 1280 x 7 x 7 (62,720 floats) stayed
  // on one thread, 10.9 us at 2 threads alone and 28 us in the model, where half of its input
  // is in the other core's cache (the head conv ran on both); on two threads 7.0 and 13-16 us.
  constexpr int64_t kUnitsPerFloat = 2;
  NnParallelFor(num_threads, planes, kUnitsPerFloat * size, [&](int64_t begin, int64_t end) {
    int64_t i = avx512 ? GlobalAveragePoolAvx512(begin, end, size, x, y) : begin;
    // Each plane's sum runs in order, in double. Eight planes go together, so that their eight
    // chains of dependent adds overlap (one chain at a time waited on every add: squeezenet1.1's
    // 1000 x 13 x 13 took 0.08 ms).
    constexpr int64_t kPlanes = 8;
    for (; i + kPlanes <= end; i += kPlanes) {
      const float* xp = x + i * size;
      double sum[kPlanes] = {};
      for (int64_t j = 0; j < size; ++j) {
        for (int64_t q = 0; q < kPlanes; ++q) sum[q] += xp[q * size + j];
      }
      for (int64_t q = 0; q < kPlanes; ++q) y[i + q] = mean(sum[q]);
    }
    for (; i < end; ++i) {
      const float* xp = x + i * size;
      double sum = 0.0;
      for (int64_t j = 0; j < size; ++j) sum += xp[j];
      y[i] = mean(sum);
    }
  });
}

void GlobalMaxPoolF32(int64_t planes, int64_t size, const float* x, float* y, int num_threads) {
  NnParallelFor(num_threads, planes, size, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float* xp = x + i * size;
      float best = std::numeric_limits<float>::lowest();
      for (int64_t j = 0; j < size; ++j) best = std::max(best, xp[j]);
      y[i] = best;
    }
  });
}

}  // namespace qcc::cpu
