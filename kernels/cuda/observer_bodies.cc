// Host reference of the observers' batch statistics (observer_bodies.h): plain loops over the
// definitions, which the device reduction (observer_kernels.cu) must reproduce exactly.
#include "kernels/cuda/observer_bodies.h"

#include <cstring>
#include <limits>

namespace qcc::cuda {

void BatchStatsHost(const float* x, int64_t n, BatchStats* out) {
  std::memset(out, 0, sizeof(*out));
  float lo = std::numeric_limits<float>::infinity();
  float hi = -lo;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (v != v) {
      ++out->nan;
    } else if (v == std::numeric_limits<float>::infinity()) {
      ++out->posinf;
    } else if (v == -std::numeric_limits<float>::infinity()) {
      ++out->neginf;
    } else {
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
  }
  out->count = static_cast<uint64_t>(n);
  const bool any_finite = out->count != out->nan + out->posinf + out->neginf;
  // -0.0 + 0.0 == +0.0: the extremes do not depend on which zero came first (as TensorStats).
  out->min = any_finite ? lo + 0.0f : lo;
  out->max = any_finite ? hi + 0.0f : hi;
  if (!any_finite) {
    out->range_log2 = kStatsNoRange;
    return;
  }
  const float alo = lo < 0.0f ? -lo : lo, ahi = hi < 0.0f ? -hi : hi;
  out->range_log2 = StatsRangeLog2(alo > ahi ? alo : ahi);
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    if (v != v || v == std::numeric_limits<float>::infinity() ||
        v == -std::numeric_limits<float>::infinity()) {
      continue;
    }
    ++out->bins[HistogramBin(v, out->range_log2)];
  }
}

}  // namespace qcc::cuda
