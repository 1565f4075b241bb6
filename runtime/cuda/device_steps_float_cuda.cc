// The fp32 step kinds on the device: Conv (cuBLASLt fp32 GEMMs per image writing NCHW, after an
// im2col unless the conv is 1x1 with stride 1 and no padding, + a bias/activation epilogue, or a
// direct kernel for grouped/depthwise convs), Gemm (cuBLASLt fp32 + epilogue),
// Softmax, Unary, Binary, the pools and Concat. fp16 plans reach these steps with f32 weights
// (widened once, as the CPU runtime does). Their group-1 convs run on cuBLASLt fp16 GEMMs with
// fp32 accumulation (tensor cores): the weights are the plan's f16 values again and the inputs
// come from f16 buffers (the plan's Cast steps), so the fp16 products are exact in fp32 and the
// result is the fp32 GEMM's up to summation order. Every other float step computes in fp32.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/conv_bodies.h"
#include "kernels/cuda/elementwise_bodies.h"
#include "kernels/cuda/gemm_problem.h"
#include "kernels/cuda/movement_bodies.h"
#include "kernels/cuda/pool_bodies.h"
#include "kernels/cuda/weight_packing.h"
#include "runtime/cuda/device_launch.h"
#include "runtime/cuda/device_steps.h"
#include "runtime/step_exec.h"

namespace qcc::runtime::cuda_exec {
namespace {

namespace kc = ::qcc::cuda;

// StepActivation's +-FLT_MAX bounds are "none": the conv bodies take +-inf for that.
void SetActivation(const StepActivation& a, float* lo, float* hi, float* slope) {
  constexpr float kFltMax = 3.402823466e+38f;
  *lo = a.lo <= -kFltMax ? -kc::kFloatInfinity : a.lo;
  *hi = a.hi >= kFltMax ? kc::kFloatInfinity : a.hi;
  *slope = a.negative_slope;
}

// ---- Conv ----

struct ConvState {
  kc::ConvDims d;  // n set per run
  bool gemm = true;
  kc::ConvGemmShape shape;  // the weights as the GEMM's W (fp32: as the plan has them)
  StepActivation activation;
  // fp16 plans: the weights packed as fp16 [kout_pad, kred_pad] (multiples of 8), im2col in fp16.
  bool half = false;
  const uint16_t* half_weights = nullptr;
};

// The NCHW GEMM at d.n images, and whether an im2col feeds it.
kc::NchwConvGemmShape NchwShape(const ConvState& s, const kc::ConvDims& d) {
  return kc::MakeNchwConvGemmShape(d, s.shape, s.half);
}
bool RunsIm2col(const ConvState& s) { return s.half || !kc::FloatConvReadsInput(s.d); }

// Bytes of the im2col matrix (when one runs) and, for fp16, of the fp32 accumulators after it.
uint64_t ConvScratch(const ConvState& s, int64_t batch) {
  if (!s.gemm) return 0;
  kc::ConvDims d = s.d;
  d.n = batch;
  const kc::NchwConvGemmShape g = NchwShape(s, d);
  const uint64_t a_bytes = RunsIm2col(s) ? Align256(d.n * g.stride_a * (s.half ? 2 : 4)) : 0;
  return a_bytes + (s.half ? Align256(d.n * g.stride_c * 4) : 0);
}

absl::Status EnqueueConv(const ConvState& s, const DeviceRunContext& c) {
  kc::ConvDims d = s.d;
  d.n = c.in_extent(0, 0);
  if (d.n == 0) return absl::OkStatus();
  const float* bias = c.step->inputs.size() > 2 ? c.in<float>(2) : nullptr;
  if (!s.gemm) {
    kc::DirectConvArgs a;
    a.d = d;
    a.x = c.in<float>(0);
    a.w = c.in<float>(1);
    a.bias = bias;
    a.y = c.out<float>(0);
    SetActivation(s.activation, &a.lo, &a.hi, &a.negative_slope);
    const int64_t n = kc::DirectConvIndices(d);
    return kc::DirectConvFitsInt32(d) ? Launch<kc::DirectConv32>(c, n, a, "DirectConv32")
                                      : Launch<kc::DirectConv>(c, n, a, "DirectConv");
  }
  // A: the im2col (scratch) or the input itself; W: the packed fp16 or the plan's fp32 weights;
  // C: the output itself (fp32) or fp32 accumulators after the im2col (fp16).
  const kc::NchwConvGemmShape g = NchwShape(s, d);
  const int64_t a_elements = d.n * g.stride_a;
  const void* a_base = c.in<float>(0);
  if (s.half) {
    kc::Im2colNchwFloatToHalfArgs im{d, c.in<float>(0), static_cast<uint16_t*>(c.scratch), g.lda};
    QCC_RETURN_IF_ERROR(
        Launch<kc::Im2colNchwFloatToHalf>(c, a_elements, im, "Im2colNchwFloatToHalf"));
    a_base = im.a;
  } else if (RunsIm2col(s)) {
    kc::Im2colNchwFloatArgs im{d, c.in<float>(0), static_cast<float*>(c.scratch), g.lda};
    QCC_RETURN_IF_ERROR(Launch<kc::Im2colNchwFloat>(c, a_elements, im, "Im2colNchwFloat"));
    a_base = im.a;
  }
  float* acc =
      s.half ? reinterpret_cast<float*>(static_cast<uint8_t*>(c.scratch) + Align256(a_elements * 2))
             : c.out<float>(0);
  const int64_t ab_bytes = s.half ? 2 : 4;
  const void* w_base = s.half ? static_cast<const void*>(s.half_weights) : c.in<float>(1);
  const kc::GemmProblem problem =
      kc::FloatConvGemmNchw(g, s.half ? kc::GemmType::kHalf : kc::GemmType::kFloat32);
  for (int64_t group = 0; group < d.group; ++group) {
    const auto* a = static_cast<const uint8_t*>(a_base) + group * g.kred * g.lda * ab_bytes;
    const auto* w = static_cast<const uint8_t*>(w_base) +
                    group * s.shape.kout_pad * s.shape.kred_pad * ab_bytes;
    QCC_RETURN_IF_ERROR(c.gemm->Run(problem, a, w, acc + group * g.kout * g.ldc, c.workspace,
                                    c.workspace_bytes, c.stream));
  }
  kc::FloatEpilogueArgs e;
  e.acc = acc;
  e.ldc = g.ldc;
  e.bias = bias;
  e.y = c.out<float>(0);
  e.channels = d.k;
  e.pixels = g.pixels;
  SetActivation(s.activation, &e.lo, &e.hi, &e.negative_slope);
  return Launch<kc::FloatEpilogue>(c, d.n * d.k * g.pixels, e, "FloatEpilogue");
}

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareConv(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const ConvStepParams p, c.Decode<ConvStepParams>());
  // A cpu plan's Conv with the shortcut Add fused in (its fourth input): no CUDA kernel adds it.
  if (c.step().inputs.size() > 3 && c.step().inputs[3] >= 0) {
    return c.Unimplemented(
        "a conv with a fused residual Add (a cpu plan's) has no CUDA kernel yet: run the plan with "
        "--device cpu, or compile it with --target cuda");
  }
  const PlanBuffer& w = c.input(1);
  ConvState s;
  s.d = ConvDimsOf(p.geometry, c.input(0), w, c.output(0));
  s.activation = p.activation;
  s.gemm = ConvRunsAsGemm(c.RecordedKernel(), p.geometry.group);
  // The compiler chose an fp16 GEMM for weights it saw as fp16 (a plan of another target, run
  // here, gets fp32 GEMMs: its weights arrive widened).
  s.half = c.RecordedKernel() == CudaKernel::kIm2colHalfGemm;
  if (s.half) {
    // The widened weights are fp16 values, so packing them as fp16 is exact.
    s.shape = kc::MakeConvGemmShape(s.d.k, w.dims[1], s.d.r, s.d.s, s.d.group, kc::kHalfGemmAlign);
    const std::vector<uint16_t> packed =
        kc::PackHalfWeights(reinterpret_cast<const float*>(c.weight(1).data()), s.shape);
    QCC_ASSIGN_OR_RETURN(s.half_weights, c.Upload(packed, "packed fp16 weights"));
  } else if (s.gemm) {
    // fp32 needs no padding: the weights [K, C/g, R, S] are the GEMM's W as they are (per group
    // [K/g, C/g*R*S] row-major), so the engine's weight section serves directly.
    s.shape = kc::MakeConvGemmShape(s.d.k, w.dims[1], s.d.r, s.d.s, s.d.group, kc::kFloatGemmAlign);
  }
  if (s.gemm) {
    QCC_RETURN_IF_ERROR(c.PrepareGemms([&](int64_t batch) {
      kc::ConvDims d = s.d;
      d.n = batch;
      return kc::FloatConvGemmNchw(NchwShape(s, d),
                                   s.half ? kc::GemmType::kHalf : kc::GemmType::kFloat32);
    }));
  }
  const CudaKernel kernel = s.half   ? CudaKernel::kIm2colHalfGemm
                            : s.gemm ? CudaKernel::kIm2colGemm
                                     : CudaKernel::kDirectConv;
  return MakeDeviceStep<ConvState>(s, EnqueueConv, ConvScratch, kernel);
}

// ---- Gemm ----

struct GemmState {
  GemmStepParams p;
  PlanBuffer a, b;
};

struct GemmShape {
  int64_t m, n, k;
};

GemmShape GemmShapeAt(const GemmState& s, int64_t batch) {
  const int64_t a0 = ExtentAt(s.a, 0, batch), a1 = ExtentAt(s.a, 1, batch);
  const int64_t b0 = ExtentAt(s.b, 0, batch), b1 = ExtentAt(s.b, 1, batch);
  return {s.p.trans_a != 0 ? a1 : a0, s.p.trans_b != 0 ? b0 : b1, s.p.trans_a != 0 ? a0 : a1};
}

kc::GemmProblem GemmProblemAt(const GemmState& s, const GemmShape& g) {
  return kc::FloatGemm(g.m, g.n, g.k, s.p.trans_a != 0, s.p.trans_b != 0, s.p.alpha, 0.0f);
}

absl::Status EnqueueGemm(const GemmState& s, const DeviceRunContext& c) {
  const GemmShape g = GemmShapeAt(s, c.batch);
  if (g.m == 0 || g.n == 0) return absl::OkStatus();
  float* y = c.out<float>(0);
  if (g.k == 0) {
    QCC_RETURN_IF_ERROR(
        CudaStatus(cudaMemsetAsync(y, 0, static_cast<size_t>(g.m * g.n) * sizeof(float), c.stream),
                   "cudaMemsetAsync(Gemm output)"));
  } else {
    // Row-major Y = op(A) op(B) is column-major Y^T = op(B)^T op(A)^T: operand a is ONNX B.
    QCC_RETURN_IF_ERROR(c.gemm->Run(GemmProblemAt(s, g), c.in<float>(1), c.in<float>(0), y,
                                    c.workspace, c.workspace_bytes, c.stream));
  }
  kc::GemmEpilogueF32Args e;
  e.acc = y;
  e.ldc = g.n;
  e.y = y;
  e.cols = g.n;
  if (c.step->inputs.size() > 2 && c.in<float>(2) != nullptr && s.p.beta != 0.0f) {
    const PlanBuffer& cb = c.plan->buffers[c.step->inputs[2]];
    int64_t cd[2] = {1, 1};
    const size_t rank = cb.dims.size();
    for (size_t a = 0; a < rank; ++a) cd[2 - rank + a] = ExtentAt(cb, a, c.batch);
    e.c = c.in<float>(2);
    e.c_row_stride = cd[0] == 1 ? 0 : cd[1];
    e.c_col_stride = cd[1] == 1 ? 0 : 1;
    e.beta = s.p.beta;
  }
  SetActivation(s.p.activation, &e.lo, &e.hi, &e.negative_slope);
  return Launch<kc::GemmEpilogueF32>(c, g.m * g.n, e, "GemmEpilogueF32");
}

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareGemm(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const GemmStepParams p, c.Decode<GemmStepParams>());
  GemmState s{p, c.input(0), c.input(1)};
  QCC_RETURN_IF_ERROR(c.PrepareGemms([&](int64_t batch) {
    GemmShape g = GemmShapeAt(s, batch);
    g.m = std::max<int64_t>(g.m, 1);
    g.n = std::max<int64_t>(g.n, 1);
    g.k = std::max<int64_t>(g.k, 1);
    return GemmProblemAt(s, g);
  }));
  return MakeDeviceStep<GemmState>(std::move(s), EnqueueGemm, nullptr, CudaKernel::kGemm);
}

// ---- Softmax, Unary, Binary ----

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareSoftmax(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const AxisStepParams p, c.Decode<AxisStepParams>());
  const int64_t rank = static_cast<int64_t>(c.input(0).dims.size());
  const int64_t axis = p.axis < 0 ? p.axis + rank : p.axis;
  return MakeDeviceStep<int64_t>(axis, [](const int64_t& axis, const DeviceRunContext& c) {
    const PlanBuffer& x = c.plan->buffers[c.step->inputs[0]];
    int64_t outer = 1, inner = 1;
    for (size_t a = 0; a < x.dims.size(); ++a) {
      if (static_cast<int64_t>(a) < axis) outer *= ExtentAt(x, a, c.batch);
      if (static_cast<int64_t>(a) > axis) inner *= ExtentAt(x, a, c.batch);
    }
    const int64_t n = ExtentAt(x, axis, c.batch);
    if (outer * n * inner == 0) return absl::OkStatus();
    return Launch<kc::SoftmaxBody>(
        c, outer * inner, {c.in<float>(0), c.out<float>(0), outer, n, inner}, "SoftmaxBody");
  });
}

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareUnary(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const UnaryStepParams p, c.Decode<UnaryStepParams>());
  if (p.op < 0 || p.op >= kNumUnaryFns) {
    return absl::InvalidArgumentError(absl::StrCat("unknown unary function ", p.op));
  }
  return MakeDeviceStep<UnaryStepParams>(
      p, [](const UnaryStepParams& s, const DeviceRunContext& c) {
        return Launch<kc::UnaryBody>(
            c, c.in_elements(0),
            {c.in<float>(0), c.out<float>(0), static_cast<int32_t>(s.op), s.alpha, s.beta},
            "UnaryBody");
      });
}

struct BinaryState {
  int32_t op = 0;
  StepActivation activation;
};

absl::Status EnqueueBinary(const BinaryState& s, const DeviceRunContext& c) {
  const PlanBuffer& ab = c.plan->buffers[c.step->inputs[0]];
  const PlanBuffer& bb = c.plan->buffers[c.step->inputs[1]];
  const PlanBuffer& yb = c.plan->buffers[c.step->outputs[0]];
  const int rank = static_cast<int>(yb.dims.size());
  const int ra = static_cast<int>(ab.dims.size()), rb = static_cast<int>(bb.dims.size());
  int64_t ad[kc::kMaxBodyRank], bd[kc::kMaxBodyRank];
  kc::BinaryArgs a;
  a.a = c.in<float>(0);
  a.b = c.in<float>(1);
  a.y = c.out<float>(0);
  a.op = s.op;
  a.rank = rank;
  int64_t n = 1;
  for (int k = 0; k < rank; ++k) {
    a.out_dims[k] = ExtentAt(yb, k, c.batch);
    n *= a.out_dims[k];
  }
  if (n == 0) return absl::OkStatus();
  for (int k = 0; k < ra; ++k) ad[k] = ExtentAt(ab, k, c.batch);
  for (int k = 0; k < rb; ++k) bd[k] = ExtentAt(bb, k, c.batch);
  kc::BroadcastStrides(ad, ra, rank, a.a_strides);
  kc::BroadcastStrides(bd, rb, rank, a.b_strides);
  a.act = {s.activation.lo, s.activation.hi, s.activation.negative_slope};
  return Launch<kc::BinaryBody>(c, n, a, "BinaryBody");
}

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareBinary(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const BinaryStepParams p, c.Decode<BinaryStepParams>());
  if (c.output(0).dims.size() > static_cast<size_t>(kc::kMaxBodyRank)) {
    return c.Unimplemented(absl::StrCat("rank ", c.output(0).dims.size(),
                                        " is over the CUDA kernel's ", kc::kMaxBodyRank));
  }
  return MakeDeviceStep<BinaryState>({static_cast<int32_t>(p.op), p.activation}, EnqueueBinary);
}

// ---- Pools ----

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareMaxPool(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const PoolStepParams p, c.Decode<PoolStepParams>());
  return MakeDeviceStep<PoolStepParams>(p, [](const PoolStepParams& s, const DeviceRunContext& c) {
    return Launch<kc::MaxPoolBody>(
        c, c.out_elements(0), {c.in<float>(0), c.out<float>(0), PoolWindowAt(s, c)}, "MaxPoolBody");
  });
}

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareAveragePool(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const AveragePoolStepParams p, c.Decode<AveragePoolStepParams>());
  return MakeDeviceStep<AveragePoolStepParams>(p, [](const AveragePoolStepParams& s,
                                                     const DeviceRunContext& c) {
    return Launch<kc::AveragePoolBody>(c, c.out_elements(0),
                                       {c.in<float>(0), c.out<float>(0), PoolWindowAt(s.pool, c),
                                        static_cast<int32_t>(s.count_include_pad)},
                                       "AveragePoolBody");
  });
}

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareGlobalAveragePool(
    const DevicePrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.Decode<NoStepParams>().status());
  return MakeDeviceStep<NoStepParams>({}, [](const NoStepParams&, const DeviceRunContext& c) {
    const int64_t planes = c.in_extent(0, 0) * c.in_extent(0, 1);
    const int64_t size = planes == 0 ? 0 : c.in_elements(0) / planes;
    return Launch<kc::GlobalAveragePoolBody>(c, planes, {c.in<float>(0), c.out<float>(0), size},
                                             "GlobalAveragePoolBody");
  });
}

// ---- Concat ----

absl::Status EnqueueConcat(const int64_t& axis, const DeviceRunContext& c) {
  const PlanBuffer& y = c.plan->buffers[c.step->outputs[0]];
  int64_t outer = 1, out_row = 1;
  for (size_t a = 0; a < y.dims.size(); ++a) {
    (static_cast<int64_t>(a) < axis ? outer : out_row) *= ExtentAt(y, a, c.batch);
  }
  if (outer == 0 || out_row == 0) return absl::OkStatus();
  int64_t offset = 0;
  for (size_t i = 0; i < c.step->inputs.size(); ++i) {
    const int64_t chunk = c.in_elements(i) / outer;
    // An input computed in place (its slice of the output, a batch-1 plan's concat) is there.
    if (outer == 1 && c.in<uint8_t>(i) == c.out<uint8_t>(0) + offset * 4) {
      offset += chunk;
      continue;
    }
    const kc::ConcatArgs a{c.in<void>(i), c.out<void>(0), 4, chunk, out_row, offset};
    QCC_RETURN_IF_ERROR(Launch<kc::ConcatBody>(c, outer * chunk, a, "ConcatBody"));
    offset += chunk;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareConcat(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const AxisStepParams p, c.Decode<AxisStepParams>());
  const int64_t rank = static_cast<int64_t>(c.input(0).dims.size());
  return MakeDeviceStep<int64_t>(p.axis < 0 ? p.axis + rank : p.axis, EnqueueConcat);
}

}  // namespace

void RegisterDeviceFloatSteps(DeviceStepRegistry& r) {
  r.Add(StepKind::kConv, PrepareConv);
  r.Add(StepKind::kGemm, PrepareGemm);
  r.Add(StepKind::kSoftmax, PrepareSoftmax);
  r.Add(StepKind::kUnary, PrepareUnary);
  r.Add(StepKind::kBinary, PrepareBinary);
  r.Add(StepKind::kMaxPool, PrepareMaxPool);
  r.Add(StepKind::kAveragePool, PrepareAveragePool);
  r.Add(StepKind::kGlobalAveragePool, PrepareGlobalAveragePool);
  r.Add(StepKind::kConcat, PrepareConcat);
}

}  // namespace qcc::runtime::cuda_exec
