// A set of device-side BatchStats slots for calibration on the GPU: one per observed tensor.
// The runner enqueues each observed tensor's statistics on the stream that produced it (right
// after its step) and, once per batch, copies back only the statistics (about 16 KiB a tensor),
// never the activations. Compiles without CUDA (Create then fails with FailedPrecondition).
#ifndef QCC_KERNELS_CUDA_OBSERVER_COLLECT_H_
#define QCC_KERNELS_CUDA_OBSERVER_COLLECT_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/cuda/observer_bodies.h"

namespace qcc::cuda {

class DeviceStatsSlots {
 public:
  /// Device memory for `slots` BatchStats and the reduction's scratch, on the current device.
  /// Errors name the CUDA call; FailedPrecondition when built without CUDA.
  static absl::StatusOr<std::unique_ptr<DeviceStatsSlots>> Create(int slots);
  ~DeviceStatsSlots();
  DeviceStatsSlots(const DeviceStatsSlots&) = delete;
  DeviceStatsSlots& operator=(const DeviceStatsSlots&) = delete;

  /// Enqueues the statistics of the `n` floats at device address `x` into `slot` on `stream` (a
  /// cudaStream_t). A slot holds one tensor's statistics per batch (the last enqueued).
  absl::Status Enqueue(int slot, const float* x, int64_t n, void* stream);
  /// Waits for `stream`, copies every slot enqueued since the last Collect back to the host and
  /// returns them by slot (`filled[slot]` false for a slot nothing was enqueued into).
  absl::Status Collect(void* stream, std::vector<BatchStats>* stats, std::vector<bool>* filled);

 private:
  DeviceStatsSlots() = default;
  int slots_ = 0;
  BatchStats* device_ = nullptr;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  std::vector<bool> enqueued_;
};

}  // namespace qcc::cuda

#endif  // QCC_KERNELS_CUDA_OBSERVER_COLLECT_H_
