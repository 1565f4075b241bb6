// Streaming statistics of one observed tensor: min/max, counts of NaN and infinities, and a
// fixed-size histogram whose range grows by powers of two, so that statistics merge exactly.
#ifndef QCC_CALIB_TENSOR_STATS_H_
#define QCC_CALIB_TENSOR_STATS_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/statusor.h"

namespace qcc::calib {

/// Statistics of every value a tensor took during calibration, in O(kBins) memory.
///
/// Histogram: kBins bins over [-range, range], range = 2^e the smallest power of two strictly
/// greater than the largest finite |x| seen (and at least 2^kMinRangeLog2). With w = range /
/// (kBins/2) and m = floor(|x| / w), a value x >= 0 goes to bin kBins/2 + m = [m w, (m+1) w) and
/// x < 0 to bin kBins/2 - 1 - m = (-(m+1) w, -m w]. Because |x| * (kBins/2) / range scales by a
/// power of two it is exact in float, and floor(m / 2) is the bin index at range 2^(e+1): growing
/// the range merges adjacent bin pairs with no loss, so the histogram depends only on the set of
/// values seen, never on their order or on how they were split (Merge is exact).
/// Bins kBins/2 + m and kBins/2 - 1 - m together are the |x| histogram of bin m (AbsHistogram).
/// NaN and +-inf are counted, not binned; min and max are over finite values only.
class TensorStats {
 public:
  /// kBins = 2 * 2^kHalfBinsLog2; everything else (solvers, table) follows from this one constant.
  static constexpr int kHalfBinsLog2 = 10;
  static constexpr int kHalfBins = 1 << kHalfBinsLog2;
  static constexpr int kBins = 2 * kHalfBins;
  /// The smallest range exponent (a tensor of zeros or denormals gets range 2^kMinRangeLog2).
  static constexpr int kMinRangeLog2 = -100;
  /// Larger than FLT_MAX, so every finite float fits.
  static constexpr int kMaxRangeLog2 = 128;
  /// range_log2() before any finite value was seen.
  static constexpr int kNoRange = std::numeric_limits<int>::min();

  TensorStats() : bins_(kBins, 0) {}

  /// Adds `n` values. Fast path: ~1 ns/value; NaN/inf only cost a slower scan of their block.
  void Add(const float* x, int64_t n);
  /// Adds everything `other` saw; the result equals having added both streams of values.
  void Merge(const TensorStats& other);

  /// Rebuilds statistics from their serialized parts, checking them for consistency (min <= max,
  /// non-negative counts, histogram total = finite count, range a power of two in bounds, ...).
  /// `range` is 0 when `count == nan + posinf + neginf`; min/max are ignored then.
  /// InvalidArgument names the offending field.
  static absl::StatusOr<TensorStats> FromParts(float min, float max, int64_t count, int64_t nan,
                                               int64_t posinf, int64_t neginf, double range,
                                               std::vector<int64_t> bins);

  /// Every value added, NaN and infinities included.
  int64_t count() const { return count_; }
  int64_t nan_count() const { return nan_; }
  int64_t posinf_count() const { return posinf_; }
  int64_t neginf_count() const { return neginf_; }
  /// Values that went into the histogram.
  int64_t finite_count() const { return count_ - nan_ - posinf_ - neginf_; }
  bool has_finite() const { return finite_count() > 0; }
  /// Smallest / largest finite value (+inf / -inf when there was none).
  float min() const { return min_; }
  float max() const { return max_; }
  /// max(|min|, |max|), or 0 when there was no finite value.
  float abs_max() const;
  /// The histogram covers [-range(), range()]; range() is 0 before any finite value.
  double range() const;
  int range_log2() const { return range_log2_; }
  /// Width of one bin (0 before any finite value).
  double bin_width() const;
  /// kBins counts, see the class comment for their edges.
  const std::vector<int64_t>& bins() const { return bins_; }
  /// The |x| histogram: kHalfBins counts, bin m = [m w, (m+1) w) with w = bin_width().
  std::vector<int64_t> AbsHistogram() const;

  bool operator==(const TensorStats& o) const;
  bool operator!=(const TensorStats& o) const { return !(*this == o); }

 private:
  /// Grows the range to 2^e (e >= range_log2_), merging bins.
  void GrowRange(int e);
  struct SubHistograms;
  /// Adds a block known to hold no NaN or infinity, with finite min `lo` and max `hi`, into
  /// `sub` when given (else straight into bins_).
  void AddFiniteBlock(const float* x, int64_t n, float lo, float hi, SubHistograms* sub);
  /// Adds a block value by value, counting NaN and infinities.
  void AddMixedBlock(const float* x, int64_t n, SubHistograms* sub);

  std::vector<int64_t> bins_;
  int range_log2_ = kNoRange;
  float min_ = std::numeric_limits<float>::infinity();
  float max_ = -std::numeric_limits<float>::infinity();
  int64_t count_ = 0;
  int64_t nan_ = 0;
  int64_t posinf_ = 0;
  int64_t neginf_ = 0;
};

/// The range exponent e of the smallest 2^e > |v| (clamped to the TensorStats bounds).
int RangeLog2For(float abs_value);

}  // namespace qcc::calib

#endif  // QCC_CALIB_TENSOR_STATS_H_
