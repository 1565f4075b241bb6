// CudaEngine and CudaExecutionContext on a CUDA device (built only with nvcc; see
// cuda_engine.cc for the build without it).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "runtime/cuda/cuda_engine.h"
#include "runtime/cuda/device_steps.h"
#include "runtime/plan_format.h"
#include "runtime/step_exec.h"
#include "support/status.h"

namespace qcc::runtime {

using cuda_exec::CudaStatus;
using cuda_exec::DeviceMemory;
using cuda_exec::DeviceStep;
using cuda_exec::DeviceUploads;
using cuda_exec::FormatBytes;

namespace {

std::string Describe(DType dtype, absl::Span<const int64_t> dims) {
  std::vector<std::string> parts;
  for (int64_t d : dims) parts.push_back(d < 0 ? "N" : absl::StrCat(d));
  return absl::StrCat(DTypeName(dtype), " [", absl::StrJoin(parts, ","), "]");
}

/// The device check: FailedPrecondition when none is usable (naming cudaGetDeviceCount's
/// result), InvalidArgument for an ordinal past the last device.
absl::Status CheckDevice(int device) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    const std::string result = e != cudaSuccess
                                   ? absl::StrCat(cudaGetErrorName(e), ": ", cudaGetErrorString(e))
                                   : std::string("0 devices");
    cudaGetLastError();  // not sticky, but leave no error behind
    return absl::FailedPreconditionError(absl::StrCat(
        "no usable CUDA device (cudaGetDeviceCount returned ", result, "): use --device cpu"));
  }
  if (device < 0 || device >= count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CUDA device ", device, " does not exist (cudaGetDeviceCount: ", count, " devices)"));
  }
  return CudaStatus(cudaSetDevice(device), absl::StrCat("cudaSetDevice(", device, ")"));
}

/// Every binding's checks without allocating (Enqueue's hot path): dtype, rank, extents with
/// the dynamic axis 0 equal to `batch`.
absl::Status CheckRefs(const char* what, absl::Span<const DeviceTensorRef> refs,
                       const std::vector<TensorInfo>& infos, int64_t batch) {
  if (refs.size() != infos.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", infos.size(), " ", what, "s, got ", refs.size()));
  }
  for (size_t i = 0; i < refs.size(); ++i) {
    const TensorInfo& info = infos[i];
    const DeviceTensorRef& r = refs[i];
    bool match = r.dtype == info.dtype && r.dims.size() == info.dims.size() && r.data != nullptr;
    for (size_t a = 0; match && a < info.dims.size(); ++a) {
      match = r.dims[a] == (a == 0 && info.dims[0] == -1 ? batch : info.dims[a]);
    }
    if (!match) {
      Dims want(info.dims.begin(), info.dims.end());
      if (!want.empty() && want[0] == -1) want[0] = batch;
      return absl::InvalidArgumentError(
          absl::StrCat(what, " ", i, " '", info.name, "': expected a device tensor of ",
                       Describe(info.dtype, want), " at batch ", batch, ", got ",
                       r.data == nullptr ? "a null pointer to " : "", Describe(r.dtype, r.dims)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

// ---- The engine's device state ----

struct CudaEngine::Impl {
  std::unique_ptr<DeviceUploads> uploads;
  const uint8_t* weights = nullptr;  // the plan's weight section on the device
  std::unique_ptr<qcc::cuda::CublasLtGemm> gemm;
  std::vector<std::unique_ptr<DeviceStep>> steps;
  std::vector<std::string> kernels;
  std::vector<void*> weight_addresses;  // by buffer id: device address of a weight, else null
  uint64_t scratch_bytes = 0;           // the largest step scratch at batch_max
  std::string device_name;
};

CudaEngine::CudaEngine() = default;
CudaEngine::~CudaEngine() {
  if (impl_ != nullptr) cudaSetDevice(options_.device);
}

absl::StatusOr<std::shared_ptr<const CudaEngine>> CudaEngine::Create(Plan plan,
                                                                     CudaEngineOptions options) {
  // The CPU engine checks every step exactly as the CPU runtime does (and widens f16 weights).
  QCC_ASSIGN_OR_RETURN(std::shared_ptr<const Engine> cpu,
                       Engine::Create(std::move(plan), EngineOptions{1}));
  QCC_RETURN_IF_ERROR(CheckDevice(options.device));
  std::shared_ptr<CudaEngine> engine(new CudaEngine);
  engine->cpu_ = std::move(cpu);
  engine->options_ = options;
  engine->impl_ = std::make_unique<Impl>();
  Impl& impl = *engine->impl_;
  const Plan& p = engine->cpu_->plan();

  cudaDeviceProp prop;
  QCC_RETURN_IF_ERROR(
      CudaStatus(cudaGetDeviceProperties(&prop, options.device), "cudaGetDeviceProperties"));
  impl.device_name = absl::StrCat(prop.name, " (sm_", prop.major, prop.minor, ")");

  // Weights: the whole section in one copy (every buffer of kind kWeight points into it; the
  // steps that need another layout upload packed copies of their own below).
  impl.uploads = std::make_unique<DeviceUploads>(options.device);
  QCC_ASSIGN_OR_RETURN(const void* section,
                       impl.uploads->Upload(p.weight_data.data(), p.weight_data.size(), "weights"));
  impl.weights = static_cast<const uint8_t*>(section);
  impl.weight_addresses.assign(p.buffers.size(), nullptr);
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const PlanBuffer& b = p.buffers[i];
    if (b.kind != BufferKind::kWeight) continue;
    impl.weight_addresses[i] = const_cast<uint8_t*>(impl.weights + p.weights[b.weight].offset);
  }

  QCC_ASSIGN_OR_RETURN(impl.gemm, qcc::cuda::CublasLtGemm::Create());
  const cuda_exec::DeviceStepRegistry& registry = cuda_exec::DeviceSteps();
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const cuda_exec::DevicePrepareFn prepare = registry.Find(p.steps[i].kind);
    cuda_exec::DevicePrepareContext ctx(p, i, impl.uploads.get(), impl.gemm.get(),
                                        qcc::cuda::CublasLtGemm::kDefaultWorkspaceBytes);
    if (prepare == nullptr) {
      return ctx.Unimplemented(
          absl::StrCat("step kind ", StepKindName(p.steps[i].kind), " has no CUDA kernel yet"));
    }
    QCC_ASSIGN_OR_RETURN(std::unique_ptr<DeviceStep> step, prepare(ctx));
    impl.scratch_bytes = std::max(impl.scratch_bytes, step->ScratchBytes(p.batch_max));
    impl.kernels.emplace_back(CudaKernelName(step->kernel()));
    impl.steps.push_back(std::move(step));
  }
  return std::shared_ptr<const CudaEngine>(std::move(engine));
}

absl::StatusOr<std::shared_ptr<const CudaEngine>> CudaEngine::Load(const std::string& path,
                                                                   CudaEngineOptions options) {
  QCC_ASSIGN_OR_RETURN(Plan plan, ReadPlan(path));  // its errors name the path
  absl::StatusOr<std::shared_ptr<const CudaEngine>> engine = Create(std::move(plan), options);
  if (!engine.ok()) {
    return absl::Status(engine.status().code(),
                        absl::StrCat(path, ": ", engine.status().message()));
  }
  return engine;
}

uint64_t CudaEngine::weight_bytes() const { return impl_->uploads->bytes(); }
const std::string& CudaEngine::step_kernel(size_t i) const { return impl_->kernels[i]; }
const std::string& CudaEngine::device_name() const { return impl_->device_name; }

// ---- The context ----

struct CudaExecutionContext::Impl {
  int device = 0;
  cudaStream_t stream = nullptr;
  std::unique_ptr<DeviceMemory> arena, scratch, workspace;
  std::vector<std::unique_ptr<DeviceMemory>> staging_in, staging_out;
  std::vector<void*> buffers;  // by buffer id, for the current Enqueue
  uint64_t bytes = 0;

  // CUDA Graphs, one per batch size, valid for the pointers they were captured with.
  struct Graph {
    cudaGraphExec_t exec = nullptr;
    std::vector<void*> pointers;  // inputs then outputs
  };
  std::map<int64_t, Graph> graphs;
  std::vector<void*> pointers;  // this Enqueue's inputs then outputs (reserved at creation)

  ~Impl() {
    cudaSetDevice(device);
    // The arena and scratch are freed after this: let queued work finish with them first.
    if (stream != nullptr) cudaStreamSynchronize(stream);
    for (auto& [batch, g] : graphs) cudaGraphExecDestroy(g.exec);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

absl::StatusOr<std::unique_ptr<CudaExecutionContext>> CudaEngine::CreateContext() const {
  std::unique_ptr<CudaExecutionContext> ctx(new CudaExecutionContext(shared_from_this()));
  ctx->impl_ = std::make_unique<CudaExecutionContext::Impl>();
  CudaExecutionContext::Impl& c = *ctx->impl_;
  const Plan& p = plan();
  c.device = options_.device;
  QCC_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(c.device), "cudaSetDevice"));
  QCC_RETURN_IF_ERROR(CudaStatus(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking),
                                 "cudaStreamCreateWithFlags"));
  QCC_ASSIGN_OR_RETURN(c.arena, DeviceMemory::Allocate(c.device, p.arena_bytes, "arena"));
  QCC_ASSIGN_OR_RETURN(c.scratch,
                       DeviceMemory::Allocate(c.device, impl_->scratch_bytes, "step scratch"));
  QCC_ASSIGN_OR_RETURN(
      c.workspace, DeviceMemory::Allocate(c.device, qcc::cuda::CublasLtGemm::kDefaultWorkspaceBytes,
                                          "cuBLASLt workspace"));
  for (const auto& [bindings, staging] :
       {std::make_pair(&p.inputs, &c.staging_in), std::make_pair(&p.outputs, &c.staging_out)}) {
    for (const Binding& b : *bindings) {
      const uint64_t bytes = BufferBytes(p.buffers[b.buffer], p.batch_max).value_or(0);
      QCC_ASSIGN_OR_RETURN(
          std::unique_ptr<DeviceMemory> m,
          DeviceMemory::Allocate(c.device, bytes, absl::StrCat("staging for '", b.name, "'")));
      staging->push_back(std::move(m));
    }
  }
  c.bytes = c.arena->bytes() + c.scratch->bytes() + c.workspace->bytes();
  for (const auto& m : c.staging_in) c.bytes += m->bytes();
  for (const auto& m : c.staging_out) c.bytes += m->bytes();

  c.buffers = impl_->weight_addresses;
  uint8_t* arena = static_cast<uint8_t*>(c.arena->get());
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    if (p.buffers[i].kind == BufferKind::kArena) c.buffers[i] = arena + p.buffers[i].arena_offset;
  }
  c.pointers.reserve(p.inputs.size() + p.outputs.size());
  return ctx;
}

CudaExecutionContext::CudaExecutionContext(std::shared_ptr<const CudaEngine> engine)
    : engine_(std::move(engine)) {}
CudaExecutionContext::~CudaExecutionContext() = default;

void* CudaExecutionContext::stream() const { return impl_->stream; }
uint64_t CudaExecutionContext::device_bytes() const { return impl_->bytes; }

absl::Status CudaExecutionContext::Enqueue(absl::Span<const DeviceTensorRef> inputs,
                                           absl::Span<const DeviceTensorRef> outputs,
                                           int64_t batch) {
  const CudaEngine& engine = *engine_;
  const CudaEngine::Impl& e = *engine.impl_;
  Impl& c = *impl_;
  const Plan& plan = engine.plan();
  if (batch < plan.batch_min || batch > plan.batch_max) {
    return absl::InvalidArgumentError(absl::StrCat("batch ", batch, " is outside the plan's [",
                                                   plan.batch_min, ", ", plan.batch_max, "]"));
  }
  QCC_RETURN_IF_ERROR(CheckRefs("input", inputs, engine.inputs(), batch));
  QCC_RETURN_IF_ERROR(CheckRefs("output", outputs, engine.outputs(), batch));
  QCC_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(c.device), "cudaSetDevice"));

  c.pointers.clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    c.buffers[plan.inputs[i].buffer] = inputs[i].data;
    c.pointers.push_back(inputs[i].data);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    c.buffers[plan.outputs[i].buffer] = outputs[i].data;
    c.pointers.push_back(outputs[i].data);
  }

  cuda_exec::DeviceRunContext run;
  run.plan = &plan;
  run.buffers = &c.buffers;
  run.batch = batch;
  run.stream = c.stream;
  run.scratch = c.scratch->get();
  run.scratch_bytes = c.scratch->bytes();
  run.gemm = e.gemm.get();
  run.workspace = c.workspace->get();
  run.workspace_bytes = qcc::cuda::CublasLtGemm::kDefaultWorkspaceBytes;
  auto launch_all = [&]() -> absl::Status {
    for (size_t i = 0; i < e.steps.size(); ++i) {
      run.step = &plan.steps[i];
      QCC_RETURN_IF_ERROR(e.steps[i]->Enqueue(run));
      if (observer_) {
        for (int32_t id : plan.steps[i].outputs) {
          const PlanBuffer& b = plan.buffers[id];
          observer_(i, id, c.buffers[id], b.dtype, DimsAtBatch(b, batch), c.stream);
        }
      }
    }
    return absl::OkStatus();
  };

  if (!engine.options().use_cuda_graphs || observer_) return launch_all();

  auto it = c.graphs.find(batch);
  if (it != c.graphs.end()) {
    if (it->second.pointers != c.pointers) return launch_all();  // other pointers: no replay
    return CudaStatus(cudaGraphLaunch(it->second.exec, c.stream), "cudaGraphLaunch");
  }
  // First Enqueue of this batch: capture the launches, instantiate, launch.
  QCC_RETURN_IF_ERROR(CudaStatus(cudaStreamBeginCapture(c.stream, cudaStreamCaptureModeThreadLocal),
                                 "cudaStreamBeginCapture"));
  const absl::Status launched = launch_all();
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(c.stream, &graph);
  if (!launched.ok()) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    return launched;
  }
  QCC_RETURN_IF_ERROR(CudaStatus(ended, "cudaStreamEndCapture"));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  QCC_RETURN_IF_ERROR(CudaStatus(instantiated, "cudaGraphInstantiate"));
  c.graphs[batch] = Impl::Graph{exec, c.pointers};
  return CudaStatus(cudaGraphLaunch(exec, c.stream), "cudaGraphLaunch");
}

absl::StatusOr<std::vector<Tensor>> CudaExecutionContext::Run(
    absl::Span<const Tensor> host_inputs) {
  const CudaEngine& engine = *engine_;
  Impl& c = *impl_;
  QCC_ASSIGN_OR_RETURN(const int64_t batch, engine.CheckInputs(host_inputs));
  QCC_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(c.device), "cudaSetDevice"));
  std::vector<DeviceTensorRef> in, out;
  for (size_t i = 0; i < host_inputs.size(); ++i) {
    const Tensor& t = host_inputs[i];
    void* d = c.staging_in[i]->get();
    if (t.nbytes() > 0) {
      QCC_RETURN_IF_ERROR(
          CudaStatus(cudaMemcpyAsync(d, t.raw(), t.nbytes(), cudaMemcpyHostToDevice, c.stream),
                     absl::StrCat("cudaMemcpyAsync(input '", engine.inputs()[i].name, "', ",
                                  FormatBytes(t.nbytes()), ", host to device)")));
    }
    in.push_back({d, t.dtype(), t.dims()});
  }
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < engine.outputs().size(); ++i) {
    outputs.emplace_back(engine.outputs()[i].dtype, engine.OutputDims(i, batch));
    out.push_back({c.staging_out[i]->get(), outputs[i].dtype(), outputs[i].dims()});
  }
  QCC_RETURN_IF_ERROR(Enqueue(in, out, batch));
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& t = outputs[i];
    if (t.nbytes() == 0) continue;
    QCC_RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(t.raw(), out[i].data, t.nbytes(), cudaMemcpyDeviceToHost, c.stream),
        absl::StrCat("cudaMemcpyAsync(output '", engine.outputs()[i].name, "', ",
                     FormatBytes(t.nbytes()), ", device to host)")));
  }
  QCC_RETURN_IF_ERROR(Synchronize());
  return outputs;
}

absl::Status CudaExecutionContext::Synchronize() {
  QCC_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(impl_->device), "cudaSetDevice"));
  return CudaStatus(cudaStreamSynchronize(impl_->stream), "cudaStreamSynchronize");
}

}  // namespace qcc::runtime
