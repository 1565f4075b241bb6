#include "runtime/batch_slices.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/steps.h"

namespace qcc::runtime {
namespace {

bool Batched(const PlanBuffer& b) { return !b.dims.empty() && b.dims[0] == -1; }

/// One step's operands and the checks every kind is made of.
class StepCheck {
 public:
  StepCheck(const Plan& plan, const PlanStep& step) : plan_(plan), step_(step) {}

  const PlanBuffer* input(size_t i) const {
    return i < step_.inputs.size() && step_.inputs[i] >= 0 ? &plan_.buffers[step_.inputs[i]]
                                                           : nullptr;
  }
  const PlanBuffer& output(size_t i) const { return plan_.buffers[step_.outputs[i]]; }
  int64_t out_rank() const { return static_cast<int64_t>(output(0).dims.size()); }

  /// Input i is absent or has no batch (a weight).
  bool Unbatched(size_t i) const { return input(i) == nullptr || !Batched(*input(i)); }
  /// Every input from `first` on is absent or a weight.
  bool UnbatchedFrom(size_t first) const {
    for (size_t i = first; i < step_.inputs.size(); ++i) {
      if (!Unbatched(i)) return false;
    }
    return true;
  }
  /// Numpy broadcasting to a result of rank `rank` keeps images apart: a batched operand has
  /// that rank (so its batch is the result's), and an operand without a batch of that rank has
  /// a leading extent of 1 (it is the same for every image).
  bool BroadcastsPerImage(int64_t rank) const {
    for (size_t i = 0; i < step_.inputs.size(); ++i) {
      const PlanBuffer* b = input(i);
      if (b == nullptr) continue;
      const int64_t r = static_cast<int64_t>(b->dims.size());
      if (Batched(*b) ? r != rank : r == rank && b->dims[0] != 1) return false;
    }
    return true;
  }
  /// Input i is absent or has the output's dims (a fused residual).
  bool SameAsOutputOrAbsent(size_t i) const {
    return input(i) == nullptr || input(i)->dims == output(0).dims;
  }
  /// The step's axis (AxisStepParams; QConcatStepParams for QConcat), made non-negative for
  /// rank `rank`; -1 when the parameters do not decode.
  int64_t Axis(int64_t rank) const {
    int64_t axis = -1;
    if (step_.kind == static_cast<uint32_t>(StepKind::kQConcat)) {
      absl::StatusOr<QConcatStepParams> p = DecodeParams<QConcatStepParams>(step_);
      if (!p.ok()) return -1;
      axis = p->axis;
    } else {
      absl::StatusOr<AxisStepParams> p = DecodeParams<AxisStepParams>(step_);
      if (!p.ok()) return -1;
      axis = p->axis;
    }
    return axis < 0 ? axis + rank : axis;
  }
  template <typename P>
  absl::StatusOr<P> Params() const {
    return DecodeParams<P>(step_);
  }

 private:
  const Plan& plan_;
  const PlanStep& step_;
};

/// Whether `step` computes image i of its outputs from image i of its batched inputs alone
/// (the buffers' batches are checked by the caller).
bool StepKeepsImagesApart(const Plan& plan, const PlanStep& step) {
  const StepCheck c(plan, step);
  if (step.outputs.empty() || c.input(0) == nullptr) return false;  // BatchAffine has no input
  const int64_t in_rank = static_cast<int64_t>(c.input(0)->dims.size());
  switch (static_cast<StepKind>(step.kind)) {
    // Elementwise, or per image by construction (windows over H and W, one image's rows).
    case StepKind::kQuantize:
    case StepKind::kDequantize:
    case StepKind::kRequantize:
    case StepKind::kQLut:
    case StepKind::kUnary:
    case StepKind::kUnaryQuantize:
    case StepKind::kCast:
    case StepKind::kQMaxPool:
    case StepKind::kQAveragePool:
    case StepKind::kQGlobalAveragePool:
    case StepKind::kMaxPool:
    case StepKind::kAveragePool:
    case StepKind::kGlobalAveragePool:
      return c.UnbatchedFrom(1);
    case StepKind::kQConv:
    case StepKind::kConvTranspose:
      return c.UnbatchedFrom(1);
    case StepKind::kQConvAdd:
      // Weights, bias and multipliers, and the residual of Y's dims.
      return c.Unbatched(1) && c.Unbatched(2) && c.Unbatched(3) && c.SameAsOutputOrAbsent(4);
    case StepKind::kConv:
      // Weights and bias, and the fused residual (of Y's dims) if any.
      return c.Unbatched(1) && c.Unbatched(2) && c.SameAsOutputOrAbsent(3);
    // Rows of A (image-major, leading dims flattened) against weights.
    case StepKind::kQGemm:
    case StepKind::kDynamicQGemms:
      return c.UnbatchedFrom(1);
    case StepKind::kDynamicQGemm:
      return c.Unbatched(1) && c.Unbatched(2) && c.Unbatched(3) && c.SameAsOutputOrAbsent(4);
    case StepKind::kGemm: {
      absl::StatusOr<GemmStepParams> p = c.Params<GemmStepParams>();
      return p.ok() && p->trans_a == 0 && c.UnbatchedFrom(1);
    }
    case StepKind::kQAdd:
    case StepKind::kBinary:
    case StepKind::kExpand:
      return c.BroadcastsPerImage(c.out_rank());
    case StepKind::kMatMul:
      // Batch axes broadcast; a batched rank-2 A is rows against B without a batch.
      return c.BroadcastsPerImage(c.out_rank()) && (c.out_rank() >= 3 || c.Unbatched(1));
    case StepKind::kAttention:
    case StepKind::kQAttention:
      // Q, K, V [B, S, H*D]; the mask broadcasts to [B, Hq, Sq, Skv].
      if (!Batched(*c.input(0)) || c.Unbatched(1) || c.Unbatched(2)) return false;
      if (const PlanBuffer* mask = c.input(3); mask != nullptr) {
        const int64_t r = static_cast<int64_t>(mask->dims.size());
        if (Batched(*mask) ? r != 4 : r == 4 && mask->dims[0] != 1) return false;
      }
      return true;
    case StepKind::kQConcat:
    case StepKind::kConcat:
    case StepKind::kSoftmax:
      // Every Concat input is batched; Softmax has one.
      return c.Axis(in_rank) > 0 && c.BroadcastsPerImage(in_rank);
    case StepKind::kLayerNorm: {
      absl::StatusOr<LayerNormStepParams> p = c.Params<LayerNormStepParams>();
      return p.ok() && (p->axis < 0 ? p->axis + in_rank : p->axis) > 0 && c.UnbatchedFrom(1);
    }
    case StepKind::kGather: {
      // Rows of a table without a batch for batched indices, or columns of batched data.
      const int64_t axis = c.Axis(in_rank);
      if (c.input(1) == nullptr) return false;
      return (axis == 0 && c.Unbatched(0) && Batched(*c.input(1))) ||
             (axis > 0 && !c.Unbatched(0) && c.Unbatched(1));
    }
    case StepKind::kReshape: {
      const PlanBuffer& x = *c.input(0);
      const PlanBuffer& y = c.output(0);
      int64_t x_image = 1, y_image = 1;
      for (size_t a = 1; a < x.dims.size(); ++a) x_image *= x.dims[a];
      for (size_t a = 1; a < y.dims.size(); ++a) y_image *= y.dims[a];
      return Batched(x) && x_image == y_image;
    }
    case StepKind::kTranspose: {
      absl::StatusOr<TransposeStepParams> p = c.Params<TransposeStepParams>();
      return p.ok() && !p->perm.empty() && p->perm[0] == 0;
    }
    case StepKind::kSlice: {
      absl::StatusOr<SliceStepParams> p = c.Params<SliceStepParams>();
      return p.ok() && !p->starts.empty() && !p->steps.empty() && p->starts[0] == 0 &&
             p->steps[0] == 1;
    }
    case StepKind::kPad: {
      absl::StatusOr<PadStepParams> p = c.Params<PadStepParams>();
      return p.ok() && static_cast<int64_t>(p->pads.size()) == 2 * in_rank && p->pads[0] == 0 &&
             p->pads[in_rank] == 0 && c.UnbatchedFrom(1);
    }
    case StepKind::kReduce: {
      absl::StatusOr<ReduceStepParams> p = c.Params<ReduceStepParams>();
      return p.ok() && std::find(p->axes.begin(), p->axes.end(), 0) == p->axes.end();
    }
    case StepKind::kResize: {
      absl::StatusOr<ResizeStepParams> p = c.Params<ResizeStepParams>();
      return p.ok() && !p->scales.empty() && p->scales[0] == 1.0 && c.UnbatchedFrom(1);
    }
    // Its values are the batch itself (shape arithmetic read as data).
    case StepKind::kBatchAffine:
      return false;
    case StepKind::kNumStepKinds:
      return false;
  }
  return false;
}

}  // namespace

bool ImagesIndependent(const Plan& plan, std::string* why) {
  const auto fail = [why](std::string reason) {
    if (why != nullptr) *why = std::move(reason);
    return false;
  };
  bool any_batched_input = false;
  for (const Binding& b : plan.inputs) any_batched_input |= Batched(plan.buffers[b.buffer]);
  if (!any_batched_input) return fail("no input has a dynamic batch");
  for (const PlanBuffer& b : plan.buffers) {
    if (b.kind != BufferKind::kWeight && !Batched(b)) {
      return fail(absl::StrCat("buffer '", b.name, "' has no batch axis"));
    }
  }
  for (const PlanStep& step : plan.steps) {
    if (step.kind >= static_cast<uint32_t>(StepKind::kNumStepKinds) ||
        !StepKeepsImagesApart(plan, step)) {
      return fail(absl::StrCat("step '", step.name, "' (", StepKindName(step.kind),
                               ") mixes the images of a batch"));
    }
  }
  return true;
}

int64_t SliceImages(const Plan& plan, uint64_t arena_budget) {
  if (plan.batch_max <= 1 || !ImagesIndependent(plan)) return 0;
  // Every arena buffer has the batch as its leading extent, so what a run at batch b touches is
  // the arena at batch_max scaled by b / batch_max (the offsets stay batch_max's).
  const uint64_t per_image = std::max<uint64_t>(
      1, (plan.arena_bytes + plan.batch_max - 1) / static_cast<uint64_t>(plan.batch_max));
  return std::clamp<int64_t>(static_cast<int64_t>(arena_budget / per_image), 1, plan.batch_max);
}

}  // namespace qcc::runtime
