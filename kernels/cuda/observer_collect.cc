// Without CUDA: DeviceStatsSlots cannot be created (observer_collect_cuda.cc has the real one).
#include "kernels/cuda/observer_collect.h"

#ifndef QCC_HAVE_CUDA
namespace qcc::cuda {

absl::StatusOr<std::unique_ptr<DeviceStatsSlots>> DeviceStatsSlots::Create(int) {
  return absl::FailedPreconditionError(
      "this qcc was built without CUDA (no nvcc at build time): use --device cpu");
}
DeviceStatsSlots::~DeviceStatsSlots() = default;
absl::Status DeviceStatsSlots::Enqueue(int, const float*, int64_t, void*) {
  return absl::FailedPreconditionError("built without CUDA");
}
absl::Status DeviceStatsSlots::Collect(void*, std::vector<BatchStats>*, std::vector<bool>*) {
  return absl::FailedPreconditionError("built without CUDA");
}

}  // namespace qcc::cuda
#endif  // QCC_HAVE_CUDA
