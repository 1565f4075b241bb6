// fp32 exp, tanh and erf for the hot activations (Sigmoid, Tanh, Exp, GELU) and Softmax:
// the branch-free forms of support/fast_math.h (shared with the CUDA kernel bodies) for float,
// libm for double.
#ifndef QCC_BACKEND_CPU_KERNELS_ELEMENTWISE_MATH_H_
#define QCC_BACKEND_CPU_KERNELS_ELEMENTWISE_MATH_H_

#include <cmath>
#include <cstdint>
#include <limits>

#include "support/fast_math.h"

namespace qcc::cpu {

using ::qcc::ErfF32;         // support/fast_math.h
using ::qcc::ExpF32;         // support/fast_math.h
using ::qcc::ExpReducedF32;  // support/fast_math.h
using ::qcc::SigmoidF32;     // support/fast_math.h
using ::qcc::TanhF32;        // support/fast_math.h

/// e^x and tanh(x): the vectorizable forms above for float, libm for double.
inline float ExpOf(float x) { return ExpF32(x); }
inline double ExpOf(double x) { return std::exp(x); }
inline float TanhOf(float x) { return TanhF32(x); }
inline double TanhOf(double x) { return std::tanh(x); }
/// erf(x): the vectorizable form for float (GELU's), libm for double.
inline float ErfOf(float x) { return ErfF32(x); }
inline double ErfOf(double x) { return std::erf(x); }

}  // namespace qcc::cpu

#endif  // QCC_BACKEND_CPU_KERNELS_ELEMENTWISE_MATH_H_
