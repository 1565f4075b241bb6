// The data-movement step kinds, for any dtype: bytes are moved, never converted. Reshape is a
// memcpy; Transpose, Slice and Pad are the byte-generic kernels of kernels/cpu/
// movement.h (TransposeBytes, IndexedCopy) with Pad's index maps from pad.h.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/cpu/movement.h"
#include "kernels/cpu/pad.h"
#include "kernels/cpu/qelementwise.h"
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

// ---- Cast (f16 <-> f32, integers -> f32) ----

absl::StatusOr<NoStepParams> PrepareCast(const StepPrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const NoStepParams p, c.Decode<NoStepParams>());
  QCC_RETURN_IF_ERROR(c.CheckCounts(1, 1, 1));
  const PlanBuffer* x = c.input(0);
  const PlanBuffer& y = c.output(0);
  const bool widen = x != nullptr && x->dtype == DType::kFloat16 && y.dtype == DType::kFloat32;
  const bool narrow = x != nullptr && x->dtype == DType::kFloat32 && y.dtype == DType::kFloat16;
  const bool from_int =
      x != nullptr &&
      (x->dtype == DType::kInt64 || x->dtype == DType::kInt32 || x->dtype == DType::kBool) &&
      y.dtype == DType::kFloat32;
  if (!widen && !narrow && !from_int) {
    return c.Error("Cast converts f16 to f32, f32 to f16, or i64, i32, bool to f32 only");
  }
  for (int64_t batch : c.batches()) {
    QCC_RETURN_IF_ERROR(c.CheckDims(y, "output", batch, DimsAtBatch(*x, batch)));
  }
  return p;
}

namespace {

template <typename T>
void IntToFloat(int64_t n, const T* x, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]);
}

}  // namespace

void RunCast(const NoStepParams&, const StepRunContext& c) {
  const int64_t n = NumElements(c.in_dims(0));
  switch (c.plan->buffers[c.step->inputs[0]].dtype) {
    case DType::kFloat16:
      cpu::ConvertF16ToF32(n, c.in<uint16_t>(0), c.out<float>(0), c.num_threads);
      return;
    case DType::kInt64:
      IntToFloat(n, c.in<int64_t>(0), c.out<float>(0));
      return;
    case DType::kInt32:
      IntToFloat(n, c.in<int32_t>(0), c.out<float>(0));
      return;
    case DType::kBool:
      IntToFloat(n, c.in<uint8_t>(0), c.out<float>(0));
      return;
    default:
      cpu::ConvertF32ToF16(n, c.in<float>(0), c.out<uint16_t>(0), c.num_threads);
  }
}

// ---- Gather ----

namespace {

struct GatherState {
  int64_t axis = 0;
};

absl::StatusOr<GatherState> PrepareGather(const StepPrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const AxisStepParams p, c.Decode<AxisStepParams>());
  QCC_RETURN_IF_ERROR(c.CheckCounts(2, 2, 1));
  const PlanBuffer* data = c.input(0);
  const PlanBuffer* indices = c.input(1);
  if (data == nullptr || indices == nullptr) return c.Error("Gather needs data and indices");
  if (indices->dtype != DType::kInt64 && indices->dtype != DType::kInt32) {
    return c.Error(
        absl::StrCat("indices are ", DTypeName(indices->dtype), "; expected i64 or i32"));
  }
  const PlanBuffer& y = c.output(0);
  if (y.dtype != data->dtype) return c.Error("output and data dtypes differ");
  if (data->dims.empty()) return c.Error("data is a scalar");
  QCC_ASSIGN_OR_RETURN(const int64_t axis,
                       NormalizeStepAxis(c, p.axis, static_cast<int64_t>(data->dims.size())));
  for (int64_t batch : c.batches()) {
    const Dims d = DimsAtBatch(*data, batch), i = DimsAtBatch(*indices, batch);
    Dims want(d.begin(), d.begin() + axis);
    want.insert(want.end(), i.begin(), i.end());
    want.insert(want.end(), d.begin() + axis + 1, d.end());
    QCC_RETURN_IF_ERROR(c.CheckDims(y, "output", batch, want));
  }
  return GatherState{axis};
}

template <typename I>
void GatherRows(const GatherState& s, const StepRunContext& c, const I* idx) {
  const Dims d = c.in_dims(0);
  const int64_t outer = ProductOf(d, 0, s.axis), extent = d[s.axis];
  const int64_t inner = ProductOf(d, s.axis + 1, d.size()) *
                        static_cast<int64_t>(DTypeSize(c.plan->buffers[c.step->inputs[0]].dtype));
  const int64_t n = NumElements(c.in_dims(1));
  const auto* in = c.in<uint8_t>(0);
  auto* out = c.out<uint8_t>(0);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t i = static_cast<int64_t>(idx[j]);
      if (i < 0) i += extent;
      uint8_t* dst = out + (o * n + j) * inner;
      // Ids from a plan input were checked by Engine::CheckInputs; a computed index out of
      // range gives a zero row, never a read outside the data.
      if (i < 0 || i >= extent) {
        std::memset(dst, 0, inner);
      } else {
        std::memcpy(dst, in + (o * extent + i) * inner, inner);
      }
    }
  }
}

void RunGather(const GatherState& s, const StepRunContext& c) {
  if (c.plan->buffers[c.step->inputs[1]].dtype == DType::kInt64) {
    GatherRows(s, c, c.in<int64_t>(1));
  } else {
    GatherRows(s, c, c.in<int32_t>(1));
  }
}

}  // namespace

void RegisterMovementSteps(StepRegistry& r) {
  r.Add(StepKind::kCast, PrepareStep<NoStepParams, PrepareCast, RunCast>);
  r.Add(StepKind::kReshape, PrepareStep<NoStepParams, PrepareReshape, RunReshape>);
  r.Add(StepKind::kTranspose, PrepareStep<std::vector<int64_t>, PrepareTranspose, RunTranspose>);
  r.Add(StepKind::kSlice, PrepareStep<SliceStepParams, PrepareSlice, RunSlice>);
  r.Add(StepKind::kPad, PrepareStep<PadState, PreparePad, RunPad>);
  r.Add(StepKind::kGather, PrepareStep<GatherState, PrepareGather, RunGather>);
}

}  // namespace qcc::runtime
