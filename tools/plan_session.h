// A compiled plan opened on the device a command was asked for (--device cpu|cuda|auto): the
// CPU runtime (runtime/engine.h) or the CUDA runtime (runtime/cuda/cuda_engine.h), behind one
// Run call, so `qcc run | compare | bench` treat both alike.
#ifndef QCC_TOOLS_PLAN_SESSION_H_
#define QCC_TOOLS_PLAN_SESSION_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "runtime/engine.h"
#include "support/tensor.h"

namespace qcc::tools {

/// "cpu" or "cuda" for --device `text` ("auto": cuda when this qcc was built with CUDA and a
/// device is present, else cpu). InvalidArgument naming the flag for any other text.
absl::StatusOr<std::string> ResolveDevice(absl::string_view text);

class PlanSession {
 public:
  /// Loads the plan at `path` and prepares it on `device` (cpu, cuda or auto), with `threads`
  /// CPU kernel threads and at most `max_memory` bytes of context memory (0: the machine's). A
  /// cuda device that is missing, or a qcc built without CUDA, is a FailedPrecondition that says
  /// to use --device cpu.
  static absl::StatusOr<std::unique_ptr<PlanSession>> Open(const std::string& path,
                                                           absl::string_view device, int threads,
                                                           int64_t max_memory = 0);
  ~PlanSession();

  /// The CPU engine (always prepared: it validates the plan and describes its inputs/outputs).
  const runtime::Engine& engine() const { return *engine_; }
  /// "cpu" or "cuda".
  const std::string& device() const { return device_; }
  /// Runs one batch (host tensors in, host tensors out).
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> inputs);
  /// The CPU context (per-layer observers); nullptr on cuda.
  runtime::ExecutionContext* cpu_context() { return cpu_context_.get(); }

 private:
  struct Cuda;
  PlanSession() = default;

  std::string device_;
  std::shared_ptr<const runtime::Engine> engine_;
  std::unique_ptr<runtime::ExecutionContext> cpu_context_;
  std::unique_ptr<Cuda> cuda_;
};

}  // namespace qcc::tools

#endif  // QCC_TOOLS_PLAN_SESSION_H_
