// The CPU runtime's public C++ API (DESIGN.md s.4, TensorRT's split):
//   Plan (runtime/plan.h) -> Engine (prepared steps and packed weights; immutable, thread-safe,
//   shared) -> ExecutionContext (one per thread: its arena and scratch; not thread-safe).
//
//   QCC_ASSIGN_OR_RETURN(std::shared_ptr<const Engine> engine, Engine::Load("model.plan"));
//   std::unique_ptr<ExecutionContext> ctx = engine->CreateContext();
//   QCC_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, ctx->Run({image}));
//
// Kernel threads: every step splits its work over EngineOptions::num_threads threads of the
// process-wide pool (kernels/cpu/thread_pool.h), which runs one job at a time. When
// several contexts run at once, the step that finds the pool busy runs its pieces inline on its
// own thread, so concurrent contexts never wait for each other and results do not depend on
// the thread count. For throughput with many contexts, use num_threads = 1.
#ifndef QCC_RUNTIME_ENGINE_H_
#define QCC_RUNTIME_ENGINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/plan.h"
#include "support/tensor.h"

namespace qcc::runtime {

class ExecutionContext;
class PreparedStep;

/// How an Engine runs its steps.
struct EngineOptions {
  /// Kernel threads per step; 0 takes every core (std::thread::hardware_concurrency()).
  int num_threads = 0;
  /// Bytes one execution context may hold (its arena at batch_max and the steps' scratch); 0:
  /// the machine's memory (support/memory.h). Create refuses a plan whose arena passes it.
  int64_t max_memory = 0;
  /// Images per slice when a run's batch is larger (runtime/batch_slices.h): 0 chooses them
  /// (SliceImages: as many as keep the arena they touch within kSliceArenaBytes), a negative
  /// value never slices, n > 0 slices by n. Only plans whose steps keep the images of a batch
  /// apart (ImagesIndependent) run in slices; runs with a step observer never do.
  int64_t slice_images = 0;
};

/// A model input or output as callers see it.
struct TensorInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;  ///< dims[0] == -1: the dynamic batch
};

/// A plan prepared for the CPU: every step decoded, checked and its weights packed. Immutable
/// after Create, so one Engine serves any number of contexts on any threads.
class Engine : public std::enable_shared_from_this<Engine> {
 public:
  /// Validates `plan` (ValidatePlan) and prepares every step. A corrupt or inconsistent plan
  /// (unknown step kind, malformed parameters, operands of the wrong count, dtype or shape) is
  /// an InvalidArgument naming the step; nothing is left to fail at run time.
  static absl::StatusOr<std::shared_ptr<const Engine>> Create(Plan plan,
                                                              EngineOptions options = {});
  /// ReadPlan(path) then Create; errors name the path.
  static absl::StatusOr<std::shared_ptr<const Engine>> Load(const std::string& path,
                                                            EngineOptions options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// A new execution context sharing this engine (which it keeps alive).
  std::unique_ptr<ExecutionContext> CreateContext() const;

  /// The model's inputs and outputs, in binding order.
  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  /// The batch range a run may use.
  int64_t batch_min() const { return plan_.batch_min; }
  int64_t batch_max() const { return plan_.batch_max; }
  /// Arena bytes a context needs at batch_max.
  uint64_t arena_bytes() const { return plan_.arena_bytes; }
  /// Arena bytes a context needs at `batch` (the highest arena buffer end at that batch).
  uint64_t ArenaBytesAt(int64_t batch) const;
  /// Kernel threads per step.
  int num_threads() const { return num_threads_; }
  /// Images per slice of a larger batch (EngineOptions::slice_images); 0: runs are never sliced.
  int64_t slice_images() const { return slice_images_; }
  const Plan& plan() const { return plan_; }

  /// Checks `inputs` against inputs() (count, dtype, rank, every extent but the batch, the
  /// batch within [batch_min, batch_max] and equal across inputs, and ids a Gather step looks
  /// up within its table) and returns the batch. InvalidArgument naming the input, the expected
  /// shape and what was given (or the id and the table's extent).
  absl::StatusOr<int64_t> CheckInputs(absl::Span<const Tensor> inputs) const;
  /// The dims of output `i` at `batch`.
  Dims OutputDims(size_t i, int64_t batch) const;

 private:
  friend class ExecutionContext;
  Engine();
  static absl::StatusOr<std::shared_ptr<const Engine>> CreateFrom(Plan plan, EngineOptions options,
                                                                  const std::string& source);

  Plan plan_;
  int num_threads_ = 1;
  int64_t max_memory_ = 0;
  int64_t slice_images_ = 0;
  std::vector<TensorInfo> inputs_, outputs_;
  std::vector<std::unique_ptr<PreparedStep>> steps_;
  std::vector<void*> weight_addresses_;  // by buffer id: a weight's bytes, else nullptr
  /// Integer inputs a Gather step indexes with (token ids into an embedding table): CheckInputs
  /// refuses an id outside [-extent, extent).
  struct IndexCheck {
    size_t input = 0;
    int64_t extent = 0;
    std::string step;
  };
  std::vector<IndexCheck> index_checks_;
};

/// One thread's state for running an Engine: its arena (grown to the largest batch run so far)
/// and the steps' scratch. Not thread-safe: use one context per thread.
class ExecutionContext {
 public:
  explicit ExecutionContext(std::shared_ptr<const Engine> engine);
  ~ExecutionContext();
  ExecutionContext(const ExecutionContext&) = delete;
  ExecutionContext& operator=(const ExecutionContext&) = delete;

  /// Runs the plan on `inputs` (in input binding order; see Engine::CheckInputs) and returns
  /// freshly allocated outputs, in output binding order.
  absl::StatusOr<std::vector<Tensor>> Run(absl::Span<const Tensor> inputs);
  /// Zero-copy form: writes into `outputs`, which must already have each output's dtype and
  /// dims at the inputs' batch (e.g. tensors kept from an earlier run of the same batch).
  absl::Status RunInto(absl::Span<const Tensor> inputs, absl::Span<Tensor> outputs);

  /// Called after every step with the step's index and each of its outputs (a view of the
  /// buffer valid only during the call): for debugging and per-layer accuracy reports.
  using StepObserver = std::function<void(size_t step, int32_t buffer, const Tensor& value)>;
  void set_step_observer(StepObserver observer) { observer_ = std::move(observer); }

  const Engine& engine() const { return *engine_; }
  /// Arena bytes this context holds now.
  uint64_t arena_capacity() const { return arena_capacity_; }

 private:
  absl::Status Execute(absl::Span<const Tensor> inputs, absl::Span<Tensor> outputs, int64_t batch);
  /// Runs every step on images [first, first + count) of `inputs` into those of `outputs`.
  absl::Status ExecuteImages(absl::Span<const Tensor> inputs, absl::Span<Tensor> outputs,
                             int64_t first, int64_t count);
  absl::Status Reserve(std::shared_ptr<uint8_t>& storage, uint64_t& capacity, uint64_t bytes);

  std::shared_ptr<const Engine> engine_;
  std::shared_ptr<uint8_t> arena_, scratch_;
  uint64_t arena_capacity_ = 0, scratch_capacity_ = 0;
  std::vector<void*> buffers_;  // by buffer id, for the current run
  StepObserver observer_;
};

}  // namespace qcc::runtime

#endif  // QCC_RUNTIME_ENGINE_H_
