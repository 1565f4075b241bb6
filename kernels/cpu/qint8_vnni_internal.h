// Pieces shared by the int8 kernels (qconv.cc, qgemm.cc and their *_vnni.cc fast paths); not a
// public header.
//
// The VNNI files are compiled for any x86-64: their functions carry QCC_VNNI (a target
// attribute), and the dispatchers call them only when QInt8HasVnni(). A per-file -m flag is
// avoided on purpose: inline functions and templates from shared headers instantiated in such a
// file would be AVX-512 code that the linker may pick for every caller.
#ifndef QCC_KERNELS_CPU_QINT8_VNNI_INTERNAL_H_
#define QCC_KERNELS_CPU_QINT8_VNNI_INTERNAL_H_

#include <immintrin.h>

#include <cstdint>

#include "kernels/cpu/lane_masks.h"  // LowBits64
#include "kernels/cpu/qconv.h"
#include "kernels/cpu/qgemm.h"

#define QCC_VNNI \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,avx512vbmi2")))

namespace qcc::cpu::internal {

/// int32 addition modulo 2^32 (the accumulators' arithmetic; no signed-overflow UB).
inline int32_t WrapAdd(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

/// An int64 sum reduced modulo 2^32 to int32.
inline int32_t Wrap32(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }

/// True when RequantizeX16 gives Requantize's bits for these multipliers and output zero
/// point: every multiplier finite (so float(acc) * m is never NaN) and zp_out an int8 value.
/// The dispatchers run the reference otherwise.
inline bool VnniRequantApplies(const float* multiplier, int64_t n, int32_t zp_out) {
  if (zp_out < -128 || zp_out > 127) return false;
  for (int64_t i = 0; i < n; ++i) {
    if (!(multiplier[i] - multiplier[i] == 0.0f)) return false;  // NaN or infinite
  }
  return true;
}

/// Requantize (support/quantize.h) of 16 int32 lanes to 16 int8 under VnniRequantApplies;
/// `lo_f`, `hi_f` are float(lo - zp), float(hi - zp). Equal to the scalar function because:
/// the product is the same single fp32 multiply and is not NaN; rounding half to even is
/// monotone and fixes integers, so clamping to the integers [lo - zp, hi - zp] (within
/// Saturate's +-2^22) before rounding equals rounding, adding zp and clamping to [lo, hi]
/// after; and the conversion rounds half to even (explicitly, as Saturate's default-mode
/// rounding does).
QCC_VNNI inline __m128i RequantizeX16(__m512i acc, __m512 multiplier, __m512i zp, __m512 lo_f,
                                      __m512 hi_f) {
  // maskz forms with every lane set: GCC 12's plain forms read _mm512_undefined_*, which it
  // reports as uninitialized.
  constexpr __mmask16 kAll = 0xFFFF;
  __m512 x = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(kAll, acc), multiplier);
  x = _mm512_maskz_min_ps(kAll, _mm512_maskz_max_ps(kAll, x, lo_f), hi_f);
  const __m512i q =
      _mm512_maskz_cvt_roundps_epi32(kAll, x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  return _mm512_maskz_cvtepi32_epi8(kAll, _mm512_add_epi32(q, zp));
}

/// Fills w's VNNI layout (direct or depthwise, per the header's rules) from p.weights.
void PackQConvVnni(const QConvParams& p, PackedQConvWeights* w);
/// QConvWorkspaceBytes for the VNNI layouts.
int64_t QConvVnniWorkspaceBytes(const QConvParams& p, const PackedQConvWeights& w);
/// QConv for the VNNI layouts; call only when QInt8HasVnni().
QCC_VNNI void QConvVnni(const QConvParams& p, const PackedQConvWeights& w, void* workspace);

/// True when the depthwise kernel takes `p`: C == group and a 64-byte row window covers the
/// taps of 16 consecutive outputs.
bool QConvDepthwiseVnniFits(const QConvParams& p);
/// Bytes of one thread's buffers of the depthwise kernels (the per-plane kernel's padded plane,
/// or the channel-blocked kernel's), a 64-byte multiple.
int64_t QConvDepthwiseVnniThreadBytes(const QConvParams& p);
/// Fills w's depthwise VNNI layout from p.weights (QConvDepthwiseVnniFits(p)): the per-plane
/// kernel's weights, then (when C == K) the channel-blocked kernel's.
void PackQConvDepthwiseVnni(const QConvParams& p, PackedQConvWeights* w);
/// True when QConvDepthwiseVnni runs the channel-blocked kernel (qconv_depthwise_blocked_vnni.cc)
/// for `p`: one output per channel, dilation_w 1, small maps.
bool QConvDepthwiseBlockedRuns(const QConvParams& p);
/// Bytes of one thread's buffers of the channel-blocked kernel (64-byte multiples).
int64_t QConvDepthwiseBlockedThreadBytes(const QConvParams& p);
/// Bytes of the channel-blocked kernel's weights, and their packing into `dst`.
int64_t QConvDepthwiseBlockedPackedBytes(const QConvParams& p);
void PackQConvDepthwiseBlocked(const QConvParams& p, uint8_t* dst);
/// The channel-blocked kernel; `packed` and `workspace` are 64-byte aligned.
QCC_VNNI void QConvDepthwiseBlocked(const QConvParams& p, const int32_t* correction,
                                    const uint8_t* packed, uint8_t* workspace);
/// QConv for the depthwise layout (the channel-blocked kernel when QConvDepthwiseBlockedRuns);
/// `workspace` is 64-byte aligned, p.num_threads thread buffers.
QCC_VNNI void QConvDepthwiseVnni(const QConvParams& p, const PackedQConvWeights& w,
                                 uint8_t* workspace);

/// Fills w->packed with the VNNI layout of p.b.
void PackQGemmVnni(const QGemmParams& p, PackedQGemmWeights* w);
/// QGemm for the VNNI layout; call only when QInt8HasVnni().
QCC_VNNI void QGemmVnni(const QGemmParams& p, const PackedQGemmWeights& w);

}  // namespace qcc::cpu::internal

#endif  // QCC_KERNELS_CPU_QINT8_VNNI_INTERNAL_H_
