// AVX2 path of the fp32 convolution, for CPUs without AVX-512: a register-tiled GEMM
// microkernel over per-thread column bands (the im2col of a band of output rows; a pointwise
// convolution's x copied into panels; for most 2-D convolutions, no im2col but phase planes of
// the padded input, see "Implicit-im2col path"), writing y in place with bias and fused
// activation.
//
// Why not sgemm (ConvF32Im2col, GemmF32): the convolutions of small CNNs are many small
// products, where a BLAS packs the whole im2col matrix it is handed before multiplying, and
// splits each small product over threads; here the weights are packed once (at plan load), the
// threads take whole pieces (image, group, band of rows or block of channels), and a 4 x 24
// block of y stays in 12 ymm accumulators while the columns stream through. k runs in chunks of
// kKc so that a 24-column block stays in L1 while a group of weight blocks passes over it (the
// GEMM blocking BLIS and OpenBLAS use). bench/fp32_conv_bench times it against the sgemm path.
//
// Bits: every output is the bias plus one fused multiply-add per k, in k's (channel, tap) order
// (a chunk's partial sums are stored in y and reloaded, which is exact), then the activation.
// tests/backend_cpu/nn_conv_test.cc holds it to a scalar std::fma loop, bit for bit. That is
// also the order of conv_avx512.cc's tiles, so the two paths should agree bit for bit (not yet
// checked on an AVX-512 CPU).
//
// Compiled for any x86-64: only the functions marked QCC_AVX2_FMA use AVX2 and FMA, and ConvF32
// calls this path only when the CPU reports both and no avx512f. The depthwise path is in
// conv_depthwise_avx2.cc.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv_avx2_internal.h"
#include "kernels/cpu/conv_internal.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/nn_parallel.h"

namespace qcc::cpu {
namespace {

using internal::Activate;
using internal::LaneMask;

constexpr int64_t kMr = 4;  // output channels per tile
// Packed weights: blocks of kPackRows output channels, k-major ([group][block][k][kPackRows],
// zero past the group's channels), for every AVX2 path: a tile's kMr rows are a sixth of a
// block (lda = kPackRows floats between its k), the transposed pointwise tile's 24 channels a
// whole one (three ymm per k). One layout, whatever path a run takes: PackConvF32Weights packs
// from the channels and the kernel's volume alone (the evaluator packs without extents).
constexpr int64_t kPackRows = 24;
constexpr int64_t kNr = 24;  // output positions per tile (three ymm)
constexpr int kVecs = kNr / 8;
// k per chunk: a 128 x 24 block of b is 12 KiB, in L1 with room for the weights passing by.
constexpr int64_t kKc = 128;
// Tile rows (kMr channels each) per group: 18 x 128 x 4 floats (3 packed blocks, 36 KiB), in L2
// across the column tiles.
constexpr int64_t kMc = 18;
// Column band per thread: 128 Ki floats (512 KiB), as the AVX-512 path. A quarter of that was
// slower on resnet20 at batch 32 on a 512 KiB-L2 AMD EPYC (more, smaller bands: more tile tails).
constexpr int64_t kColFloatsPerThread = int64_t{1} << 17;

using internal::OddLineStride;

struct Geometry {
  // m_chunks: the output channels' blocks split into that many pieces of m_chunk_blocks.
  int64_t cg, mg, k, m_blocks, m_chunks, m_chunk_blocks;
  // The output positions of one image as `rows` rows of `row_len` (a pointwise convolution's:
  // one flat run), split into `bands` bands of `band_rows` rows.
  int64_t rows, row_len, band_rows, bands;
  bool pointwise;
};

/// The geometry of p's tiles and pieces. `rows_fit(g)` is how many output rows a thread's
/// buffer holds (its band; 0 when even one does not fit), from g's channel fields.
template <typename RowsFit>
Geometry GeometryOf(const ConvF32Params& p, RowsFit rows_fit) {
  Geometry g;
  g.cg = p.in_channels / p.groups;
  g.mg = p.out_channels / p.groups;
  g.k = g.cg * p.kernel_size();
  g.m_blocks = (g.mg + kMr - 1) / kMr;
  g.pointwise = p.IsPointwise();
  g.row_len = g.pointwise ? 1 : p.out[2];
  g.rows =
      g.pointwise ? std::max<int64_t>(1, p.out_size()) : std::max<int64_t>(1, p.out[0] * p.out[1]);
  const int64_t threads = std::max(1, p.num_threads);
  // At least 1 and a block: an empty convolution (batch or channels 0) still gets a geometry.
  const int64_t images = std::max<int64_t>(1, p.batch * p.groups);
  // A band's im2col stays in L2; a pointwise convolution has no band buffer.
  // A band's columns (im2col rows, or a pointwise convolution's x in panels) stay in L2; a
  // pointwise band is a whole number of tiles.
  g.band_rows = std::clamp<int64_t>(rows_fit(g), 1, g.rows);
  if (g.pointwise && g.band_rows < g.rows) g.band_rows = std::max(kNr, g.band_rows / kNr * kNr);
  // Pieces for the threads: at least two each. A convolution with more weights than positions
  // per channel (small maps, late layers) splits its output channels, where bands of a few rows
  // would end in part-empty tiles (each piece im2cols its band, so both then do); one with
  // large maps splits its positions into bands.
  g.m_chunks = 1;
  const int64_t want = (2 * threads + images - 1) / images;
  if (threads > 1 && (g.rows + g.band_rows - 1) / g.band_rows < want) {
    if (g.mg >= g.rows * g.row_len) {
      g.m_chunks = std::min(g.m_blocks, want);
    } else {
      g.band_rows = std::max<int64_t>(1, (g.rows + want - 1) / want);
      // A pointwise band is a whole number of tiles.
      if (g.pointwise) g.band_rows = std::min(g.rows, (g.band_rows + kNr - 1) / kNr * kNr);
    }
  }
  g.bands = (g.rows + g.band_rows - 1) / g.band_rows;
  g.m_chunk_blocks = std::max<int64_t>(1, (g.m_blocks + g.m_chunks - 1) / g.m_chunks);
  g.m_chunks = (g.m_blocks + g.m_chunk_blocks - 1) / g.m_chunk_blocks;
  return g;
}

/// The im2col path's geometry: a band's im2col rows (or pointwise panels) in
/// kColFloatsPerThread.
Geometry GeometryOf(const ConvF32Params& p) {
  return GeometryOf(p, [](const Geometry& g) {
    return kColFloatsPerThread / std::max<int64_t>(1, g.k * g.row_len);
  });
}

/// One k of a register tile: acc[r][v] += a[r] * b[8 v, 8 v + 8), NV loads of b and MR
/// broadcasts of a.
template <int MR, int NV>
QCC_AVX2_FMA inline void FmaStep(const float* a, const float* b, __m256 (&acc)[MR][NV]) {
  __m256 bv[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) bv[v] = _mm256_loadu_ps(b + 8 * v);
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    const __m256 ar = _mm256_broadcast_ss(a + r);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_fmadd_ps(ar, bv[v], acc[r][v]);
  }
}

/// The fused activation on a register tile.
template <int MR, int NV>
QCC_AVX2_FMA inline void ActivateTile(const ActivationF32& act, __m256 (&acc)[MR][NV]) {
  const __m256 lo = _mm256_set1_ps(act.lo), hi = _mm256_set1_ps(act.hi);
  const __m256 slope = _mm256_set1_ps(act.negative_slope);
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = Activate(acc[r][v], lo, hi, slope);
  }
}

/// c[r, 0:8 NV) = act(init[r] + sum_k ap[k, r] * b[k, 0:8 NV)) for r < MR, stored for columns
/// [0, n) (n <= 8 NV), where init is bias[r] (or 0) when `first`, else the partial sums c holds
/// (a chunk of k after the first: storing and reloading a float is exact, so the chunks give
/// the bits of one loop); `act` null is the identity. `ap` holds the tile's kMr packed rows of
/// k = 0, those of k + 1 lda floats on (rows >= MR are zero padding). All 8 NV columns of b are
/// read: an im2col band's rows and a pointwise panel are zero-padded to whole tiles of 24. A band's
/// last tile takes the fewest vectors that hold its columns (a 7x7 map's 49 positions: 24 + 24 + 8
/// columns, not 24 + 24 + 24), which changes no output's bits (each column is its own chain of
/// fused multiply-adds).
template <int MR, int NV>
QCC_AVX2_FMA void Tile(int64_t k_len, const float* ap, int64_t lda, const float* b, int64_t ldb,
                       bool first, const float* bias, const ActivationF32* act, float* c,
                       int64_t ldc, int64_t n) {
  __m256i mask[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) mask[v] = LaneMask(n - 8 * v);
  __m256 acc[MR][NV];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      if (first) {
        acc[r][v] = bias != nullptr ? _mm256_set1_ps(bias[r]) : _mm256_setzero_ps();
      } else {
        acc[r][v] = _mm256_maskload_ps(c + r * ldc + 8 * v, mask[v]);
      }
    }
  }
  for (int64_t k = 0; k < k_len; ++k, ap += lda, b += ldb) FmaStep<MR, NV>(ap, b, acc);
  if (act != nullptr) ActivateTile<MR, NV>(*act, acc);
  const bool full = n == 8 * NV;
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      if (full) {
        _mm256_storeu_ps(c + r * ldc + 8 * v, acc[r][v]);
      } else {
        _mm256_maskstore_ps(c + r * ldc + 8 * v, mask[v], acc[r][v]);
      }
    }
  }
}

using TileFn = void (*)(int64_t, const float*, int64_t, const float*, int64_t, bool, const float*,
                        const ActivationF32*, float*, int64_t, int64_t);
/// By the tile's vectors (its last tile of a band may need only 1 or 2 of the 3) and rows.
constexpr TileFn kTiles[kVecs][kMr + 1] = {
    {nullptr, Tile<1, 1>, Tile<2, 1>, Tile<3, 1>, Tile<4, 1>},
    {nullptr, Tile<1, 2>, Tile<2, 2>, Tile<3, 2>, Tile<4, 2>},
    {nullptr, Tile<1, 3>, Tile<2, 3>, Tile<3, 3>, Tile<4, 3>}};

/// `floats` rounded up to whole tiles.
int64_t WholeTiles(int64_t floats) { return (floats + kNr - 1) / kNr * kNr; }

/// Floats of a thread's column band on the im2col path: a band's im2col rows, or a pointwise
/// convolution's x copied into one contiguous panel per tile.
int64_t ColumnFloats(const Geometry& g) {
  return g.pointwise ? g.k * WholeTiles(g.band_rows)
                     : g.k * OddLineStride(WholeTiles(g.band_rows * g.row_len));
}

/// Floats of one group's packed weights: whole blocks of kPackRows channels.
int64_t GroupPackedFloats(int64_t mg, int64_t k) {
  return (mg + kPackRows - 1) / kPackRows * kPackRows * k;
}

/// Tile rows [kMr mb, kMr mb + kMr) of a group's packed weights `ag` (k of them per channel) at
/// k = 0; the next k is kPackRows floats on.
const float* TileWeights(const float* ag, int64_t mb, int64_t k) {
  constexpr int64_t kTilesPerBlock = kPackRows / kMr;
  return ag + mb / kTilesPerBlock * kPackRows * k + mb % kTilesPerBlock * kMr;
}

// ---------------------------------------------------------------------------------------------
// Implicit-im2col path: 2-D convolutions that are not pointwise, with kMinImplicitChannels or
// more input channels per group and k (channels x taps) up to kMaxImplicitK.
//
// An im2col band is k rows of the band's positions: for a 3x3 kernel, 9 copies of the input
// written and read back through L2 for every image, which perf put at a fifth of resnet20's time
// at batch 32 (and the tiles then stream k x 24 floats of it). Here each (image, group, band of
// output rows) is rewritten once, per thread, into stride_h x stride_w "phase planes" of the
// zero-padded input: phase (a, b) row i, column j holds x at (i * stride_h + a - pad_top,
// j * stride_w + b - pad_left), or 0 outside x. Output (oy, ox) is virtual position
// v = oy * pw + ox of a plane row pw wide, and its tap (r, s) reads phase
// ((r * dh) % sh, (s * dw) % sw) at v + (r * dh / sh) * pw + s * dw / sw: a constant offset per
// k, so 24 consecutive virtual positions are 3 ymm loads per k, as an im2col row's are. The
// columns ox in [out_w, pw) of the virtual rows are computed and not stored: each tile stores
// its lanes as runs of consecutive outputs (a full vector, else a masked store of a permuted
// one). The tile is Tile's (4 output channels x 24 positions, 12 ymm accumulators) with the b
// row of k at `koff[k]`; every output is the same bias plus one fused multiply-add per k, in
// k's order, over the same values (a padded tap reads +0, as im2col's zero does), so the bits
// are the im2col path's. k is not split into chunks: the planes a 24-position tile reads
// (channels x kernel rows x about 24 floats) stay in L1 for kMaxImplicitK.
constexpr int64_t kMaxImplicitK = 1152;
// Convolutions of fewer input channels per group keep im2col: on 3-channel stems (ImageNet's
// 3x3 stride 2 at 112x112, CIFAR's 3x3 at 32x32, batch 32) the implicit tiles were 7 to 20%
// slower than im2col plus tiles on a Zen 3, though their im2col is a third of the time.
constexpr int64_t kMinImplicitChannels = 4;
// A thread's phase planes: 64 Ki floats (256 KiB), half of a 512 KiB L2 with the weights.
constexpr int64_t kImplicitWindowFloats = int64_t{1} << 16;

bool UseImplicit(const ConvF32Params& p) {
  if (p.IsPointwise() || p.in[0] != 1 || p.kernel[0] != 1 || p.out[0] != 1 || p.pad[0] != 0) {
    return false;
  }
  const int64_t cg = p.in_channels / p.groups;
  return cg >= kMinImplicitChannels && cg * p.kernel_size() <= kMaxImplicitK;
}

struct ImplicitGeometry {
  Geometry g;  // channels, blocks, bands (of output rows) and pieces, as the im2col path's
  int64_t sh, sw, phases, oh, ow;
  int64_t pw;          // floats per phase-plane row: the virtual row length
  int64_t extra_rows;  // plane rows past a band's last output row that its taps read
  int64_t max_off;     // the farthest tap from a virtual position, in floats
  int64_t plane;       // floats per (channel, phase) plane of a band, whole tiles read past the end
  int64_t window;      // floats per thread: cg * phases planes
};

ImplicitGeometry ImplicitGeometryOf(const ConvF32Params& p) {
  ImplicitGeometry ig;
  ig.sh = p.stride[1];
  ig.sw = p.stride[2];
  ig.phases = ig.sh * ig.sw;
  const int64_t kh = p.kernel[1], kw = p.kernel[2], dh = p.dilation[1], dw = p.dilation[2];
  ig.oh = p.out[1];
  ig.ow = p.out[2];
  ig.pw = ig.ow + (kw - 1) * dw / ig.sw;
  ig.extra_rows = (kh - 1) * dh / ig.sh;
  ig.max_off = ig.extra_rows * ig.pw + (kw - 1) * dw / ig.sw;
  ig.g = GeometryOf(p, [&](const Geometry& g) {
    return kImplicitWindowFloats / std::max<int64_t>(1, g.cg * ig.phases * ig.pw) - ig.extra_rows -
           1;
  });
  // A band's tiles read whole tiles of virtual positions plus the farthest tap.
  const int64_t rows = ig.g.band_rows;
  const int64_t read = WholeTiles((rows - 1) * ig.pw + ig.ow) + ig.max_off;
  ig.plane = OddLineStride(std::max((rows + ig.extra_rows) * ig.pw, read));
  ig.window = ig.g.cg * ig.phases * ig.plane;
  return ig;
}

/// Rewrites rows [y0, y1) of output rows' phase planes of `channels` planes of x (one image's
/// group) into `window` (ig.plane floats per (channel, phase)), zeros outside x and past the
/// band's rows.
QCC_AVX2_FMA void ImplicitWindow(const ConvF32Params& p, const ImplicitGeometry& ig, const float* x,
                                 int64_t y0, int64_t y1, float* window) {
  const int64_t h = p.in[1], w = p.in[2], in_sp = p.in_size();
  const int64_t rows = y1 - y0 + ig.extra_rows;
  for (int64_t c = 0; c < ig.g.cg; ++c) {
    const float* xc = x + c * in_sp;
    for (int64_t a = 0; a < ig.sh; ++a) {
      for (int64_t b = 0; b < ig.sw; ++b) {
        float* plane = window + (c * ig.phases + a * ig.sw + b) * ig.plane;
        // Columns [lo, hi) of a plane row lie inside x.
        int64_t lo, hi;
        internal::ValidRange(b - p.pad[2], ig.sw, w, ig.pw, lo, hi);
        for (int64_t i = 0; i < rows; ++i) {
          float* dst = plane + i * ig.pw;
          const int64_t iy = (y0 + i) * ig.sh + a - p.pad[1];
          if (iy < 0 || iy >= h || lo >= hi) {
            std::fill(dst, dst + ig.pw, 0.0f);
            continue;
          }
          std::fill(dst, dst + lo, 0.0f);
          const float* src = xc + iy * w + lo * ig.sw + b - p.pad[2];
          if (ig.sw == 1) {
            std::copy(src, src + (hi - lo), dst + lo);
          } else if (ig.sw == 2) {
            internal::CopyEvenAvx2(src, hi - lo, dst + lo);
          } else {
            for (int64_t j = lo; j < hi; ++j) dst[j] = src[(j - lo) * ig.sw];
          }
          std::fill(dst + hi, dst + ig.pw, 0.0f);
        }
        std::fill(plane + rows * ig.pw, plane + ig.plane, 0.0f);
      }
    }
  }
}

/// A run of a tile vector's lanes [lane, lane + len) that land on consecutive outputs from `out`.
struct StoreRun {
  int32_t lane, len;
  int64_t out;
};

/// The runs of each of a tile's vectors (at most 8 each), and the end of its band's outputs
/// (a run whose 8 lanes reach past it stores exactly its own).
struct TileRuns {
  StoreRun run[kVecs][8];
  int count[kVecs];
  int64_t end;
};

/// Stores lanes [0, n) of `v` (n <= 4) to y: 2 and 1 floats at a time, 4 at once.
QCC_AVX2_FMA inline void StoreLowFloats(__m128 v, int64_t n, float* y) {
  if (n == 4) {
    _mm_storeu_ps(y, v);
    return;
  }
  if (n >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(y), v);
    v = _mm_movehl_ps(v, v);
    y += 2;
    n -= 2;
  }
  if (n == 1) _mm_store_ss(y, v);
}

/// Stores lanes [0, n) of `v` (n <= 8) to y.
QCC_AVX2_FMA inline void StoreLowFloats(__m256 v, int64_t n, float* y) {
  const __m128 low = _mm256_castps256_ps128(v);
  if (n <= 4) {
    StoreLowFloats(low, n, y);
    return;
  }
  _mm_storeu_ps(y, low);
  StoreLowFloats(_mm256_extractf128_ps(v, 1), n - 4, y + 4);
}

/// Tile's product with the b row of k at b + koff[k], for the output-channel blocks
/// [mb0, mb1) of a group (kMr rows each, packed weights `ap` and `bias` at block 0; rows past
/// `mg` are zero weights, computed and not stored); stores by `runs`.
template <int NV>
QCC_AVX2_FMA void ImplicitTiles(int64_t mb0, int64_t mb1, int64_t mg, int64_t k_len,
                                const float* ap, const float* b, const int32_t* koff,
                                const float* bias, const ActivationF32* act, float* c, int64_t ldc,
                                const TileRuns& runs) {
  constexpr int MR = kMr;
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t mb = mb0; mb < mb1; ++mb) {
    const float* am = TileWeights(ap, mb, k_len);
    const int64_t rows = std::min<int64_t>(kMr, mg - mb * kMr);
    __m256 acc[MR][NV];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256 init =
          bias != nullptr && r < rows ? _mm256_set1_ps(bias[mb * kMr + r]) : _mm256_setzero_ps();
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = init;
    }
    for (int64_t k = 0; k < k_len; ++k, am += kPackRows) FmaStep<MR, NV>(am, b + koff[k], acc);
    if (act != nullptr) ActivateTile<MR, NV>(*act, acc);
    // A run stores all 8 lanes from its first output on: the lanes past it land on the outputs
    // the next runs store (a band's outputs are stored in order), except for the band's last
    // run, which stores exactly its lanes. Not _mm256_maskstore_ps, which is microcoded on AMD
    // (12 cycles a store on Zen 3).
    float* cm = c + mb * kMr * ldc;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      // By value: the stores to c would otherwise make the compiler reload the runs.
      const int count = runs.count[v];
      for (int i = 0; i < count; ++i) {
        const StoreRun run = runs.run[v][i];
        float* out = cm + run.out;
        const bool exact = run.out + 8 > runs.end;
        const __m256i from = _mm256_add_epi32(lanes, _mm256_set1_epi32(run.lane));
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
          if (r >= rows) break;
          // Lane run.lane + j to out + j.
          const __m256 q = run.lane == 0 ? acc[r][v] : _mm256_permutevar8x32_ps(acc[r][v], from);
          if (!exact) {
            _mm256_storeu_ps(out + r * ldc, q);
          } else {
            StoreLowFloats(q, run.len, out + r * ldc);
          }
        }
      }
    }
  }
}

using ImplicitTilesFn = void (*)(int64_t, int64_t, int64_t, int64_t, const float*, const float*,
                                 const int32_t*, const float*, const ActivationF32*, float*,
                                 int64_t, const TileRuns&);
constexpr ImplicitTilesFn kImplicitTiles[kVecs] = {ImplicitTiles<1>, ImplicitTiles<2>,
                                                   ImplicitTiles<3>};

/// The runs of the tile at virtual positions [v0, v0 + n); the count of its lanes that are
/// outputs. Walks the tile a row piece at a time: the valid columns [ox, out_w) of a virtual
/// row, cut at vector boundaries, then the gap [out_w, pw) skipped.
int64_t TileRunsOf(const ImplicitGeometry& ig, int64_t v0, int64_t n, TileRuns* t) {
  for (int v = 0; v < kVecs; ++v) t->count[v] = 0;
  int64_t stored = 0, oy = v0 / ig.pw, ox = v0 % ig.pw;
  for (int64_t l = 0; l < n;) {
    if (ox >= ig.ow) {
      const int64_t skip = std::min(ig.pw - ox, n - l);
      l += skip;
      ox += skip;
    } else {
      const int64_t len = std::min(ig.ow - ox, n - l);
      for (int64_t done = 0; done < len;) {
        const int v = static_cast<int>((l + done) / 8);
        const int lane = static_cast<int>((l + done) % 8);
        const int piece = static_cast<int>(std::min<int64_t>(len - done, 8 - lane));
        const int64_t out = oy * ig.ow + ox + done;
        int& count = t->count[v];
        StoreRun* last = count > 0 ? &t->run[v][count - 1] : nullptr;
        // A row that ends without a gap (pw == out_w) continues into the next one.
        if (last != nullptr && last->lane + last->len == lane && last->out + last->len == out) {
          last->len += piece;
        } else {
          t->run[v][count++] = StoreRun{lane, piece, out};
        }
        done += piece;
      }
      l += len;
      ox += len;
      stored += len;
    }
    if (ox == ig.pw) {
      ox = 0;
      ++oy;
    }
  }
  return stored;
}

void ImplicitConv(const ConvF32Params& p, const float* x, const float* packed, const float* bias,
                  float* y, float* windows) {
  const ImplicitGeometry ig = ImplicitGeometryOf(p);
  const Geometry& g = ig.g;
  const int64_t in_sp = p.in_size(), out_sp = p.out_size();
  const ActivationF32* act = p.activation.is_identity() ? nullptr : &p.activation;
  const int64_t kh = p.kernel[1], kw = p.kernel[2];
  // koff[k] for k = (channel, kernel row, kernel column): the b row's offset in a window.
  int32_t koff[kMaxImplicitK];
  for (int64_t c = 0; c < g.cg; ++c) {
    for (int64_t r = 0; r < kh; ++r) {
      for (int64_t s = 0; s < kw; ++s) {
        const int64_t dy = r * p.dilation[1], dx = s * p.dilation[2];
        const int64_t phase = dy % ig.sh * ig.sw + dx % ig.sw;
        koff[(c * kh + r) * kw + s] = static_cast<int32_t>((c * ig.phases + phase) * ig.plane +
                                                           dy / ig.sh * ig.pw + dx / ig.sw);
      }
    }
  }
  const int64_t units = p.batch * p.groups * g.bands * g.m_chunks;
  const int64_t cost = g.m_chunk_blocks * kMr * g.k * g.band_rows * ig.ow / 8;
  NnParallelFor(p.num_threads, units, cost, [&](int64_t begin, int64_t end, int thread) {
    float* window = windows + thread * ig.window;
    int64_t loaded = -1;  // the (image, group, band) in `window`
    for (int64_t u = begin; u < end; ++u) {
      const int64_t mc = u % g.m_chunks, piece = u / g.m_chunks;
      const int64_t band = piece % g.bands, grp = piece / g.bands % p.groups;
      const int64_t n = piece / (g.bands * p.groups);
      const int64_t y0 = band * g.band_rows, y1 = std::min(ig.oh, y0 + g.band_rows);
      if (piece != loaded) {
        ImplicitWindow(p, ig, x + (n * p.in_channels + grp * g.cg) * in_sp, y0, y1, window);
        loaded = piece;
      }
      const int64_t mb0 = mc * g.m_chunk_blocks;
      const int64_t mb1 = std::min(g.m_blocks, mb0 + g.m_chunk_blocks);
      float* yg = y + (n * p.out_channels + grp * g.mg) * out_sp;
      const float* ag = packed + grp * GroupPackedFloats(g.mg, g.k);
      const float* bg = bias != nullptr ? bias + grp * g.mg : nullptr;
      const int64_t positions = (y1 - y0 - 1) * ig.pw + ig.ow;
      TileRuns runs;
      runs.end = y1 * ig.ow;
      for (int64_t j = 0; j < positions; j += kNr) {
        const int64_t width = std::min(kNr, positions - j);
        if (TileRunsOf(ig, y0 * ig.pw + j, width, &runs) == 0) continue;
        kImplicitTiles[(width + 7) / 8 - 1](mb0, mb1, g.mg, g.k, ag, window + j, koff, bg, act, yg,
                                            out_sp, runs);
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Transposed pointwise path: pointwise convolutions (one group, 24+ output channels) on small
// maps whose positions would leave many lanes of the position tiles empty (UseTransposed).
//
// On a small map a tile of 24 positions leaves lanes empty (a 7x7 map's 49 fill 49 of 56), the
// k chunks reload partial sums through masked loads and stores (microcoded on AMD), and every
// tile copies its columns of x into a panel. Here the lanes are output channels (a packed block
// of 24: three ymm of weights per k) and kTp positions are broadcast straight from x, so a tile
// is kTp x 24 outputs in 12 ymm. k runs in chunks of kTkc (the chunk's weights, 6 KiB, stay in
// L1 across the map's tiles); a tile's partial sums between chunks go to a per-thread buffer as
// they are (storing and reloading a float is exact). Every output is its bias plus one fused
// multiply-add per k in k's order, as Tile's: the same bits. The tile ends in a 4 x 8
// transpose per vector (two 4 x 4 ones) and 4-float stores into the output channels' rows.
constexpr int kTp = 4;
constexpr int64_t kTkc = 64;
constexpr int64_t kMaxTransposedPositions = 256;

bool UseTransposed(const ConvF32Params& p) {
  if (!p.IsPointwise() || p.groups != 1 || p.out_channels < kPackRows) return false;
  // Where an eighth or more of the position lanes would be empty: 7x7 (49 of 56), 5x5, 3x3 and
  // 1x1 maps. On Zen 3, batch 32, against the position tiles: 0.81-0.84x the time at 7x7 (320
  // to 1280, 192 to 1152, 1152 to 192 channels), the same at 13x13 (169 of 176 lanes, 512 to
  // 1000), 1.46x at 14x14 (196 of 200, 480 to 80: 80 channels fill 80 of 96 lanes).
  const int64_t n = p.out_size(), lanes = (n + 7) / 8 * 8;
  return n <= kMaxTransposedPositions && 8 * (lanes - n) >= lanes;
}

/// Stores positions [0, np) of rows r[0..3] (lanes are 8 channels): channel i's to y + i * ldy,
/// for the first `channels` (<= 8) of them.
QCC_AVX2_FMA inline void StoreTransposed(const __m256 (&r)[kTp], int np, int channels, float* y,
                                         int64_t ldy) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  // u[i]: channel i in the low half, channel i + 4 in the high one, positions 0..3 each.
  const __m256 u[4] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE),
                       _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xEE)};
  for (int i = 0; i < channels; ++i) {
    const __m128 v = i < 4 ? _mm256_castps256_ps128(u[i]) : _mm256_extractf128_ps(u[i - 4], 1);
    StoreLowFloats(v, np, y + i * ldy);
  }
}

/// Positions [0, NP) x channels [0, 8 NV) of a transposed tile over k in [0, k_len): x's
/// position q of k at x[k * ldx + q], the weights' 24 channels of k at bp[k * kPackRows]. Starts
/// from `bias` (24 floats) when `first`, else from `part`; ends in `part` unless `last`, then
/// applies `act` and stores the first `channels` channels to y (row stride ldy).
template <int NP, int NV>
QCC_AVX2_FMA void TransposedTile(int64_t k_len, const float* x, int64_t ldx, const float* bp,
                                 bool first, const float* bias, bool last, const ActivationF32* act,
                                 float* part, float* y, int64_t ldy, int64_t channels) {
  __m256 acc[NP][NV];
#pragma GCC unroll 4
  for (int q = 0; q < NP; ++q) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      acc[q][v] = first ? _mm256_loadu_ps(bias + 8 * v) : _mm256_loadu_ps(part + (q * 3 + v) * 8);
    }
  }
  // FmaStep with the roles swapped: x's positions broadcast, the weights the vectors.
  for (int64_t k = 0; k < k_len; ++k, x += ldx, bp += kPackRows) FmaStep<NP, NV>(x, bp, acc);
  if (!last) {
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) _mm256_storeu_ps(part + (q * 3 + v) * 8, acc[q][v]);
    }
    return;
  }
  if (act != nullptr) ActivateTile<NP, NV>(*act, acc);
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    __m256 rows[kTp];
#pragma GCC unroll 4
    for (int q = 0; q < kTp; ++q) rows[q] = q < NP ? acc[q][v] : _mm256_setzero_ps();
    const int64_t left = channels - 8 * v;
    if (left <= 0) break;
    StoreTransposed(rows, NP, static_cast<int>(std::min<int64_t>(8, left)), y + 8 * v * ldy, ldy);
  }
}

using TransposedTileFn = void (*)(int64_t, const float*, int64_t, const float*, bool, const float*,
                                  bool, const ActivationF32*, float*, float*, int64_t, int64_t);
/// By positions (1..kTp) and vectors of channels (1..3).
constexpr TransposedTileFn kTransposedTiles[kTp][kVecs] = {
    {TransposedTile<1, 1>, TransposedTile<1, 2>, TransposedTile<1, 3>},
    {TransposedTile<2, 1>, TransposedTile<2, 2>, TransposedTile<2, 3>},
    {TransposedTile<3, 1>, TransposedTile<3, 2>, TransposedTile<3, 3>},
    {TransposedTile<4, 1>, TransposedTile<4, 2>, TransposedTile<4, 3>}};

/// Floats of a thread's partial sums: every tile of a map, 12 ymm each.
int64_t TransposedPartFloats(const ConvF32Params& p) {
  return (p.out_size() + kTp - 1) / kTp * kTp * kPackRows;
}

/// Pieces are (image, block of 24 output channels); each runs k in chunks over all its tiles.
void TransposedConv(const ConvF32Params& p, const float* x, const float* packed, const float* bias,
                    float* y, float* parts) {
  const int64_t n_sp = p.out_size(), m = p.out_channels, k_len = p.in_channels;
  const int64_t blocks = (m + kPackRows - 1) / kPackRows;
  const ActivationF32* act = p.activation.is_identity() ? nullptr : &p.activation;
  NnParallelFor(
      p.num_threads, p.batch * blocks, kPackRows * k_len * n_sp,
      [&](int64_t begin, int64_t end, int thread) {
        float* part = parts + thread * TransposedPartFloats(p);
        for (int64_t u = begin; u < end; ++u) {
          const int64_t img = u / blocks, cb = u % blocks;
          const int64_t channels = std::min(kPackRows, m - cb * kPackRows);
          const int nv = static_cast<int>((channels + 7) / 8);
          float bias_block[kPackRows] = {};
          if (bias != nullptr) {
            std::copy(bias + cb * kPackRows, bias + cb * kPackRows + channels, bias_block);
          }
          const float* xi = x + img * k_len * n_sp;
          float* yb = y + (img * m + cb * kPackRows) * n_sp;
          const float* bp = packed + cb * kPackRows * k_len;
          for (int64_t k0 = 0; k0 < k_len; k0 += kTkc) {
            const int64_t k1 = std::min(k_len, k0 + kTkc);
            for (int64_t q0 = 0; q0 < n_sp; q0 += kTp) {
              const int np = static_cast<int>(std::min<int64_t>(kTp, n_sp - q0));
              kTransposedTiles[np - 1][nv - 1](
                  k1 - k0, xi + k0 * n_sp + q0, n_sp, bp + k0 * kPackRows, k0 == 0, bias_block,
                  k1 == k_len, act, part + q0 * kPackRows, yb + q0, n_sp, channels);
            }
          }
        }
      });
}

}  // namespace

bool ConvF32HasAvx2() { return Cpu().avx2 && Cpu().fma && !Cpu().avx512f; }

namespace internal {

QCC_AVX2_FMA void CopyEvenAvx2(const float* src, int64_t n, float* dst) {
  int64_t i = 0;
  // 16 floats read per 8 written: while the last of them, src[2 i + 15], is at most
  // src[2 (n - 1)].
  for (; i + 8 < n; i += 8) {
    const __m256 a = _mm256_loadu_ps(src + 2 * i), b = _mm256_loadu_ps(src + 2 * i + 8);
    // [a0 a2 b0 b2 | a4 a6 b4 b6] -> [a0 a2 a4 a6 b0 b2 b4 b6]
    const __m256 even = _mm256_shuffle_ps(a, b, 0x88);
    _mm256_storeu_ps(dst + i,
                     _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), 0xD8)));
  }
  for (; i < n; ++i) dst[i] = src[2 * i];
}

}  // namespace internal

int64_t ConvF32Avx2PackedSize(const ConvF32Params& p) {
  const Geometry g = GeometryOf(p);
  return p.groups * GroupPackedFloats(g.mg, g.k);
}

void PackConvF32Avx2(const ConvF32Params& p, const float* w, float* packed) {
  internal::PackWeightRowBlocks(p, w, kPackRows, packed);
}

int64_t ConvF32Avx2ColumnsSize(const ConvF32Params& p) {
  if (UseTransposed(p)) return std::max(1, p.num_threads) * TransposedPartFloats(p);
  if (UseImplicit(p)) return std::max(1, p.num_threads) * ImplicitGeometryOf(p).window;
  return std::max(1, p.num_threads) * ColumnFloats(GeometryOf(p));
}

int64_t ConvF32Avx2WorkspaceSize(const ConvF32Params& p) {
  return ConvF32Avx2PackedSize(p) + ConvF32Avx2ColumnsSize(p);
}

void ConvF32Avx2(const ConvF32Params& p, const float* x, const float* w, const float* bias,
                 float* y, float* workspace) {
  if (p.batch == 0 || p.out_size() == 0 || p.out_channels == 0) return;
  PackConvF32Avx2(p, w, workspace);
  ConvF32Avx2Packed(p, x, workspace, bias, y, workspace + ConvF32Avx2PackedSize(p));
}

void ConvF32Avx2Packed(const ConvF32Params& p, const float* x, const float* packed,
                       const float* bias, float* y, float* columns) {
  if (p.batch == 0 || p.out_size() == 0 || p.out_channels == 0) return;
  if (UseTransposed(p)) {
    TransposedConv(p, x, packed, bias, y, columns);
    return;
  }
  if (UseImplicit(p)) {
    ImplicitConv(p, x, packed, bias, y, columns);
    return;
  }
  const Geometry g = GeometryOf(p);
  const int64_t in_sp = p.in_size(), out_sp = p.out_size(), row_len = g.row_len;
  const ActivationF32* act = p.activation.is_identity() ? nullptr : &p.activation;
  const int64_t col_floats = ColumnFloats(g);
  const int64_t units = p.batch * p.groups * g.bands * g.m_chunks;
  const int64_t cost = g.m_chunk_blocks * kMr * g.k * g.band_rows * row_len / 8;
  NnParallelFor(p.num_threads, units, cost, [&](int64_t begin, int64_t end, int thread) {
    float* col = columns + thread * col_floats;
    for (int64_t u = begin; u < end; ++u) {
      const int64_t mc = u % g.m_chunks, band = u / g.m_chunks % g.bands;
      const int64_t grp = u / (g.m_chunks * g.bands) % p.groups;
      const int64_t n = u / (g.m_chunks * g.bands * p.groups);
      const int64_t mb0 = mc * g.m_chunk_blocks;
      const int64_t mb1 = std::min(g.m_blocks, mb0 + g.m_chunk_blocks);
      const int64_t r0 = band * g.band_rows, r1 = std::min(g.rows, r0 + g.band_rows);
      const int64_t cols = (r1 - r0) * row_len;
      const float* xg = x + (n * p.in_channels + grp * g.cg) * in_sp;
      float* yg = y + (n * p.out_channels + grp * g.mg) * out_sp + r0 * row_len;
      const float* ag = packed + grp * GroupPackedFloats(g.mg, g.k);
      const float* bg = bias != nullptr ? bias + grp * g.mg : nullptr;
      const float* b = xg + r0 * row_len;
      int64_t ldb = in_sp;
      if (!g.pointwise) {
        // Rows padded with zeros to whole tiles, so that every tile reads all its columns.
        const int64_t padded = WholeTiles(cols);
        ldb = OddLineStride(padded);
        internal::Im2colRowsF32(p, g.cg, xg, r0, r1, col, ldb, 0, 1);
        for (int64_t kk = 0; kk < g.k; ++kk) {
          std::fill(col + kk * ldb + cols, col + kk * ldb + padded, 0.0f);
        }
        b = col;
      }
      if (g.pointwise) {
        // x's columns of the band, k rows in_sp apart, as panels of kNr columns: panel j/kNr is
        // k rows of kNr (zero past the last column), one stream for its tiles to read.
        for (int64_t j = 0; j < cols; j += kNr) {
          const int64_t width = std::min(kNr, cols - j);
          float* panel = col + j * g.k;
          for (int64_t kk = 0; kk < g.k; ++kk) {
            std::copy(b + kk * ldb + j, b + kk * ldb + j + width, panel + kk * kNr);
            std::fill(panel + kk * kNr + width, panel + (kk + 1) * kNr, 0.0f);
          }
        }
      }
      // Tile (mb, j) over k in [k0, k1): the activation after the last chunk only.
      auto tile = [&](int64_t mb, int64_t j, int64_t k0, int64_t k1) {
        const int64_t rows = std::min(kMr, g.mg - mb * kMr);
        const int64_t width = std::min(kNr, cols - j);
        const float* bk = g.pointwise ? col + j * g.k + k0 * kNr : b + k0 * ldb + j;
        kTiles[(width + 7) / 8 - 1][rows](
            k1 - k0, TileWeights(ag, mb, g.k) + k0 * kPackRows, kPackRows, bk,
            g.pointwise ? kNr : ldb, k0 == 0, bg != nullptr ? bg + mb * kMr : nullptr,
            k1 == g.k ? act : nullptr, yg + mb * kMr * out_sp + j, out_sp, width);
      };
      // GEMM blocking: k in chunks whose kKc x kNr block of b stays in L1 while a group of
      // kMc weight blocks (kKc x kMr each, together in L2) passes over it; every column tile
      // then reuses that group from L2.
      for (int64_t k0 = 0; k0 < g.k; k0 += kKc) {
        const int64_t k1 = std::min(g.k, k0 + kKc);
        for (int64_t ib = mb0; ib < mb1; ib += kMc) {
          const int64_t ie = std::min(mb1, ib + kMc);
          for (int64_t j = 0; j < cols; j += kNr) {
            for (int64_t mb = ib; mb < ie; ++mb) tile(mb, j, k0, k1);
          }
        }
      }
    }
  });
}

}  // namespace qcc::cpu
