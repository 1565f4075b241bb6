// Integer helpers the kernels share (tile counts, buffer sizes).
#ifndef QCC_SUPPORT_INT_MATH_H_
#define QCC_SUPPORT_INT_MATH_H_

#include <cstdint>

namespace qcc {

/// ceil(a / b) for a >= 0 and b > 0.
constexpr int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The least multiple of m that is at least v, for v >= 0 and m > 0.
constexpr int64_t RoundUp(int64_t v, int64_t m) { return CeilDiv(v, m) * m; }

}  // namespace qcc

#endif  // QCC_SUPPORT_INT_MATH_H_
