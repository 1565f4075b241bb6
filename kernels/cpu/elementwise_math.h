// fp32 exp, tanh and erf for the hot activations (Sigmoid, Tanh, Exp, GELU) and Softmax:
// the branch-free forms of support/fast_math.h (shared with the CUDA kernel bodies) for float,
// libm for double; and the row maximum of the softmax loops.
#ifndef QCC_KERNELS_CPU_ELEMENTWISE_MATH_H_
#define QCC_KERNELS_CPU_ELEMENTWISE_MATH_H_

#include <cmath>
#include <cstdint>
#include <limits>

#include "support/fast_math.h"
#include "support/unary_fn.h"

namespace qcc::cpu {

using ::qcc::ErfF32;             // support/fast_math.h
using ::qcc::ExpF32;             // support/fast_math.h
using ::qcc::ExpNonPositiveF32;  // support/fast_math.h
using ::qcc::ExpReducedF32;      // support/fast_math.h
using ::qcc::FmaF32;             // support/fast_math.h
using ::qcc::GeluF32;            // support/fast_math.h
using ::qcc::SigmoidF32;         // support/fast_math.h
using ::qcc::TanhF32;            // support/fast_math.h

/// e^x, tanh(x) and erf(x): the vectorizable forms above for float, libm for double.
using ::qcc::ErfOf;   // support/unary_fn.h
using ::qcc::ExpOf;   // support/unary_fn.h
using ::qcc::TanhOf;  // support/unary_fn.h

/// max(x[0..n)), n >= 1, over 16 independent partial maxima: one vector register of them in
/// the SIMD builds (max is exact, so the grouping does not change the result; a NaN is skipped
/// as the select skips it).
template <typename T>
inline __attribute__((always_inline)) T RowMax(const T* x, int64_t n) {
  constexpr int kLanes = 16;
  T m[kLanes];
  for (int k = 0; k < kLanes; ++k) m[k] = x[0];
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int k = 0; k < kLanes; ++k) m[k] = x[j + k] > m[k] ? x[j + k] : m[k];
  }
  for (; j < n; ++j) m[0] = x[j] > m[0] ? x[j] : m[0];
  T r = m[0];
  for (int k = 1; k < kLanes; ++k) r = m[k] > r ? m[k] : r;
  return r;
}

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_ELEMENTWISE_MATH_H_
