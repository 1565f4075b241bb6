// The runtime on a CUDA GPU (DESIGN.md s.4-5), with the CPU runtime's split:
//   Plan -> CudaEngine (every step checked, weights on the device; immutable, thread-safe,
//   shared) -> CudaExecutionContext (one per thread: a stream, a device arena, scratch; not
//   thread-safe).
//
//   QCC_ASSIGN_OR_RETURN(std::shared_ptr<const CudaEngine> engine, CudaEngine::Load("m.plan"));
//   QCC_ASSIGN_OR_RETURN(std::unique_ptr<CudaExecutionContext> ctx, engine->CreateContext());
//   QCC_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, ctx->Run({image}));   // host in, host out
//   // or, device pointers in and out, asynchronous on ctx->stream():
//   QCC_RETURN_IF_ERROR(ctx->Enqueue({{d_image, DType::kFloat32, {8, 3, 224, 224}}},
//                                    {{d_logits, DType::kFloat32, {8, 1000}}}, 8));
//
// Numerics: every step computes what the CPU runtime (the oracle) computes. int8 steps give the
// same bits: the integer accumulation is exact (cuBLASLt IMMA or our direct kernels) and every
// epilogue calls support/quantize.h. fp32 steps agree to fp32 rounding (cuBLASLt sums in another
// order). fp16 plans run as the CPU runs them: f16 weights are widened to f32 once at Create and
// every step computes in fp32 (the GEMMs are cuBLASLt fp32 GEMMs), with Cast steps converting at
// the model's f16 inputs and outputs; so a fp16 plan's GPU results match the CPU's to fp32
// rounding, not to fp16 rounding.
//
// This header needs no CUDA headers and compiles without CUDA; a qcc built without nvcc links it
// and every Create fails with FailedPrecondition "this qcc was built without CUDA ...".
#ifndef QCC_RUNTIME_CUDA_CUDA_ENGINE_H_
#define QCC_RUNTIME_CUDA_CUDA_ENGINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/engine.h"
#include "runtime/plan.h"
#include "support/tensor.h"

namespace qcc::runtime {

class CudaExecutionContext;

/// Where and how a CudaEngine runs.
struct CudaEngineOptions {
  /// The CUDA device ordinal (as cudaSetDevice takes it).
  int device = 0;
  /// Capture each batch size's launches into a CUDA Graph on its first Enqueue and replay the
  /// graph on later Enqueues of that batch with the same input and output pointers (Run always
  /// uses the same pointers). Enqueues with other pointers, and every Enqueue while a device
  /// step observer is set, launch step by step instead. A graph is kept per batch size (at most
  /// batch_max - batch_min + 1 of them); capturing instantiates it, which allocates host memory
  /// once per batch size, not per Enqueue.
  bool use_cuda_graphs = false;
};

/// A tensor in device memory (not owned), as Enqueue takes it: `dims` is the concrete shape.
struct DeviceTensorRef {
  void* data = nullptr;
  DType dtype = DType::kUndefined;
  Dims dims;
};

/// A plan prepared for one CUDA device: checked step by step exactly as the CPU runtime checks
/// it (a CPU runtime::Engine is built from the same plan first, and kept: it answers inputs(),
/// outputs(), CheckInputs and OutputDims), its weights uploaded once, packed into the kernels'
/// layouts, and a launch record prepared for every step. Immutable after Create: one engine
/// serves any number of contexts on any threads.
class CudaEngine : public std::enable_shared_from_this<CudaEngine> {
 public:
  /// Validates `plan` as Engine::Create does (InvalidArgument naming the step), then uploads
  /// it. FailedPrecondition when this qcc was built without CUDA, or when no CUDA device is
  /// present (naming cudaGetDeviceCount's result; use --device cpu). Unimplemented naming the
  /// step for a step kind that has no CUDA kernel. Every CUDA or cuBLASLt failure is a status
  /// naming the call, e.g. "cudaMalloc(weights, 1.2 MiB): out of memory".
  static absl::StatusOr<std::shared_ptr<const CudaEngine>> Create(Plan plan,
                                                                  CudaEngineOptions options = {});
  /// ReadPlan(path) then Create; errors name the path.
  static absl::StatusOr<std::shared_ptr<const CudaEngine>> Load(const std::string& path,
                                                                CudaEngineOptions options = {});
  ~CudaEngine();
  CudaEngine(const CudaEngine&) = delete;
  CudaEngine& operator=(const CudaEngine&) = delete;

  /// A new context sharing this engine (which it keeps alive): creates its stream and allocates
  /// all its device memory (arena, scratch, cuBLASLt workspace, Run's staging buffers) for
  /// batch_max. ResourceExhausted-like statuses naming the CUDA call when that fails.
  absl::StatusOr<std::unique_ptr<CudaExecutionContext>> CreateContext() const;

  /// The model's inputs and outputs, in binding order (the CPU engine's).
  const std::vector<TensorInfo>& inputs() const { return cpu_->inputs(); }
  const std::vector<TensorInfo>& outputs() const { return cpu_->outputs(); }
  int64_t batch_min() const { return cpu_->batch_min(); }
  int64_t batch_max() const { return cpu_->batch_max(); }
  /// The plan as the engine runs it (f16 weights widened to f32, as the CPU engine has it).
  const Plan& plan() const { return cpu_->plan(); }
  /// The CPU engine built from the same plan (the oracle; tests compare against it).
  const std::shared_ptr<const Engine>& cpu_engine() const { return cpu_; }
  /// See Engine::CheckInputs / Engine::OutputDims.
  absl::StatusOr<int64_t> CheckInputs(absl::Span<const Tensor> inputs) const {
    return cpu_->CheckInputs(inputs);
  }
  Dims OutputDims(size_t i, int64_t batch) const { return cpu_->OutputDims(i, batch); }

  const CudaEngineOptions& options() const { return options_; }
  /// Device bytes the engine holds (weights and packed weights).
  uint64_t weight_bytes() const;
  /// The kernel path of step `i`, for reports: its CudaKernelName ("im2col-imma",
  /// "direct-qconv", "im2col-gemm", "im2col-gemm-fp16", "gemm", "imma", "direct-conv", "alias",
  /// "index").
  const std::string& step_kernel(size_t i) const;
  /// The device's name and compute capability, e.g. "NVIDIA H100 80GB HBM3 (sm_90)".
  const std::string& device_name() const;

  struct Impl;  // the device state (cuda_engine_cuda.cc); opaque to callers

 private:
  friend class CudaExecutionContext;
  CudaEngine();

  std::shared_ptr<const Engine> cpu_;
  CudaEngineOptions options_;
  std::unique_ptr<Impl> impl_;
};

/// One thread's state for running a CudaEngine: a CUDA stream, a device arena laid out by the
/// plan's memory plan (Plan::arena_bytes at batch_max; PlanBuffer::arena_offset), the steps'
/// device scratch (im2col buffers, int32 accumulators) and cuBLASLt workspace, all allocated
/// when the context is created. Not thread-safe: one context per thread.
class CudaExecutionContext {
 public:
  ~CudaExecutionContext();
  CudaExecutionContext(const CudaExecutionContext&) = delete;
  CudaExecutionContext& operator=(const CudaExecutionContext&) = delete;

  /// Enqueues the whole plan on stream() for `batch`: `inputs` and `outputs` are device tensors
  /// in binding order with each binding's dtype and dims at `batch` (the dynamic axis 0 equal to
  /// `batch`, in [batch_min, batch_max]); InvalidArgument naming the binding otherwise. The
  /// buffers must stay valid until the stream has run the work (Synchronize). Allocates no
  /// device memory and never synchronises; an error from a launch names the step and the call.
  absl::Status Enqueue(absl::Span<const DeviceTensorRef> inputs,
                       absl::Span<const DeviceTensorRef> outputs, int64_t batch);

  /// Convenience: checks `host_inputs` (CudaEngine::CheckInputs), copies them to device
  /// staging buffers made at creation, Enqueue, copies the outputs back into freshly allocated
  /// tensors and synchronises.
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> host_inputs);

  /// Waits for everything enqueued on stream(); the first asynchronous error, naming the call.
  absl::Status Synchronize();

  /// The context's cudaStream_t, as an opaque pointer.
  void* stream() const;

  /// Called after every step's launch, once per output of the step, with the output's device
  /// address (valid until the next step that reuses its arena bytes: enqueue any work on it on
  /// `stream`, which the callback receives), its dtype and its dims at the run's batch. The
  /// callback runs on the host thread that calls Enqueue, in launch order; it must not
  /// synchronise if Enqueue is to stay asynchronous. Setting an observer disables CUDA Graph
  /// replay (each step must be launched for the callback to run). For calibration on the GPU.
  using DeviceStepObserver =
      std::function<void(size_t step, int32_t buffer, const void* device_data, DType dtype,
                         const Dims& dims, void* stream)>;
  void set_device_step_observer(DeviceStepObserver observer) { observer_ = std::move(observer); }

  const CudaEngine& engine() const { return *engine_; }
  /// Device bytes this context holds (arena, scratch, workspace, staging).
  uint64_t device_bytes() const;

  struct Impl;  // the device state (cuda_engine_cuda.cc)

 private:
  friend class CudaEngine;
  explicit CudaExecutionContext(std::shared_ptr<const CudaEngine> engine);

  std::shared_ptr<const CudaEngine> engine_;
  std::unique_ptr<Impl> impl_;
  DeviceStepObserver observer_;
};

}  // namespace qcc::runtime

#endif  // QCC_RUNTIME_CUDA_CUDA_ENGINE_H_
