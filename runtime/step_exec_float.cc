// The fp32 step kinds (ops that stay in float) on the backend_cpu fp32 kernels: conv, sgemm,
// softmax, the unary and broadcasting binary elementwise kernels, pools and byte concatenation.
#include <cfloat>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv_transpose.h"
#include "kernels/cpu/elementwise_binary.h"
#include "kernels/cpu/elementwise_unary.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/movement.h"
#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/norm.h"
#include "kernels/cpu/pool.h"
#include "kernels/cpu/qelementwise.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cpu/softmax.h"
#include "runtime/step_exec.h"
#include "support/status.h"

namespace qcc::runtime {
namespace {

constexpr DType kF32 = DType::kFloat32;
constexpr DType kI8 = DType::kInt8;

// StepActivation's +-FLT_MAX bounds are "none" (+-inf), so the identity stays the identity.
cpu::ActivationF32 ToActivation(const StepActivation& a) {
  cpu::ActivationF32 act;
  act.lo = a.lo <= -FLT_MAX ? -std::numeric_limits<float>::infinity() : a.lo;
  act.hi = a.hi >= FLT_MAX ? std::numeric_limits<float>::infinity() : a.hi;
  act.negative_slope = a.negative_slope;
  return act;
}

absl::Status CheckActivation(const StepPrepareContext& c, const StepActivation& a) {
  if (std::isnan(a.lo) || std::isnan(a.hi) || std::isnan(a.negative_slope) || a.lo > a.hi) {
    return c.Error(
        absl::StrCat("invalid activation [", a.lo, ", ", a.hi, "] slope ", a.negative_slope));
  }
  return absl::OkStatus();
}

absl::Status CheckSameDims(const StepPrepareContext& c, const PlanBuffer& b, absl::string_view role,
                           const PlanBuffer& like) {
  for (int64_t batch : c.batches()) {
    QCC_RETURN_IF_ERROR(c.CheckDims(b, role, batch, DimsAtBatch(like, batch)));
  }
  return absl::OkStatus();
}

/// The numpy broadcast of `a` and `b`'s dims at `batch` over all but their last `matrix` axes
/// (Binary: 0; MatMul: 2, whose last two extents the caller sets); an error when they differ.
absl::StatusOr<Dims> BroadcastDims(const StepPrepareContext& c, const PlanBuffer& a,
                                   const PlanBuffer& b, size_t matrix, int64_t batch) {
  const Dims ad = DimsAtBatch(a, batch), bd = DimsAtBatch(b, batch);
  const size_t rank = std::max(ad.size(), bd.size());
  Dims out(rank, 0);
  // Broadcasting is not affine in the batch: an axis that is the batch on one side must be the
  // batch or 1 on the other (or [-1, 3] against [4, 3] would pass at batches 1 and 4 and read
  // past A at batch 2).
  const bool dynamic = c.plan().batch_min != c.plan().batch_max;
  for (size_t i = 0; dynamic && i + matrix < rank; ++i) {
    const int64_t da = i + a.dims.size() >= rank ? a.dims[i + a.dims.size() - rank] : 1;
    const int64_t db = i + b.dims.size() >= rank ? b.dims[i + b.dims.size() - rank] : 1;
    if ((da == -1) != (db == -1) && da != 1 && db != 1) {
      return c.Error(absl::StrCat("A ", DimsToString(a.dims), " and B ", DimsToString(b.dims),
                                  " broadcast only at some batches"));
    }
  }
  for (size_t i = 0; i + matrix < rank; ++i) {
    const int64_t ea = i + ad.size() >= rank ? ad[i + ad.size() - rank] : 1;
    const int64_t eb = i + bd.size() >= rank ? bd[i + bd.size() - rank] : 1;
    if (ea != eb && ea != 1 && eb != 1) {
      return c.Error(absl::StrCat("A ", DimsToString(ad), " and B ", DimsToString(bd),
                                  " do not broadcast at batch ", batch));
    }
    out[i] = ea == 1 ? eb : ea;
  }
  return out;
}

// ---- Conv ----

// A conv's weight W whose shape does not go with its input X and group count.
absl::Status WeightDoesNotFit(const StepPrepareContext& c, const PlanBuffer& w, const PlanBuffer& x,
                              int64_t group) {
  return c.Error(absl::StrCat("weight W '", w.name, "' ", DimsToString(w.dims),
                              " does not fit input X '", x.name, "' ", DimsToString(x.dims),
                              " with group ", group));
}

// A conv's optional input 2: an f32 bias of `channels` values.
absl::Status CheckOptionalBias(const StepPrepareContext& c, int64_t channels) {
  if (c.input(2) == nullptr) return absl::OkStatus();
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* bias, c.Input(2, "bias", kF32, 1));
  for (int64_t batch : c.batches()) {
    QCC_RETURN_IF_ERROR(c.CheckDims(*bias, "input bias", batch, {channels}));
  }
  return absl::OkStatus();
}

struct ConvState {
  cpu::ConvF32Params p;       // batch and threads set per run
  cpu::PackedConvF32 packed;  // W packed once for the kernel (cpu::PackConvF32Weights), or empty
};

absl::StatusOr<cpu::ConvF32Params> PrepareConvParams(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(2, 4, 1));
  QCC_ASSIGN_OR_RETURN(const ConvStepParams params, c.Decode<ConvStepParams>());
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* x, c.Input(0, "X", kF32, 4));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* w, c.Input(1, "W", kF32, 4));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kF32, 4));
  const ConvGeometry& g = params.geometry;
  QCC_RETURN_IF_ERROR(CheckConvGeometry(c, g));
  QCC_RETURN_IF_ERROR(CheckActivation(c, params.activation));
  if (w->dims[0] < 0) return c.Error(absl::StrCat("weight W '", w->name, "' has a dynamic axis"));
  const int64_t k = w->dims[0];
  if (k % g.group != 0 || x->dims[1] != w->dims[1] * g.group || w->dims[2] < 1 || w->dims[3] < 1) {
    return WeightDoesNotFit(c, *w, *x, g.group);
  }
  QCC_RETURN_IF_ERROR(CheckOptionalBias(c, k));
  cpu::ConvF32Params p;
  p.SetGeometry2d(g, w->dims[2], w->dims[3]);
  p.in_channels = x->dims[1];
  p.out_channels = k;
  p.in = {1, x->dims[2], x->dims[3]};
  p.activation = ToActivation(params.activation);
  for (int64_t batch : c.batches()) {
    QCC_ASSIGN_OR_RETURN(const Dims want,
                         ConvOutDims(c, g, DimsAtBatch(*x, batch), k, w->dims[2], w->dims[3]));
    QCC_RETURN_IF_ERROR(c.CheckDims(*y, "output Y", batch, want));
    p.out = {1, want[2], want[3]};
    // The residual of a fused shortcut Add: Y's dims, and not Y's buffer (it is read while Y is
    // written).
    if (c.input(3) != nullptr) {
      QCC_ASSIGN_OR_RETURN(const PlanBuffer* r, c.Input(3, "residual", kF32, 4));
      QCC_RETURN_IF_ERROR(c.CheckDims(*r, "input residual", batch, want));
    }
  }
  if (c.input(3) != nullptr && c.step().inputs[3] == c.step().outputs[0]) {
    return c.Error("the residual is the step's output Y");
  }
  return p;
}

absl::StatusOr<ConvState> PrepareConv(const StepPrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const cpu::ConvF32Params p, PrepareConvParams(c));
  ConvState s;
  s.p = p;
  // A weight W is packed here, once, instead of on every run (the packing depends on the
  // convolution's shape only).
  if (c.input(1)->kind == BufferKind::kWeight) {
    QCC_ASSIGN_OR_RETURN(const absl::Span<const uint8_t> w, c.WeightBytes(1, "W"));
    s.packed = cpu::PackConvF32Weights(p, reinterpret_cast<const float*>(w.data()));
  }
  return s;
}

cpu::ConvF32Params ConvRunParams(const ConvState& s, const StepRunContext& c) {
  cpu::ConvF32Params p = s.p;
  p.batch = c.in_dims(0)[0];
  p.num_threads = c.num_threads;
  return p;
}

int64_t ConvScratch(const ConvState& s, const StepRunContext& c) {
  return cpu::ConvF32WithPackedWorkspaceSize(ConvRunParams(s, c), s.packed) *
         static_cast<int64_t>(sizeof(float));
}

void RunConv(const ConvState& s, const StepRunContext& c) {
  cpu::ConvF32Params p = ConvRunParams(s, c);
  if (p.batch == 0) return;
  if (c.step->inputs.size() > 3) p.residual = c.in<float>(3);
  cpu::ConvF32WithPacked(p, c.in<float>(0), c.in<float>(1), s.packed,
                         c.step->inputs.size() > 2 ? c.in<float>(2) : nullptr, c.out<float>(0),
                         static_cast<float*>(c.scratch));
}

// ---- ConvTranspose ----

// The adjoint forward conv of conv_transpose.h: Y is its input and X its output (batch and
// threads set per run).
absl::StatusOr<cpu::ConvF32Params> PrepareConvTranspose(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(2, 3, 1));
  QCC_ASSIGN_OR_RETURN(const ConvTransposeStepParams params, c.Decode<ConvTransposeStepParams>());
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* x, c.Input(0, "X", kF32, 4));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* w, c.Input(1, "W", kF32, 4));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kF32, 4));
  const ConvGeometry& g = params.geometry;
  QCC_RETURN_IF_ERROR(CheckConvGeometry(c, g));
  if (params.output_padding_h < 0 || params.output_padding_h > kMaxStepGeometry ||
      params.output_padding_w < 0 || params.output_padding_w > kMaxStepGeometry) {
    return c.Error(absl::StrCat("invalid output padding ", params.output_padding_h, "x",
                                params.output_padding_w));
  }
  for (int64_t d : w->dims) {
    if (d < 1 || d > kMaxStepGeometry) {
      return c.Error(absl::StrCat("weight W '", w->name, "' ", DimsToString(w->dims),
                                  " has an extent outside [1, ", kMaxStepGeometry, "]"));
    }
  }
  const int64_t ch = w->dims[0], m = w->dims[1] * g.group;
  if (ch % g.group != 0 || x->dims[1] != ch) return WeightDoesNotFit(c, *w, *x, g.group);
  QCC_RETURN_IF_ERROR(CheckOptionalBias(c, m));
  // ONNX: out = stride * (in - 1) + output_padding + dilation * (kernel - 1) + 1 - pads.
  auto out_extent = [](int64_t in, int64_t stride, int64_t out_pad, int64_t dilation,
                       int64_t kernel, int64_t pads) {
    return stride * (in - 1) + out_pad + dilation * (kernel - 1) + 1 - pads;
  };
  const int64_t ih = x->dims[2], iw = x->dims[3];
  if (ih < 1 || ih > kMaxStepGeometry || iw < 1 || iw > kMaxStepGeometry) {
    return c.Error(absl::StrCat("input X '", x->name, "' ", DimsToString(x->dims),
                                " has a spatial extent outside [1, ", kMaxStepGeometry, "]"));
  }
  const int64_t oh = out_extent(ih, g.stride_h, params.output_padding_h, g.dilation_h, w->dims[2],
                                g.pad_top + g.pad_bottom);
  const int64_t ow = out_extent(iw, g.stride_w, params.output_padding_w, g.dilation_w, w->dims[3],
                                g.pad_left + g.pad_right);
  if (oh < 1 || ow < 1) {
    return c.Error(absl::StrCat("the pads leave no output (", oh, "x", ow, ") for input ",
                                DimsToString(x->dims)));
  }
  for (int64_t batch : c.batches()) {
    QCC_RETURN_IF_ERROR(c.CheckDims(*y, "output Y", batch, {batch, m, oh, ow}));
  }
  cpu::ConvF32Params fwd;
  fwd.SetGeometry2d(g, w->dims[2], w->dims[3]);
  fwd.in_channels = m;
  fwd.out_channels = ch;
  fwd.in = {1, oh, ow};
  fwd.out = {1, ih, iw};
  return fwd;
}

cpu::ConvF32Params ConvTransposeRunParams(const cpu::ConvF32Params& s, const StepRunContext& c) {
  cpu::ConvF32Params p = s;
  p.batch = c.in_dims(0)[0];
  p.num_threads = c.num_threads;
  return p;
}

int64_t ConvTransposeScratch(const cpu::ConvF32Params& s, const StepRunContext& c) {
  return cpu::ConvTransposeF32WorkspaceSize(ConvTransposeRunParams(s, c)) *
         static_cast<int64_t>(sizeof(float));
}

void RunConvTranspose(const cpu::ConvF32Params& s, const StepRunContext& c) {
  const cpu::ConvF32Params p = ConvTransposeRunParams(s, c);
  if (p.batch == 0) return;
  cpu::ConvTransposeF32Col2im(p, c.in<float>(0), c.in<float>(1),
                              c.step->inputs.size() > 2 ? c.in<float>(2) : nullptr, c.out<float>(0),
                              static_cast<float*>(c.scratch));
}

// ---- Gemm ----

struct GemmState {
  GemmStepParams params;
  cpu::ActivationF32 activation;
};

absl::StatusOr<GemmState> PrepareGemm(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(2, 3, 1));
  QCC_ASSIGN_OR_RETURN(const GemmStepParams p, c.Decode<GemmStepParams>());
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* a, c.Input(0, "A", kF32, 2));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* b, c.Input(1, "B", kF32, 2));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kF32, 2));
  QCC_RETURN_IF_ERROR(CheckActivation(c, p.activation));
  if ((p.trans_a != 0 && p.trans_a != 1) || (p.trans_b != 0 && p.trans_b != 1)) {
    return c.Error("trans_a and trans_b must be 0 or 1");
  }
  const PlanBuffer* bias = c.input(2);
  if (bias != nullptr) {
    QCC_RETURN_IF_ERROR(c.Input(2, "C", kF32).status());
    if (bias->dims.size() > 2) return c.Error("input C has rank over 2");
  }
  for (int64_t batch : c.batches()) {
    const Dims ad = DimsAtBatch(*a, batch), bd = DimsAtBatch(*b, batch);
    const int64_t m = ad[p.trans_a], k = ad[1 - p.trans_a];
    const int64_t kb = bd[p.trans_b], n = bd[1 - p.trans_b];
    if (k != kb) {
      return c.Error(absl::StrCat("A ", DimsToString(ad), " and B ", DimsToString(bd),
                                  " do not multiply (trans_a ", p.trans_a, ", trans_b ", p.trans_b,
                                  ") at batch ", batch));
    }
    QCC_RETURN_IF_ERROR(c.CheckDims(*y, "output Y", batch, {m, n}));
    if (bias != nullptr) {
      Dims cd = DimsAtBatch(*bias, batch);
      cd.insert(cd.begin(), 2 - cd.size(), 1);
      if ((cd[0] != 1 && cd[0] != m) || (cd[1] != 1 && cd[1] != n)) {
        return c.Error(absl::StrCat("input C ", DimsToString(DimsAtBatch(*bias, batch)),
                                    " does not broadcast to [", m, ",", n, "]"));
      }
    }
  }
  return GemmState{p, ToActivation(p.activation)};
}

void RunGemm(const GemmState& s, const StepRunContext& c) {
  const Dims ad = c.in_dims(0), bd = c.in_dims(1), yd = c.out_dims(0);
  cpu::GemmF32Params p;
  p.trans_a = s.params.trans_a != 0;
  p.trans_b = s.params.trans_b != 0;
  p.m = yd[0];
  p.n = yd[1];
  p.k = ad[p.trans_a ? 0 : 1];
  p.lda = ad[1];
  p.ldb = bd[1];
  p.ldc = p.n;
  p.alpha = s.params.alpha;
  p.threads = c.num_threads;
  p.beta = 0.0f;
  float* y = c.out<float>(0);
  if (c.step->inputs.size() > 2 && c.in<float>(2) != nullptr && s.params.beta != 0.0f) {
    // y = beta * C broadcast to [M, N], then y += alpha * op(A) op(B).
    Dims cd = c.in_dims(2);
    cd.insert(cd.begin(), 2 - cd.size(), 1);
    const float* bias = c.in<float>(2);
    const int64_t rs = cd[0] == 1 ? 0 : cd[1], cs = cd[1] == 1 ? 0 : 1;
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) y[i * p.n + j] = s.params.beta * bias[i * rs + j * cs];
    }
    p.beta = 1.0f;
  }
  if (p.m == 0 || p.n == 0) return;
  if (p.k == 0) {
    if (p.beta == 0.0f) std::fill(y, y + p.m * p.n, 0.0f);
  } else {
    cpu::GemmF32(p, c.in<float>(0), c.in<float>(1), y);
  }
  cpu::ApplyActivationF32(s.activation, y, p.m * p.n);
}

// ---- Softmax ----

absl::StatusOr<int64_t> PrepareSoftmax(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(1, 1, 1));
  QCC_ASSIGN_OR_RETURN(const AxisStepParams p, c.Decode<AxisStepParams>());
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* x, c.Input(0, "X", kF32, -2));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kF32));
  QCC_RETURN_IF_ERROR(CheckSameDims(c, *y, "output Y", *x));
  return NormalizeStepAxis(c, p.axis, x->dims.size());
}

void RunSoftmax(const int64_t& axis, const StepRunContext& c) {
  const Dims x = c.in_dims(0);
  cpu::SoftmaxParams p;
  p.outer = ProductOf(x, 0, axis);
  p.n = x[axis];
  p.inner = ProductOf(x, axis + 1, x.size());
  if (p.outer * p.n * p.inner == 0) return;
  // Independent [n, inner] blocks: split over the threads (attention's 8 x 12 x 128 rows).
  const int64_t block = p.n * p.inner;
  cpu::NnParallelFor(c.num_threads, p.outer, 16 * block, [&](int64_t begin, int64_t end) {
    cpu::SoftmaxParams part = p;
    part.outer = end - begin;
    cpu::Softmax<float>(part, c.in<float>(0) + begin * block, c.out<float>(0) + begin * block);
  });
}

// ---- Unary ----

absl::Status CheckUnaryOp(const StepPrepareContext& c, int64_t op) {
  if (op < 0 || op >= kNumUnaryFns) {
    return c.Error(absl::StrCat("unknown unary op ", op));
  }
  return absl::OkStatus();
}

absl::StatusOr<UnaryStepParams> PrepareUnary(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(1, 1, 1));
  QCC_ASSIGN_OR_RETURN(const UnaryStepParams p, c.Decode<UnaryStepParams>());
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* x, c.Input(0, "X", kF32));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kF32));
  QCC_RETURN_IF_ERROR(CheckSameDims(c, *y, "output Y", *x));
  QCC_RETURN_IF_ERROR(CheckUnaryOp(c, p.op));
  return p;
}

/// y = unary(x) over n elements.
void UnaryOnSpan(const UnaryStepParams& s, const float* x, float* y, int64_t n, int num_threads) {
  UnaryCall call;
  call.fn = static_cast<UnaryFn>(s.op);  // checked by CheckUnaryOp
  call.alpha = s.alpha;
  call.beta = s.beta;
  cpu::UnaryFloat<float>(call, x, y, n, num_threads);
}

void RunUnary(const UnaryStepParams& s, const StepRunContext& c) {
  UnaryOnSpan(s, c.in<float>(0), c.out<float>(0), NumElements(c.in_dims(0)), c.num_threads);
}

// ---- UnaryQuantize ----

absl::StatusOr<UnaryQuantizeStepParams> PrepareUnaryQuantize(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(1, 1, 1));
  QCC_ASSIGN_OR_RETURN(const UnaryQuantizeStepParams p, c.Decode<UnaryQuantizeStepParams>());
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* x, c.Input(0, "X", kF32));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kI8));
  QCC_RETURN_IF_ERROR(CheckSameDims(c, *y, "output Y", *x));
  QCC_RETURN_IF_ERROR(CheckUnaryOp(c, p.unary.op));
  QCC_RETURN_IF_ERROR(CheckQuantizeParams(c, p.quantize));
  return p;
}

void RunUnaryQuantize(const UnaryQuantizeStepParams& s, const StepRunContext& c) {
  // Blocks that stay in L1 between the two passes; each thread's block on its stack.
  constexpr int64_t kBlock = 2048;
  const int64_t n = NumElements(c.in_dims(0));
  const float* x = c.in<float>(0);
  int8_t* y = c.out<int8_t>(0);
  const cpu::QuantizeS8Params q{s.quantize.scale, static_cast<int32_t>(s.quantize.zero_point)};
  cpu::NnParallelFor(c.num_threads, (n + kBlock - 1) / kBlock, kBlock * 8,
                     [&](int64_t begin, int64_t end) {
                       float block[kBlock];
                       for (int64_t b = begin; b < end; ++b) {
                         const int64_t count = std::min(kBlock, n - b * kBlock);
                         UnaryOnSpan(s.unary, x + b * kBlock, block, count, 1);
                         cpu::QuantizeF32ToS8(q, count, block, y + b * kBlock, 1);
                       }
                     });
}

// ---- Binary ----

struct BinaryState {
  BinaryOp op;
  cpu::ActivationF32 activation;
};

absl::StatusOr<BinaryState> PrepareBinary(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(2, 2, 1));
  QCC_ASSIGN_OR_RETURN(const BinaryStepParams p, c.Decode<BinaryStepParams>());
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* a, c.Input(0, "A", kF32));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* b, c.Input(1, "B", kF32));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kF32));
  QCC_RETURN_IF_ERROR(CheckActivation(c, p.activation));
  if (p.op < 0 || p.op > static_cast<int64_t>(BinaryOp::kDiv)) {
    return c.Error(absl::StrCat("unknown binary op ", p.op));
  }
  for (int64_t batch : c.batches()) {
    QCC_ASSIGN_OR_RETURN(const Dims want, BroadcastDims(c, *a, *b, 0, batch));
    QCC_RETURN_IF_ERROR(c.CheckDims(*y, "output Y", batch, want));
  }
  return BinaryState{static_cast<BinaryOp>(p.op), ToActivation(p.activation)};
}

void RunBinary(const BinaryState& s, const StepRunContext& c) {
  const Dims y_dims = c.out_dims(0);
  if (NumElements(y_dims) == 0) return;
  const cpu::BroadcastPlan plan = cpu::MakeBroadcastPlan({c.in_dims(0), c.in_dims(1)}, y_dims);
  const float* a = c.in<float>(0);
  const float* b = c.in<float>(1);
  float* y = c.out<float>(0);
  switch (s.op) {
    case BinaryOp::kAdd:
      cpu::BinaryBroadcast(plan, a, b, y, cpu::AddFn(), c.num_threads);
      break;
    case BinaryOp::kSub:
      cpu::BinaryBroadcast(plan, a, b, y, cpu::SubFn(), c.num_threads);
      break;
    case BinaryOp::kMul:
      cpu::BinaryBroadcast(plan, a, b, y, cpu::MulFn(), c.num_threads);
      break;
    case BinaryOp::kDiv:
      cpu::BinaryBroadcast(plan, a, b, y, cpu::DivFn(), c.num_threads);
      break;
  }
  cpu::ApplyActivationF32(s.activation, y, plan.numel);
}

// ---- MatMul (batched, numpy broadcasting) ----

absl::StatusOr<NoStepParams> PrepareMatMul(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(2, 2, 1));
  QCC_ASSIGN_OR_RETURN(const NoStepParams p, c.Decode<NoStepParams>());
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* a, c.Input(0, "A", kF32));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* b, c.Input(1, "B", kF32));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kF32));
  if (a->dims.size() < 2 || b->dims.size() < 2) return c.Error("A and B need rank >= 2");
  for (int64_t batch : c.batches()) {
    const Dims ad = DimsAtBatch(*a, batch), bd = DimsAtBatch(*b, batch);
    if (ad[ad.size() - 1] != bd[bd.size() - 2]) {
      return c.Error(absl::StrCat("A ", DimsToString(ad), " and B ", DimsToString(bd),
                                  " do not multiply at batch ", batch));
    }
    QCC_ASSIGN_OR_RETURN(Dims want, BroadcastDims(c, *a, *b, 2, batch));
    want[want.size() - 2] = ad[ad.size() - 2];
    want[want.size() - 1] = bd[bd.size() - 1];
    QCC_RETURN_IF_ERROR(c.CheckDims(*y, "output Y", batch, want));
  }
  return p;
}

void RunMatMul(const NoStepParams&, const StepRunContext& c) {
  const Dims ad = c.in_dims(0), bd = c.in_dims(1), yd = c.out_dims(0);
  const size_t rank = yd.size();
  cpu::MatMulF32Params p;
  p.m = ad[ad.size() - 2];
  p.k = ad[ad.size() - 1];
  p.n = bd[bd.size() - 1];
  p.num_threads = c.num_threads;
  for (size_t i = 0; i + 2 < rank; ++i) {
    p.batch.push_back(yd[i]);
    p.a_batch.push_back(i + ad.size() >= rank ? ad[i + ad.size() - rank] : 1);
    p.b_batch.push_back(i + bd.size() >= rank ? bd[i + bd.size() - rank] : 1);
  }
  if (NumElements(yd) == 0) return;
  cpu::MatMulF32(p, c.in<float>(0), c.in<float>(1), c.out<float>(0));
}

// ---- Reduce ----

absl::StatusOr<ReduceStepParams> PrepareReduce(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(1, 1, 1));
  QCC_ASSIGN_OR_RETURN(const ReduceStepParams p, c.Decode<ReduceStepParams>());
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* x, c.Input(0, "X", kF32));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kF32));
  if (p.op != static_cast<int64_t>(ReduceOp::kSum) &&
      p.op != static_cast<int64_t>(ReduceOp::kMean)) {
    return c.Error(absl::StrCat("unknown reduce op ", p.op));
  }
  const int64_t rank = static_cast<int64_t>(x->dims.size());
  for (size_t i = 0; i < p.axes.size(); ++i) {
    if (p.axes[i] < 0 || p.axes[i] >= rank || (i > 0 && p.axes[i] <= p.axes[i - 1])) {
      return c.Error("axes must ascend within the input's rank");
    }
  }
  for (int64_t batch : c.batches()) {
    const Dims xd = DimsAtBatch(*x, batch);
    Dims kept, kept_ones;
    for (int64_t a = 0; a < rank; ++a) {
      const bool reduced = std::find(p.axes.begin(), p.axes.end(), a) != p.axes.end();
      if (!reduced) kept.push_back(xd[a]);
      kept_ones.push_back(reduced ? 1 : xd[a]);
    }
    const Dims yd = DimsAtBatch(*y, batch);
    if (yd != kept && yd != kept_ones) {
      return c.Error(absl::StrCat("output Y is ", DimsToString(yd), "; reducing ", DimsToString(xd),
                                  " gives ", DimsToString(kept_ones), " at batch ", batch));
    }
  }
  return p;
}

void RunReduce(const ReduceStepParams& s, const StepRunContext& c) {
  cpu::ReduceParams p;
  p.kind = s.op == static_cast<int64_t>(ReduceOp::kMean) ? cpu::ReduceKind::kMean
                                                         : cpu::ReduceKind::kSum;
  p.dims = c.in_dims(0);
  p.reduced.assign(p.dims.size(), false);
  for (int64_t a : s.axes) p.reduced[a] = true;
  cpu::Reduce<float>(p, c.in<float>(0), c.out<float>(0));
}

// ---- LayerNorm ----

struct LayerNormState {
  int64_t axis = 0;
  float epsilon = 0.0f;
};

absl::StatusOr<LayerNormState> PrepareLayerNorm(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(2, 3, 1));
  QCC_ASSIGN_OR_RETURN(const LayerNormStepParams p, c.Decode<LayerNormStepParams>());
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* x, c.Input(0, "X", kF32, -2));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kF32));
  QCC_RETURN_IF_ERROR(CheckSameDims(c, *y, "output Y", *x));
  QCC_ASSIGN_OR_RETURN(const int64_t axis,
                       NormalizeStepAxis(c, p.axis, static_cast<int64_t>(x->dims.size())));
  if (axis == 0 && x->dims[0] == -1) return c.Error("normalizing over the batch axis");
  if (!(p.epsilon >= 0.0f) || !std::isfinite(p.epsilon)) return c.Error("invalid epsilon");
  const int64_t cols = ProductOf(x->dims, axis, x->dims.size());
  for (size_t i = 1; i < 3; ++i) {
    if (c.input(i) == nullptr) {
      if (i == 1) return c.Error("LayerNorm needs a scale");
      continue;
    }
    QCC_ASSIGN_OR_RETURN(const PlanBuffer* w, c.Input(i, i == 1 ? "scale" : "bias", kF32));
    if (NumElements(w->dims) != cols || (!w->dims.empty() && w->dims[0] == -1)) {
      return c.Error(absl::StrCat(i == 1 ? "scale" : "bias", " has ", NumElements(w->dims),
                                  " values; the normalized axes hold ", cols));
    }
  }
  return LayerNormState{axis, p.epsilon};
}

void RunLayerNorm(const LayerNormState& s, const StepRunContext& c) {
  const Dims x = c.in_dims(0);
  const int64_t cols = ProductOf(x, s.axis, x.size());
  const int64_t rows = ProductOf(x, 0, s.axis);
  if (rows * cols == 0) return;
  cpu::LayerNormF32(rows, cols, c.in<float>(0), c.in<float>(1),
                    c.step->inputs.size() > 2 ? c.in<float>(2) : nullptr, s.epsilon,
                    c.out<float>(0), nullptr, nullptr, c.num_threads);
}

// ---- Attention ----

absl::StatusOr<AttentionStepParams> PrepareAttention(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(3, 4, 1));
  QCC_ASSIGN_OR_RETURN(const AttentionStepParams p, c.Decode<AttentionStepParams>());
  if (p.q_heads <= 0 || p.kv_heads <= 0 || p.q_heads % p.kv_heads != 0) {
    return c.Error(absl::StrCat("q_heads ", p.q_heads, " is not a positive multiple of kv_heads ",
                                p.kv_heads));
  }
  if (!std::isfinite(p.scale)) return c.Error("the scale is not finite");
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* q, c.Input(0, "Q", kF32, 3));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* k, c.Input(1, "K", kF32, 3));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* v, c.Input(2, "V", kF32, 3));
  const PlanBuffer* mask = nullptr;
  if (c.input(3) != nullptr) {
    QCC_ASSIGN_OR_RETURN(mask, c.Input(3, "mask", kF32));
    if (mask->dims.size() > 4) return c.Error("the mask has rank > 4");
    // Its batch axis must be the batch of [B, H, Sq, Skv]: a dynamic leading axis of a shorter
    // mask would stand for heads or rows, and checking at the two batch ends would not cover
    // the batches between.
    if (!mask->dims.empty() && mask->dims[0] == -1 && mask->dims.size() != 4) {
      return c.Error(absl::StrCat("the mask ", DimsToString(mask->dims),
                                  " has a dynamic leading axis but not rank 4"));
    }
  }
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kF32, 3));
  for (int64_t batch : c.batches()) {
    const Dims qd = DimsAtBatch(*q, batch), kd = DimsAtBatch(*k, batch);
    const Dims vd = DimsAtBatch(*v, batch);
    const int64_t head = qd[2] / p.q_heads;
    if (qd[2] % p.q_heads != 0 || kd[2] != head * p.kv_heads || vd[2] % p.kv_heads != 0 ||
        kd[0] != qd[0] || vd[0] != qd[0] || vd[1] != kd[1]) {
      return c.Error(absl::StrCat("Q ", DimsToString(qd), ", K ", DimsToString(kd), " and V ",
                                  DimsToString(vd), " do not make ", p.q_heads, " and ", p.kv_heads,
                                  " heads at batch ", batch));
    }
    if (mask != nullptr) {
      const Dims md = DimsAtBatch(*mask, batch);
      const Dims full = {qd[0], p.q_heads, qd[1], kd[1]};
      for (size_t i = 0; i < md.size(); ++i) {
        if (md[i] != 1 && md[i] != full[4 - md.size() + i]) {
          return c.Error(absl::StrCat("the mask ", DimsToString(md), " does not broadcast to ",
                                      DimsToString(full), " at batch ", batch));
        }
      }
    }
    QCC_RETURN_IF_ERROR(
        c.CheckDims(*y, "output Y", batch, {qd[0], qd[1], p.q_heads * (vd[2] / p.kv_heads)}));
  }
  return p;
}

cpu::AttentionF32Params AttentionParams(const AttentionStepParams& s, const StepRunContext& c) {
  const Dims q = c.in_dims(0), k = c.in_dims(1), v = c.in_dims(2);
  const bool has_mask = c.step->inputs.size() > 3 && c.step->inputs[3] >= 0;
  return cpu::Attention3dParams(q[0], q[1], k[1], q[2], v[2], s.q_heads, s.kv_heads,
                                has_mask ? c.in_dims(3) : Dims{}, s.scale, c.num_threads);
}

int64_t AttentionScratch(const AttentionStepParams& s, const StepRunContext& c) {
  return cpu::AttentionF32ScratchFloats(AttentionParams(s, c)) * int64_t{sizeof(float)};
}

int64_t QAttentionScratch(const AttentionStepParams& s, const StepRunContext& c) {
  return cpu::AttentionInt8ScratchBytes(AttentionParams(s, c));
}

void RunQAttention(const AttentionStepParams& s, const StepRunContext& c) {
  const bool has_mask = c.step->inputs.size() > 3 && c.step->inputs[3] >= 0;
  cpu::AttentionInt8(AttentionParams(s, c), c.in<float>(0), c.in<float>(1), c.in<float>(2),
                     has_mask ? c.in<float>(3) : nullptr, c.out<float>(0), c.scratch);
}

void RunAttention(const AttentionStepParams& s, const StepRunContext& c) {
  const bool has_mask = c.step->inputs.size() > 3 && c.step->inputs[3] >= 0;
  cpu::AttentionF32(AttentionParams(s, c), c.in<float>(0), c.in<float>(1), c.in<float>(2),
                    has_mask ? c.in<float>(3) : nullptr, c.out<float>(0),
                    static_cast<float*>(c.scratch));
}

// ---- Pools ----

struct PoolState {
  PoolStepParams window;
  bool count_include_pad = false;
};

cpu::PoolF32Params F32Pool(const PoolStepParams& w, const StepRunContext& c) {
  return {PoolGeometryOf(w, c.in_dims(0), c.out_dims(0)), c.num_threads};
}

absl::StatusOr<PoolState> PrepareMaxPool(const StepPrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const PoolStepParams w, c.Decode<PoolStepParams>());
  QCC_RETURN_IF_ERROR(CheckWindowedPool(c, w, kF32));
  return PoolState{w, false};
}

void RunMaxPool(const PoolState& s, const StepRunContext& c) {
  cpu::MaxPoolF32(F32Pool(s.window, c), c.in<float>(0), c.out<float>(0), nullptr, false);
}

absl::StatusOr<PoolState> PrepareAveragePool(const StepPrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const AveragePoolStepParams p, c.Decode<AveragePoolStepParams>());
  if (p.count_include_pad != 0 && p.count_include_pad != 1) {
    return c.Error(absl::StrCat("count_include_pad ", p.count_include_pad, " is not 0 or 1"));
  }
  QCC_RETURN_IF_ERROR(CheckWindowedPool(c, p.pool, kF32));
  return PoolState{p.pool, p.count_include_pad != 0};
}

void RunAveragePool(const PoolState& s, const StepRunContext& c) {
  cpu::AveragePoolF32(F32Pool(s.window, c), s.count_include_pad, c.in<float>(0), c.out<float>(0));
}

absl::StatusOr<NoStepParams> PrepareGlobalAveragePool(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(1, 1, 1));
  QCC_ASSIGN_OR_RETURN(const NoStepParams p, c.Decode<NoStepParams>());
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* x, c.Input(0, "X", kF32));
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kF32));
  if (x->dims.size() < 3) return c.Error("input X must be N, C and at least one spatial axis");
  for (int64_t batch : c.batches()) {
    Dims want = DimsAtBatch(*x, batch);
    std::fill(want.begin() + 2, want.end(), 1);
    QCC_RETURN_IF_ERROR(c.CheckDims(*y, "output Y", batch, want));
  }
  return p;
}

void RunGlobalAveragePool(const NoStepParams&, const StepRunContext& c) {
  const Dims x = c.in_dims(0);
  cpu::GlobalAveragePoolF32(x[0] * x[1], ProductOf(x, 2, x.size()), c.in<float>(0), c.out<float>(0),
                            c.num_threads);
}

// ---- Concat ----

absl::StatusOr<int64_t> PrepareConcat(const StepPrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.CheckCounts(1, 1 << 16, 1));
  QCC_ASSIGN_OR_RETURN(const AxisStepParams p, c.Decode<AxisStepParams>());
  const size_t n = c.step().inputs.size();
  for (size_t i = 0; i < n; ++i) {
    QCC_RETURN_IF_ERROR(c.Input(i, absl::StrCat("X", i), kF32).status());
  }
  QCC_ASSIGN_OR_RETURN(const PlanBuffer* y, c.Output(0, "Y", kF32));
  QCC_ASSIGN_OR_RETURN(const int64_t axis, NormalizeStepAxis(c, p.axis, c.input(0)->dims.size()));
  for (int64_t batch : c.batches()) {
    std::vector<Dims> dims;
    for (size_t i = 0; i < n; ++i) dims.push_back(DimsAtBatch(*c.input(i), batch));
    QCC_ASSIGN_OR_RETURN(const Dims want, ConcatDims(c, dims, axis));
    QCC_RETURN_IF_ERROR(c.CheckDims(*y, "output Y", batch, want));
  }
  return axis;
}

void RunConcat(const int64_t& axis, const StepRunContext& c) {
  const size_t n = c.step->inputs.size();
  const Dims y = c.out_dims(0);
  std::vector<int64_t> chunk_bytes(n);
  std::vector<const void*> inputs(n);
  for (size_t i = 0; i < n; ++i) {
    chunk_bytes[i] = ProductOf(c.in_dims(i), axis, y.size()) * 4;
    inputs[i] = c.in<float>(i);
  }
  cpu::ConcatBytes(ProductOf(y, 0, axis), chunk_bytes, inputs, c.out<float>(0));
}

}  // namespace

void RegisterFloatSteps(StepRegistry& r) {
  r.Add(StepKind::kConv, PrepareStep<ConvState, PrepareConv, RunConv, ConvScratch>);
  r.Add(StepKind::kConvTranspose, PrepareStep<cpu::ConvF32Params, PrepareConvTranspose,
                                              RunConvTranspose, ConvTransposeScratch>);
  r.Add(StepKind::kGemm, PrepareStep<GemmState, PrepareGemm, RunGemm>);
  r.Add(StepKind::kMatMul, PrepareStep<NoStepParams, PrepareMatMul, RunMatMul>);
  r.Add(StepKind::kReduce, PrepareStep<ReduceStepParams, PrepareReduce, RunReduce>);
  r.Add(StepKind::kLayerNorm, PrepareStep<LayerNormState, PrepareLayerNorm, RunLayerNorm>);
  r.Add(StepKind::kAttention,
        PrepareStep<AttentionStepParams, PrepareAttention, RunAttention, AttentionScratch>);
  r.Add(StepKind::kUnaryQuantize,
        PrepareStep<UnaryQuantizeStepParams, PrepareUnaryQuantize, RunUnaryQuantize>);
  r.Add(StepKind::kQAttention,
        PrepareStep<AttentionStepParams, PrepareAttention, RunQAttention, QAttentionScratch>);
  r.Add(StepKind::kSoftmax, PrepareStep<int64_t, PrepareSoftmax, RunSoftmax>);
  r.Add(StepKind::kUnary, PrepareStep<UnaryStepParams, PrepareUnary, RunUnary>);
  r.Add(StepKind::kBinary, PrepareStep<BinaryState, PrepareBinary, RunBinary>);
  r.Add(StepKind::kMaxPool, PrepareStep<PoolState, PrepareMaxPool, RunMaxPool>);
  r.Add(StepKind::kAveragePool, PrepareStep<PoolState, PrepareAveragePool, RunAveragePool>);
  r.Add(StepKind::kGlobalAveragePool,
        PrepareStep<NoStepParams, PrepareGlobalAveragePool, RunGlobalAveragePool>);
  r.Add(StepKind::kConcat, PrepareStep<int64_t, PrepareConcat, RunConcat>);
}

}  // namespace qcc::runtime
