// Unary elementwise kernels: activations and math on floating types, the few integer ones
// (Relu, Neg, Abs, Sign), Clip, the float classifiers (IsNaN, IsInf) and boolean Not.
#ifndef QCC_KERNELS_CPU_ELEMENTWISE_UNARY_H_
#define QCC_KERNELS_CPU_ELEMENTWISE_UNARY_H_

#include <cstdint>

#include "support/unary_fn.h"

namespace qcc::cpu {

// The kernels taking `num_threads` split large tensors over up to that many threads (small
// ones stay on the caller's); every element is computed the same way at any thread count.

/// y[i] = UnaryValue(call, x[i]) (support/unary_fn.h) for n elements; T is float or double.
/// x and y may alias.
template <typename T>
void UnaryFloat(const UnaryCall& call, const T* x, T* y, int64_t n, int num_threads);

/// Whether UnaryInt computes `fn`: Relu, Neg, Abs and Sign.
bool HasUnaryIntKernel(UnaryFn fn);

/// y[i] = fn(x[i]) for a function HasUnaryIntKernel accepts (others are our bug); T is any
/// integer type. Neg and Abs wrap at the type's minimum. x and y may alias.
template <typename T>
void UnaryInt(UnaryFn fn, const T* x, T* y, int64_t n, int num_threads);

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

#endif  // QCC_KERNELS_CPU_ELEMENTWISE_UNARY_H_
