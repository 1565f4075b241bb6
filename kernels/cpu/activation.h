// A fused activation as kernels apply it in their epilogue: one clamp-style form that covers
// Relu, Clip (ReLU6) and LeakyRelu, so a kernel needs one code path for all of them.
#ifndef QCC_KERNELS_CPU_ACTIVATION_H_
#define QCC_KERNELS_CPU_ACTIVATION_H_

#include <cstdint>
#include <limits>

namespace qcc::cpu {

/// y = min(max(v < 0 ? negative_slope * v : v, lo), hi). Relu is lo = 0; Clip is [lo, hi];
/// LeakyRelu is negative_slope = alpha. NaN stays NaN. The default is the identity.
struct ActivationF32 {
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
  float negative_slope = 1.0f;
  /// Then rounds each result to the nearest fp16 value (ties to even) and widens it back, as an
  /// fp16 model's op stores its output (RoundF32ToF16InPlace's bits). Only ConvF32 and the
  /// AVX-512 conv microkernels behind it honour it (conv.h); operator() and ApplyActivationF32
  /// do not round.
  bool round_to_f16 = false;

  /// True when the activation changes nothing (kernels then skip it).
  bool is_identity() const {
    return negative_slope == 1.0f && lo == -std::numeric_limits<float>::infinity() &&
           hi == std::numeric_limits<float>::infinity() && !round_to_f16;
  }
  /// The activation of one value (without the rounding).
  float operator()(float v) const {
    v = v < 0.0f ? v * negative_slope : v;
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
  }
};

/// y[i] = act(y[i]) for i in [0, n).
inline void ApplyActivationF32(const ActivationF32& act, float* y, int64_t n) {
  if (act.is_identity()) return;
  // Locals, not act's fields: y could alias them, which would keep the loop scalar.
  const float lo = act.lo, hi = act.hi, slope = act.negative_slope;
  if (slope == 1.0f) {
    for (int64_t i = 0; i < n; ++i) {
      float v = y[i];
      v = v < lo ? lo : v;
      y[i] = v > hi ? hi : v;
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    float v = y[i];
    v = v < 0.0f ? v * slope : v;
    v = v < lo ? lo : v;
    y[i] = v > hi ? hi : v;
  }
}

/// ApplyActivationF32 over `rows` rows of `cols` floats, `ld` floats apart.
inline void ApplyActivationRowsF32(const ActivationF32& act, float* y, int64_t rows, int64_t cols,
                                   int64_t ld) {
  if (act.is_identity()) return;
  for (int64_t r = 0; r < rows; ++r) ApplyActivationF32(act, y + r * ld, cols);
}

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_ACTIVATION_H_
