#include "backend_cpu/kernels/elementwise_unary.h"

// The selects in these loops (and in ExpF32) vectorize only when GCC may assume that float
// compares do not trap, as Clang does by default; qcc never reads floating-point exception flags.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include <algorithm>
#include <cassert>
#include <cmath>
#include <type_traits>

#include "backend_cpu/kernels/elementwise_math.h"
#include "backend_cpu/kernels/nn_parallel.h"
#include "backend_cpu/kernels/simd_dispatch.h"

namespace qcc::cpu {
namespace {

template <typename T, typename F>
void Map(const T* x, T* y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

/// log(1 + e^v) without overflow: max(v, 0) + log1p(e^-|v|).
template <typename T>
T Softplus(T v) {
  return std::max(v, T(0)) + std::log1p(std::exp(-std::abs(v)));
}

/// 1 / (1 + e^-v); e^-v = inf gives exactly 0.
template <typename T>
T Sigmoid(T v) {
  return T(1) / (T(1) + ExpOf(-v));
}

/// Relative cost per element of `kind`: 1 for a few arithmetic instructions, more for the
/// transcendental functions, which are worth splitting over threads at smaller sizes.
int64_t CostOf(UnaryKind kind) {
  switch (kind) {
    case UnaryKind::kRelu:
    case UnaryKind::kLeakyRelu:
    case UnaryKind::kHardSigmoid:
    case UnaryKind::kHardSwish:
    case UnaryKind::kThresholdedRelu:
    case UnaryKind::kShrink:
    case UnaryKind::kNeg:
    case UnaryKind::kAbs:
    case UnaryKind::kFloor:
    case UnaryKind::kCeil:
    case UnaryKind::kRound:
    case UnaryKind::kSign:
    case UnaryKind::kSoftsign:
    case UnaryKind::kSqrt:
    case UnaryKind::kReciprocal:
      return 1;
    default:
      return 8;
  }
}

// The float GELU and erf loops in AVX-512, AVX2 and baseline builds (simd_dispatch.h): a
// transformer's FFN spends most of its non-GEMM time here.
inline __attribute__((always_inline)) void GeluF32LoopBody(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = GeluF32(x[i]);
}
QCC_SIMD_VARIANTS(void, GeluF32Loop, (const float* x, float* y, int64_t n), (x, y, n))

inline __attribute__((always_inline)) void ErfF32LoopBody(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = ErfF32(x[i]);
}
QCC_SIMD_VARIANTS(void, ErfF32Loop, (const float* x, float* y, int64_t n), (x, y, n))

template <typename T>
void UnaryFloatSerial(const UnaryParams& p, const T* x, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (p.kind == UnaryKind::kGelu) return GeluF32Loop(x, y, n);
    if (p.kind == UnaryKind::kErf) return ErfF32Loop(x, y, n);
  }
  const T alpha = static_cast<T>(p.alpha), beta = static_cast<T>(p.beta);
  const T gamma = static_cast<T>(p.gamma);
  switch (p.kind) {
    case UnaryKind::kRelu:
      return Map(x, y, n, [](T v) { return v < 0 ? T(0) : v; });
    case UnaryKind::kLeakyRelu:
      return Map(x, y, n, [=](T v) { return v < 0 ? alpha * v : v; });
    case UnaryKind::kSigmoid:
      return Map(x, y, n, [](T v) { return Sigmoid(v); });
    case UnaryKind::kHardSigmoid:
      return Map(x, y, n, [=](T v) { return std::max(T(0), std::min(T(1), alpha * v + beta)); });
    case UnaryKind::kHardSwish:
      // x * HardSigmoid(x) with alpha = 1/6, beta = 1/2.
      return Map(x, y, n,
                 [](T v) { return v * std::max(T(0), std::min(T(1), v / T(6) + T(0.5))); });
    case UnaryKind::kTanh:
      return Map(x, y, n, [](T v) { return TanhOf(v); });
    case UnaryKind::kErf:
      return Map(x, y, n, [](T v) { return ErfOf(v); });
    case UnaryKind::kElu:
      return Map(x, y, n, [=](T v) { return v < 0 ? alpha * std::expm1(v) : v; });
    case UnaryKind::kSelu:
      return Map(x, y, n, [=](T v) { return gamma * (v > 0 ? v : alpha * std::expm1(v)); });
    case UnaryKind::kCelu:
      // max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
      return Map(x, y, n, [=](T v) { return v > 0 ? v : alpha * std::expm1(v / alpha); });
    case UnaryKind::kThresholdedRelu:
      return Map(x, y, n, [=](T v) { return v > alpha ? v : T(0); });
    case UnaryKind::kSoftplus:
      return Map(x, y, n, [](T v) { return Softplus(v); });
    case UnaryKind::kSoftsign:
      return Map(x, y, n, [](T v) { return v / (T(1) + std::abs(v)); });
    case UnaryKind::kMish:
      return Map(x, y, n, [](T v) { return v * TanhOf(Softplus(v)); });
    case UnaryKind::kGelu:
      // 0.5 x (1 + erf(x / sqrt(2))).
      return Map(x, y, n, [](T v) {
        return T(0.5) * v * (T(1) + ErfOf(v * static_cast<T>(0.70710678118654752440)));
      });
    case UnaryKind::kGeluTanh:
      // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
      return Map(x, y, n, [](T v) {
        const T k = static_cast<T>(0.79788456080286535588);  // sqrt(2 / pi)
        return T(0.5) * v * (T(1) + TanhOf(k * (v + T(0.044715) * v * v * v)));
      });
    case UnaryKind::kShrink:
      return Map(x, y, n,
                 [=](T v) { return v < -alpha ? v + beta : (v > alpha ? v - beta : T(0)); });
    case UnaryKind::kSqrt:
      return Map(x, y, n, [](T v) { return std::sqrt(v); });
    case UnaryKind::kExp:
      return Map(x, y, n, [](T v) { return ExpOf(v); });
    case UnaryKind::kLog:
      return Map(x, y, n, [](T v) { return std::log(v); });
    case UnaryKind::kNeg:
      return Map(x, y, n, [](T v) { return -v; });
    case UnaryKind::kAbs:
      return Map(x, y, n, [](T v) { return std::abs(v); });
    case UnaryKind::kReciprocal:
      return Map(x, y, n, [](T v) { return T(1) / v; });
    case UnaryKind::kFloor:
      return Map(x, y, n, [](T v) { return std::floor(v); });
    case UnaryKind::kCeil:
      return Map(x, y, n, [](T v) { return std::ceil(v); });
    // nearbyint rounds in the default (to nearest, ties to even) mode and raises nothing.
    case UnaryKind::kRound:
      return Map(x, y, n, [](T v) { return std::nearbyint(v); });
    case UnaryKind::kSign:
      return Map(x, y, n, [](T v) { return v > 0 ? T(1) : (v < 0 ? T(-1) : v); });
    case UnaryKind::kSin:
      return Map(x, y, n, [](T v) { return std::sin(v); });
    case UnaryKind::kCos:
      return Map(x, y, n, [](T v) { return std::cos(v); });
    case UnaryKind::kTan:
      return Map(x, y, n, [](T v) { return std::tan(v); });
    case UnaryKind::kAsin:
      return Map(x, y, n, [](T v) { return std::asin(v); });
    case UnaryKind::kAcos:
      return Map(x, y, n, [](T v) { return std::acos(v); });
    case UnaryKind::kAtan:
      return Map(x, y, n, [](T v) { return std::atan(v); });
    case UnaryKind::kSinh:
      return Map(x, y, n, [](T v) { return std::sinh(v); });
    case UnaryKind::kCosh:
      return Map(x, y, n, [](T v) { return std::cosh(v); });
    case UnaryKind::kAsinh:
      return Map(x, y, n, [](T v) { return std::asinh(v); });
    case UnaryKind::kAcosh:
      return Map(x, y, n, [](T v) { return std::acosh(v); });
    case UnaryKind::kAtanh:
      return Map(x, y, n, [](T v) { return std::atanh(v); });
  }
}

template <typename T>
void UnaryIntSerial(UnaryKind kind, const T* x, T* y, int64_t n) {
  using U = std::make_unsigned_t<std::common_type_t<T, int>>;
  switch (kind) {
    case UnaryKind::kRelu:
      return Map(x, y, n, [](T v) { return v > 0 ? v : T(0); });
    case UnaryKind::kNeg:
      return Map(x, y, n, [](T v) { return static_cast<T>(U(0) - static_cast<U>(v)); });
    case UnaryKind::kAbs:
      return Map(x, y, n, [](T v) { return v < 0 ? static_cast<T>(U(0) - static_cast<U>(v)) : v; });
    case UnaryKind::kSign:
      return Map(x, y, n, [](T v) { return static_cast<T>(v > 0 ? 1 : (v < 0 ? -1 : 0)); });
    default:
      assert(false && "UnaryInt: not an integer kind");
      return;
  }
}

}  // namespace

template <typename T>
void UnaryFloat(const UnaryParams& p, const T* x, T* y, int64_t n, int num_threads) {
  ParallelForElements(num_threads, n, CostOf(p.kind), [&](int64_t begin, int64_t end) {
    UnaryFloatSerial(p, x + begin, y + begin, end - begin);
  });
}

template <typename T>
void UnaryInt(UnaryKind kind, const T* x, T* y, int64_t n, int num_threads) {
  ParallelForElements(num_threads, n, 1, [&](int64_t begin, int64_t end) {
    UnaryIntSerial(kind, x + begin, y + begin, end - begin);
  });
}

template <typename T>
void Clip(const T* x, T* y, int64_t n, T lo, T hi, int num_threads) {
  // NaN stays NaN: both comparisons are false.
  ParallelForElements(num_threads, n, 1, [&](int64_t begin, int64_t end) {
    Map(x + begin, y + begin, end - begin, [=](T v) { return v < lo ? lo : (v > hi ? hi : v); });
  });
}

template <typename T>
void IsNaN(const T* x, uint8_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::isnan(x[i]);
}

template <typename T>
void IsInf(const T* x, uint8_t* y, int64_t n, bool detect_negative, bool detect_positive) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] = std::isinf(x[i]) && (x[i] > 0 ? detect_positive : detect_negative);
  }
}

void NotBool(const uint8_t* x, uint8_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] == 0;
}

template void UnaryFloat<float>(const UnaryParams&, const float*, float*, int64_t, int);
template void UnaryFloat<double>(const UnaryParams&, const double*, double*, int64_t, int);
template void IsNaN<float>(const float*, uint8_t*, int64_t);
template void IsNaN<double>(const double*, uint8_t*, int64_t);
template void IsInf<float>(const float*, uint8_t*, int64_t, bool, bool);
template void IsInf<double>(const double*, uint8_t*, int64_t, bool, bool);
#define QCC_INSTANTIATE_INT_UNARY(T)                                \
  template void UnaryInt<T>(UnaryKind, const T*, T*, int64_t, int); \
  template void Clip<T>(const T*, T*, int64_t, T, T, int);
QCC_INSTANTIATE_INT_UNARY(int8_t)
QCC_INSTANTIATE_INT_UNARY(uint8_t)
QCC_INSTANTIATE_INT_UNARY(int16_t)
QCC_INSTANTIATE_INT_UNARY(uint16_t)
QCC_INSTANTIATE_INT_UNARY(int32_t)
QCC_INSTANTIATE_INT_UNARY(uint32_t)
QCC_INSTANTIATE_INT_UNARY(int64_t)
QCC_INSTANTIATE_INT_UNARY(uint64_t)
#undef QCC_INSTANTIATE_INT_UNARY
template void Clip<float>(const float*, float*, int64_t, float, float, int);
template void Clip<double>(const double*, double*, int64_t, double, double, int);

}  // namespace qcc::cpu
