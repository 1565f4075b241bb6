// The data-movement step kinds, for any dtype: bytes are moved, never converted. Reshape is a
// memcpy; Transpose, Slice and Pad are the byte-generic kernels of backend_cpu/kernels/
// movement.h (TransposeBytes, IndexedCopy) with Pad's index maps from pad.h.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backend_cpu/kernels/movement.h"
#include "backend_cpu/kernels/pad.h"
#include "backend_cpu/kernels/qelementwise.h"
#include "runtime/step_exec.h"
#include "support/float16.h"
#include "support/status.h"

namespace qcc::runtime {
namespace {

// One input and one output of the same dtype; returns them.
absl::StatusOr<std::pair<const PlanBuffer*, const PlanBuffer*>> MovementOperands(
    const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(1, 1, 1));
  const PlanBuffer* x = c.input(0);
  if (x == nullptr) return c.Error("input X is missing");
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", x->dtype));
  return std::make_pair(x, y);
}

size_t ElemSize(const StepRunContext& c) {
  return DTypeSize(c.plan->buffers[c.step->inputs[0]].dtype);
}

// ---- Reshape ----

absl::StatusOr<NoStepParams> PrepareReshape(const StepPrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const NoStepParams p, c.Decode<NoStepParams>());
  QCC_ASSIGN_OR_RETURN(const auto xy, MovementOperands(c));
  for (int64_t batch : c.batches()) {
    const Dims x = DimsAtBatch(*xy.first, batch), y = DimsAtBatch(*xy.second, batch);
    if (NumElements(x) != NumElements(y)) {
      return c.Error(absl::StrCat("cannot reshape '", xy.first->name, "' ", DimsToString(x),
                                  " to '", xy.second->name, "' ", DimsToString(y), " at batch ",
                                  batch));
    }
  }
  return p;
}

void RunReshape(const NoStepParams&, const StepRunContext& c) {
  const void* x = c.in<void>(0);
  void* y = c.out<void>(0);
  const size_t bytes = NumElements(c.in_dims(0)) * ElemSize(c);
  if (x != y && bytes != 0) std::memmove(y, x, bytes);
}

// ---- Transpose ----

absl::StatusOr<std::vector<int64_t>> PrepareTranspose(const StepPrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const TransposeStepParams p, c.Decode<TransposeStepParams>());
  QCC_ASSIGN_OR_RETURN(const auto xy, MovementOperands(c));
  const size_t rank = xy.first->dims.size();
  std::vector<bool> seen(rank, false);
  bool valid = p.perm.size() == rank;
  for (size_t i = 0; valid && i < rank; ++i) {
    valid = p.perm[i] >= 0 && p.perm[i] < static_cast<int64_t>(rank) && !seen[p.perm[i]];
    if (valid) seen[p.perm[i]] = true;
  }
  if (!valid) {
    return c.Error(absl::StrCat("perm [", absl::StrJoin(p.perm, ","), "] is not a permutation of ",
                                rank, " axes"));
  }
  for (int64_t batch : c.batches()) {
    const Dims x = DimsAtBatch(*xy.first, batch);
    Dims want(rank);
    for (size_t i = 0; i < rank; ++i) want[i] = x[p.perm[i]];
    QCC_RETURN_IF_ERROR(c.CheckDims(*xy.second, "output Y", batch, want));
  }
  return p.perm;
}

void RunTranspose(const std::vector<int64_t>& perm, const StepRunContext& c) {
  const Dims x = c.in_dims(0);
  if (NumElements(x) == 0) return;
  cpu::TransposeBytes(x, perm, ElemSize(c), c.in<void>(0), c.out<void>(0), c.num_threads);
}

// ---- Slice ----

absl::StatusOr<SliceStepParams> PrepareSlice(const StepPrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const SliceStepParams p, c.Decode<SliceStepParams>());
  QCC_ASSIGN_OR_RETURN(const auto xy, MovementOperands(c));
  const size_t rank = xy.first->dims.size();
  if (p.starts.size() != rank || p.steps.size() != rank || xy.second->dims.size() != rank) {
    return c.Error(absl::StrCat(p.starts.size(), " starts and ", p.steps.size(),
                                " steps slice rank ", rank, " into rank ", xy.second->dims.size()));
  }
  for (int64_t batch : c.batches()) {
    const Dims x = DimsAtBatch(*xy.first, batch), y = DimsAtBatch(*xy.second, batch);
    for (size_t a = 0; a < rank; ++a) {
      if (y[a] == 0) continue;
      const int64_t start = p.starts[a], step = p.steps[a];
      // Both ends of the slice lie in [0, x[a]) (computed without overflow).
      const __int128 last = static_cast<__int128>(start) + static_cast<__int128>(y[a] - 1) * step;
      const bool fits = step != 0 && start >= 0 && start < x[a] && last >= 0 && last < x[a];
      if (!fits) {
        return c.Error(absl::StrCat("axis ", a, ": ", y[a], " elements from ", start, " by step ",
                                    step, " do not fit the input extent ", x[a], " at batch ",
                                    batch));
      }
    }
  }
  return p;
}

void RunSlice(const SliceStepParams& p, const StepRunContext& c) {
  const Dims x = c.in_dims(0), y = c.out_dims(0);
  if (NumElements(y) == 0) return;
  const Dims strides = RowMajorStrides(x);
  std::vector<cpu::CopyAxis> axes(y.size());
  for (size_t a = 0; a < y.size(); ++a) {
    axes[a].in_stride = strides[a];
    axes[a].source.resize(y[a]);
    for (int64_t i = 0; i < y[a]; ++i) axes[a].source[i] = p.starts[a] + i * p.steps[a];
  }
  cpu::IndexedCopy(axes, ElemSize(c), c.in<void>(0), nullptr, c.out<void>(0), c.num_threads);
}

// ---- Pad ----

struct PadState {
  std::vector<int64_t> pads;
  std::vector<uint8_t> fill;  // one element of the dtype
};

absl::StatusOr<std::vector<uint8_t>> PadFill(const StepPrepareContext& c, DType dtype,
                                             const PadStepParams& p) {
  std::vector<uint8_t> fill(DTypeSize(dtype));
  auto put = [&fill](auto v) { std::memcpy(fill.data(), &v, sizeof(v)); };
  auto int_in = [&](int64_t lo, int64_t hi) -> absl::Status {
    if (p.int_value < lo || p.int_value > hi) {
      return c.Error(absl::StrCat("fill value ", p.int_value, " does not fit ", DTypeName(dtype)));
    }
    return absl::OkStatus();
  };
  switch (dtype) {
    case DType::kFloat32:
      put(p.value);
      break;
    case DType::kFloat16:
      put(FloatToHalf(p.value));
      break;
    case DType::kInt8:
      QCC_RETURN_IF_ERROR(int_in(-128, 127));
      put(static_cast<int8_t>(p.int_value));
      break;
    case DType::kUInt8:
      QCC_RETURN_IF_ERROR(int_in(0, 255));
      put(static_cast<uint8_t>(p.int_value));
      break;
    case DType::kInt32:
      QCC_RETURN_IF_ERROR(int_in(INT32_MIN, INT32_MAX));
      put(static_cast<int32_t>(p.int_value));
      break;
    case DType::kInt64:
      put(p.int_value);
      break;
    default:
      return c.Error(absl::StrCat("Pad of ", DTypeName(dtype), " data is not supported"));
  }
  return fill;
}

absl::StatusOr<PadState> PreparePad(const StepPrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const PadStepParams p, c.Decode<PadStepParams>());
  QCC_ASSIGN_OR_RETURN(const auto xy, MovementOperands(c));
  const size_t rank = xy.first->dims.size();
  bool valid = p.pads.size() == 2 * rank;
  for (size_t i = 0; valid && i < p.pads.size(); ++i) {
    valid = p.pads[i] >= 0 && p.pads[i] <= kMaxStepGeometry;
  }
  if (!valid) {
    return c.Error(absl::StrCat("pads [", absl::StrJoin(p.pads, ","),
                                "] are not 2 x rank non-negative amounts for rank ", rank));
  }
  for (int64_t batch : c.batches()) {
    Dims want = DimsAtBatch(*xy.first, batch);
    for (size_t a = 0; a < rank; ++a) want[a] += p.pads[a] + p.pads[a + rank];
    QCC_RETURN_IF_ERROR(c.CheckDims(*xy.second, "output Y", batch, want));
  }
  PadState s;
  s.pads = p.pads;
  QCC_ASSIGN_OR_RETURN(s.fill, PadFill(c, xy.first->dtype, p));
  return s;
}

void RunPad(const PadState& s, const StepRunContext& c) {
  const Dims x = c.in_dims(0), y = c.out_dims(0);
  if (NumElements(y) == 0) return;
  const size_t rank = x.size();
  const Dims strides = RowMajorStrides(x);
  std::vector<cpu::CopyAxis> axes(rank);
  for (size_t a = 0; a < rank; ++a) {
    axes[a].in_stride = strides[a];
    axes[a].source =
        cpu::PadSourceIndex(x[a], s.pads[a], s.pads[a + rank], cpu::PadFill::kConstant);
  }
  cpu::IndexedCopy(axes, ElemSize(c), c.in<void>(0), s.fill.data(), c.out<void>(0), c.num_threads);
}

}  // namespace

// ---- Cast (f16 <-> f32) ----

absl::StatusOr<NoStepParams> PrepareCast(const StepPrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const NoStepParams p, c.Decode<NoStepParams>());
  QCC_RETURN_IF_ERROR(c.CheckCounts(1, 1, 1));
  const PlanBuffer* x = c.input(0);
  const PlanBuffer& y = c.output(0);
  const bool widen = x != nullptr && x->dtype == DType::kFloat16 && y.dtype == DType::kFloat32;
  const bool narrow = x != nullptr && x->dtype == DType::kFloat32 && y.dtype == DType::kFloat16;
  if (!widen && !narrow) return c.Error("Cast converts f16 to f32 or f32 to f16 only");
  for (int64_t batch : c.batches()) {
    QCC_RETURN_IF_ERROR(c.CheckDims(y, "output", batch, DimsAtBatch(*x, batch)));
  }
  return p;
}

void RunCast(const NoStepParams&, const StepRunContext& c) {
  const int64_t n = NumElements(c.in_dims(0));
  if (c.plan->buffers[c.step->inputs[0]].dtype == DType::kFloat16) {
    cpu::ConvertF16ToF32(n, c.in<uint16_t>(0), c.out<float>(0), c.num_threads);
  } else {
    cpu::ConvertF32ToF16(n, c.in<float>(0), c.out<uint16_t>(0), c.num_threads);
  }
}

void RegisterMovementSteps(StepRegistry& r) {
  r.Add(StepKind::kCast, PrepareStep<NoStepParams, PrepareCast, RunCast>);
  r.Add(StepKind::kReshape, PrepareStep<NoStepParams, PrepareReshape, RunReshape>);
  r.Add(StepKind::kTranspose, PrepareStep<std::vector<int64_t>, PrepareTranspose, RunTranspose>);
  r.Add(StepKind::kSlice, PrepareStep<SliceStepParams, PrepareSlice, RunSlice>);
  r.Add(StepKind::kPad, PrepareStep<PadState, PreparePad, RunPad>);
}

}  // namespace qcc::runtime
