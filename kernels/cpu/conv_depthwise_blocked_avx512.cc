// AVX-512 channel-blocked path of the fp32 depthwise convolution, for small maps (at most 8 x 8
// outputs a plane): 16 channels to a register. ConvF32DepthwiseAvx512 (conv_depthwise_avx512.cc,
// the per-plane kernels) hands it the convolutions DepthwiseBlockedFitsAvx512 takes. The same
// bits as the per-plane kernels: each output its bias, then one FMA per tap in (row, column)
// order, then the activation. Compiled for any x86-64; called only when the CPU reports avx512f.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv_avx512_internal.h"
#include "kernels/cpu/lane_masks.h"
#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/transpose_avx512.h"

namespace qcc::cpu::internal {

namespace {

// Channel-blocked depthwise convolution for small maps. The per-plane kernel spends most of
// a 7x7 plane on per-plane setup and on lanes past the row (7 of 16 used); here 16 channels share
// one register instead: their planes are transposed into a zero-padded [rows][cols][16] buffer,
// each output accumulates its taps from the bias in (row, column) order with one FMA per tap
// (a padding tap multiplies a 0, as the per-plane kernel's masked loads give), and the results
// are transposed back into the 16 planes. So each output has the same bits as on the per-plane
// path.
// Up to 8 x 8 outputs: at 14 x 14 the transposes cost more than the per-plane overhead saves
// (efficientnet-lite0's 3x3 layers on 14 x 14 maps went from 0.035 to 0.064 ms; its 7 x 7 ones
// from 0.078-0.085 to 0.044-0.069 ms).
constexpr int64_t kBlockedMaxOut = 64;      // output positions of a plane
constexpr int64_t kBlockedMaxPadded = 324;  // padded input positions read (18 x 18)
constexpr int64_t kBlockedMaxTaps = 49;
constexpr int64_t kBlockedMaxIn = 1024;  // input positions of a plane
constexpr int64_t kBlockedGroup = 8;     // outputs of a row accumulated together

/// `nc` rows of `n` floats (row c at src + c * stride) into lanes: dst(k)[c] = src[c * stride + k]
/// for k < n, c < nc (lanes c >= nc zero), where dst(k) = out + offset(k) * 16.
template <typename Offset>
QCC_AVX512 inline void RowsToLanes(const float* src, int64_t stride, int64_t nc, int64_t n,
                                   float* out, Offset offset) {
  __m512 r[16];
  for (int64_t k0 = 0; k0 < n; k0 += 16) {
    const __mmask16 m = LowBits16(n - k0);
    for (int c = 0; c < 16; ++c) {
      r[c] = c < nc ? _mm512_maskz_loadu_ps(m, src + c * stride + k0) : _mm512_setzero_ps();
    }
    Transpose16x16(r);
    const int64_t kn = std::min<int64_t>(16, n - k0);
    for (int64_t k = 0; k < kn; ++k) _mm512_storeu_ps(out + offset(k0 + k) * 16, r[k]);
  }
}

/// NJ accumulated outputs, activated (act null: none), into yb's 16 lanes each.
template <int NJ>
QCC_AVX512 inline void StoreBlockedOutputs(__m512 (&acc)[NJ], const ActivationF32* act, float* yb) {
  if (act != nullptr) {
    const __m512 lo = _mm512_set1_ps(act->lo), hi = _mm512_set1_ps(act->hi);
    const __m512 slope = _mm512_set1_ps(act->negative_slope);
    for (int j = 0; j < NJ; ++j) acc[j] = Activate(acc[j], lo, hi, slope);
  }
  for (int j = 0; j < NJ; ++j) _mm512_storeu_ps(yb + j * 16, acc[j]);
}

/// NJ outputs of one output row: xb at the first one's receptive field (its top-left tap),
/// successive outputs `sx` columns apart; yb gets their 16 lanes each.
template <int NJ>
QCC_AVX512 void DepthwiseBlockedOutputs(const float* xb, int64_t row_floats, int64_t kh, int64_t kw,
                                        int64_t sx, int64_t dy, int64_t dx, const float* wb,
                                        const float* bias, const ActivationF32* act, float* yb) {
  __m512 acc[NJ];
  const __m512 b = _mm512_loadu_ps(bias);
  for (int j = 0; j < NJ; ++j) acc[j] = b;
  for (int64_t r = 0; r < kh; ++r) {
    const float* xr = xb + r * dy * row_floats;
    for (int64_t s = 0; s < kw; ++s, wb += 16) {
      const __m512 wv = _mm512_loadu_ps(wb);
      const float* xs = xr + s * dx * 16;
      for (int j = 0; j < NJ; ++j) {
        acc[j] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(xs + j * sx * 16), acc[j]);
      }
    }
  }
  StoreBlockedOutputs<NJ>(acc, act, yb);
}

/// DepthwiseBlockedOutputs for a kernel KW wide, undilated along x, of stride SX along x: each
/// input column of a kernel row is loaded once and multiplied into every output of the group
/// that reads it (the row's KW weights in registers), where DepthwiseBlockedOutputs loads it once
/// per output and tap. An output still takes its taps in (row, column) order: the same bits.
template <int NJ, int KW, int SX>
QCC_AVX512 void DepthwiseBlockedOutputsShared(const float* xb, int64_t row_floats, int64_t kh,
                                              int64_t, int64_t, int64_t dy, int64_t,
                                              const float* wb, const float* bias,
                                              const ActivationF32* act, float* yb) {
  constexpr int kCols = (NJ - 1) * SX + KW;  // input columns the group reads in a kernel row
  __m512 acc[NJ];
  const __m512 b = _mm512_loadu_ps(bias);
  for (int j = 0; j < NJ; ++j) acc[j] = b;
  for (int64_t r = 0; r < kh; ++r, wb += KW * 16) {
    const float* xr = xb + r * dy * row_floats;
    __m512 w[KW];
    for (int s = 0; s < KW; ++s) w[s] = _mm512_loadu_ps(wb + s * 16);
#pragma GCC unroll 32
    for (int c = 0; c < kCols; ++c) {
      const __m512 v = _mm512_loadu_ps(xr + c * 16);
#pragma GCC unroll 8
      for (int s = 0; s < KW; ++s) {
        const int t = c - s;  // output t / SX reads column c at tap s
        if (t >= 0 && t % SX == 0 && t / SX < NJ) {
          acc[t / SX] = _mm512_fmadd_ps(w[s], v, acc[t / SX]);
        }
      }
    }
  }
  StoreBlockedOutputs<NJ>(acc, act, yb);
}

using DepthwiseBlockedFn = void (*)(const float*, int64_t, int64_t, int64_t, int64_t, int64_t,
                                    int64_t, const float*, const float*, const ActivationF32*,
                                    float*);

/// The group kernels of NJ = 0..kBlockedGroup outputs (0: none).
using BlockedKernelTable = std::array<DepthwiseBlockedFn, kBlockedGroup + 1>;
constexpr BlockedKernelTable kDepthwiseBlocked = {nullptr,
                                                  DepthwiseBlockedOutputs<1>,
                                                  DepthwiseBlockedOutputs<2>,
                                                  DepthwiseBlockedOutputs<3>,
                                                  DepthwiseBlockedOutputs<4>,
                                                  DepthwiseBlockedOutputs<5>,
                                                  DepthwiseBlockedOutputs<6>,
                                                  DepthwiseBlockedOutputs<7>,
                                                  DepthwiseBlockedOutputs<8>};
template <int KW, int SX, int... NJ>
constexpr BlockedKernelTable SharedTable(std::integer_sequence<int, NJ...>) {
  return {nullptr, DepthwiseBlockedOutputsShared<NJ + 1, KW, SX>...};
}
constexpr auto kGroups = std::make_integer_sequence<int, kBlockedGroup>{};
constexpr BlockedKernelTable kDepthwiseBlockedShared[3][2] = {
    {SharedTable<3, 1>(kGroups), SharedTable<3, 2>(kGroups)},
    {SharedTable<5, 1>(kGroups), SharedTable<5, 2>(kGroups)},
    {SharedTable<7, 1>(kGroups), SharedTable<7, 2>(kGroups)}};

/// The group kernels for `p`: DepthwiseBlockedOutputsShared for kernels 3, 5 or 7 wide,
/// undilated along x, of stride 1 or 2 along x; DepthwiseBlockedOutputs otherwise.
const BlockedKernelTable& BlockedKernels(const ConvF32Params& p) {
  const int64_t kw = p.kernel[2];
  if (p.dilation[2] == 1 && p.stride[2] <= 2 && (kw == 3 || kw == 5 || kw == 7)) {
    return kDepthwiseBlockedShared[(kw - 3) / 2][p.stride[2] - 1];
  }
  return kDepthwiseBlocked;
}

/// Rows and columns of the padded input the outputs read.
int64_t BlockedPaddedRows(const ConvF32Params& p) {
  return (p.out[1] - 1) * p.stride[1] + (p.kernel[1] - 1) * p.dilation[1] + 1;
}
int64_t BlockedPaddedCols(const ConvF32Params& p) {
  return (p.out[2] - 1) * p.stride[2] + (p.kernel[2] - 1) * p.dilation[2] + 1;
}

/// The channel-blocked path takes a depthwise convolution with one output per channel, 2-D, on a
/// small map, of at least 16 channels.
}  // namespace

bool DepthwiseBlockedFitsAvx512(const ConvF32Params& p) {
  return p.in_channels == p.groups && p.out_channels == p.groups && p.groups >= 16 &&
         p.kernel[0] == 1 && p.in[0] == 1 && p.out[0] == 1 && p.stride[1] <= 2 &&
         p.stride[2] <= 2 && p.out_size() <= kBlockedMaxOut && p.kernel_size() <= kBlockedMaxTaps &&
         BlockedPaddedRows(p) * BlockedPaddedCols(p) <= kBlockedMaxPadded &&
         p.in_size() <= kBlockedMaxIn;
}

namespace {

/// Pieces [begin, end) of ConvF32DepthwiseBlockedAvx512: piece = image * blocks + block of 16
/// channels.
QCC_AVX512 void DepthwiseBlockedPieces(const ConvF32Params& p, const float* x, const float* w,
                                       const float* bias, float* y, int64_t begin, int64_t end) {
  const int64_t c_all = p.out_channels, blocks = (c_all + 15) / 16;
  const int64_t in_sp = p.in_size(), out_sp = p.out_size(), kvol = p.kernel_size();
  const int64_t iw = p.in[2], oh = p.out[1], ow = p.out[2];
  const int64_t ph = BlockedPaddedRows(p), pw = BlockedPaddedCols(p);
  const int64_t sy = p.stride[1], sx = p.stride[2], dy = p.dilation[1], dx = p.dilation[2];
  const ActivationF32* act = p.activation.is_identity() ? nullptr : &p.activation;
  const auto& kernels = BlockedKernels(p);
  // The padding stays zero: every block writes the same interior positions.
  alignas(64) float xb[(kBlockedMaxPadded + 1) * 16];  // + a slot for inputs no output reads
  alignas(64) float wb[kBlockedMaxTaps * 16];
  alignas(64) float yb[kBlockedMaxOut * 16];
  alignas(64) float bias_lanes[16] = {};
  std::fill(xb, xb + ph * pw * 16, 0.0f);
  // Where each input position goes in xb (a slot past the padded input for those no output
  // reads), once for every block: computing it per position and block (a division by the row
  // length each) was most of efficientnet-lite0's 5 x 5 stride-2 layer on 14 x 14.
  int32_t slot[kBlockedMaxIn];
  for (int64_t iy = 0, k = 0; iy < p.in[1]; ++iy) {
    for (int64_t ix = 0; ix < iw; ++ix, ++k) {
      const int64_t py = iy + p.pad[1], px = ix + p.pad[2];
      slot[k] = static_cast<int32_t>(py < ph && px < pw ? py * pw + px : kBlockedMaxPadded);
    }
  }
  for (int64_t u = begin; u < end; ++u) {
    const int64_t n = u / blocks, c0 = u % blocks * 16, nc = std::min<int64_t>(16, c_all - c0);
    // The next block's planes and weights (consecutive in x and w): in a model they come from
    // L3, and this block's work hides their latency. The planes a share per output row: all
    // at once (up to 200 lines) stalled on the fill buffers, 12% of the 5 x 5 stride-2 layer
    // on 14 x 14.
    int64_t next_x = 0, next_floats = 0;
    if (u + 1 < end) {
      const int64_t n1 = (u + 1) / blocks, c1 = (u + 1) % blocks * 16;
      const int64_t nc1 = std::min<int64_t>(16, c_all - c1);
      next_x = (n1 * c_all + c1) * in_sp;
      next_floats = nc1 * in_sp;
      PrefetchLines(w, c1 * kvol, nc1 * kvol);
    }
    RowsToLanes(x + (n * c_all + c0) * in_sp, in_sp, nc, in_sp, xb,
                [&](int64_t k) { return static_cast<int64_t>(slot[k]); });
    RowsToLanes(w + c0 * kvol, kvol, nc, kvol, wb, [](int64_t k) { return k; });
    for (int64_t c = 0; c < 16; ++c) bias_lanes[c] = bias != nullptr && c < nc ? bias[c0 + c] : 0;
    for (int64_t oy = 0; oy < oh; ++oy) {
      if (next_floats > 0) {
        // The share [a, b) of the next block's floats, in steps of a line (16 floats).
        const int64_t a = (next_floats * oy / oh + 15) / 16 * 16;
        const int64_t b = (next_floats * (oy + 1) / oh + 15) / 16 * 16;
        PrefetchLines(x, next_x + a, b - a);
      }
      for (int64_t ox0 = 0; ox0 < ow; ox0 += kBlockedGroup) {
        const int64_t nj = std::min(kBlockedGroup, ow - ox0);
        kernels[nj](xb + (oy * sy * pw + ox0 * sx) * 16, pw * 16, p.kernel[1], p.kernel[2], sx, dy,
                    dx, wb, bias_lanes, act, yb + (oy * ow + ox0) * 16);
      }
    }
    // Back to the planes: yb's position k holds the 16 channels' outputs.
    __m512 r[16];
    for (int64_t k0 = 0; k0 < out_sp; k0 += 16) {
      const int64_t kn = std::min<int64_t>(16, out_sp - k0);
      for (int k = 0; k < 16; ++k) {
        r[k] = k < kn ? _mm512_loadu_ps(yb + (k0 + k) * 16) : _mm512_setzero_ps();
      }
      Transpose16x16(r);
      const __mmask16 m = LowBits16(kn);
      for (int64_t c = 0; c < nc; ++c) {
        _mm512_mask_storeu_ps(y + (n * c_all + c0 + c) * out_sp + k0, m, r[c]);
      }
    }
  }
}

}  // namespace

void ConvF32DepthwiseBlockedAvx512(const ConvF32Params& p, const float* x, const float* w,
                                   const float* bias, float* y) {
  const int64_t blocks = (p.out_channels + 15) / 16;
  NnParallelFor(
      p.num_threads, p.batch * blocks, 16 * p.out_size() * p.kernel_size(),
      [&](int64_t begin, int64_t end) { DepthwiseBlockedPieces(p, x, w, bias, y, begin, end); });
}

}  // namespace qcc::cpu::internal
