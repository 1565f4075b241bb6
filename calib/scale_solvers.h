// Scale solvers: pick an int8 range for an activation from its calibration statistics.
#ifndef QCC_CALIB_SCALE_SOLVERS_H_
#define QCC_CALIB_SCALE_SOLVERS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "calib/tensor_stats.h"

namespace qcc::calib {

enum class CalibMethod { kMinMax, kPercentile, kEntropy, kMse };

/// A method and its parameter (only percentile has one).
struct CalibMethodSpec {
  CalibMethod method = CalibMethod::kEntropy;
  /// Percent of |x| mass kept inside the range, in (0, 100].
  double percentile = 99.99;
};

/// Parses "minmax", "entropy", "mse", "percentile" or "percentile=P" (0 < P <= 100);
/// InvalidArgument naming the bad text otherwise.
absl::StatusOr<CalibMethodSpec> ParseCalibMethod(absl::string_view text);
/// The inverse of ParseCalibMethod: "minmax", "entropy", "mse" or "percentile=99.99".
std::string CalibMethodName(const CalibMethodSpec& spec);

/// A symmetric range [-amax, amax]: int8 scale = amax / 127 (DESIGN.md s.2).
struct SymmetricRange {
  /// Always finite and > 0.
  float amax = 1.0f;
  /// True when the data could not define a range (no finite value, all zero, or constant).
  bool degenerate = false;
  /// Why the range is degenerate, or that NaN/inf were seen and ignored; empty when all is well.
  std::string warning;
};

/// An asymmetric range [lo, hi] with lo <= 0 <= hi and lo < hi (zero exactly representable).
struct AsymmetricRange {
  float lo = -1.0f;
  float hi = 1.0f;
  bool degenerate = false;
  std::string warning;
};

/// The symmetric range `spec` picks for `stats`.
///  - minmax: max(|min|, |max|).
///  - percentile=P: the P-th percentile of |x| (linear inside a histogram bin).
///  - entropy: TensorRT's KL search over the |x| histogram (see scale_solvers.cc).
///  - mse: the threshold minimising the expected squared quantization + clipping error.
/// Histogram methods return a value in [one |x| bin width, max |x|].
/// Degenerate data: no finite value or all zero -> amax 1.0; a constant c != 0 -> |c| (exactly
/// representable as level 127); each with `degenerate` set and a warning.
SymmetricRange SolveSymmetric(const TensorStats& stats, const CalibMethodSpec& spec);

/// The asymmetric range `spec` picks for `stats`.
///  - minmax: [min(min, 0), max(max, 0)].
///  - percentile=P: the (100-P)-th and P-th percentiles of the signed histogram.
///  - entropy, mse: the symmetric threshold T, clipped to the data: [max(min, -T), min(max, T)].
/// Each then widened to include 0. Degenerate data: no finite value or all zero -> [-1, 1]; a
/// constant c -> [min(c, 0), max(c, 0)]; with `degenerate` set and a warning.
AsymmetricRange SolveAsymmetric(const TensorStats& stats, const CalibMethodSpec& spec);

}  // namespace qcc::calib

#endif  // QCC_CALIB_SCALE_SOLVERS_H_
