#include "runtime/step_exec.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "support/status.h"

namespace qcc::runtime {

Dims DimsAtBatch(const PlanBuffer& b, int64_t batch) {
  Dims dims = b.dims;
  if (!dims.empty() && dims[0] == -1) dims[0] = batch;
  return dims;
}

std::vector<int64_t> StepPrepareContext::batches() const {
  if (plan_.batch_min == plan_.batch_max) return {plan_.batch_max};
  return {plan_.batch_min, plan_.batch_max};
}

absl::Status StepPrepareContext::Error(absl::string_view what) const {
  return absl::InvalidArgumentError(absl::StrCat("step ", index_, " '", step().name, "' (",
                                                 StepKindName(step().kind), "): ", what));
}

absl::Status StepPrepareContext::CheckCounts(size_t min_inputs, size_t max_inputs,
                                             size_t outputs) const {
  const size_t n = step().inputs.size();
  if (n < min_inputs || n > max_inputs) {
    const std::string want = min_inputs == max_inputs
                                 ? absl::StrCat(min_inputs)
                                 : absl::StrCat(min_inputs, " to ", max_inputs);
    return Error(absl::StrCat("has ", n, " inputs, expected ", want));
  }
  if (step().outputs.size() != outputs) {
    return Error(absl::StrCat("has ", step().outputs.size(), " outputs, expected ", outputs));
  }
  return absl::OkStatus();
}

const PlanBuffer* StepPrepareContext::input(size_t i) const {
  if (i >= step().inputs.size() || step().inputs[i] < 0) return nullptr;
  return &plan_.buffers[step().inputs[i]];
}

absl::StatusOr<const PlanBuffer*> StepPrepareContext::Check(const PlanBuffer* b,
                                                            absl::string_view what,
                                                            absl::string_view role, DType dtype,
                                                            int rank) const {
  if (b == nullptr) return Error(absl::StrCat(what, " ", role, " is missing"));
  const std::string id = absl::StrCat(what, " ", role, " '", b->name, "'");
  if (b->dtype != dtype) {
    return Error(
        absl::StrCat(id, " has dtype ", DTypeName(b->dtype), ", expected ", DTypeName(dtype)));
  }
  const int64_t r = static_cast<int64_t>(b->dims.size());
  if ((rank >= 0 && r != rank) || (rank == -2 && r == 0)) {
    return Error(absl::StrCat(id, " has rank ", r, " (", DimsToString(b->dims), "), expected ",
                              rank == -2 ? "at least 1" : absl::StrCat(rank)));
  }
  return b;
}

absl::StatusOr<const PlanBuffer*> StepPrepareContext::Input(size_t i, absl::string_view role,
                                                            DType dtype, int rank) const {
  return Check(input(i), "input", role, dtype, rank);
}

absl::StatusOr<const PlanBuffer*> StepPrepareContext::Output(size_t i, absl::string_view role,
                                                             DType dtype, int rank) const {
  return Check(i < step().outputs.size() ? &output(i) : nullptr, "output", role, dtype, rank);
}

absl::StatusOr<absl::Span<const uint8_t>> StepPrepareContext::WeightBytes(
    size_t i, absl::string_view role) const {
  const PlanBuffer* b = input(i);
  if (b == nullptr) return Error(absl::StrCat("input ", role, " is missing"));
  if (b->kind != BufferKind::kWeight) {
    return Error(absl::StrCat("input ", role, " '", b->name, "' must be a weight, not an ",
                              BufferKindName(b->kind), " buffer"));
  }
  return plan_.Weight(b->weight);
}

absl::Status StepPrepareContext::CheckDims(const PlanBuffer& b, absl::string_view role,
                                           int64_t batch, absl::Span<const int64_t> want) const {
  const Dims have = DimsAtBatch(b, batch);
  if (absl::Span<const int64_t>(have) == want) return absl::OkStatus();
  return Error(absl::StrCat(role, " '", b.name, "' has shape ", DimsToString(have), " at batch ",
                            batch, ", expected ", DimsToString(want), " (declared ",
                            DimsToString(b.dims), ")"));
}

const StepRegistry& CpuStepRegistry() {
  static const StepRegistry* registry = [] {
    auto* r = new StepRegistry;
    RegisterInt8Steps(*r);
    RegisterFloatSteps(*r);
    RegisterMovementSteps(*r);
    RegisterShapeSteps(*r);
    return r;
  }();
  return *registry;
}

int64_t WindowOutExtent(int64_t in, int64_t kernel, int64_t stride, int64_t pad_begin,
                        int64_t pad_end, int64_t dilation, bool ceil_mode) {
  const int64_t span = in + pad_begin + pad_end - dilation * (kernel - 1) - 1;
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // ONNX: a ceil_mode window must start inside the input or the begin padding.
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

absl::Status CheckConvGeometry(const StepPrepareContext& ctx, const ConvGeometry& g) {
  constexpr int64_t kMax = kMaxStepGeometry;
  auto positive = [](int64_t v) { return v >= 1 && v <= kMax; };
  auto non_negative = [](int64_t v) { return v >= 0 && v <= kMax; };
  if (!positive(g.stride_h) || !positive(g.stride_w) || !positive(g.dilation_h) ||
      !positive(g.dilation_w) || !positive(g.group) || !non_negative(g.pad_top) ||
      !non_negative(g.pad_left) || !non_negative(g.pad_bottom) || !non_negative(g.pad_right)) {
    return ctx.Error(absl::StrCat("invalid convolution geometry: strides ", g.stride_h, "x",
                                  g.stride_w, ", dilations ", g.dilation_h, "x", g.dilation_w,
                                  ", pads [", g.pad_top, ",", g.pad_left, ",", g.pad_bottom, ",",
                                  g.pad_right, "], group ", g.group));
  }
  return absl::OkStatus();
}

absl::StatusOr<Dims> ConvOutDims(const StepPrepareContext& ctx, const ConvGeometry& g,
                                 const Dims& x, int64_t k, int64_t r, int64_t s) {
  const int64_t oh =
      WindowOutExtent(x[2], r, g.stride_h, g.pad_top, g.pad_bottom, g.dilation_h, false);
  const int64_t ow =
      WindowOutExtent(x[3], s, g.stride_w, g.pad_left, g.pad_right, g.dilation_w, false);
  if (oh < 1 || ow < 1) {
    return ctx.Error(
        absl::StrCat("a ", r, "x", s, " window does not fit the input ", DimsToString(x)));
  }
  return Dims{x[0], k, oh, ow};
}

absl::Status CheckPoolWindow(const StepPrepareContext& ctx, const PoolStepParams& p) {
  constexpr int64_t kMax = kMaxStepGeometry;
  auto positive = [](int64_t v) { return v >= 1 && v <= kMax; };
  auto non_negative = [](int64_t v) { return v >= 0 && v <= kMax; };
  if (!positive(p.kernel_h) || !positive(p.kernel_w) || !positive(p.stride_h) ||
      !positive(p.stride_w) || !positive(p.dilation_h) || !positive(p.dilation_w) ||
      !non_negative(p.pad_top) || !non_negative(p.pad_left) || !non_negative(p.pad_bottom) ||
      !non_negative(p.pad_right) || (p.ceil_mode != 0 && p.ceil_mode != 1)) {
    return ctx.Error(absl::StrCat(
        "invalid pool window: kernel ", p.kernel_h, "x", p.kernel_w, ", strides ", p.stride_h, "x",
        p.stride_w, ", dilations ", p.dilation_h, "x", p.dilation_w, ", pads [", p.pad_top, ",",
        p.pad_left, ",", p.pad_bottom, ",", p.pad_right, "], ceil_mode ", p.ceil_mode));
  }
  return absl::OkStatus();
}

cpu::PoolGeometry PoolGeometryOf(const PoolStepParams& w, const Dims& x, const Dims& y) {
  cpu::PoolGeometry g;
  g.planes = x[0] * x[1];
  g.in = {1, x[2], x[3]};
  g.out = {1, y[2], y[3]};
  g.kernel = {1, w.kernel_h, w.kernel_w};
  g.stride = {1, w.stride_h, w.stride_w};
  g.dilation = {1, w.dilation_h, w.dilation_w};
  g.pad_begin = {0, w.pad_top, w.pad_left};
  g.pad_end = {0, w.pad_bottom, w.pad_right};
  return g;
}

absl::Status CheckWindowedPool(const StepPrepareContext& c, const PoolStepParams& w, DType dtype) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(1, 1, 1));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* x, c.Input(0, "X", dtype, 4));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", dtype, 4));
  QCC_RETURN_IF_ERROR(CheckPoolWindow(c, w));
  for (int64_t batch : c.batches()) {
    QCC_ASSIGN_OR_RETURN(const Dims want, PoolOutDims(c, w, DimsAtBatch(*x, batch)));
    QCC_RETURN_IF_ERROR(c.CheckDims(*y, "output Y", batch, want));
  }
  return absl::OkStatus();
}

absl::StatusOr<Dims> PoolOutDims(const StepPrepareContext& ctx, const PoolStepParams& p,
                                 const Dims& x) {
  const int64_t oh = WindowOutExtent(x[2], p.kernel_h, p.stride_h, p.pad_top, p.pad_bottom,
                                     p.dilation_h, p.ceil_mode != 0);
  const int64_t ow = WindowOutExtent(x[3], p.kernel_w, p.stride_w, p.pad_left, p.pad_right,
                                     p.dilation_w, p.ceil_mode != 0);
  if (oh < 1 || ow < 1) {
    return ctx.Error(absl::StrCat("the window does not fit the input ", DimsToString(x)));
  }
  return Dims{x[0], x[1], oh, ow};
}

absl::Status CheckInt8Value(const StepPrepareContext& ctx, int64_t v, absl::string_view what) {
  if (v < -128 || v > 127) {
    return ctx.Error(absl::StrCat(what, " ", v, " is outside [-128, 127]"));
  }
  return absl::OkStatus();
}

absl::Status CheckQuantizeParams(const StepPrepareContext& ctx, const QuantizeParams& p) {
  if (!(p.scale > 0.0f) || std::isinf(p.scale)) {
    return ctx.Error(absl::StrCat("scale ", p.scale, " is not a positive finite number"));
  }
  return CheckInt8Value(ctx, p.zero_point, "zero point");
}

absl::Status CheckClamp(const StepPrepareContext& ctx, int64_t lo, int64_t hi) {
  if (lo < -128 || hi > 127 || lo > hi) {
    return ctx.Error(absl::StrCat("invalid int8 clamp [", lo, ", ", hi, "]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> NormalizeStepAxis(const StepPrepareContext& ctx, int64_t axis,
                                          int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return ctx.Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  }
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<Dims> ConcatDims(const StepPrepareContext& ctx, const std::vector<Dims>& inputs,
                                int64_t axis) {
  Dims out = inputs[0];
  for (size_t i = 1; i < inputs.size(); ++i) {
    const Dims& d = inputs[i];
    bool same = d.size() == out.size();
    for (size_t a = 0; same && a < d.size(); ++a) same = a == axis || d[a] == out[a];
    if (!same) {
      return ctx.Error(absl::StrCat("input ", i, " has shape ", DimsToString(d),
                                    ", which does not concatenate with ", DimsToString(inputs[0]),
                                    " along axis ", axis));
    }
    out[axis] += d[axis];
  }
  return out;
}

int64_t ProductOf(const Dims& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < dims.size(); ++i) p *= dims[i];
  return p;
}

}  // namespace qcc::runtime
