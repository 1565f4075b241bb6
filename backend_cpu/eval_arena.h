// Storage for the tensors that Evaluator::Run allocates. The first run on a set of input shapes
// allocates every tensor on its own and frees it as soon as it dies, recording when (in node
// steps) each was allocated and died. A later run on the same shapes puts every tensor that died
// within its run at its offset in one arena, planned from that record by the plan runtime's
// greedy-by-size planner (runtime::PlanMemory) and kept between runs: a model that runs batch
// after batch (calibration) holds about its peak of live activations, allocated and page-faulted
// once, instead of a cache of every size it ever freed.
#ifndef QCC_BACKEND_CPU_EVAL_ARENA_H_
#define QCC_BACKEND_CPU_EVAL_ARENA_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "support/tensor.h"

namespace qcc::cpu {

/// The memory of one Evaluator::Run (tests and tuning read it through Evaluator::last_run_memory).
struct EvalMemoryStats {
  /// Most bytes of node-output storage the run held at once: its arena plus the outputs it
  /// allocated on their own that were alive (inputs, constants and kernel scratch excluded).
  int64_t peak_bytes = 0;
  /// Size of the arena that held the run's intermediates; 0 for a first run on these shapes.
  int64_t arena_bytes = 0;
  /// Tensors allocated on their own: every tensor of a first run, then only the outputs and the
  /// tensors that outlive their run (held by the caller, e.g. through EvalOptions::on_value).
  int64_t separate_allocations = 0;
};

namespace internal {

struct RunLayout;
struct RunState;

/// Hands out the output storage of one run. Not thread-safe; the tensors it returns may be
/// released on any thread.
class RunAllocator {
 public:
  ~RunAllocator();
  /// Uninitialised storage for a tensor (0xff bytes when poisoning is on), 64-byte aligned;
  /// ResourceExhausted when the system has no memory for it.
  absl::StatusOr<Tensor> Allocate(DType dtype, Dims dims);
  /// Bytes the run holds now: its arena and the live tensors allocated on their own.
  int64_t held() const;
  /// The node the run is at: lifetimes are recorded in these steps.
  void SetStep(int32_t step);

 private:
  friend class EvalArena;
  RunAllocator(std::unique_ptr<RunLayout> layout, bool poison);
  /// Whether allocation `index` of `bytes` bytes may take its planned place in the arena: the
  /// plan has it there, and no live arena tensor of this run overlaps those bytes. (The caller
  /// holds the run state's lock.)
  bool FitsInArena(int32_t index, uint64_t bytes) const;

  std::unique_ptr<RunLayout> layout_;  // the last run's record and plan, or null
  std::shared_ptr<RunState> state_;    // shared with the deleters of the storage handed out
  bool poison_;
  bool deviated_ = false;  // an allocation did not go where the plan put it
};

/// What an Evaluator keeps between runs: the allocation record of its last run and, once a
/// second run on the same input shapes begins, the arena planned from it. Thread-safe: runs that
/// overlap in time each take a record of their shapes (or start one) and give it back when they
/// finish, so that K runs at a time (a calibration's threads) keep K arenas; a run on other
/// shapes drops the records of the old ones.
class EvalArena {
 public:
  EvalArena();
  ~EvalArena();
  /// Starts a run on inputs of shapes `input_dims`, with the arena when the last finished run
  /// had the same shapes. `poison`: fill storage with 0xff bytes (QCC_EVAL_POISON).
  std::unique_ptr<RunAllocator> Begin(const std::vector<Dims>& input_dims, bool poison);
  /// Ends a run (its outputs still held by the caller) and keeps its layout for the next run.
  EvalMemoryStats Finish(std::unique_ptr<RunAllocator> run);
  /// What the last Finish returned.
  EvalMemoryStats last_stats();

 private:
  /// More than the runs that overlap in practice; a bound on the arenas kept.
  static constexpr size_t kMaxKeptLayouts = 8;
  std::mutex mu_;
  std::vector<std::unique_ptr<RunLayout>> layouts_;  // oldest first, all of one input shape
  EvalMemoryStats last_stats_;
};

}  // namespace internal
}  // namespace qcc::cpu

#endif  // QCC_BACKEND_CPU_EVAL_ARENA_H_
