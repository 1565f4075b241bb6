// Test helper: compares an output tensor with an expected one, dtype-aware.
#ifndef QCC_TESTS_TESTING_TENSOR_COMPARE_H_
#define QCC_TESTS_TESTING_TENSOR_COMPARE_H_

#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "support/dtype.h"
#include "support/tensor.h"

namespace qcc::testing {

/// Empty when `actual` matches `expected`, else why not. Dtypes and shapes must be equal.
/// Floats compare in double: |a - b| <= atol + rtol * |b|, NaN equals NaN, infinities must be
/// equal; integers and bools compare exactly.
inline std::string CompareTensors(const Tensor& actual, const Tensor& expected, double rtol,
                                  double atol) {
  if (actual.dtype() != expected.dtype()) {
    return absl::StrCat("dtype ", DTypeName(actual.dtype()), ", expected ",
                        DTypeName(expected.dtype()));
  }
  if (actual.dims() != expected.dims()) {
    return absl::StrCat("shape ", DimsToString(actual.dims()), ", expected ",
                        DimsToString(expected.dims()));
  }
  const bool is_float = IsFloat(expected.dtype());
  int64_t mismatches = 0, worst = -1;
  double worst_excess = -1;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double excess = 0;  // how far past the tolerance (> 0 is a mismatch)
    if (is_float) {
      const double a = actual.GetAsDouble(i), b = expected.GetAsDouble(i);
      if (a == b || (std::isnan(a) && std::isnan(b))) continue;
      const double tol = atol + rtol * std::fabs(b);
      const double err = std::fabs(a - b);  // NaN when only one side is NaN
      if (std::isfinite(a) && std::isfinite(b) && err <= tol) continue;
      excess = std::isfinite(err) ? err - tol : INFINITY;
    } else {
      if (actual.GetAsInt64(i) == expected.GetAsInt64(i)) continue;
      excess = 1;
    }
    ++mismatches;
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = i;
    }
  }
  if (mismatches == 0) return "";
  return absl::StrCat(mismatches, " of ", expected.numel(), " elements differ (rtol ", rtol,
                      ", atol ", atol, "); worst at flat index ", worst, ": got ",
                      actual.GetAsDouble(worst), ", expected ", expected.GetAsDouble(worst));
}

}  // namespace qcc::testing

#endif  // QCC_TESTS_TESTING_TENSOR_COMPARE_H_
