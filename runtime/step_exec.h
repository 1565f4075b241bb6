// How the CPU runtime executes a plan's steps (runtime/steps.def): for every StepKind a prepare
// function, run once by Engine::Create, that decodes the step's parameters, checks its operands
// (counts, dtypes, shapes at the plan's smallest and largest batch) and packs its weights, and a
// run function that calls the backend_cpu kernel on one execution context's buffers.
//
// The kinds are looked up in a StepRegistry filled by explicit registration calls
// (RegisterInt8Steps, RegisterFloatSteps, RegisterMovementSteps); a kind is added in one place:
// its prepare and run functions and one Add line.
#ifndef QCC_RUNTIME_STEP_EXEC_H_
#define QCC_RUNTIME_STEP_EXEC_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kernels/cpu/pool.h"
#include "runtime/plan.h"
#include "runtime/steps.h"
#include "support/tensor.h"

namespace qcc::runtime {

/// The dims of `b` at batch `batch` (a leading -1 takes `batch`).
Dims DimsAtBatch(const PlanBuffer& b, int64_t batch);

/// What a prepare function sees: one step of a validated plan and helpers that check its
/// operands. Every error is InvalidArgument "step <i> '<name>' (<Kind>): <what>".
class StepPrepareContext {
 public:
  StepPrepareContext(const Plan& plan, size_t index, int num_threads)
      : plan_(plan), index_(index), num_threads_(num_threads) {}

  const Plan& plan() const { return plan_; }
  const PlanStep& step() const { return plan_.steps[index_]; }
  int num_threads() const { return num_threads_; }
  /// The batches shapes are checked at: batch_min and batch_max (once when equal). Every shape
  /// relation of a step is affine in the batch, so holding at both means holding at all.
  std::vector<int64_t> batches() const;

  /// InvalidArgument naming the step.
  absl::Status Error(absl::string_view what) const;
  /// The step's parameters; an error naming the step when the counts do not match.
  template <typename P>
  absl::StatusOr<P> Decode() const {
    absl::StatusOr<P> p = DecodeParams<P>(step());
    if (!p.ok()) {
      return Error(absl::StrCat("malformed parameters (", step().ints.size(), " ints, ",
                                step().floats.size(), " floats)"));
    }
    return p;
  }

  /// OK when the step has between min_inputs and max_inputs inputs and exactly `outputs`.
  absl::Status CheckCounts(size_t min_inputs, size_t max_inputs, size_t outputs) const;
  /// Input `i`'s buffer; nullptr when omitted (-1) or past the end.
  const PlanBuffer* input(size_t i) const;
  const PlanBuffer& output(size_t i) const { return plan_.buffers[step().outputs[i]]; }
  /// Requires input `i` (called `role` in messages) present, of `dtype` and of rank `rank`
  /// (-1: any rank; -2: rank >= 1). Returns its buffer.
  absl::StatusOr<const PlanBuffer*> Input(size_t i, absl::string_view role, DType dtype,
                                          int rank = -1) const;
  /// The same for output `i`.
  absl::StatusOr<const PlanBuffer*> Output(size_t i, absl::string_view role, DType dtype,
                                           int rank = -1) const;
  /// Requires input `i` to be a weight with no dynamic axis; returns its bytes.
  absl::StatusOr<absl::Span<const uint8_t>> WeightBytes(size_t i, absl::string_view role) const;
  /// OK when `b`'s dims at `batch` are `want`; else an error naming `role`, both shapes and
  /// the batch.
  absl::Status CheckDims(const PlanBuffer& b, absl::string_view role, int64_t batch,
                         absl::Span<const int64_t> want) const;

 private:
  absl::StatusOr<const PlanBuffer*> Check(const PlanBuffer* b, absl::string_view what,
                                          absl::string_view role, DType dtype, int rank) const;

  const Plan& plan_;
  size_t index_;
  int num_threads_;
};

/// What a run function sees: the step, every buffer's address for this run, the batch, the
/// kernel thread count and the step's scratch (ScratchBytes bytes, 64-byte aligned).
struct StepRunContext {
  const Plan* plan = nullptr;
  const PlanStep* step = nullptr;
  const std::vector<void*>* buffers = nullptr;  // by buffer id
  int64_t batch = 1;
  int num_threads = 1;
  void* scratch = nullptr;

  /// The run-time dims of buffer `id` / of input `i` / of output `i`.
  Dims dims(int32_t id) const { return DimsAtBatch(plan->buffers[id], batch); }
  Dims in_dims(size_t i) const { return dims(step->inputs[i]); }
  Dims out_dims(size_t i) const { return dims(step->outputs[i]); }
  /// Input `i`'s data (nullptr when omitted) and output `i`'s.
  template <typename T>
  const T* in(size_t i) const {
    const int32_t id = step->inputs[i];
    return id < 0 ? nullptr : static_cast<const T*>((*buffers)[id]);
  }
  template <typename T>
  T* out(size_t i) const {
    return static_cast<T*>((*buffers)[step->outputs[i]]);
  }
};

/// A step prepared for execution; immutable and shared by every execution context.
class PreparedStep {
 public:
  virtual ~PreparedStep() = default;
  /// Scratch bytes Run needs at ctx.batch (ctx.scratch is not set yet).
  virtual int64_t ScratchBytes(const StepRunContext& ctx) const = 0;
  /// Computes the step's outputs. Never fails: the prepare function checked everything.
  virtual void Run(const StepRunContext& ctx) const = 0;
};

/// Decodes, checks and prepares one step.
using PrepareStepFn =
    absl::StatusOr<std::unique_ptr<PreparedStep>> (*)(const StepPrepareContext& ctx);

/// StepKind -> prepare function.
class StepRegistry {
 public:
  /// Registers the prepare function of `kind` (replacing an earlier one).
  void Add(StepKind kind, PrepareStepFn fn) { fns_[static_cast<size_t>(kind)] = fn; }
  /// The prepare function of kind number `kind`; nullptr when unknown or not registered.
  PrepareStepFn Find(uint32_t kind) const { return kind < fns_.size() ? fns_[kind] : nullptr; }

 private:
  std::array<PrepareStepFn, static_cast<size_t>(StepKind::kNumStepKinds)> fns_{};
};

/// Quantize, Dequantize, Requantize and the int8 compute kinds (step_exec_int8.cc).
void RegisterInt8Steps(StepRegistry& registry);
/// The fp32 compute kinds (step_exec_float.cc).
void RegisterFloatSteps(StepRegistry& registry);
/// Reshape, Transpose, Slice, Pad, Cast (step_exec_movement.cc).
void RegisterMovementSteps(StepRegistry& registry);
/// Resize, Expand, BatchAffine (step_exec_shape.cc).
void RegisterShapeSteps(StepRegistry& registry);
/// Every kind above, registered once.
const StepRegistry& CpuStepRegistry();

namespace internal {

template <typename State, void (*RunFn)(const State&, const StepRunContext&),
          int64_t (*ScratchFn)(const State&, const StepRunContext&)>
class StepOf final : public PreparedStep {
 public:
  explicit StepOf(State state) : state_(std::move(state)) {}
  int64_t ScratchBytes(const StepRunContext& ctx) const override {
    return ScratchFn == nullptr ? 0 : ScratchFn(state_, ctx);
  }
  void Run(const StepRunContext& ctx) const override { RunFn(state_, ctx); }

 private:
  State state_;
};

}  // namespace internal

/// The PrepareStepFn of a kind written as a state struct, a prepare function returning it, a
/// run function and optionally a scratch-size function.
template <typename State, absl::StatusOr<State> (*PrepareFn)(const StepPrepareContext&),
          void (*RunFn)(const State&, const StepRunContext&),
          int64_t (*ScratchFn)(const State&, const StepRunContext&) = nullptr>
absl::StatusOr<std::unique_ptr<PreparedStep>> PrepareStep(const StepPrepareContext& ctx) {
  absl::StatusOr<State> state = PrepareFn(ctx);
  if (!state.ok()) return state.status();
  return std::unique_ptr<PreparedStep>(
      new internal::StepOf<State, RunFn, ScratchFn>(std::move(*state)));
}

// ---- Helpers shared by the step files. ----

/// The output extent of a window along one axis (ONNX Conv/pool formula; ceil_mode drops a last
/// window that starts in the end padding); <= 0 when the window does not fit.
int64_t WindowOutExtent(int64_t in, int64_t kernel, int64_t stride, int64_t pad_begin,
                        int64_t pad_end, int64_t dilation, bool ceil_mode);
/// The bound every geometry value (stride, dilation, pad, group, kernel) stays within, so no
/// product of a step's geometry can overflow.
inline constexpr int64_t kMaxStepGeometry = int64_t{1} << 24;
/// OK when strides and dilations are in [1, kMaxStepGeometry], pads in [0, kMaxStepGeometry] and
/// group in [1, kMaxStepGeometry].
absl::Status CheckConvGeometry(const StepPrepareContext& ctx, const ConvGeometry& g);
/// The NCHW output dims of a convolution of `x` by K filters of RxS with geometry `g`; an error
/// when the window does not fit.
absl::StatusOr<Dims> ConvOutDims(const StepPrepareContext& ctx, const ConvGeometry& g,
                                 const Dims& x, int64_t k, int64_t r, int64_t s);
/// OK when the window parameters are positive (kernel, stride, dilation), pads non-negative and
/// ceil_mode 0 or 1.
absl::Status CheckPoolWindow(const StepPrepareContext& ctx, const PoolStepParams& p);
/// The kernels' geometry of a 2-D windowed pool step `w` from NCHW input dims `x` to output
/// dims `y` (fp32 and int8 pools alike).
cpu::PoolGeometry PoolGeometryOf(const PoolStepParams& w, const Dims& x, const Dims& y);
/// A windowed pool's operands: one input X and one output Y of `dtype`, NCHW, Y with the
/// window's output extents at every batch (CheckPoolWindow included).
absl::Status CheckWindowedPool(const StepPrepareContext& ctx, const PoolStepParams& p, DType dtype);
/// The expected NCHW output dims of a pool over `x` with `p`; error when the window does not fit.
absl::StatusOr<Dims> PoolOutDims(const StepPrepareContext& ctx, const PoolStepParams& p,
                                 const Dims& x);
/// OK when `zp` (called `what`) lies in [-128, 127].
absl::Status CheckInt8Value(const StepPrepareContext& ctx, int64_t v, absl::string_view what);
/// OK when a per-tensor int8 quantization has a positive finite scale and an int8 zero point.
absl::Status CheckQuantizeParams(const StepPrepareContext& ctx, const QuantizeParams& p);
/// OK when -128 <= lo <= hi <= 127.
absl::Status CheckClamp(const StepPrepareContext& ctx, int64_t lo, int64_t hi);
/// `axis` in [-rank, rank) made non-negative; an error otherwise.
absl::StatusOr<int64_t> NormalizeStepAxis(const StepPrepareContext& ctx, int64_t axis,
                                          int64_t rank);
/// The output dims of concatenating `inputs` along `axis`; an error when the other extents or
/// ranks differ.
absl::StatusOr<Dims> ConcatDims(const StepPrepareContext& ctx, const std::vector<Dims>& inputs,
                                int64_t axis);
/// Product of dims[begin, end).
int64_t ProductOf(const Dims& dims, size_t begin, size_t end);

}  // namespace qcc::runtime

#endif  // QCC_RUNTIME_STEP_EXEC_H_
