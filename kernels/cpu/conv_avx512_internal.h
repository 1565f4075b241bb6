// Pieces shared by the AVX-512 fp32 convolution paths (conv_avx512.cc, conv_pointwise_avx512.cc,
// conv_depthwise_avx512.cc); not a public header. Like those files, compiled for any x86-64: the
// functions carry QCC_AVX512 (a target attribute), and their callers run only on CPUs with
// AVX-512F.
#ifndef QCC_KERNELS_CPU_CONV_AVX512_INTERNAL_H_
#define QCC_KERNELS_CPU_CONV_AVX512_INTERNAL_H_

#include <immintrin.h>

#include <cstdint>
#include <limits>

#include "kernels/cpu/conv.h"

#define QCC_AVX512 __attribute__((target("avx512f")))

namespace qcc::cpu::internal {

/// The fused activation on one register (see ActivationF32): NaN lanes stay NaN, because
/// max/min return their second operand when either is NaN.
QCC_AVX512 inline __m512 Activate(__m512 v, __m512 lo, __m512 hi, __m512 slope) {
  const __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
  v = _mm512_mask_mul_ps(v, neg, v, slope);
  // maskz forms with every lane set: the plain ones read _mm512_undefined_ps, which GCC 12
  // reports as maybe-uninitialized.
  return _mm512_maskz_min_ps(0xFFFF, hi, _mm512_maskz_max_ps(0xFFFF, lo, v));
}

/// Whether `act` only clamps from below (ReLU, or Clip without an upper bound): no negative
/// slope, no upper bound.
inline bool ClampsBelowOnly(const ActivationF32& act) {
  return act.negative_slope == 1.0f && act.hi == std::numeric_limits<float>::infinity();
}

/// Activate for such an activation, in one max instead of four operations, with the same bits:
/// v * 1 is v, min(inf, v) is v, and max returns v when either operand is NaN.
QCC_AVX512 inline __m512 ClampBelow(__m512 v, __m512 lo) {
  return _mm512_maskz_max_ps(0xFFFF, lo, v);
}

/// Whether a convolution runs the transposed 1x1 path (conv_pointwise_avx512.cc): pointwise on
/// a small map, 64+ channels in and out. Shape-only, as the packing depends on it.
bool UseTransposedAvx512(const ConvF32Params& p);
/// Floats of its packed weights, and the packing: blocks of 32 output channels, k-major.
int64_t TransposedPackedSizeAvx512(const ConvF32Params& p);
void PackTransposedAvx512(const ConvF32Params& p, const float* w, float* packed);
/// y = conv(x) on that path, weights packed by PackTransposedAvx512.
void ConvF32PointwiseTransposedAvx512(const ConvF32Params& p, const float* x, const float* packed,
                                      const float* bias, float* y);

/// Whether a depthwise convolution runs the channel-blocked path
/// (conv_depthwise_blocked_avx512.cc): one output per channel, 2-D, stride 1 or 2, at least 16
/// channels, a small map.
bool DepthwiseBlockedFitsAvx512(const ConvF32Params& p);
/// y = the depthwise convolution on that path, parallel over (image, block of 16 channels).
void ConvF32DepthwiseBlockedAvx512(const ConvF32Params& p, const float* x, const float* w,
                                   const float* bias, float* y);

/// Whether a convolution runs the Winograd F(2x2, 3x3) path (conv_winograd_avx512.cc): allowed
/// (ConvF32Params::winograd), 3x3, stride and dilation 1, one group, 8+ channels in and out.
/// Shape-only, as the packing depends on it.
bool UseWinogradAvx512(const ConvF32Params& p);
/// Floats of its packed weights: the 16 points of G g G^T, each [blocks of 8 output channels]
/// [C][8].
int64_t WinogradPackedSizeAvx512(const ConvF32Params& p);
void PackWinogradAvx512(const ConvF32Params& p, const float* w, float* packed);
/// u[16] = G g G^T for one 3x3 kernel g (row-major), G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1], in
/// the packing's order of operations (the tests' transcription calls it).
void WinogradKernelTransform(const float* g, float* u);
/// Floats of its scratch: the transformed input of a block of tiles and its products, a thread.
int64_t WinogradScratchSizeAvx512(const ConvF32Params& p);
/// y = conv(x) on that path, weights packed by PackWinogradAvx512; parallel over blocks of tiles
/// (and blocks of output channels where there are few) on p.num_threads threads.
void ConvF32WinogradAvx512(const ConvF32Params& p, const float* x, const float* packed,
                           const float* bias, float* y, float* scratch);

}  // namespace qcc::cpu::internal

#endif  // QCC_KERNELS_CPU_CONV_AVX512_INTERNAL_H_
