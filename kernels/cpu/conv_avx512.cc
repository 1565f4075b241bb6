// AVX-512 path of the fp32 convolution: a register-tiled GEMM microkernel that writes y in
// place, bias and fused activation included, reading either an im2col band in a per-thread buffer
// or, for stride-1 convolutions whose output rows are whole vectors, the input itself ("implicit
// im2col").
//
// Why not sgemm: the convolutions of small CNNs are many small products (M = 16..64 output
// channels, K = C*kh*kw = 27..576, N = one image's output positions), where a BLAS spends much
// of its time packing the im2col matrix it was handed. The microkernel instead streams the
// im2col rows as they are (N is contiguous in them) and keeps an 8 x 32 (or 8 x 48) block of y in
// 16 (24) zmm accumulators for the whole K loop; only the small weight matrix is packed, once per
// call.
// Implicit im2col: with stride 1, the im2col row of tap t over 16 consecutive outputs of one
// output row is 16 consecutive inputs, shifted, with the lanes outside the input masked to 0;
// so the microkernel loads them straight from x and no im2col buffer is written at all.
// Work is split by (image, group, band of rows, block of output channels), one thread per
// piece, so no BLAS threading is needed.
//
// Compiled for any x86-64: only the functions marked QCC_AVX512 use AVX-512, and ConvF32 calls
// this path only when the CPU reports avx512f. The depthwise path is conv_depthwise_avx512.cc,
// the 1x1 path on small maps (output channels in the lanes) conv_pointwise_avx512.cc.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv_avx512_internal.h"
#include "kernels/cpu/conv_internal.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/lane_masks.h"
#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/round_half_avx512.h"

namespace qcc::cpu {

namespace {

constexpr int64_t kMr = 8;       // output channels per tile
constexpr int64_t kNr = 32;      // output positions per tile (two zmm) ...
constexpr int64_t kNrWide = 48;  // ... or three (WideTiles)
constexpr int64_t kMaxImplicitTaps = 64;
constexpr int64_t kMaxStridedChannels = 4;  // most input channels per group of TileStrided
constexpr int64_t kStridedSplitFloats = int64_t{1} << 14;  // a band's split input (64 KiB)
// im2col buffer per thread: a quarter of a 2 MiB L2, so it stays cached for the GEMM.
constexpr int64_t kColFloatsPerThread = int64_t{1} << 17;
// Floats of b a band of columns spans across the blocks of weights (64 KiB).
constexpr int64_t kColBandFloats = int64_t{1} << 14;

using internal::Activate;
using internal::ClampBelow;
using internal::ClampsBelowOnly;
using internal::OddLineStride;
using internal::RoundToHalfV;

/// The lanes of a tile's vectors of positions that are inside y: vector v's 16 bits at bit 16v.
/// One 64-bit word, not three 16-bit masks: a tile's arguments go on the stack, and a struct
/// stored there 16 bits at a time and read back wider stalled each call on store forwarding
/// (squeezenet's 1 x 1 layers with 16 and 32 input channels ran 11-16% slower).
struct ColumnMasks {
  uint64_t bits;
  __mmask16 m(int v) const { return static_cast<__mmask16>(bits >> (16 * v)); }
};

struct Geometry {
  int64_t cg, mg, k, kvol, m_blocks, m_chunks, m_chunk_blocks;
  // The output positions of one image as `rows` rows of `row_len`, split into `bands` bands of
  // `band_rows` rows. A pointwise or implicit-im2col convolution's positions are one flat run
  // (row_len 1), so its bands can end on whole tiles.
  int64_t rows, row_len, band_rows, bands;
  int64_t nr;  // positions per tile: kNr or kNrWide
  // implicit: stride 1, read from x; strided: stride 2 along x, read from x (TileStrided).
  bool pointwise, implicit, strided;
  int64_t units(int64_t batch, int64_t groups) const { return batch * groups * bands * m_chunks; }
};

/// Whether tiles span kNrWide positions: 8 x 48 blocks, each weight broadcast shared by three
/// FMAs instead of two, and the block's stores and prefetches spread over more of them. Where
/// their empty lanes stay within 3% of the narrow tiles' (a 27x27 map fills 729 of 768, not of
/// 736) on im2col and pointwise layers, and from 1024 positions and 64 output channels per group
/// on implicit-im2col ones (its tile reads a third load offset and mask per tap; 3% slower on
/// resnet20's 32x32 16-channel layers). Measured against 8 x 32 everywhere: efficientnet-lite0
/// batch 32 at 2 threads 3% faster, batch 1 and squeezenet within 1%; per layer from -5%
/// (squeezenet's 55x55 3x3, efficientnet-lite0's project convs) to +3% (its expand convs).
bool WideTiles(const ConvF32Params& p) {
  const int64_t n = p.out_size();
  const bool implicit_path =
      !p.IsPointwise() && p.stride[0] == 1 && p.stride[1] == 1 && p.stride[2] == 1;
  if (implicit_path) return n >= 1024 && p.out_channels / p.groups >= 64;
  const int64_t lanes32 = (n + 31) / 32 * 32, lanes48 = (n + 47) / 48 * 48;
  return n >= 256 && lanes48 * 100 <= lanes32 * 103;
}

/// Whether a convolution runs strided tiles (TileStrided) rather than im2col bands: 2-D, stride
/// 2 along x, few input channels per group (the first layer, on an image), and an output that
/// stays in cache. Squeezenet's conv1 alone 0.28 -> 0.234 ms, in the model 0.29 -> 0.25 ms;
/// efficientnet-lite0's 0.18 -> 0.145 ms. Its tiles write the output a row at a time across the
/// planes; at batch 32 (51 MB of output, to memory) the im2col bands' longer runs per plane won
/// (efficientnet-lite0's stem 10.2 against 11.0 ms).
bool UseStrided(const ConvF32Params& p) {
  constexpr int64_t kMaxOutputFloats = int64_t{1} << 22;  // 16 MiB
  return p.in[0] == 1 && p.out[0] == 1 && p.kernel[0] == 1 && p.stride[2] == 2 &&
         p.dilation[2] == 1 && p.kernel_size() <= kMaxImplicitTaps &&
         p.in_channels / p.groups <= kMaxStridedChannels &&
         p.batch * p.out_channels * p.out_size() <= kMaxOutputFloats;
}

Geometry GeometryOf(const ConvF32Params& p);

/// A band's input split by columns for the strided path (SplitColumnsOf), zero-padded: per
/// channel, `rows` input rows from input row `first` (rows outside x are zeros), each as two
/// halves of `pitch` floats. In padded columns ixp = ix + pad (ix the input column), half h holds
/// the columns ixp = 2 c + h at c; so tap kx of output column ox reads column ox + kx / 2 of half
/// kx % 2, 16 outputs one plain load, and every load of a tile stays inside its row.
struct SplitBand {
  int64_t first, rows, pitch;
  int64_t half() const { return pitch; }
  int64_t row() const { return 2 * pitch; }
  int64_t channel() const { return rows * row(); }
};

SplitBand SplitBandOf(const ConvF32Params& p, int64_t r0, int64_t r1) {
  SplitBand b;
  b.pitch = (p.out[2] + 15) / 16 * 16 + (p.kernel[2] - 1) / 2;
  b.first = r0 * p.stride[1] - p.pad[1];
  b.rows = (r1 - 1 - r0) * p.stride[1] + (p.kernel[1] - 1) * p.dilation[1] + 1;
  return b;
}

/// Floats of a thread's split input for the strided path: a band's rows, every channel of a group.
int64_t StridedSplitFloats(const ConvF32Params& p, const Geometry& g) {
  return g.cg * SplitBandOf(p, 0, g.band_rows).channel();
}

Geometry GeometryOf(const ConvF32Params& p) {
  Geometry g;
  g.cg = p.in_channels / p.groups;
  g.mg = p.out_channels / p.groups;
  g.kvol = p.kernel_size();
  g.k = g.cg * g.kvol;
  g.m_blocks = (g.mg + kMr - 1) / kMr;
  g.pointwise = p.IsPointwise();
  // Implicit im2col: stride 1, and every 16-lane half of a tile within one output row or the
  // input the output's size (ImplicitTaps).
  const bool same_size = p.in[0] == p.out[0] && p.in[1] == p.out[1] && p.in[2] == p.out[2];
  g.implicit = !g.pointwise && p.stride[0] == 1 && p.stride[1] == 1 && p.stride[2] == 1 &&
               (p.out[2] % 16 == 0 || same_size) && g.kvol <= kMaxImplicitTaps;
  g.strided = !g.pointwise && !g.implicit && UseStrided(p);
  // Pointwise and implicit-im2col convolutions take their positions as one flat run: bands of
  // whole tiles (an implicit tile's vectors straddle rows only where its map allows it, and a
  // band starting on a tile keeps them so). Split by rows, squeezenet's 55x55 3x3 layers at 2
  // threads ran 4 bands of 770 positions, each ending in a tile of 2.
  const bool flat = g.pointwise || g.implicit;
  g.row_len = flat ? 1 : p.out[2];
  g.nr = WideTiles(p) ? kNrWide : kNr;
  g.rows = flat ? std::max<int64_t>(1, p.out_size()) : std::max<int64_t>(1, p.out[0] * p.out[1]);
  const int64_t threads = std::max(1, p.num_threads);
  // At least 1 and a block: an empty convolution (batch or channels 0) still gets a geometry.
  const int64_t images = std::max<int64_t>(1, p.batch * p.groups);
  g.m_chunks = 1;
  if (!g.pointwise && !g.implicit) {
    // im2col: a band's columns in a quarter of L2; strided: a band's split input in about 64 KiB,
    // in L1 and L2 while its rows are read (the whole image's split, 600 KiB for a 224 x 224
    // input, went out of cache under the output's stores: 0.32 -> 0.45 ms in squeezenet).
    g.band_rows =
        g.strided
            ? std::clamp<int64_t>(
                  kStridedSplitFloats / std::max<int64_t>(1, g.cg * (p.in[2] + 1) * p.stride[1]), 1,
                  g.rows)
            : std::clamp<int64_t>(kColFloatsPerThread / std::max<int64_t>(1, g.k * p.out[2]), 1,
                                  g.rows);
    // Bands are also the pieces the threads share (each im2cols its own): at least two each.
    const int64_t want = (2 * threads + images - 1) / images;
    if (threads > 1 && (g.rows + g.band_rows - 1) / g.band_rows < want) {
      g.band_rows = std::max<int64_t>(1, (g.rows + want - 1) / want);
      // But no band narrower than a tile: on a small map (8 x 8) bands of 16 positions left
      // half of every tile's lanes empty, twice the work of one thread (resnet20's stride-2
      // layer ran no faster on 2 threads than on 1). With fewer bands than threads the pieces
      // also split the output channels, each im2colling its band again: one piece a thread,
      // not two, as the im2col repeats for each (that layer on 2 threads: 4 pieces 13.5 us,
      // 2 pieces 9.8 us, 1 thread 17.3 us).
      g.band_rows = std::max(g.band_rows, std::min(g.rows, (g.nr + g.row_len - 1) / g.row_len));
      const int64_t bands = (g.rows + g.band_rows - 1) / g.band_rows;
      g.m_chunks = std::min(std::max<int64_t>(1, g.m_blocks), (threads + bands - 1) / bands);
    }
  } else if (threads == 1 || images >= 2 * threads) {
    g.band_rows = g.rows;  // one piece per image (and group)
  } else {
    // No im2col buffer: the output is split only to give every thread two pieces. Blocks of
    // output channels split without waste; bands of positions each end in a partial tile. So a
    // convolution with more weights than positions per channel (the late, small layers) splits
    // its channels first, and one with large planes splits its positions first (each thread
    // then reads only its part of x).
    const int64_t want = (2 * threads + images - 1) / images;
    // At least one chunk, also for no output channels (0 blocks), which the divisions below
    // need.
    const int64_t blocks = std::max<int64_t>(1, g.m_blocks);
    const bool channels_first = g.mg >= g.rows * g.row_len;
    if (channels_first) g.m_chunks = std::min(blocks, want);
    const int64_t parts = (want + g.m_chunks - 1) / g.m_chunks;
    g.band_rows = std::max<int64_t>(1, (g.rows + parts - 1) / parts);
    // A pointwise band is a whole number of tiles.
    if (flat) g.band_rows = std::min(g.rows, (g.band_rows + g.nr - 1) / g.nr * g.nr);
    if (!channels_first) {
      const int64_t bands = (g.rows + g.band_rows - 1) / g.band_rows;
      g.m_chunks = std::min(blocks, (want + bands - 1) / bands);
    }
  }
  g.bands = (g.rows + g.band_rows - 1) / g.band_rows;
  g.m_chunk_blocks = std::max<int64_t>(1, (g.m_blocks + g.m_chunks - 1) / g.m_chunks);
  g.m_chunks = (g.m_blocks + g.m_chunk_blocks - 1) / g.m_chunk_blocks;
  return g;
}

// The 8 x 16NV accumulator block shared by both tiles: c<r><h> holds row r, columns 16h..16h+15.
// Each row's weight is broadcast once into a register that its two FMAs share (a memory operand
// with an embedded broadcast in each FMA was 4% faster on a one-FMA-port Intel core, and is
// 15-35% slower on a 2-core AMD EPYC with AVX-512: bench/fp32_conv_bench).
#define QCC_INIT(r)                                                                           \
  __m512 c##r##0 = bias != nullptr && r < MR ? _mm512_set1_ps(bias[r]) : _mm512_setzero_ps(); \
  __m512 c##r##1 = c##r##0, c##r##2 = c##r##0;
#define QCC_INIT_ALL \
  QCC_INIT(0) QCC_INIT(1) QCC_INIT(2) QCC_INIT(3) QCC_INIT(4) QCC_INIT(5) QCC_INIT(6) QCC_INIT(7)
#define QCC_FMA(r)                                          \
  {                                                         \
    const __m512 ar = _mm512_set1_ps(ap[r]);                \
    c##r##0 = _mm512_fmadd_ps(ar, b0, c##r##0);             \
    if (NV > 1) c##r##1 = _mm512_fmadd_ps(ar, b1, c##r##1); \
    if (NV > 2) c##r##2 = _mm512_fmadd_ps(ar, b2, c##r##2); \
  }
#define QCC_FMA_ALL \
  QCC_FMA(0) QCC_FMA(1) QCC_FMA(2) QCC_FMA(3) QCC_FMA(4) QCC_FMA(5) QCC_FMA(6) QCC_FMA(7)
#define QCC_ACT(r)                                          \
  if (r < MR) {                                             \
    c##r##0 = Activate(c##r##0, lo, hi, slope);             \
    if (NV > 1) c##r##1 = Activate(c##r##1, lo, hi, slope); \
    if (NV > 2) c##r##2 = Activate(c##r##2, lo, hi, slope); \
  }
// Adds the residual (rc: at the tile's place in the residual, null: none) to the block.
#define QCC_RES(r)                                                                    \
  if (r < MR) {                                                                       \
    c##r##0 = _mm512_add_ps(c##r##0, _mm512_maskz_loadu_ps(m0, rc + r * ldc));        \
    if (NV > 1) {                                                                     \
      c##r##1 = _mm512_add_ps(c##r##1, _mm512_maskz_loadu_ps(m1, rc + r * ldc + 16)); \
    }                                                                                 \
    if (NV > 2) {                                                                     \
      c##r##2 = _mm512_add_ps(c##r##2, _mm512_maskz_loadu_ps(m2, rc + r * ldc + 32)); \
    }                                                                                 \
  }
#define QCC_RES_ALL                                                                         \
  if (rc != nullptr) {                                                                      \
    QCC_RES(0) QCC_RES(1) QCC_RES(2) QCC_RES(3) QCC_RES(4) QCC_RES(5) QCC_RES(6) QCC_RES(7) \
  }
#define QCC_ROUND(r)                             \
  if (r < MR) {                                  \
    c##r##0 = RoundToHalfV(c##r##0);             \
    if (NV > 1) c##r##1 = RoundToHalfV(c##r##1); \
    if (NV > 2) c##r##2 = RoundToHalfV(c##r##2); \
  }
#define QCC_CLAMP(r)                               \
  if (r < MR) {                                    \
    c##r##0 = ClampBelow(c##r##0, lo);             \
    if (NV > 1) c##r##1 = ClampBelow(c##r##1, lo); \
    if (NV > 2) c##r##2 = ClampBelow(c##r##2, lo); \
  }
// Applies `act` (null: none) to the block, once per tile after the whole K loop; a ReLU as one
// max a register (ClampBelow; the four operations of Activate were a tenth of the FP work of
// a tile with K = 16). Then, for an fp16 model, each value rounded to fp16 (RoundToHalfV).
#define QCC_ACT_ALL                                                                              \
  if (act != nullptr) {                                                                          \
    const __m512 lo = _mm512_set1_ps(act->lo);                                                   \
    if (ClampsBelowOnly(*act)) {                                                                 \
      QCC_CLAMP(0)                                                                               \
      QCC_CLAMP(1) QCC_CLAMP(2) QCC_CLAMP(3) QCC_CLAMP(4) QCC_CLAMP(5) QCC_CLAMP(6) QCC_CLAMP(7) \
    } else {                                                                                     \
      const __m512 hi = _mm512_set1_ps(act->hi);                                                 \
      const __m512 slope = _mm512_set1_ps(act->negative_slope);                                  \
      QCC_ACT(0) QCC_ACT(1) QCC_ACT(2) QCC_ACT(3) QCC_ACT(4) QCC_ACT(5) QCC_ACT(6) QCC_ACT(7)    \
    }                                                                                            \
    if (act->round_to_f16) {                                                                     \
      QCC_ROUND(0)                                                                               \
      QCC_ROUND(1) QCC_ROUND(2) QCC_ROUND(3) QCC_ROUND(4) QCC_ROUND(5) QCC_ROUND(6) QCC_ROUND(7) \
    }                                                                                            \
  }
#define QCC_STORE(r)                                                  \
  if (r < MR) {                                                       \
    _mm512_mask_storeu_ps(c + r * ldc, m0, c##r##0);                  \
    if (NV > 1) _mm512_mask_storeu_ps(c + r * ldc + 16, m1, c##r##1); \
    if (NV > 2) _mm512_mask_storeu_ps(c + r * ldc + 32, m2, c##r##2); \
  }
#define QCC_STORE_ALL \
  QCC_STORE(0)        \
  QCC_STORE(1) QCC_STORE(2) QCC_STORE(3) QCC_STORE(4) QCC_STORE(5) QCC_STORE(6) QCC_STORE(7)

// The next tile's place in c (32 NV columns on, each of the MR rows), for writing.
#define QCC_PREFETCH_NEXT_C                               \
  for (int r = 0; r < MR; ++r) {                          \
    PrefetchAt<1>(c, r * ldc + 32 * NV);                  \
    PrefetchAt<1>(c, r * ldc + 32 * NV + 16);             \
    if (NV > 2) PrefetchAt<1>(c, r * ldc + 32 * NV + 32); \
  }

// Tile's K loop, the 16NV columns of b's row k read by LOAD(mask, at).
#define QCC_LOAD_WHOLE(m, at) _mm512_loadu_ps(at)
#define QCC_LOAD_MASKED(m, at) _mm512_maskz_loadu_ps(m, at)
#define QCC_TILE_K_LOOP(LOAD)                                          \
  for (int64_t k = 0; k < k_len; ++k, ap += kMr, b += ldb) {           \
    PrefetchAt(b, 32 * NV);                                            \
    PrefetchAt(b, 32 * NV + 16);                                       \
    if (NV > 2) PrefetchAt(b, 32 * NV + 32);                           \
    const __m512 b0 = LOAD(m0, b);                                     \
    const __m512 b1 = LOAD(m1, b + 16);                                \
    const __m512 b2 = NV > 2 ? LOAD(m2, b + 32) : _mm512_setzero_ps(); \
    QCC_FMA_ALL                                                        \
  }

/// c[r, 0:16NV) = act(bias[r] + sum_k ap[k, r] * b[k, 0:16NV) + rc[r, 0:16NV)) for r < MR,
/// columns masked by masks.m(v) (16v..16v+15); `act` null is the identity, `rc` (the residual at
/// the tile's place, row stride ldc) null adds nothing. `ap` holds 8 packed rows per k (rows >= MR
/// are zero padding).
template <int MR, int NV>
QCC_AVX512 void Tile(int64_t k_len, const float* ap, const float* b, int64_t ldb, const float* bias,
                     const float* rc, const ActivationF32* act, float* c, int64_t ldc,
                     ColumnMasks masks) {
  const __mmask16 m0 = masks.m(0), m1 = masks.m(1), m2 = masks.m(2);
  QCC_INIT_ALL
  QCC_PREFETCH_NEXT_C
  // A tile with every lane inside y (all but a band's last) loads plainly: on Zen 4 the masked
  // loads made efficientnet-lite0's pointwise layers 5-8% slower (fp32_conv_bench, 1 thread:
  // 32 -> 16 on 112 x 112 139 -> 129 us, 24 -> 144 on 56 x 56 237 -> 224 us).
  if ((~masks.bits & LowBits64(16 * NV)) == 0) {
    QCC_TILE_K_LOOP(QCC_LOAD_WHOLE)
  } else {
    QCC_TILE_K_LOOP(QCC_LOAD_MASKED)
  }
  QCC_RES_ALL
  QCC_ACT_ALL
  QCC_STORE_ALL
}

/// Where the 16-lane vectors of a tile (two, or three in a wide one) read one kernel tap in
/// channel 0 of x, and which of their lanes fall inside x.
struct TapLoad {
  int64_t off[3];
  __mmask16 mask[3];
};

/// The same block as Tile, with k = (channel, tap) read straight from x: vector h of tap t of
/// channel ci is the masked load at x + ci * in_sp + taps[t].off[h]. Channel-major, so the few
/// input lines of one channel are reused by all its taps while in L1 (tap-major order strides
/// over channel planes, which alias to the same L1 sets when a plane is a multiple of 4 KiB).
template <int MR, int NV>
QCC_AVX512 void TileImplicit(int64_t kvol, int64_t cg, int64_t in_sp, const float* x,
                             const TapLoad* taps, const float* ap, const float* bias,
                             const float* rc, const ActivationF32* act, float* c, int64_t ldc,
                             ColumnMasks masks) {
  const __mmask16 m0 = masks.m(0), m1 = masks.m(1), m2 = masks.m(2);
  QCC_INIT_ALL
  QCC_PREFETCH_NEXT_C
  for (int64_t ci = 0; ci < cg; ++ci, x += in_sp) {
    for (int64_t t = 0; t < kvol; ++t, ap += kMr) {
      const __mmask16 k0 = taps[t].mask[0], k1 = taps[t].mask[1];
      const __mmask16 k2 = NV > 2 ? taps[t].mask[2] : 0;
      if ((k0 | k1 | k2) == 0) continue;  // the whole tap reads padding
      const __m512 b0 = _mm512_maskz_loadu_ps(k0, x + taps[t].off[0]);
      const __m512 b1 = _mm512_maskz_loadu_ps(k1, x + taps[t].off[1]);
      const __m512 b2 =
          NV > 2 ? _mm512_maskz_loadu_ps(k2, x + taps[t].off[2]) : _mm512_setzero_ps();
      QCC_FMA_ALL
    }
  }
  QCC_RES_ALL
  QCC_ACT_ALL
  QCC_STORE_ALL
}

/// The same block as Tile for the strided path (stride 2 along x), with k = (channel, tap) read
/// from a band's zero-padded split input (SplitColumnsOf), where a tap's inputs for the 16NV
/// outputs of a row are 16NV consecutive floats of one half: instead of an im2col band written
/// and read back 8 output channels at a time (the first layer of an ImageNet CNN, on 3 channels,
/// spent a fifth of its time on that, more in a model, where x is not in cache). Vector h of tap
/// t of channel ci is the 16 floats at x + ci * chan + off[t] + 16 h, all inside the band, so no
/// masks: padding reads its zeros, as im2col's do. TileImplicit's masked loads on the unpadded
/// split (an offset and a mask per vector and tap, and a test for taps wholly in the padding)
/// were 38 instructions per 16 FMAs; squeezenet1.1's conv1 alone 385 -> 361 us on 1 thread,
/// 232 -> 203 on 2, efficientnet-lite0's stem 203 -> 199 and 116 -> 104 (AVX-512 Xeon).
template <int MR, int NV>
QCC_AVX512 void TileStrided(int64_t kvol, int64_t cg, int64_t chan, const float* x,
                            const int64_t* off, const float* ap, const float* bias, const float* rc,
                            const ActivationF32* act, float* c, int64_t ldc, ColumnMasks masks) {
  const __mmask16 m0 = masks.m(0), m1 = masks.m(1), m2 = masks.m(2);
  QCC_INIT_ALL
  QCC_PREFETCH_NEXT_C
  for (int64_t ci = 0; ci < cg; ++ci, x += chan) {
    for (int64_t t = 0; t < kvol; ++t, ap += kMr) {
      const float* xt = x + off[t];
      const __m512 b0 = _mm512_loadu_ps(xt);
      const __m512 b1 = NV > 1 ? _mm512_loadu_ps(xt + 16) : _mm512_setzero_ps();
      const __m512 b2 = NV > 2 ? _mm512_loadu_ps(xt + 32) : _mm512_setzero_ps();
      QCC_FMA_ALL
    }
  }
  QCC_RES_ALL
  QCC_ACT_ALL
  QCC_STORE_ALL
}

#undef QCC_INIT
#undef QCC_INIT_ALL
#undef QCC_LOAD_WHOLE
#undef QCC_LOAD_MASKED
#undef QCC_TILE_K_LOOP
#undef QCC_PREFETCH_NEXT_C
#undef QCC_RES
#undef QCC_RES_ALL
#undef QCC_FMA
#undef QCC_FMA_ALL
#undef QCC_STORE
#undef QCC_ACT
#undef QCC_CLAMP
#undef QCC_ACT_ALL
#undef QCC_ROUND
#undef QCC_STORE_ALL

using TileFn = void (*)(int64_t, const float*, const float*, int64_t, const float*, const float*,
                        const ActivationF32*, float*, int64_t, ColumnMasks);
// A row of a dispatch table: tile template T for 1..8 rows of NV vectors (index 0: none).
#define QCC_TILES_BY_ROWS(T, NV) \
  { nullptr, T<1, NV>, T<2, NV>, T<3, NV>, T<4, NV>, T<5, NV>, T<6, NV>, T<7, NV>, T<8, NV> }
// [wide][rows]: tiles of kNr (wide 0) or kNrWide positions.
constexpr TileFn kTiles[2][kMr + 1] = {QCC_TILES_BY_ROWS(Tile, 2), QCC_TILES_BY_ROWS(Tile, 3)};
using ImplicitTileFn = void (*)(int64_t, int64_t, int64_t, const float*, const TapLoad*,
                                const float*, const float*, const float*, const ActivationF32*,
                                float*, int64_t, ColumnMasks);
constexpr ImplicitTileFn kImplicitTiles[2][kMr + 1] = {QCC_TILES_BY_ROWS(TileImplicit, 2),
                                                       QCC_TILES_BY_ROWS(TileImplicit, 3)};

using StridedTileFn = void (*)(int64_t, int64_t, int64_t, const float*, const int64_t*,
                               const float*, const float*, const float*, const ActivationF32*,
                               float*, int64_t, ColumnMasks);
// [vectors - 1][rows]: the strided path's tiles of one to three vectors.
constexpr StridedTileFn kStridedTiles[3][kMr + 1] = {QCC_TILES_BY_ROWS(TileStrided, 1),
                                                     QCC_TILES_BY_ROWS(TileStrided, 2),
                                                     QCC_TILES_BY_ROWS(TileStrided, 3)};
#undef QCC_TILES_BY_ROWS

/// The strided tiles of an output row: its vectors of 16 outputs split as evenly as they go into
/// tiles of at most 3 (a row of 111 as 48 + 32 + 32 outputs, not 48 + 48 + 16, whose tile of one
/// vector ran its 8 chains of FMAs at a fraction of the rate); tile t's first vector.
std::vector<int64_t> StridedTileStarts(int64_t out_w) {
  const int64_t vectors = (out_w + 15) / 16, tiles = (vectors + 2) / 3;
  std::vector<int64_t> starts(tiles + 1, 0);
  for (int64_t t = 0; t < tiles; ++t)
    starts[t + 1] = starts[t] + vectors / tiles + (t < vectors % tiles);
  return starts;
}

/// Channels [0, cg) of x's rows [b.first, b.first + b.rows) into b's zero-padded layout.
QCC_AVX512 void SplitColumnsOf(const ConvF32Params& p, int64_t cg, const float* x,
                               const SplitBand& b, float* split) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const int64_t w = p.in[2], pad = p.pad[2];
  for (int64_t ci = 0; ci < cg; ++ci) {
    for (int64_t r = 0; r < b.rows; ++r) {
      float* e = split + ci * b.channel() + r * b.row();
      float* o = e + b.half();
      const int64_t iy = b.first + r;
      if (iy < 0 || iy >= p.in[1]) {
        std::fill(e, e + b.row(), 0.0f);
        continue;
      }
      const float* row = x + ci * p.in_size() + iy * w;
      // The same row of the next band, which a band's work hides: x is often a model's input,
      // not in cache, and a band's few rows per channel are too short a run for the hardware's
      // prefetch.
      if (iy + b.rows < p.in[1]) PrefetchLines(row, b.rows * w, w);
      for (int64_t c = 0; c < b.pitch; c += 16) {
        // Lane j of the pair: input column 2 c - pad + j; zero outside the row.
        const int64_t ix = 2 * c - pad;
        const __m512 lo = _mm512_maskz_loadu_ps(LaneRange16(-ix, w - ix), row + ix);
        const __m512 hi = _mm512_maskz_loadu_ps(LaneRange16(-ix - 16, w - ix - 16), row + ix + 16);
        const __mmask16 m = LowBits16(b.pitch - c);
        _mm512_mask_storeu_ps(e + c, m, _mm512_permutex2var_ps(lo, even, hi));
        _mm512_mask_storeu_ps(o + c, m, _mm512_permutex2var_ps(lo, odd, hi));
      }
    }
  }
}

/// Where tap t (row-major over the kernel) of output row oy reads in band b's split input, for
/// the row's first output; a tile at output column ox0 adds ox0.
void StridedTaps(const ConvF32Params& p, int64_t oy, const SplitBand& b, int64_t* off) {
  const int64_t kw = p.kernel[2];
  const int64_t row0 = oy * p.stride[1] - p.pad[1] - b.first;
  for (int64_t ky = 0, t = 0; ky < p.kernel[1]; ++ky) {
    const int64_t r = row0 + ky * p.dilation[1];
    for (int64_t kx = 0; kx < kw; ++kx, ++t) off[t] = r * b.row() + (kx % 2) * b.half() + kx / 2;
  }
}

/// Store masks of the tile starting at column j of `cols` (its first 48 columns at most).
ColumnMasks MasksAt(int64_t j, int64_t cols) {
  return ColumnMasks{(uint64_t{1} << std::clamp<int64_t>(cols - j, 0, 48)) - 1};
}

/// The loads of every tap for the tile whose first output (flattened over depth, height,
/// width) is `q`, `n_valid` outputs long. With stride 1, lane l of a half reads the input one
/// element after lane l-1 when the two outputs share a row, or when the input has the output's
/// extents (a "same"-padded convolution), whose rows follow each other alike; so each tap of a
/// half is one masked load from lane 0's input position, the lanes outside x masked off.
void ImplicitTaps(const ConvF32Params& p, int64_t q, int64_t n_valid, int64_t nv, TapLoad* taps) {
  const int64_t ow = p.out[2], oh = p.out[1];
  for (int64_t h = 0; h < nv; ++h) {
    const int64_t qh = q + 16 * h;
    const int64_t lanes = std::clamp<int64_t>(n_valid - 16 * h, 0, 16);
    const int64_t first[3] = {qh / (oh * ow), qh / ow % oh, qh % ow};  // lane 0's output
    // Per axis and kernel offset, the lanes whose input coordinate lies inside x.
    uint32_t axis_mask[3][kMaxImplicitTaps] = {};
    // The half's lanes run along output rows: a segment of lanes per row shares its depth and
    // height, and its width is a range, so each axis and kernel offset gets a range of lanes
    // per segment (lane by lane with divisions, this was most of mnist-8's 5 x 5 convolutions).
    int64_t pos[3] = {first[0], first[1], first[2]};
    for (int64_t l = 0; l < lanes;) {
      const int64_t seg = std::min(lanes - l, ow - pos[2]);
      const uint32_t bits = ((1u << seg) - 1) << l;
      for (int a = 0; a < 2; ++a) {
        for (int64_t k = 0; k < p.kernel[a]; ++k) {
          const int64_t i = pos[a] - p.pad[a] + k * p.dilation[a];
          if (i >= 0 && i < p.in[a]) axis_mask[a][k] |= bits;
        }
      }
      for (int64_t k = 0; k < p.kernel[2]; ++k) {
        const int64_t ix = pos[2] - p.pad[2] + k * p.dilation[2];
        const int64_t lo = std::max<int64_t>(0, -ix), hi = std::min<int64_t>(seg, p.in[2] - ix);
        if (lo < hi) axis_mask[2][k] |= (((1u << hi) - 1) & ~((1u << lo) - 1)) << l;
      }
      l += seg;
      pos[2] = 0;
      if (++pos[1] == oh) {
        pos[1] = 0;
        ++pos[0];
      }
    }
    int64_t t = 0;
    for (int64_t kz = 0; kz < p.kernel[0]; ++kz) {
      const int64_t iz = first[0] - p.pad[0] + kz * p.dilation[0];
      for (int64_t ky = 0; ky < p.kernel[1]; ++ky) {
        const int64_t iy = first[1] - p.pad[1] + ky * p.dilation[1];
        for (int64_t kx = 0; kx < p.kernel[2]; ++kx, ++t) {
          const int64_t ix = first[2] - p.pad[2] + kx * p.dilation[2];
          const uint32_t mask = axis_mask[0][kz] & axis_mask[1][ky] & axis_mask[2][kx];
          taps[t].mask[h] = static_cast<__mmask16>(mask);
          taps[t].off[h] = mask != 0 ? (iz * p.in[1] + iy) * p.in[2] + ix : 0;
        }
      }
    }
  }
}

}  // namespace

bool ConvF32HasAvx512() { return Cpu().avx512f; }

bool ConvF32Avx512PackingDependsOnExtents(const ConvF32Params& p) {
  // UseTransposedAvx512's conditions that do not read extents, strides or pads.
  return p.kernel_size() == 1 && p.groups == 1 && p.out_channels >= 64 && p.in_channels >= 64;
}

int64_t ConvF32Avx512PackedSize(const ConvF32Params& p) {
  if (internal::UseWinogradAvx512(p)) return internal::WinogradPackedSizeAvx512(p);
  if (internal::UseTransposedAvx512(p)) return internal::TransposedPackedSizeAvx512(p);
  const Geometry g = GeometryOf(p);
  return p.groups * g.m_blocks * kMr * g.k;
}

void PackConvF32Avx512(const ConvF32Params& p, const float* w, float* packed) {
  if (internal::UseWinogradAvx512(p)) {
    internal::PackWinogradAvx512(p, w, packed);
    return;
  }
  if (internal::UseTransposedAvx512(p)) {
    internal::PackTransposedAvx512(p, w, packed);
    return;
  }
  internal::PackWeightRowBlocks(p, w, kMr, packed);
}

int64_t ConvF32Avx512ColumnsSize(const ConvF32Params& p) {
  if (internal::UseWinogradAvx512(p)) return internal::WinogradScratchSizeAvx512(p);
  if (internal::UseTransposedAvx512(p)) return 0;
  const Geometry g = GeometryOf(p);
  const int64_t col = g.pointwise || g.implicit ? 0
                      : g.strided               ? StridedSplitFloats(p, g)
                                                : g.k * OddLineStride(g.band_rows * p.out[2]);
  return std::max(1, p.num_threads) * col;
}

int64_t ConvF32Avx512WorkspaceSize(const ConvF32Params& p) {
  return ConvF32Avx512PackedSize(p) + ConvF32Avx512ColumnsSize(p);
}

void ConvF32Im2colAvx512(const ConvF32Params& p, const float* x, const float* w, const float* bias,
                         float* y, float* workspace) {
  if (p.batch == 0 || p.out_size() == 0 || p.out_channels == 0) return;
  PackConvF32Avx512(p, w, workspace);
  ConvF32Im2colAvx512Packed(p, x, workspace, bias, y, workspace + ConvF32Avx512PackedSize(p));
}

void ConvF32Im2colAvx512Packed(const ConvF32Params& p, const float* x, const float* packed,
                               const float* bias, float* y, float* columns) {
  if (internal::UseWinogradAvx512(p)) {
    internal::ConvF32WinogradAvx512(p, x, packed, bias, y, columns);
    return;
  }
  if (internal::UseTransposedAvx512(p)) {
    internal::ConvF32PointwiseTransposedAvx512(p, x, packed, bias, y);
    return;
  }
  const Geometry g = GeometryOf(p);
  const int64_t in_sp = p.in_size(), out_sp = p.out_size(), ow = g.row_len;
  if (p.batch == 0 || out_sp == 0 || p.out_channels == 0) return;
  float* col_base = columns;
  const ActivationF32* act = p.activation.is_identity() ? nullptr : &p.activation;
  const int64_t col_floats =
      g.strided ? StridedSplitFloats(p, g) : g.k * OddLineStride(g.band_rows * ow);
  const int64_t cost = g.m_chunk_blocks * kMr * g.k * g.band_rows * ow / 8;
  const std::vector<int64_t> strided_starts =
      g.strided ? StridedTileStarts(ow) : std::vector<int64_t>();
  NnParallelFor(
      p.num_threads, g.units(p.batch, p.groups), cost, [&](int64_t begin, int64_t end, int thread) {
        // Only the im2col path has bands (pointwise and implicit convolutions read x in place,
        // and their `columns` may be null).
        float* col = g.pointwise || g.implicit ? nullptr : col_base + thread * col_floats;
        TapLoad taps[kMaxImplicitTaps];
        for (int64_t u = begin; u < end; ++u) {
          const int64_t mc = u % g.m_chunks, band = u / g.m_chunks % g.bands;
          const int64_t grp = u / (g.m_chunks * g.bands) % p.groups;
          const int64_t n = u / (g.m_chunks * g.bands * p.groups);
          const int64_t r0 = band * g.band_rows, r1 = std::min(g.rows, r0 + g.band_rows);
          const int64_t cols = (r1 - r0) * ow;
          const int64_t mb0 = mc * g.m_chunk_blocks,
                        mb1 = std::min(g.m_blocks, mb0 + g.m_chunk_blocks);
          const float* xg = x + (n * p.in_channels + grp * g.cg) * in_sp;
          float* yg = y + (n * p.out_channels + grp * g.mg) * out_sp + r0 * ow;
          const float* rg = p.residual != nullptr
                                ? p.residual + (n * p.out_channels + grp * g.mg) * out_sp + r0 * ow
                                : nullptr;
          const float* ag = packed + grp * g.m_blocks * kMr * g.k;
          const float* bg = bias != nullptr ? bias + grp * g.mg : nullptr;
          const float* b = xg + r0 * ow;
          int64_t ldb = in_sp;
          if (!g.pointwise && !g.implicit && !g.strided) {
            ldb = OddLineStride(cols);
            internal::Im2colRowsF32(p, g.cg, xg, r0, r1, col, ldb, 0, 1);
            b = col;
          }
          const int wide = g.nr == kNrWide ? 1 : 0;
          auto tile = [&](int64_t mb, int64_t j) {
            const ColumnMasks masks = MasksAt(j, cols);
            const int64_t rows = std::min(kMr, g.mg - mb * kMr);
            const float* bias_mb = bg != nullptr ? bg + mb * kMr : nullptr;
            float* c = yg + mb * kMr * out_sp + j;
            const float* rc = rg != nullptr ? rg + mb * kMr * out_sp + j : nullptr;
            if (g.implicit) {
              kImplicitTiles[wide][rows](g.kvol, g.cg, in_sp, xg, taps, ag + mb * g.k * kMr,
                                         bias_mb, rc, act, c, out_sp, masks);
            } else {
              kTiles[wide][rows](g.k, ag + mb * g.k * kMr, b + j, ldb, bias_mb, rc, act, c, out_sp,
                                 masks);
            }
          };
          if (g.strided) {
            const SplitBand band = SplitBandOf(p, r0, r1);
            SplitColumnsOf(p, g.cg, xg, band, col);
            int64_t offs[kMaxImplicitTaps];
            // Row by row, each tile of 16 to 48 outputs of a row in L1 across the blocks of
            // weights.
            for (int64_t oy = r0; oy < r1; ++oy) {
              StridedTaps(p, oy, band, offs);
              for (int64_t ct = 0; ct + 1 < static_cast<int64_t>(strided_starts.size()); ++ct) {
                const int64_t ox0 = strided_starts[ct] * 16;
                const int64_t nv = strided_starts[ct + 1] - strided_starts[ct];
                const int64_t j = (oy - r0) * ow + ox0;
                const ColumnMasks masks = MasksAt(ox0, ow);
                for (int64_t mb = mb0; mb < mb1; ++mb) {
                  const int64_t rows = std::min(kMr, g.mg - mb * kMr);
                  kStridedTiles[nv - 1][rows](g.kvol, g.cg, band.channel(), col + ox0, offs,
                                              ag + mb * g.k * kMr,
                                              bg != nullptr ? bg + mb * kMr : nullptr,
                                              rg != nullptr ? rg + mb * kMr * out_sp + j : nullptr,
                                              act, yg + mb * kMr * out_sp + j, out_sp, masks);
                }
              }
            }
          } else if (!g.implicit && (mb1 - mb0) * kMr > cols) {
            // More weights than columns (the late layers): each block of weights is read once
            // and stays in L1 across the columns, which stay in L2.
            for (int64_t mb = mb0; mb < mb1; ++mb) {
              for (int64_t j = 0; j < cols; j += g.nr) tile(mb, j);
            }
          } else if (g.implicit) {
            // Each column tile stays in L1 across the blocks of weights.
            for (int64_t j = 0; j < cols; j += g.nr) {
              ImplicitTaps(p, r0 * ow + j, std::min(g.nr, cols - j), g.nr / 16, taps);
              for (int64_t mb = mb0; mb < mb1; ++mb) tile(mb, j);
            }
          } else {
            // Column bands of about 64 KiB of b stay in L2 across the blocks of weights, each
            // block writing 8 rows of y at a time (a column tile across every block wrote all
            // of y's rows at once: one store stream per output channel).
            const int64_t band =
                std::max(g.nr, kColBandFloats / std::max<int64_t>(1, g.k) / g.nr * g.nr);
            for (int64_t j0 = 0; j0 < cols; j0 += band) {
              const int64_t j1 = std::min(cols, j0 + band);
              for (int64_t mb = mb0; mb < mb1; ++mb) {
                for (int64_t j = j0; j < j1; j += g.nr) tile(mb, j);
              }
            }
          }
        }
      });
}

}  // namespace qcc::cpu
