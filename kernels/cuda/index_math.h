// Quotient and remainder of the index bodies' offsets and extents (launch.h), which are never
// negative. On a GPU a 64-bit integer division is a software routine of tens of instructions,
// and every body splits its index into coordinates. When both operands fit in 32 bits, as a
// plan's extents and offsets nearly always do, the device divides in 32 bits instead: on an
// H200 that took resnet20-cifar10's batch-64 plans from 2.18 to 2.05 ms (fp32) and 1.97 to
// 1.83 ms (int8), efficientnet-lite0's by 1-4%. The integers are the same either way; host code
// divides as written.
#ifndef QCC_KERNELS_CUDA_INDEX_MATH_H_
#define QCC_KERNELS_CUDA_INDEX_MATH_H_

#include <cstdint>

#include "support/float16.h"  // QCC_HOST_DEVICE

namespace qcc::cuda {

struct QuotRem {
  int64_t quot;
  int64_t rem;
};

/// a / b and a % b (C++'s truncating division; b != 0).
QCC_HOST_DEVICE inline QuotRem DivRem(int64_t a, int64_t b) {
#if defined(__CUDA_ARCH__)
  if (((a | b) >> 32) == 0) {  // both in [0, 2^32)
    const uint32_t ua = static_cast<uint32_t>(a), ub = static_cast<uint32_t>(b);
    const uint32_t q = ua / ub;
    return {static_cast<int64_t>(q), static_cast<int64_t>(ua - q * ub)};
  }
#endif
  const int64_t q = a / b;
  return {q, a - q * b};
}

QCC_HOST_DEVICE inline int64_t IndexDiv(int64_t a, int64_t b) { return DivRem(a, b).quot; }
QCC_HOST_DEVICE inline int64_t IndexMod(int64_t a, int64_t b) { return DivRem(a, b).rem; }

}  // namespace qcc::cuda

#endif  // QCC_KERNELS_CUDA_INDEX_MATH_H_
