// AVX-512 path of the fp32 1x1 convolution on small maps (at most 256 positions), output
// channels in the lanes: a 32-wide tile of positions would leave lanes empty (a 7x7 map fills 49
// of 64), while output channels come in multiples of 32. Each tile keeps up to 12 positions x 32
// channels in 24 zmm accumulators (x 16 channels in 12, for a last block of at most 16), x
// broadcast and the packed weights the vectors, and stores through 8 x 8 in-register transposes.
// The other AVX-512 conv paths are conv_avx512.cc.
//
// Compiled for any x86-64: only the functions marked QCC_AVX512 use AVX-512, and ConvF32 calls
// this path only when the CPU reports avx512f.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv_avx512_internal.h"
#include "kernels/cpu/lane_masks.h"
#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/round_half_avx512.h"

namespace qcc::cpu::internal {

namespace {

constexpr int kTp = 12;  // most positions of a transposed tile
// k rows ahead that a tile prefetches its positions of x from. x's rows are a map apart (784
// bytes on 14 x 14), a tile reads 1-2 lines of each, and a block's weights stream through L1
// between them: without it the tiles waited on x from L2, 4-13% of efficientnet-lite0's and
// squeezenet's 7 x 7, 13 x 13 and 14 x 14 pointwise layers (4, 8 and 16 rows ahead alike).
constexpr int kXAhead = 8;

// The transposed tile (pointwise convolutions on small maps): NP output positions x 32 output
// channels, c<p><h> holding position p, channels 16h..16h+15; x broadcast (once per position
// and k, shared by its two FMAs), weights the vectors.
#define QCC_T_INIT(r) __m512 c##r##0 = bias_lo, c##r##1 = bias_hi;
#define QCC_T_FMA(r)                                         \
  if (r < NP) {                                              \
    const __m512 xr = _mm512_set1_ps(xk[r]);                 \
    c##r##0 = _mm512_fmadd_ps(b0, xr, c##r##0);              \
    if (kHigh16) c##r##1 = _mm512_fmadd_ps(b1, xr, c##r##1); \
  }
#define QCC_T_ACTIVATE(r)                                    \
  if (r < NP && act != nullptr) {                            \
    c##r##0 = Activate(c##r##0, lo, hi, slope);              \
    if (kHigh16) c##r##1 = Activate(c##r##1, lo, hi, slope); \
  }
#define QCC_T_ALL(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11)

/// What a transposed tile does to each channel's positions before it stores them: with a
/// residual (`rc`, at the tile's place with y's strides), adds it and then applies the activation
/// (the tile applies the activation itself otherwise, before transposing); then, for an fp16
/// model (ActivationF32::round_to_f16), rounds them to fp16.
struct TransposedEpilogue {
  const float* rc = nullptr;
  __m512 lo, hi, slope;
  bool activate = false;
  bool round = false;
};

/// Channel `ch`'s positions (the lanes of `first`) of a transposed tile, with `e` applied, to its
/// row of y (row stride ldy; the residual's rows alike).
QCC_AVX512 inline void StoreChannel(__m512 v, float* y, int64_t ldy, int ch,
                                    const TransposedEpilogue& e, __mmask16 first) {
  if (e.rc != nullptr) {
    v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(first, e.rc + ch * ldy));
    if (e.activate) v = Activate(v, e.lo, e.hi, e.slope);
  }
  if (e.round) v = RoundToHalfV(v);
  _mm512_mask_storeu_ps(y + ch * ldy, first, v);
}

/// Lanes 0..7 of `v` (the positions of mask `first`) to channel a's row of y, lanes 8..15 to
/// channel b's; a channel outside `ch_mask` is not stored.
QCC_AVX512 inline void StoreChannelPair(__m512 v, float* y, int64_t ldy, int a, int b,
                                        __mmask16 ch_mask, __mmask16 first,
                                        const TransposedEpilogue& e) {
  if ((ch_mask >> a) & 1) StoreChannel(v, y, ldy, a, e, first);
  if ((ch_mask >> b) & 1) {
    StoreChannel(_mm512_maskz_shuffle_f32x4(0xFFFF, v, v, 0xEE), y, ldy, b, e, first);
  }
}

/// Stores 16 channels x NP positions of a transposed tile (maskz forms with every lane set: the
/// plain ones start from _mm512_undefined_ps, which GCC 12 reports as uninitialized): c[p] holds
/// the 16 channels of position p (p < NP), channel j goes to y[j * ldy + p] for the channels of
/// `ch_mask`. An 8 x 8 transpose in each 256-bit half (unpack, shuffle, then a two-source permute
/// of 128-bit blocks) gives each channel its NP positions in one half register, one masked store
/// per channel instead of a 16-lane scatter per position.
template <int NP>
QCC_AVX512 inline void StoreTransposedHalf(__m512 c0, __m512 c1, __m512 c2, __m512 c3, __m512 c4,
                                           __m512 c5, __m512 c6, __m512 c7, float* y, int64_t ldy,
                                           __mmask16 ch_mask, const TransposedEpilogue& e) {
  const __m512 t0 = _mm512_maskz_unpacklo_ps(0xFFFF, c0, c1),
               t1 = _mm512_maskz_unpackhi_ps(0xFFFF, c0, c1);
  const __m512 t2 = _mm512_maskz_unpacklo_ps(0xFFFF, c2, c3),
               t3 = _mm512_maskz_unpackhi_ps(0xFFFF, c2, c3);
  const __m512 t4 = _mm512_maskz_unpacklo_ps(0xFFFF, c4, c5),
               t5 = _mm512_maskz_unpackhi_ps(0xFFFF, c4, c5);
  const __m512 t6 = _mm512_maskz_unpacklo_ps(0xFFFF, c6, c7),
               t7 = _mm512_maskz_unpackhi_ps(0xFFFF, c6, c7);
  // s[j], 128-bit block q: positions 0-3 of channel 4q + j; s[4 + j]: positions 4-7.
  const __m512 s[8] = {
      _mm512_maskz_shuffle_ps(0xFFFF, t0, t2, 0x44), _mm512_maskz_shuffle_ps(0xFFFF, t0, t2, 0xEE),
      _mm512_maskz_shuffle_ps(0xFFFF, t1, t3, 0x44), _mm512_maskz_shuffle_ps(0xFFFF, t1, t3, 0xEE),
      _mm512_maskz_shuffle_ps(0xFFFF, t4, t6, 0x44), _mm512_maskz_shuffle_ps(0xFFFF, t4, t6, 0xEE),
      _mm512_maskz_shuffle_ps(0xFFFF, t5, t7, 0x44), _mm512_maskz_shuffle_ps(0xFFFF, t5, t7, 0xEE)};
  // Blocks (s[j].q, s[4+j].q, s[j].q+1, s[4+j].q+1): channels 4q + j and 4q + 4 + j, 8 each.
  const __m512i lo_idx = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i hi_idx =
      _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  const __mmask16 first = static_cast<__mmask16>((1u << NP) - 1);
  for (int j = 0; j < 4; ++j) {
    StoreChannelPair(_mm512_maskz_permutex2var_ps(0xFFFF, s[j], lo_idx, s[4 + j]), y, ldy, j, 4 + j,
                     ch_mask, first, e);
    StoreChannelPair(_mm512_maskz_permutex2var_ps(0xFFFF, s[j], hi_idx, s[4 + j]), y, ldy, 8 + j,
                     12 + j, ch_mask, first, e);
  }
}

/// y[c * ldy + r] = act(bias[c] + sum_k x[k * ldx + r] * bp[k][c] + rc[c * ldy + r]) for
/// positions r < NP (at most kTp) and the channels c < 32 of masks ch_m0 (0..15) and ch_m1
/// (16..31); `bp` holds 32 packed channels per k (zero past the last), `bias` null for none, `rc`
/// (the residual at the tile's place) null for none. Each sum runs over k in order from the bias,
/// with the same fused multiply-adds as Tile, so the bits are Tile's. Without kHigh16 the tile
/// has channels 0..15 only (ch_m1 must be 0): half the multiply-adds, for a last block of 16 or
/// fewer channels (80 = 2 x 32 + 16), whose upper half was computed and thrown away.
template <int NP, bool kHigh16>
QCC_AVX512 void TileTransposed(int64_t k_len, const float* x, int64_t ldx, const float* bp,
                               const float* bias, const float* rc, const ActivationF32* act,
                               float* y, int64_t ldy, __mmask16 ch_m0, __mmask16 ch_m1,
                               const float* next_bp) {
  // Channels 16..31 are read only where ch_m1 has lanes: no pointer is formed past the bias.
  const __m512 bias_lo = bias != nullptr ? _mm512_maskz_loadu_ps(ch_m0, bias) : _mm512_setzero_ps();
  const __m512 bias_hi = kHigh16 && bias != nullptr && ch_m1 != 0
                             ? _mm512_maskz_loadu_ps(ch_m1, bias + 16)
                             : _mm512_setzero_ps();
  QCC_T_ALL(QCC_T_INIT)
  const float* xk = x;
  for (int64_t k = 0; k < k_len; ++k, bp += 32, xk += ldx) {
    // The weights 16 rows (2 KiB) on, into the next block's first rows at the end: they are
    // packed one block after another.
    PrefetchAt(bp, 16 * 32);
    if (kHigh16) PrefetchAt(bp, 16 * 32 + 16);
    // This tile's positions of x kXAhead rows on (its first and last, 1 or 2 lines).
    PrefetchAt(xk, kXAhead * ldx);
    if (NP > 1) PrefetchAt(xk, kXAhead * ldx + NP - 1);
    if (next_bp != nullptr) {
      PrefetchToL2At(next_bp, k * 32);
      PrefetchToL2At(next_bp, k * 32 + 16);
    }
    const __m512 b0 = _mm512_loadu_ps(bp);
    const __m512 b1 = kHigh16 ? _mm512_loadu_ps(bp + 16) : _mm512_setzero_ps();
    QCC_T_ALL(QCC_T_FMA)
  }
  __m512 lo = _mm512_setzero_ps(), hi = lo, slope = lo;
  if (act != nullptr) {
    lo = _mm512_set1_ps(act->lo);
    hi = _mm512_set1_ps(act->hi);
    slope = _mm512_set1_ps(act->negative_slope);
  }
  // With a residual the activation comes after it, at the store.
  TransposedEpilogue e{rc, lo, hi, slope, act != nullptr, act != nullptr && act->round_to_f16};
  if (rc == nullptr) {
    QCC_T_ALL(QCC_T_ACTIVATE)
  }
  // Positions past NP have no accumulators: zeros, never stored. Positions 0..7 and 8..11 are
  // transposed and stored apart.
  const __m512 z = _mm512_setzero_ps();
  constexpr int kLow = NP < 8 ? NP : 8, kHigh = NP > 8 ? NP - 8 : 1;
#define QCC_T_HALF(h)                                                                          \
  StoreTransposedHalf<kLow>(c0##h, NP > 1 ? c1##h : z, NP > 2 ? c2##h : z, NP > 3 ? c3##h : z, \
                            NP > 4 ? c4##h : z, NP > 5 ? c5##h : z, NP > 6 ? c6##h : z,        \
                            NP > 7 ? c7##h : z, y + h * 16 * ldy, ldy, ch_m##h, eh##h);        \
  if (NP > 8) {                                                                                \
    TransposedEpilogue high = eh##h;                                                           \
    if (high.rc != nullptr) high.rc += 8;                                                      \
    StoreTransposedHalf<kHigh>(c8##h, NP > 9 ? c9##h : z, NP > 10 ? c10##h : z,                \
                               NP > 11 ? c11##h : z, z, z, z, z, y + h * 16 * ldy + 8, ldy,    \
                               ch_m##h, high);                                                 \
  }
  const TransposedEpilogue& eh0 = e;
  QCC_T_HALF(0);
  if (kHigh16 && ch_m1 != 0) {
    TransposedEpilogue eh1 = e;
    if (rc != nullptr) eh1.rc = rc + 16 * ldy;  // channels 16..31: inside the residual
    QCC_T_HALF(1);
  }
#undef QCC_T_HALF
}

#undef QCC_T_ALL
#undef QCC_T_INIT
#undef QCC_T_FMA
#undef QCC_T_ACTIVATE

using TransposedTileFn = void (*)(int64_t, const float*, int64_t, const float*, const float*,
                                  const float*, const ActivationF32*, float*, int64_t, __mmask16,
                                  __mmask16, const float*);
/// Tiles of 1..kTp positions (index 0 unused), 32 channels (kHigh16) or 16.
template <bool kHigh16>
constexpr TransposedTileFn kTiles[kTp + 1] = {nullptr,
                                              TileTransposed<1, kHigh16>,
                                              TileTransposed<2, kHigh16>,
                                              TileTransposed<3, kHigh16>,
                                              TileTransposed<4, kHigh16>,
                                              TileTransposed<5, kHigh16>,
                                              TileTransposed<6, kHigh16>,
                                              TileTransposed<7, kHigh16>,
                                              TileTransposed<8, kHigh16>,
                                              TileTransposed<9, kHigh16>,
                                              TileTransposed<10, kHigh16>,
                                              TileTransposed<11, kHigh16>,
                                              TileTransposed<12, kHigh16>};
/// [h][np]: the tile of np positions, of 32 channels (h = 1) or of 16 (h = 0: a last block of at
/// most 16).
constexpr const TransposedTileFn* kTransposedTiles[2] = {kTiles<false>, kTiles<true>};

}  // namespace

/// Pointwise convolutions on small maps run transposed (TileTransposed): a 32-wide tile of
/// positions would leave lanes empty (a 7x7 map fills 49 of 64), while output channels come in
/// multiples of 32. Shape-only, as the packing depends on it. Enough k for the scatters at the
/// end of each tile to be a small part of it.
bool UseTransposedAvx512(const ConvF32Params& p) {
  const int64_t n = p.out_size(), m = p.out_channels;
  return p.IsPointwise() && p.groups == 1 && n <= 256 && n % 32 != 0 && m >= 64 &&
         p.in_channels >= 64 && n * m < (int64_t{1} << 31) / 2;
}

int64_t TransposedPackedSizeAvx512(const ConvF32Params& p) {
  return (p.out_channels + 31) / 32 * 32 * p.in_channels;
}

void PackTransposedAvx512(const ConvF32Params& p, const float* w, float* packed) {
  // Blocks of 32 output channels, k-major: packed[cb][k][c] = w[32 cb + c][k], zero past M.
  const int64_t m = p.out_channels, k_len = p.in_channels;
  for (int64_t cb = 0; cb < (m + 31) / 32; ++cb) {
    float* dst = packed + cb * 32 * k_len;
    for (int64_t k = 0; k < k_len; ++k) {
      for (int64_t c = 0; c < 32; ++c) {
        const int64_t ch = cb * 32 + c;
        dst[k * 32 + c] = ch < m ? w[ch * k_len + k] : 0.0f;
      }
    }
  }
}

/// The transposed pointwise path: pieces are (image, block of 32 output channels); each walks
/// the map in tiles of at most kTp positions (as even as they come), reading its weights block
/// from L1/L2 once per tile and x's positions per k.
void ConvF32PointwiseTransposedAvx512(const ConvF32Params& p, const float* x, const float* packed,
                                      const float* bias, float* y) {
  const int64_t n_sp = p.out_size(), m = p.out_channels, k_len = p.in_channels;
  if (p.batch == 0 || n_sp == 0 || m == 0) return;
  const int64_t blocks = (m + 31) / 32;
  const ActivationF32* act = p.activation.is_identity() ? nullptr : &p.activation;
  // Units are (image, chunk of positions, block), chunk-major within an image. With fewer images
  // x blocks than 4 per thread (a batch-1 layer of 2 to 8 blocks), the map is cut into one chunk
  // per thread, so a thread reads the inputs of its positions only (x was written, split by
  // positions or channels, by both cores: reading all of it from the other core's cache cost
  // more than the weights a thread now reads in full), else one chunk per image. Chunks split
  // the positions as evenly as they come (a 7 x 7 map as 25 and 24), then each its own tiles:
  // cutting the map's tiles into chunks gave 20 and 29 of 49 positions (two tiles and three),
  // and 1152 -> 192 on 7 x 7 scaled 1.48x on 2 threads.
  const int64_t threads = std::max(1, p.num_threads);
  const int64_t chunks =
      threads > 1 && p.batch * blocks < 4 * threads ? std::min(threads, n_sp) : 1;
  // Unit u (of a thread's range [u, end)).
  auto unit = [&](int64_t u, int64_t end) {
    const int64_t img = u / (chunks * blocks), chunk = u / blocks % chunks, cb = u % blocks;
    const int64_t ch = m - cb * 32;  // channels left from this block's first
    const __mmask16 m0 = LowBits16(ch), m1 = LowBits16(ch - 16);
    const float* xi = x + img * k_len * n_sp;
    float* yb = y + (img * m + cb * 32) * n_sp;
    const float* rb = p.residual != nullptr ? p.residual + (img * m + cb * 32) * n_sp : nullptr;
    const float* bp = packed + cb * 32 * k_len;
    const float* bias_b = bias != nullptr ? bias + cb * 32 : nullptr;
    // The next unit's block of weights (the next block, or the first for the next image or
    // chunk) into L2 during the second tile (the first streams this block's): in a model the
    // weights come from L3 or memory, a block at a time, and its first tile waited on them
    // (efficientnet-lite0's 7 x 7 layers ran 30-40% slower there than alone).
    const float* next_bp = u + 1 < end ? packed + (u + 1) % blocks * 32 * k_len : nullptr;
    // The chunk's n_len positions from n_begin in tiles of at most kTp, their sizes one apart at
    // most: 169 positions go as 4 tiles of 12 and 11 of 11, not 14 of 12 and one of 1, whose two
    // accumulator chains ran at a quarter of the FMA rate for as long as a full tile's k loop.
    // Tiles of 12 rather than 8 (24 of the 32 zmm registers accumulating): 1-3% faster on
    // efficientnet-lite0's and squeezenet's pointwise layers at 1 thread, the weights streamed
    // from L2 once per 12 positions instead of 8.
    const int64_t n_begin = chunk * n_sp / chunks, n_len = (chunk + 1) * n_sp / chunks - n_begin;
    const int64_t tiles = (n_len + kTp - 1) / kTp, tile = n_len / tiles, longer = n_len % tiles;
    const int64_t prefetch_tile = std::min<int64_t>(1, tiles - 1);
    for (int64_t t = 0, n0 = n_begin; t < tiles; ++t) {
      const int64_t np = tile + (t < longer ? 1 : 0);
      kTransposedTiles[ch > 16][np](k_len, xi + n0, n_sp, bp, bias_b,
                                    rb != nullptr ? rb + n0 : nullptr, act, yb + n0, n_sp, m0, m1,
                                    t == prefetch_tile ? next_bp : nullptr);
      n0 += np;
    }
  };
  NnParallelFor(p.num_threads, p.batch * chunks * blocks, 32 * k_len * n_sp / chunks,
                [&](int64_t begin, int64_t end) {
                  for (int64_t u = begin; u < end; ++u) unit(u, end);
                });
}

}  // namespace qcc::cpu::internal
