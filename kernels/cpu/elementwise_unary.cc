// The selects in these loops (and in ExpF32) vectorize only when GCC may assume that float
// compares do not trap, as Clang does by default; qcc never reads floating-point exception flags.
// Said before every include: the formulas of support/unary_fn.h, which this file's header
// includes, must be compiled with it too.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include "kernels/cpu/elementwise_unary.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <type_traits>

#include "kernels/cpu/elementwise_math.h"
#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/simd_dispatch.h"

namespace qcc::cpu {
namespace {

template <typename T, typename F>
void Map(const T* x, T* y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
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

/// UnaryValueOf<F> over n elements.
template <UnaryFn F, typename T>
inline __attribute__((always_inline)) void MapUnary(const UnaryCall& call, const T* x, T* y,
                                                    int64_t n) {
  const T a = static_cast<T>(call.alpha), b = static_cast<T>(call.beta);
  const T g = static_cast<T>(call.gamma);
  for (int64_t i = 0; i < n; ++i) y[i] = UnaryValueOf<F, T>(a, b, g, x[i]);
}

// The float loops of the activations whose formulas are plain fp32 arithmetic (ExpF32 and
// TanhF32 of support/fast_math.h, selects, one division), in the same three builds: compiled for
// the baseline only they ran 4 lanes wide or not at all (32 x 112 x 112 at 1 thread: Sigmoid
// 0.61 ms, Tanh 1.01, Exp 0.56, against ONNX Runtime's 0.18, 0.17, 0.15 for the op and a GAP).
// The functions that have them:
#define QCC_SIMD_UNARY_F32(X) X(Sigmoid) X(Tanh) X(Exp) X(GeluTanh) X(HardSigmoid) X(HardSwish)
#define QCC_UNARY_F32_LOOP(name)                                    \
  inline __attribute__((always_inline)) void name##F32LoopBody(     \
      const UnaryCall& call, const float* x, float* y, int64_t n) { \
    MapUnary<UnaryFn::k##name, float>(call, x, y, n);               \
  }                                                                 \
  QCC_SIMD_VARIANTS(void, name##F32Loop,                            \
                    (const UnaryCall& call, const float* x, float* y, int64_t n), (call, x, y, n))
QCC_SIMD_UNARY_F32(QCC_UNARY_F32_LOOP)
#undef QCC_UNARY_F32_LOOP

template <typename T>
void UnaryFloatSerial(const UnaryCall& call, const T* x, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    switch (call.fn) {
      case UnaryFn::kGelu:
        return GeluF32Loop(x, y, n);
      case UnaryFn::kErf:
        return ErfF32Loop(x, y, n);
#define QCC_UNARY_F32_CASE(name) \
  case UnaryFn::k##name:         \
    return name##F32Loop(call, x, y, n);
        QCC_SIMD_UNARY_F32(QCC_UNARY_F32_CASE)
#undef QCC_UNARY_F32_CASE
      default:
        break;
    }
  }
  switch (call.fn) {
#define QCC_UNARY_CASE(name, cost) \
  case UnaryFn::k##name:           \
    return MapUnary<UnaryFn::k##name>(call, x, y, n);
    QCC_UNARY_FNS(QCC_UNARY_CASE)
#undef QCC_UNARY_CASE
  }
}

template <typename T>
void UnaryIntSerial(UnaryFn fn, const T* x, T* y, int64_t n) {
  using U = std::make_unsigned_t<std::common_type_t<T, int>>;
  switch (fn) {
    case UnaryFn::kRelu:
      return Map(x, y, n, [](T v) { return v > 0 ? v : T(0); });
    case UnaryFn::kNeg:
      return Map(x, y, n, [](T v) { return static_cast<T>(U(0) - static_cast<U>(v)); });
    case UnaryFn::kAbs:
      return Map(x, y, n, [](T v) { return v < 0 ? static_cast<T>(U(0) - static_cast<U>(v)) : v; });
    case UnaryFn::kSign:
      return Map(x, y, n, [](T v) { return static_cast<T>(v > 0 ? 1 : (v < 0 ? -1 : 0)); });
    default:
      assert(false && "UnaryInt: not an integer kind");
      return;
  }
}

}  // namespace

template <typename T>
void UnaryFloat(const UnaryCall& call, const T* x, T* y, int64_t n, int num_threads) {
  ParallelForElements(num_threads, n, UnaryCost(call.fn), [&](int64_t begin, int64_t end) {
    UnaryFloatSerial(call, x + begin, y + begin, end - begin);
  });
}

bool HasUnaryIntKernel(UnaryFn fn) {
  return fn == UnaryFn::kRelu || fn == UnaryFn::kNeg || fn == UnaryFn::kAbs || fn == UnaryFn::kSign;
}

template <typename T>
void UnaryInt(UnaryFn fn, const T* x, T* y, int64_t n, int num_threads) {
  ParallelForElements(num_threads, n, 1, [&](int64_t begin, int64_t end) {
    UnaryIntSerial(fn, x + begin, y + begin, end - begin);
  });
}

template <typename T>
void Clip(const T* x, T* y, int64_t n, T lo, T hi, int num_threads) {
  // The formula UnaryValueOf<kClip> uses, for every numeric type (support/unary_fn.h).
  ParallelForElements(num_threads, n, 1, [&](int64_t begin, int64_t end) {
    Map(x + begin, y + begin, end - begin, [=](T v) { return ClipOf(v, lo, hi); });
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

template void UnaryFloat<float>(const UnaryCall&, const float*, float*, int64_t, int);
template void UnaryFloat<double>(const UnaryCall&, const double*, double*, int64_t, int);
template void IsNaN<float>(const float*, uint8_t*, int64_t);
template void IsNaN<double>(const double*, uint8_t*, int64_t);
template void IsInf<float>(const float*, uint8_t*, int64_t, bool, bool);
template void IsInf<double>(const double*, uint8_t*, int64_t, bool, bool);
#define QCC_INSTANTIATE_INT_UNARY(T)                              \
  template void UnaryInt<T>(UnaryFn, const T*, T*, int64_t, int); \
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
