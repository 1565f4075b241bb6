// Pieces of symmetric int8 quantization shared by the per-row and per-column kernels
// (qelementwise.cc's QuantizeRowsS8, attention.cc's V columns): plain C++ that each SIMD build
// inlines, so every build does the same operations. Not a public header.
#ifndef QCC_KERNELS_CPU_SYMMETRIC_S8_H_
#define QCC_KERNELS_CPU_SYMMETRIC_S8_H_

#include <cmath>
#include <cstdint>
#include <limits>

#include "support/float16.h"  // BitCast

namespace qcc::cpu::internal {

/// 127 / m, or 0 where that is not finite: m = 0 (a row of zeros) or m < 127 / FLT_MAX (its
/// values then quantize to 0, as a zero row's do).
inline __attribute__((always_inline)) float InverseStep(float m) {
  const float inv = 127.0f / m;
  return inv <= std::numeric_limits<float>::max() ? inv : 0.0f;
}

/// round(x * inv) clamped to [-127, 127] (a NaN gives -127).
inline __attribute__((always_inline)) int8_t QuantizeS8(float x, float inv) {
  float r = std::nearbyint(x * inv);
  r = r > -127.0f ? r : -127.0f;
  r = r < 127.0f ? r : 127.0f;
  return static_cast<int8_t>(r);
}

/// The bits of |x|: for finite floats they order as the magnitudes do (an integer max
/// vectorizes where a float max, which must mind NaN, does not); above kInfBits means NaN.
inline __attribute__((always_inline)) uint32_t AbsBits(float x) {
  return BitCast<uint32_t>(x) & 0x7fffffffu;
}
constexpr uint32_t kInfBits = 0x7f800000u;

}  // namespace qcc::cpu::internal

#endif  // QCC_KERNELS_CPU_SYMMETRIC_S8_H_
