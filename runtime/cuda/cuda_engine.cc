// CudaEngine in a qcc built without nvcc: the API links, and Create checks the plan as the CUDA
// build does (a CPU Engine, so a corrupt plan reports the same error everywhere) and then fails
// with FailedPrecondition (Load's names the path). The real implementation is cuda_engine_cuda.cc,
// built only with nvcc.
#ifndef QCC_HAVE_CUDA

#include "runtime/cuda/cuda_engine.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "support/status.h"

namespace qcc::runtime {
namespace {

absl::Status BuiltWithoutCuda() {
  return absl::FailedPreconditionError(
      "this qcc was built without CUDA (no nvcc at build time): use --device cpu, or rebuild "
      "qcc on a machine with the CUDA toolkit");
}

const std::string& Empty() {
  static const std::string* empty = new std::string;
  return *empty;
}

}  // namespace

struct CudaEngine::Impl {};
struct CudaExecutionContext::Impl {};

CudaEngine::CudaEngine() = default;
CudaEngine::~CudaEngine() = default;

absl::StatusOr<std::shared_ptr<const CudaEngine>> CudaEngine::Create(Plan plan, CudaEngineOptions) {
  QCC_RETURN_IF_ERROR(Engine::Create(std::move(plan), EngineOptions{1}).status());
  return BuiltWithoutCuda();
}

absl::StatusOr<std::shared_ptr<const CudaEngine>> CudaEngine::Load(const std::string& path,
                                                                   CudaEngineOptions) {
  QCC_RETURN_IF_ERROR(Engine::Load(path, EngineOptions{1}).status());
  const absl::Status built_without = BuiltWithoutCuda();
  return absl::Status(built_without.code(), absl::StrCat(path, ": ", built_without.message()));
}

absl::StatusOr<std::unique_ptr<CudaExecutionContext>> CudaEngine::CreateContext() const {
  return BuiltWithoutCuda();
}

uint64_t CudaEngine::weight_bytes() const { return 0; }
const std::string& CudaEngine::step_kernel(size_t) const { return Empty(); }
const std::string& CudaEngine::device_name() const { return Empty(); }

CudaExecutionContext::CudaExecutionContext(std::shared_ptr<const CudaEngine> engine)
    : engine_(std::move(engine)) {}
CudaExecutionContext::~CudaExecutionContext() = default;

absl::Status CudaExecutionContext::Enqueue(absl::Span<const DeviceTensorRef>,
                                           absl::Span<const DeviceTensorRef>, int64_t) {
  return BuiltWithoutCuda();
}

absl::StatusOr<std::vector<Tensor>> CudaExecutionContext::Run(absl::Span<const Tensor>) {
  return BuiltWithoutCuda();
}

absl::Status CudaExecutionContext::Synchronize() { return BuiltWithoutCuda(); }
void* CudaExecutionContext::stream() const { return nullptr; }
uint64_t CudaExecutionContext::device_bytes() const { return 0; }

}  // namespace qcc::runtime

#endif  // QCC_HAVE_CUDA
