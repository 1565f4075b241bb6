// Calibration observers on the GPU: the histogram binning of calib::TensorStats as a
// QCC_HOST_DEVICE function, and the batch statistics record the device reduction
// (observer_kernels.h) writes, with its host reference BatchStatsHost.
//
// A batch's statistics are those of calib::TensorStats::Add over the same values: min / max
// over finite values (-0 counted as +0), counts of all values, NaN, +inf and -inf, and a
// kStatsBins histogram at the batch's own range 2^range_log2 (the smallest power of two strictly
// above the largest finite |x|, clamped to [-100, 128]). TensorStats bins depend only on the set
// of values, never on the order or the range growth history, so
//   calib::TensorStats::FromParts(min, max, count, nan, posinf, neginf,
//                                 range_log2 == kStatsNoRange ? 0 : ldexp(1.0, range_log2), bins)
// equals a TensorStats that Add-ed the batch (tests/calib/device_stats_test.cc), and Merge-ing
// such batches is exact. This header has no dependency on calib (the kernels library sits below
// it); the constants are TensorStats's, checked by that test.
#ifndef QCC_KERNELS_CUDA_OBSERVER_BODIES_H_
#define QCC_KERNELS_CUDA_OBSERVER_BODIES_H_

#include <cstdint>

#include "support/float16.h"

namespace qcc::cuda {

/// calib::TensorStats::kBins, kHalfBins(Log2), kMinRangeLog2, kMaxRangeLog2, kNoRange.
inline constexpr int kStatsHalfBinsLog2 = 10;
inline constexpr int kStatsHalfBins = 1 << kStatsHalfBinsLog2;
inline constexpr int kStatsBins = 2 * kStatsHalfBins;
inline constexpr int kStatsMinRangeLog2 = -100;
inline constexpr int kStatsMaxRangeLog2 = 128;
inline constexpr int32_t kStatsNoRange = INT32_MIN;

/// calib::RangeLog2For: the exponent e of the smallest 2^e > abs_value, clamped to
/// [kStatsMinRangeLog2, kStatsMaxRangeLog2] (kStatsMinRangeLog2 for 0, denormals and NaN).
/// abs_value must be >= 0 or NaN, and not +inf.
QCC_HOST_DEVICE inline int StatsRangeLog2(float abs_value) {
  if (!(abs_value > 0.0f)) return kStatsMinRangeLog2;
  // abs_value in [2^(E-127), 2^(E-126)) for biased exponent E >= 1, so e = E - 126; denormals
  // (E = 0) lie below 2^-126 and clamp to the minimum.
  const int biased = static_cast<int>((BitCast<uint32_t>(abs_value) >> 23) & 0xffu);
  const int e = biased - 126;
  return e < kStatsMinRangeLog2 ? kStatsMinRangeLog2
                                : (e > kStatsMaxRangeLog2 ? kStatsMaxRangeLog2 : e);
}

/// The TensorStats bin of a finite x at range 2^range_log2 (x must satisfy |x| < 2^range_log2):
/// m = floor(|x| * (kHalfBins / 2^range_log2)) (exact: a power-of-two scale), capped at
/// kHalfBins - 1; bin kHalfBins + m for x >= 0 (-0 included), kHalfBins - 1 - m for x < 0.
QCC_HOST_DEVICE inline int HistogramBin(float x, int range_log2) {
  // scale = 2^(kHalfBinsLog2 - e), e in [-100, 128]: exponent in [-118, 110], a normal float.
  const float scale =
      BitCast<float>(static_cast<uint32_t>(kStatsHalfBinsLog2 - range_log2 + 127) << 23);
  const float ax = BitCast<float>(BitCast<uint32_t>(x) & 0x7fffffffu);
  float s = ax * scale;
  s = s < static_cast<float>(kStatsHalfBins - 1) ? s : static_cast<float>(kStatsHalfBins - 1);
  const int32_t m = static_cast<int32_t>(s);
  return kStatsHalfBins + (x < 0.0f ? ~m : m);
}

/// One batch's statistics; the same plain layout on host and device (what EnqueueBatchStats
/// writes to device memory and the caller copies back, about 16 KiB).
struct BatchStats {
  float min;           // smallest finite value (+0 for zeros of either sign); +inf when none
  float max;           // largest finite value; -inf when none
  int32_t range_log2;  // kStatsNoRange when there is no finite value
  int32_t reserved;
  uint64_t count;             // every value
  uint64_t nan;               // NaN values
  uint64_t posinf;            // +inf values
  uint64_t neginf;            // -inf values
  uint64_t bins[kStatsBins];  // histogram of the finite values at range 2^range_log2
};

/// Host reference of one batch's statistics (plain loops; what the device reduction must
/// reproduce exactly). n >= 0. Defined in observer_bodies.cc.
void BatchStatsHost(const float* x, int64_t n, BatchStats* out);

}  // namespace qcc::cuda

#endif  // QCC_KERNELS_CUDA_OBSERVER_BODIES_H_
