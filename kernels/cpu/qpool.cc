// int8 pooling: scalar references, the AVX-512 MaxPool and the AVX2 one (MaxPoolPlanesAvx2).
//
// AVX-512 MaxPool: for each output row and each tile of 64 outputs along the width, every tap
// (kz, ky, kx) contributes one vector of 64 input bytes, x[iy][ox * sx + kx * dx - pad] for the
// 64 ox of the tile; lanes whose input column falls outside the row (or whose ox is past the
// tile) are masked loads that read -128, which never changes a max, so padding never wins and no
// edge case needs scalar code. With stride 2 the 64 bytes are the even bytes of 128 loaded ones,
// taken with vpmovwb (truncating 16-bit lanes keeps their low, even-addressed byte). Masked-off
// lanes are not read, so a load whose first lane lies before the row touches no memory outside x.
// Compiled for any x86-64: only QCC_AVX512_POOL functions use AVX-512.
#include "kernels/cpu/qpool.h"

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/lane_masks.h"

// GCC 12's AVX-512 headers start unmasked results from _mm512_undefined_*(), which
// -Wmaybe-uninitialized reports at every inlined use (GCC PR 105593, fixed in GCC 13).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/qelementwise.h"
#include "support/quantize.h"

#define QCC_AVX512_POOL __attribute__((target("avx512f,avx512bw,avx512vl,bmi2")))

namespace qcc::cpu {

namespace {

/// Taps [k0, k1) of a window starting at `start` whose positions start + k * d lie in [lo, hi).
void TapRange(int64_t start, int64_t d, int64_t kernel, int64_t lo, int64_t hi, int64_t& k0,
              int64_t& k1) {
  k0 = start >= lo ? 0 : (lo - start + d - 1) / d;
  k1 = start >= hi ? 0 : std::min(kernel, (hi - start + d - 1) / d);
  k1 = std::max(k0, k1);
}

/// Window starts and the tap ranges inside [lo, hi) of one output position, per axis.
struct Window {
  std::array<int64_t, 3> start, k0, k1;
};

/// Calls fn(out_index, window) for each output position of one plane, with taps restricted to
/// positions inside [lo, hi).
template <typename Fn>
void ForEachWindow(const PoolGeometry& g, const std::array<int64_t, 3>& lo,
                   const std::array<int64_t, 3>& hi, Fn&& fn) {
  Window w;
  int64_t o = 0;
  for (int64_t oz = 0; oz < g.out[0]; ++oz) {
    w.start[0] = oz * g.stride[0] - g.pad_begin[0];
    TapRange(w.start[0], g.dilation[0], g.kernel[0], lo[0], hi[0], w.k0[0], w.k1[0]);
    for (int64_t oy = 0; oy < g.out[1]; ++oy) {
      w.start[1] = oy * g.stride[1] - g.pad_begin[1];
      TapRange(w.start[1], g.dilation[1], g.kernel[1], lo[1], hi[1], w.k0[1], w.k1[1]);
      for (int64_t ox = 0; ox < g.out[2]; ++ox, ++o) {
        w.start[2] = ox * g.stride[2] - g.pad_begin[2];
        TapRange(w.start[2], g.dilation[2], g.kernel[2], lo[2], hi[2], w.k0[2], w.k1[2]);
        fn(o, w);
      }
    }
  }
}

/// Calls fn(value) for each tap of window `w` inside plane `xp`.
template <typename Fn>
void ForEachTap(const PoolGeometry& g, const int8_t* xp, const Window& w, Fn&& fn) {
  for (int64_t kz = w.k0[0]; kz < w.k1[0]; ++kz) {
    const int64_t iz = w.start[0] + kz * g.dilation[0];
    for (int64_t ky = w.k0[1]; ky < w.k1[1]; ++ky) {
      const int8_t* row = xp + (iz * g.in[1] + w.start[1] + ky * g.dilation[1]) * g.in[2];
      for (int64_t kx = w.k0[2]; kx < w.k1[2]; ++kx) fn(row[w.start[2] + kx * g.dilation[2]]);
    }
  }
}

constexpr std::array<int64_t, 3> kZero{0, 0, 0};

/// The first input row of output row `oy`'s window (it may lie in the padding), and the window's
/// rows [ky0, ky1) inside x.
int64_t RowWindow(const PoolGeometry& g, int64_t oy, int64_t& ky0, int64_t& ky1) {
  const int64_t sy = oy * g.stride[1] - g.pad_begin[1];
  TapRange(sy, g.dilation[1], g.kernel[1], 0, g.in[1], ky0, ky1);
  return sy;
}

void MaxPoolPlanesScalar(const PoolGeometry& g, int64_t begin, int64_t end, const int8_t* x,
                         int8_t* y) {
  for (int64_t plane = begin; plane < end; ++plane) {
    const int8_t* xp = x + plane * g.in_size();
    int8_t* yp = y + plane * g.out_size();
    ForEachWindow(g, kZero, g.in, [&](int64_t o, const Window& w) {
      int8_t best = -128;
      ForEachTap(g, xp, w, [&](int8_t v) { best = v > best ? v : best; });
      yp[o] = best;
    });
  }
}

/// ceil(a / b) for b > 0 and any sign of a.
int64_t CeilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

/// Lanes [lo, hi) of a 64-lane mask, clipped to [0, 64).
uint64_t LaneMask(int64_t lo, int64_t hi) {
  lo = std::max<int64_t>(lo, 0);
  hi = std::min<int64_t>(hi, 64);
  if (hi <= lo) return 0;
  const uint64_t ones = hi - lo == 64 ? ~uint64_t{0} : (uint64_t{1} << (hi - lo)) - 1;
  return ones << lo;
}

/// x[base + sx * j] for the lanes j of `mask` (sx 1 or 2), -128 elsewhere. `base` may lie
/// outside x where the mask excludes those lanes (see the file comment).
QCC_AVX512_POOL inline __m512i LoadTap(const int8_t* row, int64_t offset, int64_t sx,
                                       uint64_t mask) {
  const __m512i low = _mm512_set1_epi8(-128);
  const int8_t* base = reinterpret_cast<const int8_t*>(reinterpret_cast<uintptr_t>(row) + offset);
  if (sx == 1) return _mm512_mask_loadu_epi8(low, mask, base);
  constexpr uint64_t kEven = 0x5555555555555555ull;
  const __m512i a = _mm512_mask_loadu_epi8(low, _pdep_u64(mask & 0xffffffffu, kEven), base);
  const __m512i b = _mm512_mask_loadu_epi8(low, _pdep_u64(mask >> 32, kEven), base + 64);
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi16_epi8(a)),
                            _mm512_cvtepi16_epi8(b), 1);
}

QCC_AVX512_POOL void MaxPoolPlanesAvx512(const PoolGeometry& g, int64_t begin, int64_t end,
                                         const int8_t* x, int8_t* y) {
  const int64_t w_in = g.in[2], ow = g.out[2], sx = g.stride[2], dx = g.dilation[2];
  for (int64_t plane = begin; plane < end; ++plane) {
    const int8_t* xp = x + plane * g.in_size();
    int8_t* yp = y + plane * g.out_size();
    for (int64_t oz = 0; oz < g.out[0]; ++oz) {
      int64_t kz0, kz1;
      const int64_t sz = oz * g.stride[0] - g.pad_begin[0];
      TapRange(sz, g.dilation[0], g.kernel[0], 0, g.in[0], kz0, kz1);
      for (int64_t oy = 0; oy < g.out[1]; ++oy, yp += ow) {
        int64_t ky0, ky1;
        const int64_t sy = RowWindow(g, oy, ky0, ky1);
        for (int64_t ox0 = 0; ox0 < ow; ox0 += 64) {
          const int64_t tile = std::min<int64_t>(64, ow - ox0);
          __m512i acc = _mm512_set1_epi8(-128);
          for (int64_t kz = kz0; kz < kz1; ++kz) {
            const int64_t iz = sz + kz * g.dilation[0];
            for (int64_t ky = ky0; ky < ky1; ++ky) {
              const int8_t* row = xp + (iz * g.in[1] + sy + ky * g.dilation[1]) * w_in;
              for (int64_t kx = 0; kx < g.kernel[2]; ++kx) {
                const int64_t c = kx * dx - g.pad_begin[2];  // input column of output 0
                // Outputs ox with 0 <= ox * sx + c < w_in.
                const int64_t ox_lo = c >= 0 ? 0 : CeilDiv(-c, sx);
                const int64_t ox_hi = CeilDiv(w_in - c, sx);
                const uint64_t mask = LaneMask(ox_lo - ox0, std::min(ox_hi - ox0, tile));
                if (mask == 0) continue;
                acc = _mm512_max_epi8(acc, LoadTap(row, ox0 * sx + c, sx, mask));
              }
            }
          }
          _mm512_mask_storeu_epi8(yp + ox0, LaneMask(0, tile), acc);
        }
      }
    }
  }
}

#define QCC_AVX512_POOL_VBMI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi")))

/// The separable form for narrow 2-D planes (an input row of at most 128 bytes, at most 64
/// outputs per row; VBMI): per output row, the max over the window's rows of each input column
/// (one or two 64-byte loads per row), then per horizontal tap one vpermt2b that picks column
/// ox * sx + kx * dx - pad for each output lane, maxed in where that column lies inside the row.
/// A max is a max in any order, and no lane ever takes an outside column, so the bits are
/// MaxPoolPlanesScalar's; -128 where no tap lies inside x, as there.
QCC_AVX512_POOL_VBMI void MaxPoolPlanesVbmi(const PoolGeometry& g, int64_t begin, int64_t end,
                                            const int8_t* x, int8_t* y) {
  const int64_t w_in = g.in[2], ow = g.out[2], kw = g.kernel[2];
  const __m512i low = _mm512_set1_epi8(-128);
  const __mmask64 lo_bytes = LowBits64(w_in), hi_bytes = LowBits64(w_in - 64);
  // Per horizontal tap: the input column of each output lane, and the lanes where it is inside.
  alignas(64) int8_t index[64][64];
  __mmask64 inside[64];
  for (int64_t kx = 0; kx < kw; ++kx) {
    inside[kx] = 0;
    for (int64_t ox = 0; ox < 64; ++ox) {
      const int64_t ix = ox * g.stride[2] + kx * g.dilation[2] - g.pad_begin[2];
      const bool in = ox < ow && ix >= 0 && ix < w_in;
      index[kx][ox] = static_cast<int8_t>(in ? ix : 0);
      if (in) inside[kx] |= __mmask64{1} << ox;
    }
  }
  const __mmask64 out_bytes = LowBits64(ow);
  for (int64_t plane = begin; plane < end; ++plane) {
    const int8_t* xp = x + plane * g.in_size();
    int8_t* yp = y + plane * g.out_size();
    for (int64_t oy = 0; oy < g.out[1]; ++oy, yp += ow) {
      int64_t ky0, ky1;
      const int64_t sy = RowWindow(g, oy, ky0, ky1);
      __m512i col_lo = low, col_hi = low;
      for (int64_t ky = ky0; ky < ky1; ++ky) {
        const int8_t* row = xp + (sy + ky * g.dilation[1]) * w_in;
        col_lo = _mm512_max_epi8(col_lo, _mm512_mask_loadu_epi8(low, lo_bytes, row));
        if (hi_bytes != 0) {
          col_hi = _mm512_max_epi8(col_hi, _mm512_mask_loadu_epi8(low, hi_bytes, row + 64));
        }
      }
      __m512i acc = low;
      for (int64_t kx = 0; kx < kw; ++kx) {
        const __m512i idx = _mm512_load_si512(index[kx]);
        acc = _mm512_mask_max_epi8(acc, inside[kx], acc,
                                   _mm512_permutex2var_epi8(col_lo, idx, col_hi));
      }
      _mm512_mask_storeu_epi8(yp, out_bytes, acc);
    }
  }
}

#define QCC_AVX2_POOL __attribute__((target("avx2")))

/// The 32 even bytes of p[0..63], in order.
QCC_AVX2_POOL inline __m256i EvenBytes(const int8_t* p) {
  const __m256i pick = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1,
                                        0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i a =
      _mm256_shuffle_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), pick);
  const __m256i b =
      _mm256_shuffle_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32)), pick);
  // 64-bit words [a 0..14, b 32..46 | a 16..30, b 48..62], reordered to a, a, b, b.
  return _mm256_permute4x64_epi64(_mm256_unpacklo_epi64(a, b), _MM_SHUFFLE(3, 1, 2, 0));
}

/// The separable form on AVX2 for 2-D planes, horizontal stride 1 or 2: per output row, the max
/// over the window's rows of each input column into a buffer that holds pad_begin[2] bytes of
/// -128 before the row and -128 after it, then per horizontal tap one plain 32-byte load (or the
/// even bytes of 64) at column ox * sx + kx * dx of the buffer for 32 outputs. A max is a max in
/// any order and -128 never raises one, so the bits are MaxPoolPlanesScalar's, -128 included
/// where a window has no tap inside x. Every load stays inside the buffer.
QCC_AVX2_POOL void MaxPoolPlanesAvx2(const PoolGeometry& g, int64_t begin, int64_t end,
                                     const int8_t* x, int8_t* y) {
  const int64_t w_in = g.in[2], ow = g.out[2], kw = g.kernel[2], sx = g.stride[2];
  const int64_t dx = g.dilation[2], lead = g.pad_begin[2];
  const int64_t last_group = (ow - 1) / 32 * 32;  // first output of the last 32-output group
  const int64_t size = std::max(lead + w_in, last_group * sx + (kw - 1) * dx + 64) + 1;
  std::vector<int8_t> buffer(size, -128);
  int8_t* cols = buffer.data() + lead;  // cols[ix] = max over the window's rows of column ix
  alignas(32) int8_t tail[32];
  for (int64_t plane = begin; plane < end; ++plane) {
    const int8_t* xp = x + plane * g.in_size();
    int8_t* yp = y + plane * g.out_size();
    for (int64_t oy = 0; oy < g.out[1]; ++oy, yp += ow) {
      int64_t ky0, ky1;
      const int64_t sy = RowWindow(g, oy, ky0, ky1);
      if (ky0 == ky1) {
        std::fill(cols, cols + w_in, int8_t{-128});
      } else {
        std::copy_n(xp + (sy + ky0 * g.dilation[1]) * w_in, w_in, cols);
        for (int64_t ky = ky0 + 1; ky < ky1; ++ky) {
          const int8_t* row = xp + (sy + ky * g.dilation[1]) * w_in;
          int64_t ix = 0;
          for (; ix + 32 <= w_in; ix += 32) {
            __m256i* c = reinterpret_cast<__m256i*>(cols + ix);
            _mm256_storeu_si256(
                c, _mm256_max_epi8(_mm256_loadu_si256(c),
                                   _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + ix))));
          }
          for (; ix < w_in; ++ix) cols[ix] = std::max(cols[ix], row[ix]);
        }
      }
      for (int64_t ox0 = 0; ox0 < ow; ox0 += 32) {
        __m256i acc = _mm256_set1_epi8(-128);
        for (int64_t kx = 0; kx < kw; ++kx) {
          const int8_t* at = buffer.data() + ox0 * sx + kx * dx;  // column ox0 * sx + kx*dx - lead
          acc = _mm256_max_epi8(acc, sx == 1
                                         ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at))
                                         : EvenBytes(at));
        }
        if (ox0 + 32 <= ow) {
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(yp + ox0), acc);
        } else {
          _mm256_store_si256(reinterpret_cast<__m256i*>(tail), acc);
          std::copy_n(tail, ow - ox0, yp + ox0);
        }
      }
    }
  }
}

}  // namespace

bool MaxPoolS8FitsVbmi(const PoolGeometry& g) {
  return Cpu().avx512_int8() && Cpu().avx512vbmi && g.in[0] == 1 && g.out[0] == 1 &&
         g.kernel[0] == 1 && g.pad_begin[0] == 0 && g.in[2] <= 128 && g.out[2] <= 64 &&
         g.kernel[2] <= 64;
}

bool MaxPoolS8UsesAvx512(const PoolGeometry& g) {
  return Cpu().avx512_int8() && Cpu().bmi2 && (g.stride[2] == 1 || g.stride[2] == 2);
}

bool MaxPoolS8UsesAvx2(const PoolGeometry& g) {
  return !MaxPoolS8UsesAvx512(g) && Cpu().avx2 && g.in[0] == 1 && g.out[0] == 1 &&
         g.kernel[0] == 1 && g.pad_begin[0] == 0 && g.pad_begin[2] >= 0 &&
         (g.stride[2] == 1 || g.stride[2] == 2);
}

void MaxPoolS8Reference(const PoolGeometry& g, const int8_t* x, int8_t* y) {
  MaxPoolPlanesScalar(g, 0, g.planes, x, y);
}

void MaxPoolS8(const PoolGeometry& g, const int8_t* x, int8_t* y, int num_threads) {
  const bool vbmi = MaxPoolS8FitsVbmi(g);
  const bool fast = MaxPoolS8UsesAvx512(g), avx2 = MaxPoolS8UsesAvx2(g);
  const int64_t kvol = g.kernel[0] * g.kernel[1] * g.kernel[2];
  NnParallelFor(num_threads, g.planes, g.out_size() * kvol, [&](int64_t begin, int64_t end) {
    if (vbmi) return MaxPoolPlanesVbmi(g, begin, end, x, y);
    if (fast) return MaxPoolPlanesAvx512(g, begin, end, x, y);
    if (avx2) return MaxPoolPlanesAvx2(g, begin, end, x, y);
    MaxPoolPlanesScalar(g, begin, end, x, y);
  });
}

void AveragePoolS8(const PoolGeometry& g, const AvgPoolS8Quant& q, bool count_include_pad,
                   const int8_t* x, int8_t* y, int num_threads) {
  const int64_t kvol = g.kernel[0] * g.kernel[1] * g.kernel[2];
  std::array<int64_t, 3> padded_lo, padded_hi;
  for (int a = 0; a < 3; ++a) {
    padded_lo[a] = -g.pad_begin[a];
    padded_hi[a] = g.in[a] + g.pad_end[a];
  }
  NnParallelFor(num_threads, g.planes, g.out_size() * kvol, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int8_t* xp = x + plane * g.in_size();
      int8_t* yp = y + plane * g.out_size();
      ForEachWindow(g, kZero, g.in, [&](int64_t o, const Window& w) {
        int64_t sum = 0;
        ForEachTap(g, xp, w, [&](int8_t v) { sum += v - q.zp_in; });
        int64_t count = 1;
        for (int a = 0; a < 3; ++a) {
          int64_t c0 = w.k0[a], c1 = w.k1[a];
          if (count_include_pad) {
            TapRange(w.start[a], g.dilation[a], g.kernel[a], padded_lo[a], padded_hi[a], c0, c1);
          }
          count *= c1 - c0;
        }
        yp[o] = count > 0 ? AverageValue(sum, count, q.multiplier, q.zp_out, q.lo, q.hi)
                          : static_cast<int8_t>(Saturate(0.0f, q.zp_out, q.lo, q.hi));
      });
    }
  });
}

namespace {

/// The sum of n int8 values: of x ^ 0x80 (= x + 128, unsigned) by vpsadbw, 64 bytes at a time,
/// less 128 n. An exact integer, as the scalar loop's.
QCC_AVX512_POOL int64_t SumS8Avx512(const int8_t* x, int64_t n) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80)), zero = _mm512_setzero_si512();
  __m512i acc = zero;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    acc = _mm512_add_epi64(
        acc, _mm512_sad_epu8(_mm512_xor_si512(_mm512_loadu_si512(x + i), flip), zero));
  }
  if (i < n) {
    const __mmask64 m = LowBits64(n - i);
    const __m512i v = _mm512_maskz_xor_epi32(0xFFFF, _mm512_maskz_loadu_epi8(m, x + i), flip);
    acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_maskz_mov_epi8(m, v), zero));
  }
  alignas(64) int64_t lanes[8];
  _mm512_store_si512(lanes, acc);
  int64_t sum = 0;
  for (const int64_t lane : lanes) sum += lane;
  return sum - 128 * n;
}

int64_t SumS8(const int8_t* x, int64_t n) {
  int64_t sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += x[j];
  return sum;
}

}  // namespace

void GlobalAveragePoolS8(int64_t planes, int64_t size, const AvgPoolS8Quant& q, const int8_t* x,
                         int8_t* y, int num_threads) {
  const bool avx512 = Cpu().avx512_int8();
  NnParallelFor(num_threads, planes, size, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int8_t* xp = x + i * size;
      int64_t sum = avx512 ? SumS8Avx512(xp, size) : SumS8(xp, size);
      sum -= static_cast<int64_t>(q.zp_in) * size;
      y[i] = size > 0 ? AverageValue(sum, size, q.multiplier, q.zp_out, q.lo, q.hi)
                      : static_cast<int8_t>(Saturate(0.0f, q.zp_out, q.lo, q.hi));
    }
  });
}

}  // namespace qcc::cpu
