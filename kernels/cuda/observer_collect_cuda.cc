#include <cuda_runtime_api.h>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/observer_collect.h"
#include "kernels/cuda/observer_kernels.h"

namespace qcc::cuda {
namespace {

absl::Status CudaError(cudaError_t e, absl::string_view call) {
  return absl::InternalError(
      absl::StrCat(call, " failed: ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceStatsSlots>> DeviceStatsSlots::Create(int slots) {
  std::unique_ptr<DeviceStatsSlots> s(new DeviceStatsSlots);
  s->slots_ = slots;
  s->enqueued_.assign(slots, false);
  const size_t bytes = sizeof(BatchStats) * static_cast<size_t>(slots > 0 ? slots : 1);
  if (cudaError_t e = cudaMalloc(reinterpret_cast<void**>(&s->device_), bytes); e != cudaSuccess) {
    return CudaError(e, absl::StrCat("cudaMalloc(observer statistics, ", bytes, " B)"));
  }
  s->scratch_bytes_ = BatchStatsScratchBytes();
  if (cudaError_t e = cudaMalloc(&s->scratch_, s->scratch_bytes_); e != cudaSuccess) {
    return CudaError(e, absl::StrCat("cudaMalloc(observer scratch, ", s->scratch_bytes_, " B)"));
  }
  return s;
}

DeviceStatsSlots::~DeviceStatsSlots() {
  if (device_ != nullptr) cudaFree(device_);
  if (scratch_ != nullptr) cudaFree(scratch_);
}

absl::Status DeviceStatsSlots::Enqueue(int slot, const float* x, int64_t n, void* stream) {
  if (slot < 0 || slot >= slots_) {
    return absl::InvalidArgumentError(absl::StrCat("observer slot ", slot, " of ", slots_));
  }
  // One scratch for every slot: the launches are ordered on the one stream.
  const cudaError_t e = EnqueueBatchStats(x, n, device_ + slot, scratch_, scratch_bytes_,
                                          static_cast<cudaStream_t>(stream));
  if (e != cudaSuccess) return CudaError(e, "EnqueueBatchStats (observer kernels)");
  enqueued_[slot] = true;
  return absl::OkStatus();
}

absl::Status DeviceStatsSlots::Collect(void* stream, std::vector<BatchStats>* stats,
                                       std::vector<bool>* filled) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (cudaError_t e = cudaStreamSynchronize(s); e != cudaSuccess) {
    return CudaError(e, "cudaStreamSynchronize (calibration batch)");
  }
  stats->resize(slots_);
  *filled = enqueued_;
  // One copy of every slot (about 16 KiB each): cheaper than a copy per filled slot.
  if (slots_ > 0) {
    if (cudaError_t e =
            cudaMemcpy(stats->data(), device_, sizeof(BatchStats) * slots_, cudaMemcpyDeviceToHost);
        e != cudaSuccess) {
      return CudaError(e, "cudaMemcpy(observer statistics to host)");
    }
  }
  enqueued_.assign(slots_, false);
  return absl::OkStatus();
}

}  // namespace qcc::cuda
