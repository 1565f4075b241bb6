// Branch-free fp32 exp and tanh that compilers vectorize (libm's expf / tanhf do not), for
// the hot activations (Sigmoid, Tanh, Exp, SiLU's sigmoid) and Softmax.
#ifndef QCC_BACKEND_CPU_KERNELS_ELEMENTWISE_MATH_H_
#define QCC_BACKEND_CPU_KERNELS_ELEMENTWISE_MATH_H_

#include <cmath>
#include <cstdint>
#include <limits>

#include "support/float16.h"

namespace qcc::cpu {

/// e^x within about 2 ulp; +-inf and NaN as libm gives them, denormal results included.
/// Derivation (Cephes expf): e^x = 2^n * e^r with n = round(x / ln2) and r = x - n ln2, where
/// ln2 is split into a 9-bit head and a tail so n * head is exact and |r| <= ln2 / 2; e^r is a
/// degree-7 polynomial; 2^n is built in the exponent bits as 2^(n >> 1) * 2^(n - (n >> 1)) so
/// that both factors stay normal for every n in [-150, 128].
inline float ExpF32(float x) {
  constexpr float kHi = 88.7228394f;     // ln(FLT_MAX): above, the result overflows
  constexpr float kLo = -104.0f;         // below, the result rounds to 0
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: (v + kRound) - kRound rounds v to int
  // NaN takes 0 here (and is returned below): converting a NaN n to int would be undefined.
  const float xc = x < kLo ? kLo : (x > kHi ? kHi : (x == x ? x : 0.0f));
  const float n = (xc * 1.44269504088896341f + kRound) - kRound;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  const float z = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * z + r + 1.0f;
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t n1 = ni >> 1;  // floor(n / 2)
  const int32_t n2 = ni - n1;
  const float s1 = BitCast<float>(static_cast<int32_t>((n1 + 127) << 23));
  const float s2 = BitCast<float>(static_cast<int32_t>((n2 + 127) << 23));
  float y = p * s1 * s2;
  y = x > kHi ? std::numeric_limits<float>::infinity() : y;
  y = x < kLo ? 0.0f : y;
  return x != x ? x : y;
}

/// 1 / (1 + e^-x); e^-x overflowing to inf gives exactly 0.
inline float SigmoidF32(float x) { return 1.0f / (1.0f + ExpF32(-x)); }

/// tanh(x) within a few ulp (Cephes tanhf): an odd polynomial for |x| < 0.625, where
/// 1 - 2 / (e^2|x| + 1) would cancel, and that expression with x's sign elsewhere.
inline float TanhF32(float x) {
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * x + x;
  const float ax = x < 0 ? -x : x;
  const float big = 1.0f - 2.0f / (ExpF32(2.0f * ax) + 1.0f);
  const float signed_big = x < 0 ? -big : big;
  return ax < 0.625f ? small : signed_big;
}

/// e^x and tanh(x): the vectorizable forms above for float, libm for double.
inline float ExpOf(float x) { return ExpF32(x); }
inline double ExpOf(double x) { return std::exp(x); }
inline float TanhOf(float x) { return TanhF32(x); }
inline double TanhOf(double x) { return std::tanh(x); }

}  // namespace qcc::cpu

#endif  // QCC_BACKEND_CPU_KERNELS_ELEMENTWISE_MATH_H_
