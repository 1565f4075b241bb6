#include "kernels/cpu/pad.h"

#include <algorithm>

namespace qcc::cpu {
namespace {

/// a mod m in [0, m).
int64_t PositiveMod(int64_t a, int64_t m) {
  const int64_t r = a % m;
  return r < 0 ? r + m : r;
}

}  // namespace

std::vector<int64_t> PadSourceIndex(int64_t extent, int64_t begin, int64_t end, PadFill mode) {
  const int64_t lo = std::max<int64_t>(0, -begin);
  const int64_t n = extent - lo - std::max<int64_t>(0, -end);  // the cropped extent
  const int64_t pad_begin = std::max<int64_t>(0, begin);
  const int64_t out_extent = std::max<int64_t>(0, extent + begin + end);
  std::vector<int64_t> source(out_extent, -1);
  for (int64_t o = 0; o < out_extent; ++o) {
    const int64_t c = o - pad_begin;  // coordinate within the cropped range
    if (c >= 0 && c < n) {
      source[o] = lo + c;
      continue;
    }
    if (n <= 0) continue;
    switch (mode) {
      case PadFill::kConstant:
        break;
      case PadFill::kEdge:
        source[o] = lo + std::clamp<int64_t>(c, 0, n - 1);
        break;
      case PadFill::kWrap:
        source[o] = lo + PositiveMod(c, n);
        break;
      case PadFill::kReflect: {
        // Mirror about both edges: period 2(n-1); a single element reflects onto itself.
        if (n == 1) {
          source[o] = lo;
          break;
        }
        const int64_t m = PositiveMod(c, 2 * (n - 1));
        source[o] = lo + (m < n ? m : 2 * (n - 1) - m);
        break;
      }
    }
  }
  return source;
}

}  // namespace qcc::cpu
