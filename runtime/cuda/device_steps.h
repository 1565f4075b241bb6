// How the CUDA runtime executes a plan's steps: for every StepKind a prepare function, run once
// by CudaEngine::Create after the CPU engine has checked the step, that decodes its parameters
// (runtime/steps.h DecodeParams, as the CPU steps do), uploads what it needs packed into its
// kernels' layouts and returns a DeviceStep; DeviceStep::Enqueue launches the step's kernels on
// one context's stream. Host code only (*_cuda.cc): absl and the CUDA runtime API, no device code
// (kernels are launched through device_launch.h).
#ifndef QCC_RUNTIME_CUDA_DEVICE_STEPS_H_
#define QCC_RUNTIME_CUDA_DEVICE_STEPS_H_

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "kernels/cuda/conv_bodies.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/gemm_problem.h"
#include "kernels/cuda/pool_bodies.h"
#include "kernels/cuda/weight_packing.h"
#include "runtime/cuda/device_launch.h"
#include "runtime/plan.h"
#include "runtime/steps.h"
#include "support/memory.h"
#include "support/status.h"
#include "support/tensor.h"

namespace qcc::runtime::cuda_exec {

// ---- Errors ----

/// OK for cudaSuccess; otherwise Internal (ResourceExhausted for out-of-memory)
/// "<call>: <cudaGetErrorString> (<cudaGetErrorName>)".
absl::Status CudaStatus(cudaError_t e, absl::string_view call);
/// The same for cuBLASLt: "<call> failed: CUBLAS_STATUS_...".
absl::Status CublasStatus(cublasStatus_t s, absl::string_view call);
/// "1.2 MiB", "512 B" (support/memory.h).
using qcc::FormatBytes;

// ---- Device memory ----

/// One cudaMalloc'd block, freed on destruction (on the device it came from).
class DeviceMemory {
 public:
  DeviceMemory() = default;
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  /// Allocates `bytes` (at least 256) on `device`; an error naming `what` and the size.
  static absl::StatusOr<std::unique_ptr<DeviceMemory>> Allocate(int device, uint64_t bytes,
                                                                absl::string_view what);
  void* get() const { return ptr_; }
  uint64_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  uint64_t bytes_ = 0;
  int device_ = 0;
};

/// The engine's read-only device data: uploads are synchronous copies made once at Create.
class DeviceUploads {
 public:
  explicit DeviceUploads(int device) : device_(device) {}
  /// Copies `bytes` bytes to a new device block (named `what` in errors); its address.
  absl::StatusOr<const void*> Upload(const void* bytes, uint64_t nbytes, absl::string_view what);
  template <typename T>
  absl::StatusOr<const T*> Upload(const std::vector<T>& v, absl::string_view what) {
    QCC_ASSIGN_OR_RETURN(const void* p, Upload(v.data(), v.size() * sizeof(T), what));
    return static_cast<const T*>(p);
  }
  uint64_t bytes() const { return bytes_; }
  int device() const { return device_; }

 private:
  int device_;
  uint64_t bytes_ = 0;
  std::vector<std::unique_ptr<DeviceMemory>> blocks_;
};

// ---- Steps ----

/// What a step's Enqueue sees: the step, every buffer's device address for this run, the
/// batch, the stream, the step's scratch (ScratchBytes(batch_max) bytes, 256-byte aligned) and
/// the context's cuBLASLt handle and workspace.
struct DeviceRunContext {
  const Plan* plan = nullptr;
  const PlanStep* step = nullptr;
  const std::vector<void*>* buffers = nullptr;  // by buffer id, device addresses
  int64_t batch = 1;
  cudaStream_t stream = nullptr;
  void* scratch = nullptr;
  uint64_t scratch_bytes = 0;
  qcc::cuda::CublasLtGemm* gemm = nullptr;  // the engine's (thread-safe)
  void* workspace = nullptr;                // the context's cuBLASLt workspace
  uint64_t workspace_bytes = 0;

  template <typename T>
  const T* in(size_t i) const {
    const int32_t id = step->inputs[i];
    return id < 0 ? nullptr : static_cast<const T*>((*buffers)[id]);
  }
  template <typename T>
  T* out(size_t i) const {
    return static_cast<T*>((*buffers)[step->outputs[i]]);
  }
  /// The run-time dims of input / output `i` (a host vector: prefer the Extent helpers below in
  /// per-element paths).
  Dims in_dims(size_t i) const;
  Dims out_dims(size_t i) const;
  /// Elements of input / output `i` at this batch (no allocation).
  int64_t in_elements(size_t i) const;
  int64_t out_elements(size_t i) const;
  /// Extent `axis` of input / output `i` at this batch.
  int64_t in_extent(size_t i, size_t axis) const;
  int64_t out_extent(size_t i, size_t axis) const;
};

/// A step prepared for the device; immutable and shared by every context.
class DeviceStep {
 public:
  virtual ~DeviceStep() = default;
  /// Device scratch bytes Enqueue needs at `batch` (non-decreasing in the batch: contexts size
  /// it at batch_max).
  virtual uint64_t ScratchBytes(int64_t batch) const { return 0; }
  /// Launches the step on ctx.stream; never synchronises, never allocates.
  virtual absl::Status Enqueue(const DeviceRunContext& ctx) const = 0;
  /// The kernel path, for reports (CudaKernelName).
  virtual CudaKernel kernel() const { return CudaKernel::kIndex; }
};

/// What a device prepare function sees: the step of the CPU-checked plan and the engine's
/// uploads. Every error names the step.
class DevicePrepareContext {
 public:
  DevicePrepareContext(const Plan& plan, size_t index, DeviceUploads* uploads,
                       qcc::cuda::CublasLtGemm* gemm, uint64_t workspace_bytes)
      : plan_(plan),
        index_(index),
        uploads_(uploads),
        gemm_(gemm),
        workspace_bytes_(workspace_bytes) {}
  const Plan& plan() const { return plan_; }
  size_t index() const { return index_; }
  const PlanStep& step() const { return plan_.steps[index_]; }
  DeviceUploads& uploads() const { return *uploads_; }
  /// Uploads `v` (named after the step and `what` in errors).
  template <typename T>
  absl::StatusOr<const T*> Upload(const std::vector<T>& v, absl::string_view what) const {
    absl::StatusOr<const T*> p = uploads_->Upload(v, absl::StrCat(step().name, " ", what));
    if (!p.ok()) return Annotate(p.status());
    return p;
  }
  /// Prepares (builds and caches the cuBLASLt descriptors and algorithm of) the GEMM problem
  /// `problem(batch)` for every batch the plan runs (all of [batch_min, batch_max] when that is
  /// at most 64 batches, else batch_min, batch_max and the powers of two between; the rest are
  /// prepared on first use, which allocates host memory once). Errors name the step.
  template <typename ProblemAt>
  absl::Status PrepareGemms(ProblemAt problem) const {
    for (int64_t batch : GemmBatches()) {
      QCC_RETURN_IF_ERROR(Annotate(gemm_->Prepare(problem(batch), workspace_bytes_)));
    }
    return absl::OkStatus();
  }
  const PlanBuffer& input(size_t i) const { return plan_.buffers[step().inputs[i]]; }
  bool has_input(size_t i) const { return i < step().inputs.size() && step().inputs[i] >= 0; }
  const PlanBuffer& output(size_t i) const { return plan_.buffers[step().outputs[i]]; }
  /// The host bytes of input `i`, a weight (the CPU engine checked it is one).
  absl::Span<const uint8_t> weight(size_t i) const { return plan_.Weight(input(i).weight); }
  /// The step's parameters (the CPU engine decoded them already, so this cannot fail on a
  /// checked plan).
  template <typename P>
  absl::StatusOr<P> Decode() const {
    return DecodeParams<P>(step());
  }
  /// The compiler's choice for this step (PlanStep::cuda_kernel): kNone in a plan of another
  /// target, which the CUDA runtime also runs, choosing by the step's shape.
  CudaKernel RecordedKernel() const { return step().cuda_kernel; }
  /// Unimplemented naming the step.
  absl::Status Unimplemented(absl::string_view what) const;
  /// An error naming the step (for upload failures).
  absl::Status Annotate(const absl::Status& s) const;

 private:
  std::vector<int64_t> GemmBatches() const;

  const Plan& plan_;
  size_t index_;
  DeviceUploads* uploads_;
  qcc::cuda::CublasLtGemm* gemm_;
  uint64_t workspace_bytes_;
};

using DevicePrepareFn =
    absl::StatusOr<std::unique_ptr<DeviceStep>> (*)(const DevicePrepareContext& ctx);

/// StepKind -> device prepare function.
class DeviceStepRegistry {
 public:
  void Add(StepKind kind, DevicePrepareFn fn) { fns_[static_cast<size_t>(kind)] = fn; }
  DevicePrepareFn Find(uint32_t kind) const { return kind < fns_.size() ? fns_[kind] : nullptr; }

 private:
  std::array<DevicePrepareFn, static_cast<size_t>(StepKind::kNumStepKinds)> fns_{};
};

/// Quantize .. QConcat (device_steps_int8_cuda.cc).
void RegisterDeviceInt8Steps(DeviceStepRegistry& r);
/// Conv .. Concat (device_steps_float_cuda.cc).
void RegisterDeviceFloatSteps(DeviceStepRegistry& r);
/// Reshape, Transpose, Slice, Pad, Cast (device_steps_movement_cuda.cc).
void RegisterDeviceMovementSteps(DeviceStepRegistry& r);
const DeviceStepRegistry& DeviceSteps();

/// A DeviceStep from a state struct and an enqueue function (and optionally a scratch function
/// and a kernel name).
template <typename State>
class DeviceStepOf final : public DeviceStep {
 public:
  using EnqueueFn = absl::Status (*)(const State&, const DeviceRunContext&);
  using ScratchFn = uint64_t (*)(const State&, int64_t batch);
  DeviceStepOf(State state, EnqueueFn enqueue, ScratchFn scratch = nullptr,
               CudaKernel kernel = CudaKernel::kIndex)
      : state_(std::move(state)), enqueue_(enqueue), scratch_(scratch), kernel_(kernel) {}
  uint64_t ScratchBytes(int64_t batch) const override {
    return scratch_ == nullptr ? 0 : scratch_(state_, batch);
  }
  absl::Status Enqueue(const DeviceRunContext& ctx) const override { return enqueue_(state_, ctx); }
  CudaKernel kernel() const override { return kernel_; }

 private:
  State state_;
  EnqueueFn enqueue_;
  ScratchFn scratch_;
  CudaKernel kernel_;
};

template <typename State>
std::unique_ptr<DeviceStep> MakeDeviceStep(
    State state, typename DeviceStepOf<State>::EnqueueFn enqueue,
    typename DeviceStepOf<State>::ScratchFn scratch = nullptr,
    CudaKernel kernel = CudaKernel::kIndex) {
  return std::make_unique<DeviceStepOf<State>>(std::move(state), enqueue, scratch, kernel);
}

/// A launch's error as a status naming the step and the body.
absl::Status LaunchStatus(cudaError_t e, const DeviceRunContext& ctx, absl::string_view body);

/// Launches `Body` over [0, n) on the step's stream (device_launch.h); an error names the step
/// and the body (`name`).
template <typename Body>
absl::Status Launch(const DeviceRunContext& c, int64_t n, const BodyArgs<Body>& args,
                    absl::string_view name) {
  return LaunchStatus(LaunchBody<Body>(n, args, c.stream), c, name);
}

/// The pool bodies' window (kernels/cuda/pool_bodies.h) of a pool step at this run's
/// batch: the planes and extents from the run's buffers, the window from the step.
::qcc::cuda::PoolWindow PoolWindowAt(const PoolStepParams& w, const DeviceRunContext& c);

// ---- Shared by the conv steps (QConv, Conv) ----

/// The conv bodies' geometry of a conv step with input x, weights w [K, C/g, R, S] and output y
/// (n, the batch, is set per run).
::qcc::cuda::ConvDims ConvDimsOf(const ConvGeometry& g, const PlanBuffer& x, const PlanBuffer& w,
                                 const PlanBuffer& y);

/// True when the conv step runs as im2col + GEMM: the compiler's recorded choice (an im2col or
/// a direct kernel, backend_cuda/lowering.h) when there is one, else group 1 (a grouped or
/// depthwise conv's small reduction per output would waste a GEMM).
bool ConvRunsAsGemm(CudaKernel recorded, int64_t group);

/// Elements of `b` at `batch` (no allocation).
int64_t ElementsAt(const PlanBuffer& b, int64_t batch);
/// Extent `axis` of `b` at `batch`.
inline int64_t ExtentAt(const PlanBuffer& b, size_t axis, int64_t batch) {
  return axis == 0 && b.dims[0] == -1 ? batch : b.dims[axis];
}
/// Scratch sub-allocation: `bytes` rounded up to 256.
inline uint64_t Align256(uint64_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace qcc::runtime::cuda_exec

#endif  // QCC_RUNTIME_CUDA_DEVICE_STEPS_H_
