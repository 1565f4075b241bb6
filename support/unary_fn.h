// The elementwise functions of one input, each written once. Every place that evaluates one
// calls UnaryValueOf: the CPU kernels of the evaluator and the runtime
// (kernels/cpu/elementwise_unary.cc), the int8 lookup tables the compiler builds
// (passes/quantize.cc), and the CUDA kernel bodies (kernels/cuda/elementwise_bodies.h).
// So a function gives the same bits wherever it runs (the files are built without contracting a
// multiply and an add: -ffp-contract=off, nvcc --fmad=false).
//
// ir/ops.def names the function of each op kind (its `unary` column), and an op's attributes
// give the constants (ir/attrs.h, UnaryConstsOf). A new elementwise function is one line of
// QCC_UNARY_FNS and one case of UnaryValueOf, whose switch has no default.
#ifndef QCC_SUPPORT_UNARY_FN_H_
#define QCC_SUPPORT_UNARY_FN_H_

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "support/fast_math.h"
#include "support/float16.h"  // QCC_HOST_DEVICE

namespace qcc {

// QCC_FN_(Name, cost): every function, in the order of its number. Plans store the number
// (runtime::UnaryStepParams::op), so new functions are appended. `cost` is the relative time
// per element: 1 for a few arithmetic instructions, 8 for the transcendental ones, which are
// worth splitting over threads at smaller sizes.
#define QCC_UNARY_FNS(QCC_FN_) \
  QCC_FN_(Relu, 1)             \
  QCC_FN_(Sigmoid, 8)          \
  QCC_FN_(Tanh, 8)             \
  QCC_FN_(HardSigmoid, 1)      \
  QCC_FN_(HardSwish, 1)        \
  QCC_FN_(Clip, 1)             \
  QCC_FN_(LeakyRelu, 1)        \
  QCC_FN_(Erf, 8)              \
  QCC_FN_(Sqrt, 1)             \
  QCC_FN_(Gelu, 8)             \
  QCC_FN_(GeluTanh, 8)         \
  QCC_FN_(Elu, 8)              \
  QCC_FN_(Selu, 8)             \
  QCC_FN_(Celu, 8)             \
  QCC_FN_(ThresholdedRelu, 1)  \
  QCC_FN_(Softplus, 8)         \
  QCC_FN_(Softsign, 1)         \
  QCC_FN_(Mish, 8)             \
  QCC_FN_(Shrink, 1)           \
  QCC_FN_(Exp, 8)              \
  QCC_FN_(Log, 8)              \
  QCC_FN_(Neg, 1)              \
  QCC_FN_(Abs, 1)              \
  QCC_FN_(Reciprocal, 1)       \
  QCC_FN_(Floor, 1)            \
  QCC_FN_(Ceil, 1)             \
  QCC_FN_(Round, 1)            \
  QCC_FN_(Sign, 1)             \
  QCC_FN_(Sin, 8)              \
  QCC_FN_(Cos, 8)              \
  QCC_FN_(Tan, 8)              \
  QCC_FN_(Asin, 8)             \
  QCC_FN_(Acos, 8)             \
  QCC_FN_(Atan, 8)             \
  QCC_FN_(Sinh, 8)             \
  QCC_FN_(Cosh, 8)             \
  QCC_FN_(Asinh, 8)            \
  QCC_FN_(Acosh, 8)            \
  QCC_FN_(Atanh, 8)

enum class UnaryFn : int32_t {
#define QCC_UNARY_ENUMERATOR(name, cost) k##name,
  QCC_UNARY_FNS(QCC_UNARY_ENUMERATOR)
#undef QCC_UNARY_ENUMERATOR
};

inline constexpr int kNumUnaryFns = 0
#define QCC_UNARY_COUNT(name, cost) +1
    QCC_UNARY_FNS(QCC_UNARY_COUNT)
#undef QCC_UNARY_COUNT
    ;

/// The function's name as QCC_UNARY_FNS spells it ("HardSigmoid"); "unknown" out of range.
inline const char* UnaryFnName(UnaryFn fn) {
  constexpr const char* kNames[] = {
#define QCC_UNARY_NAME(name, cost) #name,
      QCC_UNARY_FNS(QCC_UNARY_NAME)
#undef QCC_UNARY_NAME
  };
  const int i = static_cast<int>(fn);
  return i >= 0 && i < kNumUnaryFns ? kNames[i] : "unknown";
}

/// A function and its constants. What alpha, beta and gamma mean is said at each case of
/// UnaryValueOf; the functions without constants ignore them.
struct UnaryCall {
  UnaryFn fn = UnaryFn::kRelu;
  float alpha = 0.0f;
  float beta = 0.0f;
  float gamma = 0.0f;
};

/// The relative cost per element of `fn` (the column of QCC_UNARY_FNS).
constexpr int UnaryCost(UnaryFn fn) {
  constexpr int kCosts[] = {
#define QCC_UNARY_COST(name, cost) cost,
      QCC_UNARY_FNS(QCC_UNARY_COST)
#undef QCC_UNARY_COST
  };
  return kCosts[static_cast<int>(fn)];
}

/// e^x, tanh(x) and erf(x): support/fast_math.h's vectorizable forms for float, the C library's
/// for double.
QCC_HOST_DEVICE inline float ExpOf(float x) { return ExpF32(x); }
QCC_HOST_DEVICE inline double ExpOf(double x) { return std::exp(x); }
QCC_HOST_DEVICE inline float TanhOf(float x) { return TanhF32(x); }
QCC_HOST_DEVICE inline double TanhOf(double x) { return std::tanh(x); }
QCC_HOST_DEVICE inline float ErfOf(float x) { return ErfF32(x); }
QCC_HOST_DEVICE inline double ErfOf(double x) { return std::erf(x); }

/// std::min and std::max, callable on the device: the same comparisons (NaN handling included)
/// and, as they take and return references, the same code. GCC makes minps / maxps of this
/// form, and compare-and-blend of the same ternary on values, which runs HardSwish 1.7x slower.
template <typename T>
QCC_HOST_DEVICE inline const T& MinOf(const T& a, const T& b) {
  return b < a ? b : a;
}
template <typename T>
QCC_HOST_DEVICE inline const T& MaxOf(const T& a, const T& b) {
  return a < b ? b : a;
}

/// Clip to [lo, hi] for any ordered type, integers included (cpu::Clip runs it on every numeric
/// type; UnaryValueOf<kClip> on floats): NaN stays NaN, as both comparisons are false.
template <typename T>
QCC_HOST_DEVICE inline T ClipOf(T v, T lo, T hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

/// log(1 + e^v) without overflow: max(v, 0) + log1p(e^-|v|).
template <typename T>
QCC_HOST_DEVICE inline T SoftplusOf(T v) {
  return MaxOf(v, T(0)) + std::log1p(std::exp(-std::abs(v)));
}

/// F(v) for T float or double, with the constants a = alpha, b = beta, g = gamma: the one
/// formula of each function. F is a template argument so that a loop over it vectorizes
/// (backend_cpu's UnaryFloat).
template <UnaryFn F, typename T>
QCC_HOST_DEVICE inline T UnaryValueOf(T a, T b, T g, T v) {
  switch (F) {
    case UnaryFn::kRelu:
      return v < T(0) ? T(0) : v;
    case UnaryFn::kSigmoid:  // 1 / (1 + e^-v); e^-v = inf gives exactly 0
      return T(1) / (T(1) + ExpOf(-v));
    case UnaryFn::kTanh:
      return TanhOf(v);
    case UnaryFn::kHardSigmoid: {  // max(0, min(1, a v + b))
      const T t = a * v + b;
#if defined(__CUDA_ARCH__)
      // NaN gives 1, as min(1, t) and then max(0, .) do on the host. Said first on the device:
      // a CUDA build gave 0 for NaN on an H200 although its PTX keeps min then max (most likely
      // ptxas made the clamp a saturating instruction, which flushes NaN to 0).
      if (t != t) return T(1);
#endif
      return MaxOf(T(0), MinOf(T(1), t));
    }
    case UnaryFn::kHardSwish:  // v * HardSigmoid(v) with 1/6 and 1/2 (ONNX), as v / 6 + 1/2
      return v * MaxOf(T(0), MinOf(T(1), v / T(6) + T(0.5)));
    case UnaryFn::kClip:  // [a, b] = [min, max]
      return ClipOf(v, a, b);
    case UnaryFn::kLeakyRelu:  // a = slope
      return v < T(0) ? a * v : v;
    case UnaryFn::kErf:
      return ErfOf(v);
    case UnaryFn::kSqrt:
      return std::sqrt(v);
    case UnaryFn::kGelu:  // v (1 + erf(v / sqrt(2))) / 2; in float, fast_math.h's GeluF32
      if constexpr (std::is_same_v<T, float>) {
        return GeluF32(v);
      } else {
        return T(0.5) * v * (T(1) + ErfOf(v * static_cast<T>(0.70710678118654752440)));
      }
    case UnaryFn::kGeluTanh: {  // v (1 + tanh(sqrt(2 / pi) (v + 0.044715 v^3))) / 2
      const T k = static_cast<T>(0.79788456080286535588);
      return T(0.5) * v * (T(1) + TanhOf(k * (v + T(0.044715) * v * v * v)));
    }
    case UnaryFn::kElu:  // a = alpha
      return v < T(0) ? a * std::expm1(v) : v;
    case UnaryFn::kSelu:  // a = alpha, g = gamma
      return g * (v > T(0) ? v : a * std::expm1(v));
    case UnaryFn::kCelu:  // max(0, v) + min(0, a (e^(v / a) - 1))
      return v > T(0) ? v : a * std::expm1(v / a);
    case UnaryFn::kThresholdedRelu:  // a = threshold
      return v > a ? v : T(0);
    case UnaryFn::kSoftplus:
      return SoftplusOf(v);
    case UnaryFn::kSoftsign:
      return v / (T(1) + std::abs(v));
    case UnaryFn::kMish:
      return v * TanhOf(SoftplusOf(v));
    case UnaryFn::kShrink:  // a = lambd, b = bias
      return v < -a ? v + b : (v > a ? v - b : T(0));
    case UnaryFn::kExp:
      return ExpOf(v);
    case UnaryFn::kLog:
      return std::log(v);
    case UnaryFn::kNeg:
      return -v;
    case UnaryFn::kAbs:
      return std::abs(v);
    case UnaryFn::kReciprocal:
      return T(1) / v;
    case UnaryFn::kFloor:
      return std::floor(v);
    case UnaryFn::kCeil:
      return std::ceil(v);
    case UnaryFn::kRound:  // half to even: nearbyint in the default mode, raising nothing
      return std::nearbyint(v);
    case UnaryFn::kSign:
      return v > T(0) ? T(1) : (v < T(0) ? T(-1) : v);
    case UnaryFn::kSin:
      return std::sin(v);
    case UnaryFn::kCos:
      return std::cos(v);
    case UnaryFn::kTan:
      return std::tan(v);
    case UnaryFn::kAsin:
      return std::asin(v);
    case UnaryFn::kAcos:
      return std::acos(v);
    case UnaryFn::kAtan:
      return std::atan(v);
    case UnaryFn::kSinh:
      return std::sinh(v);
    case UnaryFn::kCosh:
      return std::cosh(v);
    case UnaryFn::kAsinh:
      return std::asinh(v);
    case UnaryFn::kAcosh:
      return std::acosh(v);
    case UnaryFn::kAtanh:
      return std::atanh(v);
  }
  return v;  // not reached: the switch names every function
}

/// UnaryValueOf of a function chosen at run time (the int8 table builder, the CUDA bodies).
template <typename T>
QCC_HOST_DEVICE inline T UnaryValue(UnaryFn fn, T a, T b, T g, T v) {
  switch (fn) {
#define QCC_UNARY_VALUE_CASE(name, cost) \
  case UnaryFn::k##name:                 \
    return UnaryValueOf<UnaryFn::k##name, T>(a, b, g, v);
    QCC_UNARY_FNS(QCC_UNARY_VALUE_CASE)
#undef QCC_UNARY_VALUE_CASE
  }
  return v;  // not reached: the switch names every function
}

template <typename T>
QCC_HOST_DEVICE inline T UnaryValue(const UnaryCall& c, T v) {
  return UnaryValue<T>(c.fn, static_cast<T>(c.alpha), static_cast<T>(c.beta),
                       static_cast<T>(c.gamma), v);
}

}  // namespace qcc

#endif  // QCC_SUPPORT_UNARY_FN_H_
