// Device self tests of the kernel bodies (body_selftest.h).
#include <cuda_runtime.h>

#include "kernels/cuda/body_selftest.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/observer_kernels.h"

namespace qcc::cuda::selftest {
namespace {

/// Device buffers freed on scope exit.
class DeviceBuffers {
 public:
  ~DeviceBuffers() {
    for (int i = 0; i < count_; ++i) cudaFree(ptrs_[i]);
  }
  /// Allocates `bytes` (at least 1) and copies `host` in when given; nullptr on failure.
  void* Upload(const void* host, size_t bytes, cudaError_t* err) {
    void* d = nullptr;
    if (*err != cudaSuccess || count_ == kMax) return nullptr;
    *err = cudaMalloc(&d, bytes == 0 ? 1 : bytes);
    if (*err != cudaSuccess) return nullptr;
    ptrs_[count_++] = d;
    if (host != nullptr && bytes != 0) *err = cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice);
    return d;
  }

 private:
  static constexpr int kMax = 8;
  void* ptrs_[kMax] = {};
  int count_ = 0;
};

/// Launches Body over n with device args `d`, then copies `bytes` of device output `dy` into
/// host `hy`.
template <typename Body, typename Args>
int LaunchAndFetch(int64_t n, const Args& d, const void* dy, void* hy, size_t bytes,
                   cudaError_t err) {
  if (err != cudaSuccess) return static_cast<int>(err);
  err = LaunchIndex<Body>(n, d, nullptr);
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  if (err == cudaSuccess && bytes != 0) err = cudaMemcpy(hy, dy, bytes, cudaMemcpyDeviceToHost);
  return static_cast<int>(err);
}

int64_t Product(const int64_t* dims, int rank) {
  int64_t p = 1;
  for (int k = 0; k < rank; ++k) p *= dims[k];
  return p;
}

}  // namespace

const char* SelfTestErrorString(int code) {
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}

int RunQuantize(const QuantizeArgs& a, int64_t n) {
  DeviceBuffers buf;
  cudaError_t err = cudaSuccess;
  QuantizeArgs d = a;
  d.x = static_cast<const float*>(buf.Upload(a.x, n * sizeof(float), &err));
  d.y = static_cast<int8_t*>(buf.Upload(nullptr, n, &err));
  return LaunchAndFetch<QuantizeBody>(n, d, d.y, a.y, n, err);
}

int RunUnary(const UnaryArgs& a, int64_t n) {
  DeviceBuffers buf;
  cudaError_t err = cudaSuccess;
  UnaryArgs d = a;
  d.x = static_cast<const float*>(buf.Upload(a.x, n * sizeof(float), &err));
  d.y = static_cast<float*>(buf.Upload(nullptr, n * sizeof(float), &err));
  return LaunchAndFetch<UnaryBody>(n, d, d.y, a.y, n * sizeof(float), err);
}

int RunBinary(const BinaryArgs& a, int64_t a_elems, int64_t b_elems) {
  DeviceBuffers buf;
  cudaError_t err = cudaSuccess;
  const int64_t n = Product(a.out_dims, a.rank);
  BinaryArgs d = a;
  d.a = static_cast<const float*>(buf.Upload(a.a, a_elems * sizeof(float), &err));
  d.b = static_cast<const float*>(buf.Upload(a.b, b_elems * sizeof(float), &err));
  d.y = static_cast<float*>(buf.Upload(nullptr, n * sizeof(float), &err));
  return LaunchAndFetch<BinaryBody>(n, d, d.y, a.y, n * sizeof(float), err);
}

int RunSoftmax(const SoftmaxArgs& a) {
  DeviceBuffers buf;
  cudaError_t err = cudaSuccess;
  const int64_t elems = a.outer * a.axis_n * a.inner;
  SoftmaxArgs d = a;
  d.x = static_cast<const float*>(buf.Upload(a.x, elems * sizeof(float), &err));
  d.y = static_cast<float*>(buf.Upload(nullptr, elems * sizeof(float), &err));
  return LaunchAndFetch<SoftmaxBody>(a.outer * a.inner, d, d.y, a.y, elems * sizeof(float), err);
}

int RunQAveragePool(const QAveragePoolArgs& a) {
  DeviceBuffers buf;
  cudaError_t err = cudaSuccess;
  const int64_t in = a.g.planes * a.g.in_h * a.g.in_w;
  const int64_t n = a.g.planes * a.g.out_h * a.g.out_w;
  QAveragePoolArgs d = a;
  d.x = static_cast<const int8_t*>(buf.Upload(a.x, in, &err));
  d.y = static_cast<int8_t*>(buf.Upload(nullptr, n, &err));
  return LaunchAndFetch<QAveragePoolBody>(n, d, d.y, a.y, n, err);
}

int RunStridedCopy(const StridedCopyArgs& a, int64_t in_elems) {
  DeviceBuffers buf;
  cudaError_t err = cudaSuccess;
  const int64_t n = Product(a.out_dims, a.rank);
  StridedCopyArgs d = a;
  d.x = buf.Upload(a.x, in_elems * a.elem_size, &err);
  d.y = buf.Upload(nullptr, n * a.elem_size, &err);
  return LaunchAndFetch<StridedCopyBody>(n, d, d.y, a.y, n * a.elem_size, err);
}

int RunBatchStats(const float* x, int64_t n, BatchStats* out) {
  DeviceBuffers buf;
  cudaError_t err = cudaSuccess;
  const float* dx = static_cast<const float*>(buf.Upload(x, n * sizeof(float), &err));
  auto* dout = static_cast<BatchStats*>(buf.Upload(nullptr, sizeof(BatchStats), &err));
  const size_t scratch_bytes = BatchStatsScratchBytes();
  void* scratch = buf.Upload(nullptr, scratch_bytes, &err);
  if (err != cudaSuccess) return static_cast<int>(err);
  // Poison the output first: every field must be written by the kernels.
  err = cudaMemset(dout, 0xab, sizeof(BatchStats));
  if (err == cudaSuccess) err = EnqueueBatchStats(dx, n, dout, scratch, scratch_bytes, nullptr);
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  if (err == cudaSuccess) err = cudaMemcpy(out, dout, sizeof(BatchStats), cudaMemcpyDeviceToHost);
  return static_cast<int>(err);
}

}  // namespace qcc::cuda::selftest
