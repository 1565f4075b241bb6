// Reading calibration samples ahead of the batches that run them: a Dataset decodes and
// preprocesses one image at a time on the thread that asks, which left the kernel threads idle
// for that long between batches (500 ImageNet photos: 0.38 s of decoding, resizing and cropping,
// against 3 to 5 s of calibration on 2 cores). SamplePrefetcher reads them on a thread of its
// own, a bounded number ahead, in the Dataset's order.
#ifndef QCC_CALIB_SAMPLE_PREFETCH_H_
#define QCC_CALIB_SAMPLE_PREFETCH_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "calib/dataset.h"

namespace qcc::calib {

/// Dataset::Next from a reader thread that stays up to `capacity` samples ahead of the caller.
/// The samples, their order, the error (at the position where Dataset::Next failed) and the
/// end are those of Dataset::Next. The Dataset is rewound first and must not be used by anyone
/// else until the prefetcher is destroyed; memory is bounded by `capacity` samples.
class SamplePrefetcher {
 public:
  SamplePrefetcher(Dataset& data, int64_t capacity);
  /// Stops the reader (it finishes the sample it is reading) and joins it.
  ~SamplePrefetcher();
  SamplePrefetcher(const SamplePrefetcher&) = delete;
  SamplePrefetcher& operator=(const SamplePrefetcher&) = delete;

  /// The next sample into `sample`; false at the end; Dataset::Next's error where it had one
  /// (and from then on).
  absl::StatusOr<bool> Next(Sample* sample);

 private:
  void Read();

  Dataset& data_;
  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable changed_;  // a sample queued or taken, the end, or stop_
  std::deque<Sample> queue_;
  bool done_ = false;  // the reader has queued its last sample (status_ says why)
  bool stop_ = false;  // the destructor asks the reader to return
  absl::Status status_;
  std::thread reader_;  // last: started once the members above exist
};

}  // namespace qcc::calib

#endif  // QCC_CALIB_SAMPLE_PREFETCH_H_
