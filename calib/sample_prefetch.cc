#include "calib/sample_prefetch.h"

#include <algorithm>
#include <utility>

namespace qcc::calib {

SamplePrefetcher::SamplePrefetcher(Dataset& data, int64_t capacity)
    : data_(data), capacity_(static_cast<size_t>(std::max<int64_t>(1, capacity))) {
  data_.Rewind();
  reader_ = std::thread([this] { Read(); });
}

SamplePrefetcher::~SamplePrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  reader_.join();
}

void SamplePrefetcher::Read() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [this] { return stop_ || queue_.size() < capacity_; });
      if (stop_) return;
    }
    Sample sample;
    absl::StatusOr<bool> more = data_.Next(&sample);  // outside the lock: the slow part
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!more.ok() || !*more) {
        status_ = more.status();
        done_ = true;
      } else {
        queue_.push_back(std::move(sample));
      }
    }
    changed_.notify_all();
    if (!more.ok() || !*more) return;
  }
}

absl::StatusOr<bool> SamplePrefetcher::Next(Sample* sample) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return !queue_.empty() || done_; });
  if (queue_.empty()) {
    if (!status_.ok()) return status_;
    return false;
  }
  *sample = std::move(queue_.front());
  queue_.pop_front();
  lock.unlock();
  changed_.notify_all();
  return true;
}

}  // namespace qcc::calib
