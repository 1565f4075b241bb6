// The device steps' shared helpers: CUDA/cuBLASLt errors as statuses, device memory, uploads,
// the run context's shape helpers and the registry.
#include <cuda_runtime_api.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cublaslt_api.h"
#include "runtime/cuda/device_steps.h"
#include "runtime/step_exec.h"

namespace qcc::runtime::cuda_exec {

absl::Status CudaStatus(cudaError_t e, absl::string_view call) {
  if (e == cudaSuccess) return absl::OkStatus();
  const std::string message =
      absl::StrCat(call, ": ", cudaGetErrorString(e), " (", cudaGetErrorName(e), ")");
  if (e == cudaErrorMemoryAllocation) return absl::ResourceExhaustedError(message);
  return absl::InternalError(message);
}

absl::Status CublasStatus(cublasStatus_t s, absl::string_view call) {
  if (s == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(call, " failed: ", cuda::CublasLtStatusText(s)));
}

DeviceMemory::~DeviceMemory() {
  if (ptr_ == nullptr) return;
  int current = -1;
  cudaGetDevice(&current);
  if (current != device_) cudaSetDevice(device_);
  cudaFree(ptr_);
  if (current != device_ && current >= 0) cudaSetDevice(current);
}

absl::StatusOr<std::unique_ptr<DeviceMemory>> DeviceMemory::Allocate(int device, uint64_t bytes,
                                                                     absl::string_view what) {
  auto m = std::make_unique<DeviceMemory>();
  m->device_ = device;
  m->bytes_ = std::max<uint64_t>(Align256(bytes), 256);
  QCC_RETURN_IF_ERROR(
      CudaStatus(cudaSetDevice(device), absl::StrCat("cudaSetDevice(", device, ")")));
  const cudaError_t e = cudaMalloc(&m->ptr_, m->bytes_);
  if (e != cudaSuccess) {
    m->ptr_ = nullptr;
    cudaGetLastError();  // an allocation failure is not sticky; clear it
    return CudaStatus(e, absl::StrCat("cudaMalloc(", what, ", ", FormatBytes(bytes), ")"));
  }
  return m;
}

absl::StatusOr<const void*> DeviceUploads::Upload(const void* bytes, uint64_t nbytes,
                                                  absl::string_view what) {
  QCC_ASSIGN_OR_RETURN(std::unique_ptr<DeviceMemory> m,
                       DeviceMemory::Allocate(device_, nbytes, what));
  if (nbytes > 0) {
    QCC_RETURN_IF_ERROR(CudaStatus(
        cudaMemcpy(m->get(), bytes, nbytes, cudaMemcpyHostToDevice),
        absl::StrCat("cudaMemcpy(", what, ", ", FormatBytes(nbytes), ", host to device)")));
  }
  bytes_ += m->bytes();
  const void* p = m->get();
  blocks_.push_back(std::move(m));
  return p;
}

Dims DeviceRunContext::in_dims(size_t i) const {
  return DimsAtBatch(plan->buffers[step->inputs[i]], batch);
}
Dims DeviceRunContext::out_dims(size_t i) const {
  return DimsAtBatch(plan->buffers[step->outputs[i]], batch);
}
int64_t DeviceRunContext::in_elements(size_t i) const {
  return ElementsAt(plan->buffers[step->inputs[i]], batch);
}
int64_t DeviceRunContext::out_elements(size_t i) const {
  return ElementsAt(plan->buffers[step->outputs[i]], batch);
}
int64_t DeviceRunContext::in_extent(size_t i, size_t axis) const {
  return ExtentAt(plan->buffers[step->inputs[i]], axis, batch);
}
int64_t DeviceRunContext::out_extent(size_t i, size_t axis) const {
  return ExtentAt(plan->buffers[step->outputs[i]], axis, batch);
}

int64_t ElementsAt(const PlanBuffer& b, int64_t batch) {
  int64_t n = 1;
  for (size_t a = 0; a < b.dims.size(); ++a) n *= ExtentAt(b, a, batch);
  return n;
}

std::vector<int64_t> DevicePrepareContext::GemmBatches() const {
  std::vector<int64_t> batches;
  const int64_t lo = plan_.batch_min, hi = plan_.batch_max;
  if (hi - lo < 64) {
    for (int64_t b = lo; b <= hi; ++b) batches.push_back(b);
    return batches;
  }
  batches.push_back(lo);
  for (int64_t b = 1; b < hi; b *= 2) {
    if (b > lo) batches.push_back(b);
  }
  batches.push_back(hi);
  return batches;
}

absl::Status DevicePrepareContext::Unimplemented(absl::string_view what) const {
  return absl::UnimplementedError(absl::StrCat("step ", index_, " '", step().name, "' (",
                                               StepKindName(step().kind), "): ", what));
}

absl::Status DevicePrepareContext::Annotate(const absl::Status& s) const {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat("step ", index_, " '", step().name, "' (",
                                             StepKindName(step().kind), "): ", s.message()));
}

absl::Status LaunchStatus(cudaError_t e, const DeviceRunContext& ctx, absl::string_view body) {
  if (e == cudaSuccess) return absl::OkStatus();
  const size_t index = static_cast<size_t>(ctx.step - ctx.plan->steps.data());
  return CudaStatus(e, absl::StrCat("step ", index, " '", ctx.step->name, "' (",
                                    StepKindName(ctx.step->kind), "): launch of ", body));
}

const DeviceStepRegistry& DeviceSteps() {
  static const DeviceStepRegistry* registry = [] {
    auto* r = new DeviceStepRegistry;
    RegisterDeviceInt8Steps(*r);
    RegisterDeviceFloatSteps(*r);
    RegisterDeviceMovementSteps(*r);
    return r;
  }();
  return *registry;
}

::qcc::cuda::PoolWindow PoolWindowAt(const PoolStepParams& w, const DeviceRunContext& c) {
  ::qcc::cuda::PoolWindow g;
  g.planes = c.in_extent(0, 0) * c.in_extent(0, 1);
  g.in_h = c.in_extent(0, 2);
  g.in_w = c.in_extent(0, 3);
  g.out_h = c.out_extent(0, 2);
  g.out_w = c.out_extent(0, 3);
  g.kernel_h = w.kernel_h;
  g.kernel_w = w.kernel_w;
  g.stride_h = w.stride_h;
  g.stride_w = w.stride_w;
  g.pad_top = w.pad_top;
  g.pad_left = w.pad_left;
  g.pad_bottom = w.pad_bottom;
  g.pad_right = w.pad_right;
  g.dilation_h = w.dilation_h;
  g.dilation_w = w.dilation_w;
  return g;
}

::qcc::cuda::ConvDims ConvDimsOf(const ConvGeometry& g, const PlanBuffer& x, const PlanBuffer& w,
                                 const PlanBuffer& y) {
  ::qcc::cuda::ConvDims d;
  d.geometry() = g;
  d.c = x.dims[1];
  d.h = x.dims[2];
  d.w = x.dims[3];
  d.k = w.dims[0];
  d.r = w.dims[2];
  d.s = w.dims[3];
  d.oh = y.dims[2];
  d.ow = y.dims[3];
  return d;
}

bool ConvRunsAsGemm(CudaKernel recorded, int64_t group) {
  if (recorded == CudaKernel::kIm2colImma || recorded == CudaKernel::kIm2colGemm ||
      recorded == CudaKernel::kIm2colHalfGemm) {
    return true;
  }
  if (recorded == CudaKernel::kDirectQConv || recorded == CudaKernel::kDirectConv) return false;
  return group == 1;
}

}  // namespace qcc::runtime::cuda_exec
