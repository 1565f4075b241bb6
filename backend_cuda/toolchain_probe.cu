// A minimal kernel that proves nvcc, the CUDA runtime and the link work.
#include <cuda_runtime.h>

namespace qcc::cuda {

namespace {
__global__ void AddOneKernel(const int* in, int* out) { *out = *in + 1; }
}  // namespace

int ProbeDeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

bool LaunchProbe(int x, int* result) {
  int* d = nullptr;
  if (cudaMalloc(&d, 2 * sizeof(int)) != cudaSuccess) return false;
  bool ok = cudaMemcpy(d, &x, sizeof(int), cudaMemcpyHostToDevice) == cudaSuccess;
  if (ok) {
    AddOneKernel<<<1, 1>>>(d, d + 1);
    ok = cudaGetLastError() == cudaSuccess &&
         cudaMemcpy(result, d + 1, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess;
  }
  cudaFree(d);
  return ok;
}

}  // namespace qcc::cuda
