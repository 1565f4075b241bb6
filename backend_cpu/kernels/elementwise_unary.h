// Unary elementwise kernels: activations and math on floating types, the few integer ones
// (Relu, Neg, Abs, Sign), Clip, the float classifiers (IsNaN, IsInf) and boolean Not.
#ifndef QCC_BACKEND_CPU_KERNELS_ELEMENTWISE_UNARY_H_
#define QCC_BACKEND_CPU_KERNELS_ELEMENTWISE_UNARY_H_

#include <cstdint>

namespace qcc::cpu {

/// The unary functions of UnaryFloat.
enum class UnaryKind : uint8_t {
  // Activations.
  kRelu,
  kLeakyRelu,  // alpha
  kSigmoid,
  kHardSigmoid,  // alpha, beta
  kHardSwish,
  kTanh,
  kErf,
  kElu,              // alpha
  kSelu,             // alpha, gamma
  kCelu,             // alpha
  kThresholdedRelu,  // alpha
  kSoftplus,
  kSoftsign,
  kMish,
  kGelu,
  kGeluTanh,
  kShrink,  // alpha = lambd, beta = bias
  // Math.
  kSqrt,
  kExp,
  kLog,
  kNeg,
  kAbs,
  kReciprocal,
  kFloor,
  kCeil,
  kRound,  // half to even
  kSign,
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
};

/// A unary function and its constants (meaning per kind, as noted in UnaryKind).
struct UnaryParams {
  UnaryKind kind = UnaryKind::kRelu;
  float alpha = 0.0f;
  float beta = 0.0f;
  float gamma = 0.0f;
};

// The kernels taking `num_threads` split large tensors over up to that many threads (small
// ones stay on the caller's); every element is computed the same way at any thread count.

/// y[i] = f(x[i]) for n elements; T is float or double. x and y may alias.
template <typename T>
void UnaryFloat(const UnaryParams& p, const T* x, T* y, int64_t n, int num_threads);

/// y[i] = f(x[i]) for the integer kinds kRelu, kNeg, kAbs and kSign (others are our bug);
/// T is any integer type. Neg and Abs wrap at the type's minimum. x and y may alias.
template <typename T>
void UnaryInt(UnaryKind kind, const T* x, T* y, int64_t n, int num_threads);

/// y[i] = min(max(x[i], lo), hi) for n elements; T is any numeric type. x and y may alias.
template <typename T>
void Clip(const T* x, T* y, int64_t n, T lo, T hi, int num_threads);

/// y[i] = isnan(x[i]) (as 0 / 1); T is float or double.
template <typename T>
void IsNaN(const T* x, uint8_t* y, int64_t n);

/// y[i] = x[i] is +inf (when detect_positive) or -inf (when detect_negative); T float or double.
template <typename T>
void IsInf(const T* x, uint8_t* y, int64_t n, bool detect_negative, bool detect_positive);

/// y[i] = !x[i] over bools stored as bytes.
void NotBool(const uint8_t* x, uint8_t* y, int64_t n);

}  // namespace qcc::cpu

#endif  // QCC_BACKEND_CPU_KERNELS_ELEMENTWISE_UNARY_H_
