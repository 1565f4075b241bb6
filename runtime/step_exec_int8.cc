// The int8 step kinds: precision boundaries (Quantize, Dequantize, Requantize) and int8 compute
// on the backend_cpu int8 kernels (qconv, qgemm, qelementwise, qpool, qlut). QConcat has no
// kernel of its own: it copies or rescales each input's rows with RequantizeS8.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/qconv.h"
#include "kernels/cpu/qelementwise.h"
#include "kernels/cpu/qgemm.h"
#include "kernels/cpu/qlut.h"
#include "kernels/cpu/qpool.h"
#include "runtime/step_exec.h"
#include "support/quantize.h"
#include "support/status.h"

namespace qcc::runtime {
namespace {

constexpr DType kI8 = DType::kInt8;
constexpr DType kI32 = DType::kInt32;
constexpr DType kF32 = DType::kFloat32;

// Every batch the plan runs: `b`'s dims equal `like`'s.
absl::Status CheckSameDims(const StepPrepareContext& c, const PlanBuffer& b, absl::string_view role,
                           const PlanBuffer& like) {
  for (int64_t batch : c.batches()) {
    QCC_RETURN_IF_ERROR(c.CheckDims(b, role, batch, DimsAtBatch(like, batch)));
  }
  return absl::OkStatus();
}

absl::Status CheckMultiplier(const StepPrepareContext& c, float m, absl::string_view what) {
  if (!std::isfinite(m)) return c.Error(absl::StrCat(what, " ", m, " is not finite"));
  return absl::OkStatus();
}

// ---- Quantize / Dequantize ----

struct QuantizeState {
  cpu::QuantizeS8Params q;
};

template <DType kFrom, DType kTo>
absl::StatusOr<QuantizeState> PrepareQuantize(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(1, 1, 1));
  QCC_ASSIGN_OR_RETURN(const QuantizeParams p, c.Decode<QuantizeParams>());
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* x, c.Input(0, "X", kFrom));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kTo));
  QCC_RETURN_IF_ERROR(CheckSameDims(c, *y, "output Y", *x));
  QCC_RETURN_IF_ERROR(CheckQuantizeParams(c, p));
  return QuantizeState{{p.scale, static_cast<int32_t>(p.zero_point)}};
}

void RunQuantize(const QuantizeState& s, const StepRunContext& c) {
  cpu::QuantizeF32ToS8(s.q, NumElements(c.in_dims(0)), c.in<float>(0), c.out<int8_t>(0),
                       c.num_threads);
}

void RunDequantize(const QuantizeState& s, const StepRunContext& c) {
  cpu::DequantizeS8ToF32(s.q, NumElements(c.in_dims(0)), c.in<int8_t>(0), c.out<float>(0),
                         c.num_threads);
}

// ---- Requantize ----

absl::StatusOr<cpu::RequantizeS8Params> PrepareRequantize(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(1, 1, 1));
  QCC_ASSIGN_OR_RETURN(const RequantizeParams p, c.Decode<RequantizeParams>());
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* x, c.Input(0, "X", kI8));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kI8));
  QCC_RETURN_IF_ERROR(CheckSameDims(c, *y, "output Y", *x));
  QCC_RETURN_IF_ERROR(CheckMultiplier(c, p.multiplier, "multiplier"));
  QCC_RETURN_IF_ERROR(CheckInt8Value(c, p.zp_in, "input zero point"));
  QCC_RETURN_IF_ERROR(CheckInt8Value(c, p.zp_out, "output zero point"));
  QCC_RETURN_IF_ERROR(CheckClamp(c, p.lo, p.hi));
  return cpu::RequantizeS8Params{static_cast<int32_t>(p.zp_in), p.multiplier,
                                 static_cast<int32_t>(p.zp_out), static_cast<int32_t>(p.lo),
                                 static_cast<int32_t>(p.hi)};
}

void RunRequantize(const cpu::RequantizeS8Params& s, const StepRunContext& c) {
  cpu::RequantizeS8(s, NumElements(c.in_dims(0)), c.in<int8_t>(0), c.out<int8_t>(0), c.num_threads);
}

// ---- QConv ----

struct QConvState {
  cpu::QConvParams p;  // geometry and quantization; n, operands and threads are set per run
  cpu::PackedQConvWeights packed;
  bool fused_add = false;  // QConvAdd: input 4 is the residual of p.add
};

// Checks a per-output-channel operand ([k] of `dtype`), when present.
absl::Status CheckChannelOperand(const StepPrepareContext& c, size_t i, absl::string_view role,
                                 DType dtype, int64_t k, bool optional) {
  if (optional && c.input(i) == nullptr) return absl::OkStatus();
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* b, c.Input(i, role, dtype, 1));
  for (int64_t batch : c.batches()) {
    QCC_RETURN_IF_ERROR(c.CheckDims(*b, absl::StrCat("input ", role), batch, {k}));
  }
  return absl::OkStatus();
}

/// The QConv part of a QConv or QConvAdd step (inputs 0 to 3).
absl::StatusOr<QConvState> PrepareConvPart(const StepPrepareContext& c,
                                           const QConvStepParams& params) {
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* x, c.Input(0, "X", kI8, 4));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* w, c.Input(1, "W", kI8, 4));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kI8, 4));
  QCC_ASSIGN_OR_RETURN(const absl::Span<const uint8_t> weights, c.WeightBytes(1, "W"));
  const ConvGeometry& g = params.geometry;
  QCC_RETURN_IF_ERROR(CheckConvGeometry(c, g));
  QCC_RETURN_IF_ERROR(CheckInt8Value(c, params.pad_value, "pad value"));
  QCC_RETURN_IF_ERROR(CheckInt8Value(c, params.zp_out, "output zero point"));
  QCC_RETURN_IF_ERROR(CheckClamp(c, params.lo, params.hi));
  const int64_t k = w->dims[0];
  if (k % g.group != 0 || x->dims[1] != w->dims[1] * g.group) {
    return c.Error(absl::StrCat("weight W '", w->name, "' ", DimsToString(w->dims),
                                " does not fit input X '", x->name, "' ", DimsToString(x->dims),
                                " with group ", g.group));
  }
  QCC_RETURN_IF_ERROR(CheckChannelOperand(c, 2, "bias", kI32, k, /*optional=*/true));
  QCC_RETURN_IF_ERROR(CheckChannelOperand(c, 3, "multiplier", kF32, k, /*optional=*/false));

  QConvState s;
  cpu::QConvParams& p = s.p;
  p.geometry() = g;
  p.c = x->dims[1];
  p.h = x->dims[2];
  p.w = x->dims[3];
  p.k = k;
  p.r = w->dims[2];
  p.s = w->dims[3];
  p.pad_value = static_cast<int8_t>(params.pad_value);
  p.zp_out = static_cast<int32_t>(params.zp_out);
  p.lo = static_cast<int32_t>(params.lo);
  p.hi = static_cast<int32_t>(params.hi);
  p.num_threads = c.num_threads();
  for (int64_t batch : c.batches()) {
    const Dims xd = DimsAtBatch(*x, batch);
    p.n = xd[0];
    if (absl::Status v = cpu::ValidateQConvParams(p); !v.ok()) return c.Error(v.message());
    QCC_ASSIGN_OR_RETURN(const Dims want, ConvOutDims(c, g, xd, p.k, p.r, p.s));
    QCC_RETURN_IF_ERROR(c.CheckDims(*y, "output Y", batch, want));
  }
  p.weights = reinterpret_cast<const int8_t*>(weights.data());
  s.packed = cpu::PackQConvWeights(p);
  p.weights = nullptr;
  return s;
}

absl::StatusOr<QConvState> PrepareQConv(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(4, 4, 1));
  QCC_ASSIGN_OR_RETURN(const QConvStepParams params, c.Decode<QConvStepParams>());
  return PrepareConvPart(c, params);
}

cpu::QConvParams QConvRunParams(const QConvState& s, const StepRunContext& c) {
  cpu::QConvParams p = s.p;
  p.n = c.in_dims(0)[0];
  p.num_threads = c.num_threads;
  return p;
}

int64_t QConvScratch(const QConvState& s, const StepRunContext& c) {
  return cpu::QConvWorkspaceBytes(QConvRunParams(s, c), s.packed);
}

void RunQConv(const QConvState& s, const StepRunContext& c) {
  cpu::QConvParams p = QConvRunParams(s, c);
  p.input = c.in<int8_t>(0);
  p.bias = c.in<int32_t>(2);
  p.multiplier = c.in<float>(3);
  p.output = c.out<int8_t>(0);
  if (s.fused_add) p.residual = c.in<int8_t>(4);
  cpu::QConv(p, s.packed, c.scratch);
}

// ---- QGemm ----

struct QGemmState {
  cpu::QGemmParams p;  // n, k and quantization; m, operands and threads are set per run
  cpu::PackedQGemmWeights packed;
};

/// Input `i` of an fp32-result GEMM, the residual added last: absent, or f32 with Y's dims.
absl::Status CheckResidual(const StepPrepareContext& c, size_t i, const PlanBuffer& y) {
  if (c.input(i) == nullptr) return absl::OkStatus();
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* r, c.Input(i, "residual", kF32, -2));
  return CheckSameDims(c, y, "output Y", *r);
}

/// Input `i` as floats, or null when it is omitted or past the end.
const float* OptionalIn(const StepRunContext& c, size_t i) {
  return c.step->inputs.size() > i && c.step->inputs[i] >= 0 ? c.in<float>(i) : nullptr;
}

absl::StatusOr<QGemmState> PrepareQGemm(const StepPrepareContext& c) {
  // An f32 output: the fp32 result form, with an optional float bias after the multiplier and
  // an optional residual [M, N] added last.
  const bool float_out = c.step().outputs.size() == 1 && c.output(0).dtype == DType::kFloat32;
  QCC_RETURN_IF_ERROR(c.CheckCounts(4, float_out ? 6 : 4, 1));
  QCC_ASSIGN_OR_RETURN(const QGemmStepParams params, c.Decode<QGemmStepParams>());
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* a, c.Input(0, "A", kI8, -2));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* w, c.Input(1, "W", kI8, 2));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y,
                       c.Output(0, "Y", float_out ? DType::kFloat32 : kI8, -2));
  QCC_ASSIGN_OR_RETURN(const absl::Span<const uint8_t> weights, c.WeightBytes(1, "W"));
  QCC_RETURN_IF_ERROR(CheckInt8Value(c, params.zp_out, "output zero point"));
  QCC_RETURN_IF_ERROR(CheckClamp(c, params.lo, params.hi));
  const int64_t n = w->dims[0], k = w->dims[1];
  if (n < 1 || k < 1 || a->dims.back() != k || y->dims.back() != n) {
    return c.Error(absl::StrCat("weight W '", w->name, "' ", DimsToString(w->dims),
                                " does not fit A '", a->name, "' ", DimsToString(a->dims),
                                " -> Y '", y->name, "' ", DimsToString(y->dims)));
  }
  QCC_RETURN_IF_ERROR(CheckChannelOperand(c, 2, "bias", kI32, n, /*optional=*/true));
  QCC_RETURN_IF_ERROR(CheckChannelOperand(c, 3, "multiplier", kF32, n, /*optional=*/false));
  if (float_out) {
    QCC_RETURN_IF_ERROR(CheckChannelOperand(c, 4, "float bias", kF32, n, /*optional=*/true));
    QCC_RETURN_IF_ERROR(CheckResidual(c, 5, *y));
  }
  for (int64_t batch : c.batches()) {
    const int64_t m = NumElements(DimsAtBatch(*a, batch)) / k;
    if (NumElements(DimsAtBatch(*y, batch)) != m * n) {
      return c.Error(absl::StrCat("output Y '", y->name, "' ", DimsToString(y->dims),
                                  " does not hold the [", m, ", ", n, "] product at batch ",
                                  batch));
    }
  }
  QGemmState s;
  s.p.n = n;
  s.p.k = k;
  s.p.zp_out = static_cast<int32_t>(params.zp_out);
  s.p.lo = static_cast<int32_t>(params.lo);
  s.p.hi = static_cast<int32_t>(params.hi);
  s.p.b = reinterpret_cast<const int8_t*>(weights.data());
  s.packed = cpu::PackQGemmWeights(s.p);
  s.p.b = nullptr;
  return s;
}

void RunQGemm(const QGemmState& s, const StepRunContext& c) {
  cpu::QGemmParams p = s.p;
  p.m = NumElements(c.in_dims(0)) / p.k;
  if (p.m == 0) return;
  p.a = c.in<int8_t>(0);
  p.bias = c.in<int32_t>(2);
  p.multiplier = c.in<float>(3);
  if (c.plan->buffers[c.step->outputs[0]].dtype == DType::kFloat32) {
    p.y_f32 = c.out<float>(0);
    p.bias_f32 = OptionalIn(c, 4);
    p.add_f32 = OptionalIn(c, 5);
  } else {
    p.y = c.out<int8_t>(0);
  }
  p.num_threads = c.num_threads;
  cpu::QGemm(p, s.packed);
}

// ---- DynamicQGemm, DynamicQGemms ----

/// One product of a dynamic GEMM step: W's packed bytes and where its operands are.
struct DynamicProduct {
  cpu::QGemmParams p;  // n, k; the rest per run
  cpu::PackedQGemmWeights packed;
  size_t scale_at = 0, bias_at = 0, out_at = 0;
  size_t residual_at = 0;  // 0: none
};

struct DynamicQGemmState {
  std::vector<DynamicProduct> products;  // all of one X
};

/// Checks and packs the product of X (input 0) with W = input w_at, its scales and optional bias
/// after it, writing output out_at, with the optional residual at residual_at (0: none).
absl::StatusOr<DynamicProduct> PrepareDynamicProduct(const StepPrepareContext& c, size_t w_at,
                                                     size_t out_at, size_t residual_at) {
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* x, c.Input(0, "X", kF32, -2));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* w, c.Input(w_at, "W", kI8, 2));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(out_at, "Y", kF32, -2));
  QCC_ASSIGN_OR_RETURN(const absl::Span<const uint8_t> weights, c.WeightBytes(w_at, "W"));
  const int64_t n = w->dims[0], k = w->dims[1];
  if (n < 1 || k < 1 || x->dims.back() != k || y->dims.back() != n) {
    return c.Error(absl::StrCat("weight W '", w->name, "' ", DimsToString(w->dims),
                                " does not fit X '", x->name, "' ", DimsToString(x->dims),
                                " -> Y '", y->name, "' ", DimsToString(y->dims)));
  }
  QCC_RETURN_IF_ERROR(
      CheckChannelOperand(c, w_at + 1, "weight scale", kF32, n, /*optional=*/false));
  QCC_RETURN_IF_ERROR(CheckChannelOperand(c, w_at + 2, "bias", kF32, n, /*optional=*/true));
  if (residual_at != 0) QCC_RETURN_IF_ERROR(CheckResidual(c, residual_at, *y));
  for (int64_t batch : c.batches()) {
    const int64_t m = NumElements(DimsAtBatch(*x, batch)) / k;
    if (NumElements(DimsAtBatch(*y, batch)) != m * n) {
      return c.Error(absl::StrCat("output Y '", y->name, "' ", DimsToString(y->dims),
                                  " does not hold the [", m, ", ", n, "] product at batch ",
                                  batch));
    }
  }
  DynamicProduct d;
  d.p.n = n;
  d.p.k = k;
  d.p.b = reinterpret_cast<const int8_t*>(weights.data());
  d.packed = cpu::PackQGemmWeights(d.p);
  d.p.b = nullptr;
  d.scale_at = w_at + 1;
  d.bias_at = w_at + 2;
  d.out_at = out_at;
  d.residual_at = residual_at;
  return d;
}

absl::StatusOr<DynamicQGemmState> PrepareDynamicQGemm(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(3, 5, 1));
  QCC_RETURN_IF_ERROR(c.Decode<NoStepParams>().status());
  DynamicQGemmState s;
  QCC_ASSIGN_OR_RETURN(DynamicProduct d, PrepareDynamicProduct(c, 1, 0, 4));
  s.products.push_back(std::move(d));
  return s;
}

absl::StatusOr<DynamicQGemmState> PrepareDynamicQGemms(const StepPrepareContext& c) {
  const size_t g = c.step().outputs.size();
  if (g < 2 || c.step().inputs.size() != 1 + 3 * g) {
    return c.Error(absl::StrCat("has ", c.step().inputs.size(), " inputs and ", g,
                                " outputs; expected 1 + 3 G inputs (X, then W, weight scale "
                                "and bias of each product) and G >= 2 outputs"));
  }
  QCC_RETURN_IF_ERROR(c.Decode<NoStepParams>().status());
  DynamicQGemmState s;
  for (size_t i = 0; i < g; ++i) {
    QCC_ASSIGN_OR_RETURN(DynamicProduct d, PrepareDynamicProduct(c, 1 + 3 * i, i, 0));
    s.products.push_back(std::move(d));
  }
  return s;
}

/// Scratch: the quantized X (rounded up to 64 bytes), then one scale per row of X.
int64_t DynamicQGemmScratch(const DynamicQGemmState& s, const StepRunContext& c) {
  const int64_t total = NumElements(c.in_dims(0));
  return (total + 63) / 64 * 64 + 4 * (total / s.products[0].p.k);
}

void RunDynamicQGemm(const DynamicQGemmState& s, const StepRunContext& c) {
  const int64_t total = NumElements(c.in_dims(0));
  const int64_t k = s.products[0].p.k, m = total / k;
  if (m == 0) return;
  const float* x = c.in<float>(0);
  auto* a = static_cast<int8_t*>(c.scratch);
  auto* row_scale =
      reinterpret_cast<float*>(static_cast<uint8_t*>(c.scratch) + (total + 63) / 64 * 64);
  // Every row of X (a token) gets its own symmetric scale, max|x| / 127, and is quantized while
  // it is in L1: one pass over X, whatever the number of products. A row holding NaN or
  // infinity gives NaN results.
  cpu::NnParallelFor(c.num_threads, m, 2 * k, [&](int64_t begin, int64_t end) {
    cpu::QuantizeRowsS8(x + begin * k, end - begin, k, k, a + begin * k, k, row_scale + begin,
                        nullptr);
    for (int64_t r = begin; r < end; ++r) {
      if (!std::isfinite(row_scale[r])) row_scale[r] = std::numeric_limits<float>::quiet_NaN();
    }
  });
  for (const DynamicProduct& d : s.products) {
    cpu::QGemmParams p = d.p;
    p.m = m;
    p.a = a;
    p.bias = nullptr;                        // symmetric: no zero point to correct
    p.multiplier = c.in<float>(d.scale_at);  // the weight scales; the row's scale per row
    p.row_scale = row_scale;
    p.y_f32 = c.out<float>(d.out_at);
    p.bias_f32 = OptionalIn(c, d.bias_at);
    p.add_f32 = d.residual_at != 0 ? OptionalIn(c, d.residual_at) : nullptr;
    p.num_threads = c.num_threads;
    cpu::QGemm(p, d.packed);
  }
}

// ---- QAdd ----

/// The kernel's parameters of a QAdd (or QConvAdd's Add), checked.
absl::StatusOr<cpu::AddS8Params> AddParamsOf(const StepPrepareContext& c, const QAddStepParams& p) {
  QCC_RETURN_IF_ERROR(CheckMultiplier(c, p.mult_a, "multiplier of A"));
  QCC_RETURN_IF_ERROR(CheckMultiplier(c, p.mult_b, "multiplier of B"));
  QCC_RETURN_IF_ERROR(CheckInt8Value(c, p.zp_a, "zero point of A"));
  QCC_RETURN_IF_ERROR(CheckInt8Value(c, p.zp_b, "zero point of B"));
  QCC_RETURN_IF_ERROR(CheckInt8Value(c, p.zp_out, "output zero point"));
  QCC_RETURN_IF_ERROR(CheckClamp(c, p.lo, p.hi));
  return cpu::AddS8Params{static_cast<int32_t>(p.zp_a),   p.mult_a,
                          static_cast<int32_t>(p.zp_b),   p.mult_b,
                          static_cast<int32_t>(p.zp_out), static_cast<int32_t>(p.lo),
                          static_cast<int32_t>(p.hi)};
}

absl::StatusOr<cpu::AddS8Params> PrepareQAdd(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(2, 2, 1));
  QCC_ASSIGN_OR_RETURN(const QAddStepParams p, c.Decode<QAddStepParams>());
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* a, c.Input(0, "A", kI8));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* b, c.Input(1, "B", kI8));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kI8));
  QCC_RETURN_IF_ERROR(CheckSameDims(c, *b, "input B", *a));
  QCC_RETURN_IF_ERROR(CheckSameDims(c, *y, "output Y", *a));
  return AddParamsOf(c, p);
}

absl::StatusOr<QConvState> PrepareQConvAdd(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(5, 5, 1));
  QCC_ASSIGN_OR_RETURN(const QConvAddStepParams params, c.Decode<QConvAddStepParams>());
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* r, c.Input(4, "residual", kI8));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kI8));
  QCC_RETURN_IF_ERROR(CheckSameDims(c, *r, "input residual", *y));
  QCC_ASSIGN_OR_RETURN(QConvState s, PrepareConvPart(c, params.conv));
  QCC_ASSIGN_OR_RETURN(s.p.add, AddParamsOf(c, params.add));
  s.fused_add = true;
  return s;
}

void RunQAdd(const cpu::AddS8Params& s, const StepRunContext& c) {
  cpu::AddS8(s, NumElements(c.in_dims(0)), c.in<int8_t>(0), c.in<int8_t>(1), c.out<int8_t>(0),
             c.num_threads);
}

// ---- Pools ----

struct QPoolState {
  PoolStepParams window;
  cpu::AvgPoolS8Quant q;
  bool count_include_pad = false;
};

absl::StatusOr<QPoolState> PrepareQMaxPool(const StepPrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const PoolStepParams w, c.Decode<PoolStepParams>());
  QCC_RETURN_IF_ERROR(CheckWindowedPool(c, w, kI8));
  return QPoolState{w, {}, false};
}

void RunQMaxPool(const QPoolState& s, const StepRunContext& c) {
  cpu::MaxPoolS8(PoolGeometryOf(s.window, c.in_dims(0), c.out_dims(0)), c.in<int8_t>(0),
                 c.out<int8_t>(0), c.num_threads);
}

absl::StatusOr<QPoolState> DecodeQAverage(const StepPrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const QAveragePoolStepParams p, c.Decode<QAveragePoolStepParams>());
  if (p.count_include_pad != 0 && p.count_include_pad != 1) {
    return c.Error(absl::StrCat("count_include_pad ", p.count_include_pad, " is not 0 or 1"));
  }
  QCC_RETURN_IF_ERROR(CheckMultiplier(c, p.multiplier, "multiplier"));
  QCC_RETURN_IF_ERROR(CheckInt8Value(c, p.zp_in, "input zero point"));
  QCC_RETURN_IF_ERROR(CheckInt8Value(c, p.zp_out, "output zero point"));
  QCC_RETURN_IF_ERROR(CheckClamp(c, p.lo, p.hi));
  return QPoolState{p.pool,
                    {static_cast<int32_t>(p.zp_in), p.multiplier, static_cast<int32_t>(p.zp_out),
                     static_cast<int32_t>(p.lo), static_cast<int32_t>(p.hi)},
                    p.count_include_pad != 0};
}

absl::StatusOr<QPoolState> PrepareQAveragePool(const StepPrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(QPoolState s, DecodeQAverage(c));
  QCC_RETURN_IF_ERROR(CheckWindowedPool(c, s.window, kI8));
  return s;
}

void RunQAveragePool(const QPoolState& s, const StepRunContext& c) {
  cpu::AveragePoolS8(PoolGeometryOf(s.window, c.in_dims(0), c.out_dims(0)), s.q,
                     s.count_include_pad, c.in<int8_t>(0), c.out<int8_t>(0), c.num_threads);
}

absl::StatusOr<QPoolState> PrepareQGlobalAveragePool(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(1, 1, 1));
  QCC_ASSIGN_OR_RETURN(QPoolState s, DecodeQAverage(c));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* x, c.Input(0, "X", kI8));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kI8));
  if (x->dims.size() < 3) return c.Error("input X must be N, C and at least one spatial axis");
  for (int64_t batch : c.batches()) {
    Dims want = DimsAtBatch(*x, batch);
    std::fill(want.begin() + 2, want.end(), 1);
    QCC_RETURN_IF_ERROR(c.CheckDims(*y, "output Y", batch, want));
  }
  return s;
}

void RunQGlobalAveragePool(const QPoolState& s, const StepRunContext& c) {
  const Dims x = c.in_dims(0);
  cpu::GlobalAveragePoolS8(x[0] * x[1], ProductOf(x, 2, x.size()), s.q, c.in<int8_t>(0),
                           c.out<int8_t>(0), c.num_threads);
}

// ---- QLut ----

absl::StatusOr<cpu::Int8Lut> PrepareQLut(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(2, 2, 1));
  QCC_RETURN_IF_ERROR(c.Decode<NoStepParams>().status());
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* x, c.Input(0, "X", kI8));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* table, c.Input(1, "table", kI8, 1));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kI8));
  QCC_RETURN_IF_ERROR(CheckSameDims(c, *y, "output Y", *x));
  QCC_ASSIGN_OR_RETURN(const absl::Span<const uint8_t> bytes, c.WeightBytes(1, "table"));
  cpu::Int8Lut lut;
  if (bytes.size() != lut.size()) {
    return c.Error(
        absl::StrCat("table '", table->name, "' has ", bytes.size(), " entries, expected 256"));
  }
  std::memcpy(lut.data(), bytes.data(), lut.size());
  return lut;
}

void RunQLut(const cpu::Int8Lut& lut, const StepRunContext& c) {
  cpu::ApplyLut(lut, NumElements(c.in_dims(0)), c.in<int8_t>(0), c.out<int8_t>(0), c.num_threads);
}

// ---- QConcat ----

struct QConcatState {
  int64_t axis = 0;
  std::vector<cpu::RequantizeS8Params> rescale;  // per input
  std::vector<bool> copy;                        // per input: the rescale is the identity
};

absl::StatusOr<QConcatState> PrepareQConcat(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(1, 1 << 16, 1));
  QCC_ASSIGN_OR_RETURN(const QConcatStepParams p, c.Decode<QConcatStepParams>());
  const size_t n = c.step().inputs.size();
  if (p.multipliers.size() != n || p.zp_in.size() != n) {
    return c.Error(absl::StrCat(p.multipliers.size(), " multipliers and ", p.zp_in.size(),
                                " zero points for ", n, " inputs"));
  }
  QCC_RETURN_IF_ERROR(CheckInt8Value(c, p.zp_out, "output zero point"));
  QConcatState s;
  for (size_t i = 0; i < n; ++i) {
    QCC_RETURN_IF_ERROR(c.Input(i, absl::StrCat("X", i), kI8).status());
    QCC_RETURN_IF_ERROR(CheckMultiplier(c, p.multipliers[i], absl::StrCat("multiplier ", i)));
    QCC_RETURN_IF_ERROR(CheckInt8Value(c, p.zp_in[i], absl::StrCat("zero point ", i)));
    s.rescale.push_back({static_cast<int32_t>(p.zp_in[i]), p.multipliers[i],
                         static_cast<int32_t>(p.zp_out), -128, 127});
    s.copy.push_back(p.multipliers[i] == 1.0f && p.zp_in[i] == p.zp_out);
  }
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kI8));
  QCC_ASSIGN_OR_RETURN(s.axis, NormalizeStepAxis(c, p.axis, c.input(0)->dims.size()));
  for (int64_t batch : c.batches()) {
    std::vector<Dims> dims;
    for (size_t i = 0; i < n; ++i) dims.push_back(DimsAtBatch(*c.input(i), batch));
    QCC_ASSIGN_OR_RETURN(const Dims want, ConcatDims(c, dims, s.axis));
    QCC_RETURN_IF_ERROR(c.CheckDims(*y, "output Y", batch, want));
  }
  return s;
}

void RunQConcat(const QConcatState& s, const StepRunContext& c) {
  const size_t n = c.step->inputs.size();
  const Dims y = c.out_dims(0);
  const int64_t outer = ProductOf(y, 0, s.axis);
  const int64_t row = ProductOf(y, s.axis, y.size());
  if (outer == 0 || row == 0) return;
  std::vector<int64_t> chunk(n);
  for (size_t i = 0; i < n; ++i) chunk[i] = ProductOf(c.in_dims(i), s.axis, y.size());
  int8_t* out = c.out<int8_t>(0);
  cpu::NnParallelFor(c.num_threads, outer, row, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      int8_t* dst = out + o * row;
      for (size_t i = 0; i < n; ++i) {
        const int8_t* src = c.in<int8_t>(i) + o * chunk[i];
        if (s.copy[i]) {
          // An input computed in place (already in its slice) is not copied onto itself.
          if (src != dst) std::memcpy(dst, src, chunk[i]);
        } else {
          cpu::RequantizeS8(s.rescale[i], chunk[i], src, dst, 1);
        }
        dst += chunk[i];
      }
    }
  });
}

}  // namespace

void RegisterInt8Steps(StepRegistry& r) {
  r.Add(StepKind::kQuantize, PrepareStep<QuantizeState, PrepareQuantize<kF32, kI8>, RunQuantize>);
  r.Add(StepKind::kDequantize,
        PrepareStep<QuantizeState, PrepareQuantize<kI8, kF32>, RunDequantize>);
  r.Add(StepKind::kRequantize,
        PrepareStep<cpu::RequantizeS8Params, PrepareRequantize, RunRequantize>);
  r.Add(StepKind::kQConv, PrepareStep<QConvState, PrepareQConv, RunQConv, QConvScratch>);
  r.Add(StepKind::kQGemm, PrepareStep<QGemmState, PrepareQGemm, RunQGemm>);
  r.Add(StepKind::kDynamicQGemm,
        PrepareStep<DynamicQGemmState, PrepareDynamicQGemm, RunDynamicQGemm, DynamicQGemmScratch>);
  r.Add(StepKind::kDynamicQGemms,
        PrepareStep<DynamicQGemmState, PrepareDynamicQGemms, RunDynamicQGemm, DynamicQGemmScratch>);
  r.Add(StepKind::kQAdd, PrepareStep<cpu::AddS8Params, PrepareQAdd, RunQAdd>);
  r.Add(StepKind::kQConvAdd, PrepareStep<QConvState, PrepareQConvAdd, RunQConv, QConvScratch>);
  r.Add(StepKind::kQMaxPool, PrepareStep<QPoolState, PrepareQMaxPool, RunQMaxPool>);
  r.Add(StepKind::kQAveragePool, PrepareStep<QPoolState, PrepareQAveragePool, RunQAveragePool>);
  r.Add(StepKind::kQGlobalAveragePool,
        PrepareStep<QPoolState, PrepareQGlobalAveragePool, RunQGlobalAveragePool>);
  r.Add(StepKind::kQLut, PrepareStep<cpu::Int8Lut, PrepareQLut, RunQLut>);
  r.Add(StepKind::kQConcat, PrepareStep<QConcatState, PrepareQConcat, RunQConcat>);
}

}  // namespace qcc::runtime
