// Helpers of the nn op tests: deterministic random tensors and N-d index arithmetic that the
// naive reference loops in the tests share.
#ifndef QCC_TESTS_BACKEND_CPU_NN_TESTING_H_
#define QCC_TESTS_BACKEND_CPU_NN_TESTING_H_

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "support/tensor.h"

namespace qcc::testing {

/// A float32 tensor of `dims` with values uniform in [-1, 1), reproducible from `seed`.
inline Tensor RandomF32(Dims dims, uint32_t seed) {
  Tensor t(DType::kFloat32, std::move(dims));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

/// Right-aligns up to three spatial values into (depth, height, width), filling with `fill`.
inline std::array<int64_t, 3> To3(const std::vector<int64_t>& v, int64_t fill) {
  std::array<int64_t, 3> out{fill, fill, fill};
  for (size_t i = 0; i < v.size(); ++i) out[3 - v.size() + i] = v[i];
  return out;
}

/// The spatial extents (axes 2...) of a shape.
inline std::vector<int64_t> SpatialOf(const Dims& d) {
  return std::vector<int64_t>(d.begin() + 2, d.end());
}

/// N, C followed by the spatial extents.
inline Dims NcPlus(int64_t n, int64_t c, const std::vector<int64_t>& spatial) {
  Dims d = {n, c};
  d.insert(d.end(), spatial.begin(), spatial.end());
  return d;
}

}  // namespace qcc::testing

#endif  // QCC_TESTS_BACKEND_CPU_NN_TESTING_H_
