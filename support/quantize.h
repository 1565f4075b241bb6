// The int8 numerics contract (DESIGN.md s.2), as the scalar functions every backend uses: the
// CPU reference kernels call them directly, fast paths and CUDA kernels must give the same bits.
//
// All float arithmetic here is single fp32 operations in a fixed order; the project builds with
// -ffp-contract=off (nvcc: --fmad=false for files that use these), so no multiply-add is fused.
// Rounding is half to even, as ONNX QuantizeLinear and the x86/CUDA default rounding modes do.
#ifndef QCC_SUPPORT_QUANTIZE_H_
#define QCC_SUPPORT_QUANTIZE_H_

#include <cstdint>

#include "support/float16.h"  // QCC_HOST_DEVICE

namespace qcc {

/// int8 symmetric weights use [-127, 127]; activations use the full [-128, 127].
inline constexpr int32_t kWeightQMax = 127;
inline constexpr int32_t kInt8Min = -128;
inline constexpr int32_t kInt8Max = 127;

/// Rounds half to even; `x` must satisfy |x| <= 2^22 (callers clamp first; see Saturate).
QCC_HOST_DEVICE inline int32_t RoundHalfEven(float x) {
#if defined(__CUDA_ARCH__)
  return __float2int_rn(x);
#else
  // Adding 1.5 * 2^23 leaves no fraction bits, so the sum is rounded by the FPU's default mode
  // (nearest, ties to even); subtracting it again is exact.
  const float shifted = x + 12582912.0f;
  return static_cast<int32_t>(shifted - 12582912.0f);
#endif
}

/// round_half_even(x) + zero_point, clamped to [lo, hi]. Works for any finite or infinite x
/// (NaN gives zero_point clamped), so it is the one place a float becomes a quantized level.
QCC_HOST_DEVICE inline int32_t Saturate(float x, int32_t zero_point, int32_t lo, int32_t hi) {
  // Clamp in float before rounding: beyond +-2^22 nothing can land inside an 8/16-bit range.
  constexpr float kLimit = 4194304.0f;  // 2^22
  x = x > kLimit ? kLimit : x;
  x = x < -kLimit ? -kLimit : x;
  x = x == x ? x : 0.0f;
  int32_t q = RoundHalfEven(x) + zero_point;
  q = q < lo ? lo : q;
  return q > hi ? hi : q;
}

/// Requantization multiplier of a conv/gemm output channel: M = s_in * s_w / s_out in fp32,
/// multiply first, then divide.
QCC_HOST_DEVICE inline float RequantMultiplier(float s_in, float s_w, float s_out) {
  const float product = s_in * s_w;
  return product / s_out;
}

/// y = saturate(round_half_even(float(acc) * multiplier) + zp_out) into [lo, hi]. `acc` is the
/// int32 accumulator with the int32 bias (zero-point correction folded in) already added;
/// [lo, hi] is [-128, 127] narrowed by a fused ReLU/ReLU6/Clip.
QCC_HOST_DEVICE inline int8_t Requantize(int32_t acc, float multiplier, int32_t zp_out, int32_t lo,
                                         int32_t hi) {
  const float scaled = static_cast<float>(acc) * multiplier;
  return static_cast<int8_t>(Saturate(scaled, zp_out, lo, hi));
}

/// ONNX QuantizeLinear to int8: saturate(round_half_even(x / scale) + zero_point).
QCC_HOST_DEVICE inline int8_t QuantizeValue(float x, float scale, int32_t zero_point) {
  return static_cast<int8_t>(Saturate(x / scale, zero_point, kInt8Min, kInt8Max));
}

/// ONNX DequantizeLinear: (q - zero_point) * scale.
QCC_HOST_DEVICE inline float DequantizeValue(int8_t q, float scale, int32_t zero_point) {
  return static_cast<float>(static_cast<int32_t>(q) - zero_point) * scale;
}

/// A symmetric int8 weight: saturate(round_half_even(w / scale)) into [-127, 127].
QCC_HOST_DEVICE inline int8_t QuantizeWeight(float w, float scale) {
  return static_cast<int8_t>(Saturate(w / scale, 0, -kWeightQMax, kWeightQMax));
}

/// Symmetric weight scale for a channel whose largest |w| is `amax`: amax / 127, or 1 when the
/// channel is all zero (any scale represents it exactly; 1 keeps multipliers finite).
QCC_HOST_DEVICE inline float WeightScale(float amax) {
  return amax > 0.0f ? amax / static_cast<float>(kWeightQMax) : 1.0f;
}

// ---------------------------------------------------------------------------------------------
// int8 -> int8 rescaling (issue 4: Requantize/Concat inputs, residual Add, average pools).
// The compiler computes every multiplier with RescaleMultiplier, and the CPU reference kernels
// (kernels/cpu/qelementwise.*, qpool.*) evaluate these functions per element, so the
// plan's multipliers and the kernels' arithmetic are the same fp32 operations in the same order.

/// Multiplier of an int8 -> int8 scale change: M = s_in / s_out (one fp32 division). Used for
/// Requantize, each input of a quantized Add (Ma = s_a / s_y, Mb = s_b / s_y) and average pools.
QCC_HOST_DEVICE inline float RescaleMultiplier(float s_in, float s_out) { return s_in / s_out; }

/// Requantize (scale change): saturate(round_half_even(float(x - zp_in) * M) + zp_out) into
/// [lo, hi].
QCC_HOST_DEVICE inline int8_t RescaleValue(int8_t x, int32_t zp_in, float multiplier,
                                           int32_t zp_out, int32_t lo, int32_t hi) {
  const float scaled = static_cast<float>(static_cast<int32_t>(x) - zp_in) * multiplier;
  return static_cast<int8_t>(Saturate(scaled, zp_out, lo, hi));
}

/// Quantized Add: saturate(round_half_even((float(a - za) * Ma) + (float(b - zb) * Mb)) + zy)
/// into [lo, hi] (a fused ReLU narrows lo), products first, then one fp32 addition.
QCC_HOST_DEVICE inline int8_t AddValue(int8_t a, int32_t zp_a, float mult_a, int8_t b, int32_t zp_b,
                                       float mult_b, int32_t zp_out, int32_t lo, int32_t hi) {
  const float ta = static_cast<float>(static_cast<int32_t>(a) - zp_a) * mult_a;
  const float tb = static_cast<float>(static_cast<int32_t>(b) - zp_b) * mult_b;
  return static_cast<int8_t>(Saturate(ta + tb, zp_out, lo, hi));
}

/// Quantized average of `count` > 0 values whose zero-point-corrected sum is `sum`:
/// saturate(round_half_even((float(sum) * M) / float(count)) + zp_out) into [lo, hi], with
/// M = RescaleMultiplier(s_in, s_out). (float(sum) and float(count) are exact below 2^24.)
QCC_HOST_DEVICE inline int8_t AverageValue(int64_t sum, int64_t count, float multiplier,
                                           int32_t zp_out, int32_t lo, int32_t hi) {
  const float scaled = static_cast<float>(sum) * multiplier;
  return static_cast<int8_t>(Saturate(scaled / static_cast<float>(count), zp_out, lo, hi));
}

}  // namespace qcc

#endif  // QCC_SUPPORT_QUANTIZE_H_
