// Helpers of the elementwise tests: deterministic data and an independent broadcast reference.
#ifndef QCC_TESTS_BACKEND_CPU_ELEMENTWISE_TESTING_H_
#define QCC_TESTS_BACKEND_CPU_ELEMENTWISE_TESTING_H_

#include <algorithm>
#include <random>
#include <vector>

#include "support/tensor.h"

namespace qcc::testing {

/// n uniform floats in [lo, hi), the same for the same seed.
inline std::vector<float> UniformFloats(int64_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

/// Numpy broadcast of two shapes (assumed compatible).
inline Dims BroadcastShape(const Dims& a, const Dims& b) {
  const size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// The element of an input of shape `in` that output element `o` (of shape `out`) reads:
/// unravel o over `out`, drop the coordinates of broadcast axes, ravel over `in`.
inline int64_t BroadcastSourceIndex(const Dims& in, const Dims& out, int64_t o) {
  int64_t index = 0, stride = 1;
  for (int64_t a = static_cast<int64_t>(out.size()) - 1, b = static_cast<int64_t>(in.size()) - 1;
       a >= 0; --a, --b) {
    const int64_t coord = o % out[a];
    o /= out[a];
    if (b >= 0) {
      if (in[b] != 1) index += coord * stride;
      stride *= in[b];
    }
  }
  return index;
}

}  // namespace qcc::testing

#endif  // QCC_TESTS_BACKEND_CPU_ELEMENTWISE_TESTING_H_
