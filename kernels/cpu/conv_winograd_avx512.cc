// AVX-512 Winograd F(2x2, 3x3) path of the fp32 convolution: 3x3 kernels, stride and dilation 1,
// one group, 8+ channels in and out (UseWinogradAvx512).
//
// Each 2x2 block of outputs (a tile) of one output channel is A^T [sum over c of (G g_mc G^T) .
// (B^T d_c B)] A, with d_c the 4x4 input patch of channel c under the tile and g_mc the 3x3
// kernel: 16 multiply-adds per input channel for 4 outputs, where the direct convolution takes
// 36. So the convolution becomes 16 products of [M x C] transformed weights (packed once) by
// [C x tiles] transformed inputs, one per point xi of the 4x4 transform, plus the two
// transforms. resnet20's and squeezenet1.1's 3x3 layers (16 to 64 channels in) are most of
// their fp32 time, and on a core whose AVX-512 FMAs are 256 bits wide (Zen 4) the direct path's
// ~70% of peak left them behind ONNX Runtime; this path does 2.25x fewer multiply-adds.
//
// Layout: the tiles of every image (batch and depth) in one flat run, (image, tile row, tile
// column), cut into blocks of 32 (two vectors of 16 lanes, a lane a tile). For a block: the input
// transform of every channel into V[xi][c][32] (a thread's scratch, in L2), then for each 8
// output channels 16 register-tiled products (8 x 32 outputs in 16 zmm over the C loop) into
// P[xi][8][32], and the output transform, bias, residual and activation straight into y. A vector
// of tiles can span several tile rows (and images): each run of its lanes within one tile row
// reads its patches' columns with two masked loads and an even/odd split (the stride-2 gather
// of the tile columns), so padding and the map's edges are masked lanes, not branches.
//
// Numerics: not the direct convolution's bits (a different sum), within the ConvF32 tests'
// 1e-4 of the exact one; the same bits at every thread count, block split and batch, as every
// output's arithmetic is fixed: the transforms' adds in the order below, the products as fused
// multiply-adds from 0 in channel order, then + bias, + residual, activation. The tests' scalar
// transcription (tests/backend_cpu/nn_conv_winograd_test.cc) gives the same bits.
//
// Compiled for any x86-64: only the functions marked QCC_AVX512 use AVX-512; ConvF32 calls this
// path only when the CPU reports avx512f.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv_avx512_internal.h"
#include "kernels/cpu/lane_masks.h"
#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/round_half_avx512.h"

namespace qcc::cpu::internal {

namespace {

constexpr int64_t kPoints = 16;      // the 4x4 transform's points xi
constexpr int64_t kMr = 8;           // output channels per product tile
constexpr int64_t kBlockTiles = 32;  // tiles per block: two vectors
constexpr int64_t kMinChannels = 8;  // fewer, and the products are too short for their transforms
constexpr int64_t kMaxRuns = 16;     // runs of lanes within one tile row, per vector

/// Floats of one thread's scratch: a block's transformed input [xi][c][kBlockTiles] and its
/// products [xi][kMr][kBlockTiles].
int64_t ScratchFloatsPerThread(int64_t c) { return kPoints * (c + kMr) * kBlockTiles; }

struct Geometry {
  int64_t c, m, m_blocks;
  int64_t images;                      // batch x output depth: 2-D convolutions of the same weights
  int64_t depth, in_depth, pad_front;  // output slice z reads input slice z - pad_front
  int64_t ih, iw, oh, ow, pad_top, pad_left;
  int64_t tiles_w, tiles_image, tiles, blocks;
  int64_t m_chunks, m_chunk_blocks;
  int64_t units() const { return blocks * m_chunks; }
};

Geometry GeometryOf(const ConvF32Params& p) {
  Geometry g;
  g.c = p.in_channels;
  g.m = p.out_channels;
  g.m_blocks = (g.m + kMr - 1) / kMr;
  g.depth = p.out[0];
  g.in_depth = p.in[0];
  g.pad_front = p.pad[0];
  g.images = p.batch * g.depth;
  g.ih = p.in[1];
  g.iw = p.in[2];
  g.oh = p.out[1];
  g.ow = p.out[2];
  g.pad_top = p.pad[1];
  g.pad_left = p.pad[2];
  g.tiles_w = (g.ow + 1) / 2;
  g.tiles_image = (g.oh + 1) / 2 * g.tiles_w;
  g.tiles = g.images * g.tiles_image;
  g.blocks = (g.tiles + kBlockTiles - 1) / kBlockTiles;
  // Blocks are the threads' pieces; where there are fewer than two a thread, the output channels
  // split too (each piece transforms its block's input again: a small part of its work).
  const int64_t threads = std::max(1, p.num_threads);
  g.m_chunks = 1;
  if (threads > 1 && g.blocks < 2 * threads) {
    g.m_chunks = std::min(std::max<int64_t>(1, g.m_blocks),
                          (2 * threads + g.blocks - 1) / std::max<int64_t>(1, g.blocks));
  }
  g.m_chunk_blocks = std::max<int64_t>(1, (g.m_blocks + g.m_chunks - 1) / g.m_chunks);
  g.m_chunks = std::max<int64_t>(1, (g.m_blocks + g.m_chunk_blocks - 1) / g.m_chunk_blocks);
  return g;
}

/// Bits i of 16 with lo <= i < hi.
inline __mmask16 BitsBetween(int64_t lo, int64_t hi) {
  return static_cast<__mmask16>(LowBits16(hi) & ~LowBits16(lo));
}

/// Lanes i of a 16-float load at column `at` of a row of `n` that fall inside it.
inline __mmask16 InsideRow(int64_t at, int64_t n) { return BitsBetween(-at, n - at); }

/// One run of a vector's lanes whose tiles lie in one tile row of one image.
struct Run {
  __mmask16 lanes;
  // Input: lane l of the run reads its patch's columns in_col + 2 l + {0, 1, 2, 3}; the loads at
  // in_col, +16, +2, +18 take the lanes inside the row.
  __mmask16 in_masks[4];
  // Output: position k of the interleaved row pair (tile lane k / 2, column k % 2) is column
  // out_col + k; the masks keep this run's positions inside the row, for the two halves.
  __mmask16 out_masks[2];
  bool full;             // every lane of the vector
  int64_t batch, slice;  // the image: (batch, output depth slice)
  int64_t tile_row, in_col, out_col;
};

struct Runs {
  int count = 0;
  Run run[kMaxRuns];
};

/// The runs of the vector of tiles [t0, t0 + n) (n <= 16).
Runs RunsOf(const Geometry& g, int64_t t0, int64_t n) {
  Runs r;
  for (int64_t l = 0; l < n;) {
    const int64_t t = t0 + l, image = t / g.tiles_image, rest = t % g.tiles_image;
    const int64_t tile_row = rest / g.tiles_w, tile_col = rest % g.tiles_w;
    const int64_t len = std::min(n - l, g.tiles_w - tile_col);
    Run& run = r.run[r.count++];
    run.lanes = BitsBetween(l, l + len);
    run.full = len == 16;
    run.batch = image / g.depth;
    run.slice = image % g.depth;
    run.tile_row = tile_row;
    run.in_col = 2 * (tile_col - l) - g.pad_left;
    const int64_t offsets[4] = {0, 16, 2, 18};
    for (int i = 0; i < 4; ++i) run.in_masks[i] = InsideRow(run.in_col + offsets[i], g.iw);
    run.out_col = 2 * (tile_col - l);
    run.out_masks[0] = BitsBetween(2 * l, 2 * (l + len)) & InsideRow(run.out_col, g.ow);
    run.out_masks[1] =
        BitsBetween(2 * l - 16, 2 * (l + len) - 16) & InsideRow(run.out_col + 16, g.ow);
    l += len;
  }
  return r;
}

/// V[xi] = (B^T d B)[xi] for the vector's tiles of channel c: the 16 points, `point_stride`
/// floats apart, from `v`. B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], rows then columns.
QCC_AVX512 void TransformInput(const Geometry& g, const float* x, const Runs& runs, int64_t c,
                               float* v, int64_t point_stride) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  // e[r][j]: input row r of the patches after the column transform.
  __m512 e[4][4];
  for (int r = 0; r < 4; ++r) {
    for (int j = 0; j < 4; ++j) e[r][j] = _mm512_setzero_ps();
  }
  for (int s = 0; s < runs.count; ++s) {
    const Run& run = runs.run[s];
    const int64_t iz = run.slice - g.pad_front;
    if (iz < 0 || iz >= g.in_depth) continue;  // a padding slice: zeros
    const float* plane = x + ((run.batch * g.c + c) * g.in_depth + iz) * g.ih * g.iw;
    for (int r = 0; r < 4; ++r) {
      const int64_t iy = 2 * run.tile_row - g.pad_top + r;
      if (iy < 0 || iy >= g.ih) continue;
      // Shifted row pointers: masked lanes read nothing.
      const float* row = plane + iy * g.iw + run.in_col;
      const __m512 a = _mm512_maskz_loadu_ps(run.in_masks[0], row);
      const __m512 b = _mm512_maskz_loadu_ps(run.in_masks[1], row + 16);
      const __m512 a2 = _mm512_maskz_loadu_ps(run.in_masks[2], row + 2);
      const __m512 b2 = _mm512_maskz_loadu_ps(run.in_masks[3], row + 18);
      const __m512 d0 = _mm512_permutex2var_ps(a, even, b);
      const __m512 d1 = _mm512_permutex2var_ps(a, odd, b);
      const __m512 d2 = _mm512_permutex2var_ps(a2, even, b2);
      const __m512 d3 = _mm512_permutex2var_ps(a2, odd, b2);
      const __m512 t0 = _mm512_sub_ps(d0, d2), t1 = _mm512_add_ps(d1, d2);
      const __m512 t2 = _mm512_sub_ps(d2, d1), t3 = _mm512_sub_ps(d1, d3);
      if (run.full) {
        e[r][0] = t0, e[r][1] = t1, e[r][2] = t2, e[r][3] = t3;
      } else {
        e[r][0] = _mm512_mask_mov_ps(e[r][0], run.lanes, t0);
        e[r][1] = _mm512_mask_mov_ps(e[r][1], run.lanes, t1);
        e[r][2] = _mm512_mask_mov_ps(e[r][2], run.lanes, t2);
        e[r][3] = _mm512_mask_mov_ps(e[r][3], run.lanes, t3);
      }
    }
  }
  for (int j = 0; j < 4; ++j) {
    _mm512_storeu_ps(v + (0 * 4 + j) * point_stride, _mm512_sub_ps(e[0][j], e[2][j]));
    _mm512_storeu_ps(v + (1 * 4 + j) * point_stride, _mm512_add_ps(e[1][j], e[2][j]));
    _mm512_storeu_ps(v + (2 * 4 + j) * point_stride, _mm512_sub_ps(e[2][j], e[1][j]));
    _mm512_storeu_ps(v + (3 * 4 + j) * point_stride, _mm512_sub_ps(e[1][j], e[3][j]));
  }
}

/// out[r][0, 16 NV) = sum over c < k of u[c][r] * v[c][0, 16 NV), fused multiply-adds from 0 in
/// c order: one point's product for 8 output channels and NV vectors of tiles. u: [k][8],
/// v: [k][kBlockTiles], out: [8][kBlockTiles].
template <int NV>
QCC_AVX512 void PointProduct(int64_t k, const float* u, const float* v, float* out) {
  __m512 acc[kMr][NV];
  for (int r = 0; r < kMr; ++r) {
    for (int h = 0; h < NV; ++h) acc[r][h] = _mm512_setzero_ps();
  }
  for (int64_t c = 0; c < k; ++c, u += kMr, v += kBlockTiles) {
    __m512 b[NV];
    for (int h = 0; h < NV; ++h) b[h] = _mm512_loadu_ps(v + 16 * h);
    for (int r = 0; r < kMr; ++r) {
      const __m512 a = _mm512_set1_ps(u[r]);
      for (int h = 0; h < NV; ++h) acc[r][h] = _mm512_fmadd_ps(a, b[h], acc[r][h]);
    }
  }
  for (int r = 0; r < kMr; ++r) {
    for (int h = 0; h < NV; ++h) _mm512_storeu_ps(out + r * kBlockTiles + 16 * h, acc[r][h]);
  }
}

/// y's 2x2 outputs of output channel m for one vector of tiles, from its 16 points `pt`
/// (`point_stride` floats apart): A^T P A with A^T = [1 1 1 0; 0 1 -1 -1], rows then columns,
/// then + bias, + residual, activation (and the fp16 rounding), stored by run.
QCC_AVX512 void TransformOutput(const Geometry& g, const float* pt, int64_t point_stride,
                                const Runs& runs, int64_t m, float bias, const float* residual,
                                const ActivationF32* act, float* y) {
  __m512 q[4][4];
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) q[i][j] = _mm512_loadu_ps(pt + (i * 4 + j) * point_stride);
  }
  __m512 t[2][4];
  for (int j = 0; j < 4; ++j) {
    t[0][j] = _mm512_add_ps(_mm512_add_ps(q[0][j], q[1][j]), q[2][j]);
    t[1][j] = _mm512_sub_ps(_mm512_sub_ps(q[1][j], q[2][j]), q[3][j]);
  }
  const __m512 b = _mm512_set1_ps(bias);
  // Lanes of the interleaved halves: tile lane k / 2 (+ 8), column k % 2.
  const __m512i lo_idx = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi_idx =
      _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const __m512 lo = act != nullptr ? _mm512_set1_ps(act->lo) : _mm512_setzero_ps();
  const __m512 hi = act != nullptr ? _mm512_set1_ps(act->hi) : _mm512_setzero_ps();
  const __m512 slope = act != nullptr ? _mm512_set1_ps(act->negative_slope) : _mm512_setzero_ps();
  const bool clamp_below = act != nullptr && ClampsBelowOnly(*act);
  const bool round = act != nullptr && act->round_to_f16;
  for (int a = 0; a < 2; ++a) {
    const __m512 y0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(t[a][0], t[a][1]), t[a][2]), b);
    const __m512 y1 = _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(t[a][1], t[a][2]), t[a][3]), b);
    const __m512 halves[2] = {_mm512_permutex2var_ps(y0, lo_idx, y1),
                              _mm512_permutex2var_ps(y0, hi_idx, y1)};
    for (int s = 0; s < runs.count; ++s) {
      const Run& run = runs.run[s];
      const int64_t oy = 2 * run.tile_row + a;
      if (oy >= g.oh) continue;
      const int64_t at =
          (((run.batch * g.m + m) * g.depth + run.slice) * g.oh + oy) * g.ow + run.out_col;
      for (int h = 0; h < 2; ++h) {
        const __mmask16 mask = run.out_masks[h];
        if (mask == 0) continue;
        __m512 v = halves[h];
        if (residual != nullptr) {
          v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, residual + at + 16 * h));
        }
        if (clamp_below) {
          v = ClampBelow(v, lo);
        } else if (act != nullptr) {
          v = Activate(v, lo, hi, slope);
        }
        if (round) v = RoundToHalfV(v);
        _mm512_mask_storeu_ps(y + at + 16 * h, mask, v);
      }
    }
  }
}

/// One piece: block `block`'s tiles, output channel blocks [mb0, mb1); `transformed` when scratch
/// already holds the block's transformed input (the thread's previous piece had its block).
QCC_AVX512 void RunPiece(const Geometry& g, const ConvF32Params& p, const float* x,
                         const float* packed, const float* bias, float* y, int64_t block,
                         int64_t mb0, int64_t mb1, bool transformed, float* scratch) {
  float* v = scratch;                                 // [xi][c][kBlockTiles]
  float* products = v + kPoints * g.c * kBlockTiles;  // [xi][kMr][kBlockTiles]
  const int64_t t0 = block * kBlockTiles, n = std::min(kBlockTiles, g.tiles - t0);
  const int nv = n > 16 ? 2 : 1;
  Runs runs[2];
  for (int h = 0; h < nv; ++h) runs[h] = RunsOf(g, t0 + 16 * h, std::min<int64_t>(16, n - 16 * h));
  for (int64_t c = 0; c < g.c && !transformed; ++c) {
    for (int h = 0; h < nv; ++h) {
      TransformInput(g, x, runs[h], c, v + c * kBlockTiles + 16 * h, g.c * kBlockTiles);
    }
  }
  const ActivationF32* act = p.activation.is_identity() ? nullptr : &p.activation;
  for (int64_t mb = mb0; mb < mb1; ++mb) {
    for (int64_t xi = 0; xi < kPoints; ++xi) {
      const float* u = packed + (xi * g.m_blocks + mb) * g.c * kMr;
      const float* vx = v + xi * g.c * kBlockTiles;
      float* out = products + xi * kMr * kBlockTiles;
      if (nv == 2) {
        PointProduct<2>(g.c, u, vx, out);
      } else {
        PointProduct<1>(g.c, u, vx, out);
      }
    }
    const int64_t rows = std::min(kMr, g.m - mb * kMr);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t m = mb * kMr + r;
      for (int h = 0; h < nv; ++h) {
        TransformOutput(g, products + r * kBlockTiles + 16 * h, kMr * kBlockTiles, runs[h], m,
                        bias != nullptr ? bias[m] : 0.0f, p.residual, act, y);
      }
    }
  }
}

}  // namespace

bool UseWinogradAvx512(const ConvF32Params& p) {
  return p.winograd && p.groups == 1 && p.kernel[0] == 1 && p.kernel[1] == 3 && p.kernel[2] == 3 &&
         p.stride[0] == 1 && p.stride[1] == 1 && p.stride[2] == 1 && p.dilation[1] == 1 &&
         p.dilation[2] == 1 && p.in_channels >= kMinChannels && p.out_channels >= kMinChannels;
}

int64_t WinogradPackedSizeAvx512(const ConvF32Params& p) {
  return kPoints * (p.out_channels + kMr - 1) / kMr * kMr * p.in_channels;
}

void PackWinogradAvx512(const ConvF32Params& p, const float* w, float* packed) {
  const int64_t c_all = p.in_channels, m_all = p.out_channels;
  const int64_t m_blocks = (m_all + kMr - 1) / kMr;
  std::fill(packed, packed + WinogradPackedSizeAvx512(p), 0.0f);
  for (int64_t m = 0; m < m_all; ++m) {
    for (int64_t c = 0; c < c_all; ++c) {
      float u[16];
      WinogradKernelTransform(w + (m * c_all + c) * 9, u);
      for (int64_t xi = 0; xi < kPoints; ++xi) {
        packed[((xi * m_blocks + m / kMr) * c_all + c) * kMr + m % kMr] = u[xi];
      }
    }
  }
}

void WinogradKernelTransform(const float* g, float* u) {
  // G g, then (G g) G^T, with G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1].
  float t[4][3];
  for (int k = 0; k < 3; ++k) {
    const float g0 = g[0 * 3 + k], g1 = g[1 * 3 + k], g2 = g[2 * 3 + k];
    t[0][k] = g0;
    t[1][k] = 0.5f * (g0 + g1 + g2);
    t[2][k] = 0.5f * (g0 - g1 + g2);
    t[3][k] = g2;
  }
  for (int i = 0; i < 4; ++i) {
    const float a = t[i][0], b = t[i][1], c = t[i][2];
    u[i * 4 + 0] = a;
    u[i * 4 + 1] = 0.5f * (a + b + c);
    u[i * 4 + 2] = 0.5f * (a - b + c);
    u[i * 4 + 3] = c;
  }
}

int64_t WinogradScratchSizeAvx512(const ConvF32Params& p) {
  return ScratchFloatsPerThread(p.in_channels) * std::max(1, p.num_threads);
}

void ConvF32WinogradAvx512(const ConvF32Params& p, const float* x, const float* packed,
                           const float* bias, float* y, float* scratch) {
  const Geometry g = GeometryOf(p);
  if (g.tiles == 0 || g.m == 0) return;
  const int64_t per_thread = ScratchFloatsPerThread(g.c);
  const int64_t cost = g.m_chunk_blocks * kMr * g.c * kBlockTiles * 2;
  NnParallelFor(p.num_threads, g.units(), cost, [&](int64_t begin, int64_t end, int thread) {
    for (int64_t u = begin; u < end; ++u) {
      const int64_t block = u / g.m_chunks, mc = u % g.m_chunks;
      const int64_t mb0 = mc * g.m_chunk_blocks, mb1 = std::min(g.m_blocks, mb0 + g.m_chunk_blocks);
      RunPiece(g, p, x, packed, bias, y, block, mb0, mb1, u > begin && mc > 0,
               scratch + thread * per_thread);
    }
  });
}

}  // namespace qcc::cpu::internal
