// The GPU side of launch.h: a grid-stride kernel running Body::Run(args, i) for i in [0, n).
// Include only from .cu files. Bodies are compiled with --fmad=false (kernels/cuda/
// CMakeLists.txt) so their fp32 arithmetic is the host's, operation for operation.
#ifndef QCC_KERNELS_CUDA_LAUNCH_CUH_
#define QCC_KERNELS_CUDA_LAUNCH_CUH_

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/launch.h"

namespace qcc::cuda {

template <typename Body, typename Args>
__global__ void IndexKernel(int64_t n, Args args) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    Body::Run(args, i);
  }
}

/// Launches Body over [0, n) on `stream`; returns the launch error (cudaSuccess when n == 0).
/// Never synchronises.
template <typename Body, typename Args>
cudaError_t LaunchIndex(int64_t n, const Args& args, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t blocks64 = (n + kThreads - 1) / kThreads;
  const unsigned blocks = static_cast<unsigned>(blocks64 < 65535 * 32 ? blocks64 : 65535 * 32);
  IndexKernel<Body, Args><<<blocks, kThreads, 0, stream>>>(n, args);
  return cudaGetLastError();
}

}  // namespace qcc::cuda

#endif  // QCC_KERNELS_CUDA_LAUNCH_CUH_
