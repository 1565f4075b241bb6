// The phase planes of the VNNI direct paths (qconv_planes_vnni.h).
#include "kernels/cpu/qconv_planes_vnni.h"

#include <immintrin.h>

#include <algorithm>

#include "support/int_math.h"

namespace qcc::cpu::internal {

namespace {

uint8_t PadByte(const QConvParams& p) { return static_cast<uint8_t>(p.pad_value) ^ 0x80; }

/// A pointer `delta` bytes from `p`, possibly outside its array (masked loads skip those bytes).
const int8_t* Offset(const int8_t* p, int64_t delta) {
  return reinterpret_cast<const int8_t*>(reinterpret_cast<uintptr_t>(p) + delta);
}

QCC_VNNI void FillDwords(uint32_t* dst, int64_t n, uint32_t value) {
  const __m512i v = _mm512_set1_epi32(static_cast<int>(value));
  for (int64_t i = 0; i < n; i += 16) {
    _mm512_mask_storeu_epi32(dst + i, static_cast<__mmask16>(LowBits64(n - i)), v);
  }
}

/// One phase-plane row of channel quads from input rows `rows` (null: channel past C/group),
/// lane j reading column x_first + j * sw (pad outside [0, w)); sw <= 2. `idx` interleaves four
/// 32-byte windows into quads: byte 4l + q = 32q + l * sw.
QCC_VNNI void TransformRowVector(const int8_t* const rows[4], int64_t w, int64_t x_first,
                                 int64_t sw, int64_t n, uint32_t pad_quad, const uint8_t* idx,
                                 uint32_t* dst) {
  const __m512i perm = _mm512_loadu_si512(idx);
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i pad = _mm512_set1_epi32(static_cast<int>(pad_quad));
  for (int64_t j0 = 0; j0 < n; j0 += 16) {
    const int64_t x0 = j0 * sw + x_first;
    // (sw == 1, the common case, needs no division.)
    const int64_t lane_lo = x0 >= 0 ? 0 : sw == 1 ? -x0 : CeilDiv(-x0, sw);
    const int64_t lane_hi = std::min<int64_t>(16, x0 >= w   ? 0
                                                  : sw == 1 ? w - x0
                                                            : CeilDiv(w - x0, sw));
    const __mmask16 lanes =
        lane_hi > lane_lo ? static_cast<__mmask16>(LowBits64(lane_hi) & ~LowBits64(lane_lo)) : 0;
    const __mmask16 store = static_cast<__mmask16>(LowBits64(n - j0));
    if (lanes == 0) {
      _mm512_mask_storeu_epi32(dst + j0, store, pad);
      continue;
    }
    const int64_t t_lo = std::max<int64_t>(0, -x0), t_hi = std::min<int64_t>(32, w - x0);
    const __mmask32 bytes = static_cast<__mmask32>(LowBits64(t_hi) & ~LowBits64(t_lo));
    __m256i r[4];
    for (int q = 0; q < 4; ++q) {
      r[q] = rows[q] != nullptr ? _mm256_maskz_loadu_epi8(bytes, Offset(rows[q], x0))
                                : _mm256_setzero_si256();
    }
    const __m512i lo = _mm512_maskz_inserti64x4(0xFF, _mm512_castsi256_si512(r[0]), r[1], 1);
    const __m512i hi = _mm512_maskz_inserti64x4(0xFF, _mm512_castsi256_si512(r[2]), r[3], 1);
    __m512i v = _mm512_xor_si512(_mm512_permutex2var_epi8(lo, perm, hi), flip);
    v = _mm512_mask_blend_epi32(lanes, pad, v);
    _mm512_mask_storeu_epi32(dst + j0, store, v);
  }
}

/// TransformRowVector's result for stride 1 and a row of n in-bounds columns: 64 positions per
/// step (InterleaveQuads64); the tail goes to TransformRowVector.
QCC_VNNI void InterleaveRun(const int8_t* const rows[4], int64_t n, uint32_t pad_quad,
                            const uint8_t* idx, uint32_t* dst) {
  int64_t j = 0;
  for (; j + 64 <= n; j += 64) {
    __m512i r[4], out[4];
    for (int q = 0; q < 4; ++q) {
      r[q] = rows[q] != nullptr ? _mm512_loadu_si512(rows[q] + j) : _mm512_setzero_si512();
    }
    InterleaveQuads64(r, out);
    for (int i = 0; i < 4; ++i) _mm512_storeu_si512(dst + j + 16 * i, out[i]);
  }
  if (j == n) return;
  const int8_t* tail[4];
  for (int q = 0; q < 4; ++q) tail[q] = rows[q] != nullptr ? rows[q] + j : nullptr;
  TransformRowVector(tail, n - j, 0, 1, n - j, pad_quad, idx, dst + j);
}

/// rows[q] = channel 4 * c4 + q of image `x` from element `offset` on (null past C/group).
void QuadRows(const QConvParams& p, const PhasePlanes& g, const int8_t* x, int64_t c4,
              int64_t offset, const int8_t* rows[4]) {
  for (int q = 0; q < 4; ++q) {
    const int64_t ch = c4 * 4 + q;
    rows[q] = ch < g.cg ? x + ch * p.h * p.w + offset : nullptr;
  }
}

/// InterleaveQuads64 of positions [f0, min(n, f0 + 64)) of rows `src` (null: past C/group;
/// positions past n read as zero).
QCC_VNNI inline void InterleaveQuadsAt(const int8_t* const src[4], int64_t f0, int64_t n,
                                       __m512i out[4]) {
  const __mmask64 bytes = LowBits64(n - f0);
  __m512i r[4];
  for (int q = 0; q < 4; ++q) {
    r[q] = src[q] != nullptr ? _mm512_maskz_loadu_epi8(bytes, src[q] + f0) : _mm512_setzero_si512();
  }
  InterleaveQuads64(r, out);
}

/// The lanes [first, first + count) of `v` to at[0 .. count): lane first + i to at[i]. The
/// vector's base (at - first) may lie before the plane; only the masked lanes are written.
QCC_VNNI inline void StoreLanes(uint32_t* at, int64_t first, int64_t count, __m512i v) {
  const __mmask16 m = static_cast<__mmask16>(LowBits64(first + count) & ~LowBits64(first));
  auto* base = reinterpret_cast<uint32_t*>(reinterpret_cast<uintptr_t>(at) - first * 4);
  _mm512_mask_storeu_epi32(base, m, v);
}

/// Rows [row_begin, row_end) of one stride-1 phase plane (the padded input) of quad `rows`
/// (channels of the whole image; null: past C/group): the rows filled with the pad, then the
/// input rows interleaved 64 positions at a time as one contiguous run (InterleaveQuads64) and
/// stored over them a row segment at a time. Rewriting row by row (TransformRowVector) took 18%
/// of a 32 -> 32 3x3 conv on 16x16 maps at batch 32 (16 + 2 dwords a row, with a mask and
/// permute set-up per row); this takes 10%.
QCC_VNNI void FillPaddedStride1Plane(const QConvParams& p, const PhasePlanes& g,
                                     const int8_t* const rows[4], int64_t row_begin,
                                     int64_t row_end, uint32_t pad_quad, bool pads_filled,
                                     uint32_t* plane) {
  const int64_t pw = g.phase_w, w = p.w, pt = p.pad_top, pl = p.pad_left;
  const int64_t y_a = std::max<int64_t>(0, row_begin - pt);
  const int64_t y_b = std::max(y_a, std::min(p.h, row_end - pt));
  // The whole plane padded first (whole vectors), unless an earlier image did; the input's
  // dwords (if any) stored over it below.
  if (!pads_filled) FillDwords(plane, g.plane, pad_quad);
  const int64_t n = (y_b - y_a) * w;
  const int8_t* src[4];
  for (int q = 0; q < 4; ++q) src[q] = rows[q] != nullptr ? rows[q] + y_a * w : nullptr;
  int64_t y = y_a, x = 0;  // the input position of the next dword to store
  for (int64_t f0 = 0; f0 < n; f0 += 64) {
    __m512i out[4];
    InterleaveQuadsAt(src, f0, n, out);
    for (int i = 0; i < 4 && f0 + 16 * i < n; ++i) {
      const int64_t f = f0 + 16 * i, end = std::min<int64_t>(16, n - f);
      for (int64_t lane = 0; lane < end;) {
        const int64_t seg = std::min(end - lane, w - x);
        StoreLanes(plane + (y + pt) * pw + pl + x, lane, seg, out[i]);
        lane += seg;
        x += seg;
        if (x == w) {
          x = 0;
          ++y;
        }
      }
    }
  }
}

/// The channel quads of `n` consecutive positions of rows `src` (null: past C/group) to dst[0,
/// n), 64 positions a step (InterleaveQuads64); dst has room for n rounded up to 64.
QCC_VNNI void InterleaveFlat(const int8_t* const src[4], int64_t n, uint32_t* dst) {
  for (int64_t f0 = 0; f0 < n; f0 += 64) {
    __m512i out[4];
    InterleaveQuadsAt(src, f0, n, out);
    for (int i = 0; i < 4; ++i) _mm512_storeu_si512(dst + f0 + 16 * i, out[i]);
  }
}

/// Dwords of input rows a column-stride-2 rewrite interleaves at once (on the stack).
constexpr int64_t kStride2Chunk = 4096;

/// Rows [row_begin, row_end) of the phase planes of quad `rows` (channels of the whole image;
/// null: past C/group) for stride_w 2 (any stride_h, any pads): every plane's rows filled with
/// the pad; then chunks of input rows interleaved as one run (InterleaveFlat) and each row split
/// into its even and odd columns by two permutes per 32 dwords, stored into the rows of its two
/// planes. TransformRowVector did this per plane row with two divisions and a mask set-up per
/// 16 dwords: 41% of resnet20's two stride-2 int8 convs at batch 32.
QCC_VNNI void FillColumnStride2Planes(const QConvParams& p, const PhasePlanes& g,
                                      const int8_t* const rows[4], int64_t row_begin,
                                      int64_t row_end, uint32_t pad_quad, bool pads_filled,
                                      uint32_t* quad_planes) {
  const int64_t sh = p.stride_h, pw = g.phase_w, w = p.w, pt = p.pad_top, pl = p.pad_left;
  // Plane (a, b) of this quad: phases are c4-major in the buffer (FillPhasePlanes).
  auto plane = [&](int64_t a, int64_t b) { return quad_planes + (a * 2 + b) * g.c4 * g.plane; };
  for (int64_t a = 0; a < sh && !pads_filled; ++a) {
    for (int64_t b = 0; b < 2; ++b) FillDwords(plane(a, b), g.plane, pad_quad);
  }
  const int64_t y_lo = std::max<int64_t>(0, row_begin * sh - pt);
  const int64_t y_hi = std::min(p.h, row_end * sh - pt);
  const int64_t chunk_rows = kStride2Chunk / w;
  alignas(64) uint32_t flat[kStride2Chunk + 64];
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  // Input column x (even) and x + 1 land in planes b = (x + pl) % 2 and the other one, at plane
  // columns (x + pl) / 2 and (x + 1 + pl) / 2.
  const int64_t b_even = pl % 2;
  for (int64_t y0 = y_lo; y0 < y_hi; y0 += chunk_rows) {
    const int64_t y1 = std::min(y_hi, y0 + chunk_rows);
    const int8_t* src[4];
    for (int q = 0; q < 4; ++q) src[q] = rows[q] != nullptr ? rows[q] + y0 * w : nullptr;
    InterleaveFlat(src, (y1 - y0) * w, flat);
    for (int64_t y = y0; y < y1; ++y) {
      const uint32_t* row = flat + (y - y0) * w;
      const int64_t py = y + pt;
      uint32_t* dst_even = plane(py % sh, b_even) + py / sh * pw;
      uint32_t* dst_odd = plane(py % sh, 1 - b_even) + py / sh * pw;
      for (int64_t x = 0; x < w; x += 32) {
        const __m512i v0 = _mm512_maskz_loadu_epi32(LowBits16(w - x), row + x);
        const __m512i v1 = _mm512_maskz_loadu_epi32(LowBits16(w - x - 16), row + x + 16);
        const int64_t left = w - x;  // columns from x on: (left + 1) / 2 even, left / 2 odd
        _mm512_mask_storeu_epi32(dst_even + (x + pl) / 2, LowBits16((left + 1) / 2),
                                 _mm512_permutex2var_epi32(v0, even, v1));
        _mm512_mask_storeu_epi32(dst_odd + (x + 1 + pl) / 2, LowBits16(left / 2),
                                 _mm512_permutex2var_epi32(v0, odd, v1));
      }
    }
  }
}

/// TransformRowVector's result for any stride, one dword at a time.
void TransformRowScalar(const int8_t* const rows[4], int64_t w, int64_t x_first, int64_t sw,
                        int64_t n, uint32_t pad_quad, uint32_t* dst) {
  for (int64_t j = 0; j < n; ++j) {
    const int64_t col = x_first + j * sw;
    if (col < 0 || col >= w) {
      dst[j] = pad_quad;
      continue;
    }
    uint32_t quad = 0;
    for (int q = 0; q < 4; ++q) {
      const uint32_t b = rows[q] != nullptr ? static_cast<uint8_t>(rows[q][col]) ^ 0x80u : 0x80u;
      quad |= b << (8 * q);
    }
    dst[j] = quad;
  }
}

}  // namespace

PhasePlanes PhasePlanesOf(const QConvParams& p) {
  PhasePlanes g;
  g.cg = p.c / p.group;
  g.c4 = CeilDiv(g.cg, 4);
  g.oh = p.out_h();
  g.ow = p.out_w();
  g.phase_h = CeilDiv(p.h + p.pad_top + p.pad_bottom, p.stride_h);
  g.phase_w = CeilDiv(p.w + p.pad_left + p.pad_right, p.stride_w);
  g.v = (g.oh - 1) * g.phase_w + g.ow;
  g.max_offset =
      (p.r - 1) * p.dilation_h / p.stride_h * g.phase_w + (p.s - 1) * p.dilation_w / p.stride_w;
  // A tile reads up to 15 lanes past the last virtual position.
  g.plane = RoundUp(std::max(g.phase_h * g.phase_w, g.v + 16 + g.max_offset), 16);
  g.image_bytes = p.stride_h * p.stride_w * g.c4 * g.plane * 4;
  return g;
}

void PhaseTapOffsets(const QConvParams& p, const PhasePlanes& g, int64_t* tap_offset) {
  for (int64_t r = 0; r < p.r; ++r) {
    for (int64_t s = 0; s < p.s; ++s) {
      const int64_t dy = r * p.dilation_h, dx = s * p.dilation_w;
      const int64_t phase = dy % p.stride_h * p.stride_w + dx % p.stride_w;
      tap_offset[r * p.s + s] =
          (phase * g.c4 * g.plane + dy / p.stride_h * g.phase_w + dx / p.stride_w) * 4;
    }
  }
}

uint8_t* TapOffsetsAt(const QConvParams& p, const PhasePlanes& g, uint8_t* workspace,
                      const int64_t** tap_offset) {
  int64_t* offsets = reinterpret_cast<int64_t*>(workspace);
  PhaseTapOffsets(p, g, offsets);
  *tap_offset = offsets;
  return workspace + TapOffsetsBytes(p);
}

void PhaseRowIndex(const QConvParams& p, uint8_t idx[64]) {
  for (int i = 0; i < 64; ++i) idx[i] = static_cast<uint8_t>(32 * (i % 4) + i / 4 * p.stride_w);
}

QCC_VNNI void FillPhasePlanes(const QConvParams& p, const PhasePlanes& g, const uint8_t* idx,
                              const int8_t* x, uint32_t* buf, int64_t lo, int64_t hi,
                              bool pads_filled) {
  const uint32_t pad_quad = PadByte(p) * 0x01010101u;
  const int64_t row_begin = lo / g.phase_w;
  const int64_t row_end = std::min(g.phase_h, CeilDiv(hi, g.phase_w));
  const bool tail = hi > g.phase_h * g.phase_w;
  if (p.stride_h == 1 && p.stride_w == 1 && p.pad_top == 0 && p.pad_left == 0 &&
      p.pad_bottom == 0 && p.pad_right == 0) {
    // The plane is the input itself: rows [row_begin, row_end) of a channel are one contiguous
    // run, so they are interleaved as one long row (no per-row work on small maps).
    const int64_t first = row_begin * p.w, n = (row_end - row_begin) * p.w;
    for (int64_t c4 = 0; c4 < g.c4; ++c4) {
      uint32_t* plane = buf + c4 * g.plane;
      const int8_t* rows[4];
      QuadRows(p, g, x, c4, first, rows);
      if (n > 0) InterleaveRun(rows, n, pad_quad, idx, plane + first);
      if (tail || !pads_filled) {
        FillDwords(plane + g.phase_h * g.phase_w, g.plane - g.phase_h * g.phase_w, pad_quad);
      }
    }
    return;
  }
  if (p.stride_h == 1 && p.stride_w == 1) {
    for (int64_t c4 = 0; c4 < g.c4; ++c4) {
      uint32_t* plane = buf + c4 * g.plane;
      const int8_t* rows[4];
      QuadRows(p, g, x, c4, 0, rows);
      if (row_end > row_begin) {
        FillPaddedStride1Plane(p, g, rows, row_begin, row_end, pad_quad, pads_filled, plane);
      } else if (!pads_filled) {
        FillDwords(plane, g.plane, pad_quad);
      }
    }
    return;
  }
  if (p.stride_w == 2 && p.w <= kStride2Chunk) {
    for (int64_t c4 = 0; c4 < g.c4; ++c4) {
      const int8_t* rows[4];
      QuadRows(p, g, x, c4, 0, rows);
      FillColumnStride2Planes(p, g, rows, row_begin, row_end, pad_quad, pads_filled,
                              buf + c4 * g.plane);
    }
    return;
  }
  for (int64_t a = 0; a < p.stride_h; ++a) {
    for (int64_t b = 0; b < p.stride_w; ++b) {
      for (int64_t c4 = 0; c4 < g.c4; ++c4) {
        uint32_t* plane = buf + ((a * p.stride_w + b) * g.c4 + c4) * g.plane;
        for (int64_t i = row_begin; i < row_end; ++i) {
          const int64_t y = i * p.stride_h + a - p.pad_top;
          uint32_t* dst = plane + i * g.phase_w;
          if (y < 0 || y >= p.h) {
            FillDwords(dst, g.phase_w, pad_quad);
            continue;
          }
          const int8_t* rows[4];
          QuadRows(p, g, x, c4, y * p.w, rows);
          if (p.stride_w <= 2) {
            TransformRowVector(rows, p.w, b - p.pad_left, p.stride_w, g.phase_w, pad_quad, idx,
                               dst);
          } else {
            TransformRowScalar(rows, p.w, b - p.pad_left, p.stride_w, g.phase_w, pad_quad, dst);
          }
        }
        if (tail) {
          FillDwords(plane + g.phase_h * g.phase_w, g.plane - g.phase_h * g.phase_w, pad_quad);
        }
      }
    }
  }
}

}  // namespace qcc::cpu::internal
