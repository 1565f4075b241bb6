// Branch-free fp32 exp, sigmoid, tanh, erf and GELU in plain fp32 arithmetic: compilers vectorize
// them (libm's expf / tanhf do not), and they are QCC_HOST_DEVICE, so the CPU kernels
// (kernels/cpu/elementwise_math.h) and the CUDA kernel bodies (kernels/cuda/
// elementwise_bodies.h) compute the same bits (both built without contracting a multiply and an
// add; the fused multiply-adds GeluF32 writes out as FmaF32 are one rounding everywhere).
#ifndef QCC_SUPPORT_FAST_MATH_H_
#define QCC_SUPPORT_FAST_MATH_H_

#include <cmath>
#include <cstdint>

#include "support/float16.h"  // QCC_HOST_DEVICE, BitCast

namespace qcc {

/// The core of ExpF32 below, for a finite x in [-104, 88.73]: n = round(x / ln2) in `n`, and
/// e^r for r = x - n ln2 as the return value (shared with the softmax rows of attention).
QCC_HOST_DEVICE inline float ExpReducedF32(float x, float& n) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: (v + kRound) - kRound rounds v to int
  n = (x * 1.44269504088896341f + kRound) - kRound;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  const float z = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * z + r + 1.0f;
}

/// e^x within about 2 ulp; +-inf and NaN as libm gives them, denormal results included.
/// Derivation (Cephes expf): e^x = 2^n * e^r with n = round(x / ln2) and r = x - n ln2, where
/// ln2 is split into a 9-bit head and a tail so n * head is exact and |r| <= ln2 / 2; e^r is a
/// degree-7 polynomial; 2^n is built in the exponent bits as 2^(n >> 1) * 2^(n - (n >> 1)) so
/// that both factors stay normal for every n in [-150, 128].
QCC_HOST_DEVICE inline float ExpF32(float x) {
  constexpr float kHi = 88.7228394f;  // ln(FLT_MAX): above, the result overflows
  constexpr float kLo = -104.0f;      // below, the result rounds to 0
  // NaN takes 0 here (and is returned below): converting a NaN n to int would be undefined.
  const float xc = x < kLo ? kLo : (x > kHi ? kHi : (x == x ? x : 0.0f));
  float n;
  const float p = ExpReducedF32(xc, n);
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t n1 = ni >> 1;  // floor(n / 2)
  const int32_t n2 = ni - n1;
  const float s1 = BitCast<float>(static_cast<int32_t>((n1 + 127) << 23));
  const float s2 = BitCast<float>(static_cast<int32_t>((n2 + 127) << 23));
  float y = p * s1 * s2;
  y = x > kHi ? BitCast<float>(0x7f800000u) : y;  // +inf (no std:: on the device)
  y = x < kLo ? 0.0f : y;
  return x != x ? x : y;
}

/// e^x for the x <= 0 of a softmax row minus its maximum: ExpF32's reduction and polynomial
/// without its overflow handling, and the same bits wherever the result is a normal float; 0
/// below ln(FLT_MIN), where ExpF32 gives denormals (terms under 1.2e-38 of the row's largest).
/// NaN stays NaN. A quarter fewer operations than ExpF32.
QCC_HOST_DEVICE inline float ExpNonPositiveF32(float x) {
  constexpr float kLo = -87.3365447f;  // ln(FLT_MIN): above it 2^n is a normal float
  const float xc = x > kLo ? x : kLo;  // NaN takes kLo here (and is returned below)
  float n;
  const float p = ExpReducedF32(xc, n);
  float y = p * BitCast<float>(static_cast<int32_t>((static_cast<int32_t>(n) + 127) << 23));
  y = x < kLo ? 0.0f : y;
  return x != x ? x : y;
}

/// 1 / (1 + e^-x); e^-x overflowing to inf gives exactly 0.
QCC_HOST_DEVICE inline float SigmoidF32(float x) { return 1.0f / (1.0f + ExpF32(-x)); }

/// tanh(x) within a few ulp (Cephes tanhf): an odd polynomial for |x| < 0.625, where
/// 1 - 2 / (e^2|x| + 1) would cancel, and that expression with x's sign elsewhere.
QCC_HOST_DEVICE inline float TanhF32(float x) {
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

/// erf(x), branch-free (so loops of it vectorize): for |x| < 0.5 the Maclaurin series
/// 2/sqrt(pi) (x - x^3/3 + x^5/10 - ...) to x^13 (truncation below 1e-9 relative); elsewhere
/// Abramowitz and Stegun 7.1.26, 1 - (a1 t + .. + a5 t^5) e^-x^2 with t = 1 / (1 + 0.3275911 |x|)
/// (absolute error below 1.5e-7 where erf >= 0.52), with x's sign. Saturates to +-1; NaN stays.
/// e^-x^2 is ExpNonPositiveF32's, which has ExpF32's bits wherever they are a normal float; below
/// that (|x| > 9.3) both make 1 - p t e^-x^2 exactly 1, so erf has ExpF32's bits everywhere.
QCC_HOST_DEVICE inline float ErfF32(float x) {
  const float ax = x < 0 ? -x : x;
  const float z = x * x;
  float s = 1.0f / 9360.0f;
  s = s * z - 1.0f / 1320.0f;
  s = s * z + 1.0f / 216.0f;
  s = s * z - 1.0f / 42.0f;
  s = s * z + 1.0f / 10.0f;
  s = s * z - 1.0f / 3.0f;
  s = s * z + 1.0f;
  const float small = 1.12837916709551257f * x * s;  // 2 / sqrt(pi)
  const float t = 1.0f / (1.0f + 0.3275911f * ax);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  const float big = 1.0f - p * t * ExpNonPositiveF32(-z);
  const float signed_big = x < 0 ? -big : big;
  return ax < 0.5f ? small : signed_big;
}

/// a * b + c with one rounding. Every build computes the same bits (an instruction on AVX2 and
/// AVX-512 builds and on the device, libm's correctly rounded fmaf in a baseline build); used
/// only where written, so -ffp-contract=off and --fmad=false keep every other expression exact.
QCC_HOST_DEVICE inline float FmaF32(float a, float b, float c) {
#ifdef __CUDA_ARCH__
  return fmaf(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

/// GELU's exact form x Phi(x) = x/2 (1 + erf(x / sqrt(2))) at under half ErfF32's cost, for the
/// FFN of every transformer: erf(v) as v P(v^2) / Q(v^2), P of degree 7 and Q of degree 4, a
/// rational minimax fit of erf(v)/v on [0, 4] (relative error 1.2e-8) made for qcc, evaluated by
/// Horner with fused multiply-adds, clamped to [-1, 1], and exactly +-1 where |v| >= 3.92 (from
/// there erf rounds to 1 in float; the fit turns down past 4). Error against erfc in double:
/// under 2.1e-7 relative for x > 0; for x < 0, where 1 + erf cancels, under 8.3e-7 absolute
/// (|x|/2 times erf's error), and exactly 0 below -5.54. GELU(NaN) is NaN, GELU(+inf) = +inf and
/// GELU(-inf) is NaN, as the formula gives in IEEE arithmetic.
QCC_HOST_DEVICE inline float GeluF32(float x) {
  const float v = x * 0.70710678118654752440f;
  const float z = v * v;
  float p = -7.736322138462981e-10f;
  p = FmaF32(p, z, 7.669159174383822e-08f);
  p = FmaF32(p, z, -3.5582650070864474e-06f);
  p = FmaF32(p, z, 1.3545302499551326e-04f);
  p = FmaF32(p, z, 1.7038442892953753e-03f);
  p = FmaF32(p, z, 4.461727663874626e-02f);
  p = FmaF32(p, z, 1.4450541138648987e-01f);
  p = FmaF32(p, z, 1.1283791065216064f);
  float q = 5.774631281383336e-04f;
  q = FmaF32(q, z, 1.0288776829838753e-02f);
  q = FmaF32(q, z, 9.334252774715424e-02f);
  q = FmaF32(q, z, 4.613974988460541e-01f);
  q = FmaF32(q, z, 1.0f);
  // One-sided clamps (min and max), each keeping NaN; then the saturation, which also replaces
  // whatever the quotient is for a huge or infinite v.
  const float e0 = v * p / q;
  const float e1 = e0 > 1.0f ? 1.0f : e0;
  const float e2 = e1 < -1.0f ? -1.0f : e1;
  const float e3 = v >= 3.92f ? 1.0f : e2;
  const float e = v <= -3.92f ? -1.0f : e3;
  const float h = 0.5f * x;
  return FmaF32(h, e, h);
}

}  // namespace qcc

#endif  // QCC_SUPPORT_FAST_MATH_H_
