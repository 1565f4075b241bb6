// Calibration observers' batch statistics on the GPU (plain C++ API, no absl: callable from
// *_cuda.cc files, which wrap the cudaError_t into a Status naming the call). Only built with
// CUDA (QCC_HAVE_CUDA); the statistics' definition and host reference are observer_bodies.h.
#ifndef QCC_KERNELS_CUDA_OBSERVER_KERNELS_H_
#define QCC_KERNELS_CUDA_OBSERVER_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/observer_bodies.h"

namespace qcc::cuda {

/// Bytes of device scratch EnqueueBatchStats needs (the same for every n: a few KiB of
/// per-block partial results). Allocate it once, e.g. in the context's arena.
size_t BatchStatsScratchBytes();

/// Enqueues on `stream` the statistics of the n floats at device pointer `x` into the
/// BatchStats at device pointer `out_device` (observer_bodies.h; it equals BatchStatsHost of the
/// same values). Two kernel launches, nothing else: (a) a grid reduction of min / max / NaN and
/// infinity counts into per-block partials in `scratch`, which also zeroes out_device->bins;
/// (b) a histogram kernel in which every block first reduces the partials to the batch's range
/// (read from device memory: no host round trip), then bins its share of x into shared-memory
/// sub-histograms and adds them to out_device->bins with 64-bit atomics; block 0 writes the
/// scalars. Never synchronises and allocates nothing: copy `*out_device` back (about 16 KiB)
/// after the stream reaches it. `scratch` is device memory of at least BatchStatsScratchBytes()
/// bytes, `scratch_bytes` its size (cudaErrorInvalidValue when too small); x, out_device and
/// scratch must stay valid until the work completes and not be shared by concurrent calls.
/// Returns the first launch error (cudaSuccess when both launched).
cudaError_t EnqueueBatchStats(const float* x, int64_t n, BatchStats* out_device, void* scratch,
                              size_t scratch_bytes, cudaStream_t stream);

}  // namespace qcc::cuda

#endif  // QCC_KERNELS_CUDA_OBSERVER_KERNELS_H_
