#include "tools/plan_session.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "backend_cuda/cuda_info.h"
#include "runtime/cuda/cuda_engine.h"
#include "support/status.h"

namespace qcc::tools {

struct PlanSession::Cuda {
  std::shared_ptr<const runtime::CudaEngine> engine;
  std::unique_ptr<runtime::CudaExecutionContext> context;
};

absl::StatusOr<std::string> ResolveDevice(absl::string_view text) {
  if (text == "cpu" || text == "cuda") return std::string(text);
  if (text == "auto") return cuda::DeviceCount() > 0 ? "cuda" : "cpu";
  return absl::InvalidArgumentError(
      absl::StrCat("--device '", text, "': the devices are auto, cpu and cuda"));
}

PlanSession::~PlanSession() = default;

absl::StatusOr<std::unique_ptr<PlanSession>> PlanSession::Open(const std::string& path,
                                                               absl::string_view device,
                                                               int threads, int64_t max_memory) {
  std::unique_ptr<PlanSession> session(new PlanSession);
  QCC_ASSIGN_OR_RETURN(session->device_, ResolveDevice(device));
  if (session->device_ == "cpu") {
    runtime::EngineOptions options;
    options.num_threads = threads;
    options.max_memory = max_memory;
    QCC_ASSIGN_OR_RETURN(session->engine_, runtime::Engine::Load(path, options));
    session->cpu_context_ = session->engine_->CreateContext();
    return session;
  }
  // The CUDA engine checks the plan through a CPU engine of its own, which also describes the
  // model's inputs and outputs here.
  auto cuda = std::make_unique<Cuda>();
  absl::StatusOr<std::shared_ptr<const runtime::CudaEngine>> cuda_engine =
      runtime::CudaEngine::Load(path);
  if (!cuda_engine.ok()) {
    const absl::string_view message = cuda_engine.status().message();
    return absl::Status(
        cuda_engine.status().code(),
        absl::StrCat(message, absl::StrContains(message, "--device cpu")
                                  ? ""
                                  : " (run it on the CPU runtime with --device cpu)"));
  }
  cuda->engine = *std::move(cuda_engine);
  session->engine_ = cuda->engine->cpu_engine();
  QCC_ASSIGN_OR_RETURN(cuda->context, cuda->engine->CreateContext());
  session->cuda_ = std::move(cuda);
  return session;
}

absl::StatusOr<std::vector<Tensor>> PlanSession::Run(absl::Span<const Tensor> inputs) {
  if (cuda_ != nullptr) return cuda_->context->Run(inputs);
  return cpu_context_->Run(inputs);
}

}  // namespace qcc::tools
