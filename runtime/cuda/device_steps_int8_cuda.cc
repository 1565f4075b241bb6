// The int8 step kinds on the device: precision boundaries, QConv (im2col + cuBLASLt IMMA +
// requantize epilogue, or a direct kernel for grouped/depthwise convs), QGemm (row pad +
// IMMA + epilogue), QAdd, the pools, QLut and QConcat. Every step's arithmetic is a body of
// kernels/cuda/ that calls support/quantize.h, so the results are the CPU runtime's bits.
#include <cstring>

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

// ---- Quantize / Dequantize / Requantize ----

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareQuantize(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const QuantizeParams p, c.Decode<QuantizeParams>());
  return MakeDeviceStep<QuantizeParams>(p, [](const QuantizeParams& s, const DeviceRunContext& c) {
    return Launch<kc::QuantizeBody>(
        c, c.in_elements(0),
        {c.in<float>(0), c.out<int8_t>(0), s.scale, static_cast<int32_t>(s.zero_point)},
        "QuantizeBody");
  });
}

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareDequantize(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const QuantizeParams p, c.Decode<QuantizeParams>());
  return MakeDeviceStep<QuantizeParams>(p, [](const QuantizeParams& s, const DeviceRunContext& c) {
    return Launch<kc::DequantizeBody>(
        c, c.in_elements(0),
        {c.in<int8_t>(0), c.out<float>(0), s.scale, static_cast<int32_t>(s.zero_point)},
        "DequantizeBody");
  });
}

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareRequantize(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const RequantizeParams p, c.Decode<RequantizeParams>());
  kc::RequantizeArgs a{nullptr,
                       nullptr,
                       static_cast<int32_t>(p.zp_in),
                       p.multiplier,
                       static_cast<int32_t>(p.zp_out),
                       static_cast<int32_t>(p.lo),
                       static_cast<int32_t>(p.hi)};
  return MakeDeviceStep<kc::RequantizeArgs>(
      a, [](const kc::RequantizeArgs& s, const DeviceRunContext& c) {
        kc::RequantizeArgs a = s;
        a.x = c.in<int8_t>(0);
        a.y = c.out<int8_t>(0);
        return Launch<kc::RequantizeBody>(c, c.in_elements(0), a, "RequantizeBody");
      });
}

// ---- QConv ----

struct QConvState {
  kc::ConvDims d;  // n set per run
  bool gemm = true;
  kc::ConvGemmShape shape;
  const int8_t* packed = nullptr;  // gemm path: [group][kout_pad][kred_pad]
  int32_t pad_value = 0, zp_out = 0, lo = -128, hi = 127;
};

// The per-image IMMA GEMM at d.n images.
kc::NchwConvGemmShape QConvNchwShape(const QConvState& s, const kc::ConvDims& d) {
  return kc::MakeInt8NchwConvGemmShape(d, s.shape);
}

// Bytes of the im2col matrix and of the int32 accumulators after it.
uint64_t QConvScratch(const QConvState& s, int64_t batch) {
  if (!s.gemm) return 0;
  kc::ConvDims d = s.d;
  d.n = batch;
  const kc::NchwConvGemmShape g = QConvNchwShape(s, d);
  return Align256(d.n * g.stride_a) + Align256(d.n * g.stride_c * 4);
}

absl::Status EnqueueQConv(const QConvState& s, const DeviceRunContext& c) {
  kc::ConvDims d = s.d;
  d.n = c.in_extent(0, 0);
  if (d.n == 0) return absl::OkStatus();
  if (!s.gemm) {
    kc::DirectQConvArgs a;
    a.d = d;
    a.x = c.in<int8_t>(0);
    a.w = c.in<int8_t>(1);
    a.bias = c.in<int32_t>(2);
    a.multiplier = c.in<float>(3);
    a.y = c.out<int8_t>(0);
    a.pad_value = s.pad_value;
    a.zp_out = s.zp_out;
    a.lo = s.lo;
    a.hi = s.hi;
    const int64_t n = kc::DirectConvIndices(d);
    return kc::DirectConvFitsInt32(d) ? Launch<kc::DirectQConv32>(c, n, a, "DirectQConv32")
                                      : Launch<kc::DirectQConv>(c, n, a, "DirectQConv");
  }
  const kc::NchwConvGemmShape g = QConvNchwShape(s, d);
  const int64_t a_bytes = d.n * g.stride_a;
  kc::Im2colRowsInt8Args im;
  im.d = d;
  im.x = c.in<int8_t>(0);
  im.a = static_cast<int8_t*>(c.scratch);
  im.pixels_pad = g.pixels;
  im.kred_pad = g.kred;
  im.pad_value = s.pad_value;
  QCC_RETURN_IF_ERROR(Launch<kc::Im2colRowsInt8>(c, a_bytes / 4, im, "Im2colRowsInt8"));
  int32_t* acc = reinterpret_cast<int32_t*>(static_cast<uint8_t*>(c.scratch) + Align256(a_bytes));
  const kc::GemmProblem problem = kc::Int8ConvGemmNchw(g);
  for (int64_t group = 0; group < d.group; ++group) {
    QCC_RETURN_IF_ERROR(c.gemm->Run(problem, im.a + group * g.pixels * g.kred,
                                    s.packed + group * s.shape.kout_pad * s.shape.kred_pad,
                                    acc + group * g.kout * g.ldc, c.workspace, c.workspace_bytes,
                                    c.stream));
  }
  kc::RequantEpilogueNchwArgs e;
  e.acc = acc;
  e.ldc = g.ldc;
  e.bias = c.in<int32_t>(2);
  e.multiplier = c.in<float>(3);
  e.y = c.out<int8_t>(0);
  e.channels = d.k;
  e.pixels = d.oh * d.ow;
  e.zp_out = s.zp_out;
  e.lo = s.lo;
  e.hi = s.hi;
  return Launch<kc::RequantEpilogueNchw>(c, d.n * d.k * d.oh * d.ow, e, "RequantEpilogueNchw");
}

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareQConv(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const QConvStepParams p, c.Decode<QConvStepParams>());
  const PlanBuffer& w = c.input(1);
  QConvState s;
  s.d = ConvDimsOf(p.geometry, c.input(0), w, c.output(0));
  s.pad_value = static_cast<int32_t>(p.pad_value);
  s.zp_out = static_cast<int32_t>(p.zp_out);
  s.lo = static_cast<int32_t>(p.lo);
  s.hi = static_cast<int32_t>(p.hi);
  s.gemm = ConvRunsAsGemm(c.RecordedKernel(), p.geometry.group);
  if (s.gemm) {
    s.shape = kc::MakeConvGemmShape(s.d.k, w.dims[1], s.d.r, s.d.s, s.d.group, kc::kInt8GemmAlign);
    const std::vector<int8_t> packed =
        kc::PackInt8Weights(reinterpret_cast<const int8_t*>(c.weight(1).data()), s.shape);
    QCC_ASSIGN_OR_RETURN(s.packed, c.Upload(packed, "packed int8 weights"));
    QCC_RETURN_IF_ERROR(c.PrepareGemms([&](int64_t batch) {
      kc::ConvDims d = s.d;
      d.n = batch;
      return kc::Int8ConvGemmNchw(QConvNchwShape(s, d));
    }));
  }
  const CudaKernel kernel = s.gemm ? CudaKernel::kIm2colImma : CudaKernel::kDirectQConv;
  return MakeDeviceStep<QConvState>(s, EnqueueQConv, QConvScratch, kernel);
}

// ---- QGemm ----

struct QGemmState {
  int64_t n = 0, k = 0;
  kc::ConvGemmShape shape;  // kout = n, kred = k
  const int8_t* packed = nullptr;
  int32_t zp_out = 0, lo = -128, hi = 127;
};

int64_t QGemmRows(const QGemmState& s, const PlanBuffer& a, int64_t batch) {
  return ElementsAt(a, batch) / s.k;
}

uint64_t QGemmScratchFor(const QGemmState& s, int64_t rows) {
  const uint64_t pad = s.shape.kred_pad != s.k ? Align256(rows * s.shape.kred_pad) : 0;
  return pad + Align256(rows * s.shape.kout_pad * 4);
}

absl::Status EnqueueQGemm(const QGemmState& s, const DeviceRunContext& c) {
  const int64_t rows = c.in_elements(0) / s.k;
  if (rows == 0) return absl::OkStatus();
  const int8_t* b = c.in<int8_t>(0);
  uint8_t* scratch = static_cast<uint8_t*>(c.scratch);
  if (s.shape.kred_pad != s.k) {
    kc::PadRowsInt8Args pad;
    pad.x = b;
    pad.out = reinterpret_cast<int8_t*>(scratch);
    pad.cols = s.k;
    pad.cols_pad = s.shape.kred_pad;
    QCC_RETURN_IF_ERROR(Launch<kc::PadRowsInt8>(c, rows * s.shape.kred_pad, pad, "PadRowsInt8"));
    b = pad.out;
    scratch += Align256(rows * s.shape.kred_pad);
  }
  int32_t* acc = reinterpret_cast<int32_t*>(scratch);
  const kc::GemmProblem problem = kc::Int8Gemm(rows, s.shape.kout_pad, s.shape.kred_pad);
  QCC_RETURN_IF_ERROR(
      c.gemm->Run(problem, s.packed, b, acc, c.workspace, c.workspace_bytes, c.stream));
  kc::RequantEpilogueArgs e;
  e.acc = acc;
  e.ldc = s.shape.kout_pad;
  e.stride_c = rows * s.shape.kout_pad;
  e.bias = c.in<int32_t>(2);
  e.multiplier = c.in<float>(3);
  e.y = c.out<int8_t>(0);
  e.images = rows;
  e.channels = s.n;
  e.spatial = 1;
  e.groups = 1;
  e.zp_out = s.zp_out;
  e.lo = s.lo;
  e.hi = s.hi;
  return Launch<kc::RequantEpilogue>(c, rows * s.n, e, "RequantEpilogue");
}

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareQGemm(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const QGemmStepParams p, c.Decode<QGemmStepParams>());
  const PlanBuffer& w = c.input(1);
  QGemmState s;
  s.n = w.dims[0];
  s.k = w.dims[1];
  s.shape = kc::MakeGemmShape(s.n, s.k, kc::kInt8GemmAlign);
  s.zp_out = static_cast<int32_t>(p.zp_out);
  s.lo = static_cast<int32_t>(p.lo);
  s.hi = static_cast<int32_t>(p.hi);
  const std::vector<int8_t> packed =
      kc::PackInt8Weights(reinterpret_cast<const int8_t*>(c.weight(1).data()), s.shape);
  QCC_ASSIGN_OR_RETURN(s.packed, c.Upload(packed, "packed int8 weights"));
  const PlanBuffer& a = c.input(0);
  QCC_RETURN_IF_ERROR(c.PrepareGemms([&](int64_t batch) {
    return kc::Int8Gemm(std::max<int64_t>(QGemmRows(s, a, batch), 1), s.shape.kout_pad,
                        s.shape.kred_pad);
  }));
  // The scratch depends on the rows, i.e. on A's elements at the batch.
  struct State {
    QGemmState s;
    PlanBuffer a;
  };
  return MakeDeviceStep<State>(
      State{s, a}, [](const State& st, const DeviceRunContext& c) { return EnqueueQGemm(st.s, c); },
      [](const State& st, int64_t batch) {
        return QGemmScratchFor(st.s, QGemmRows(st.s, st.a, batch));
      },
      CudaKernel::kImma);
}

// ---- QAdd, QLut ----

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareQAdd(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const QAddStepParams p, c.Decode<QAddStepParams>());
  kc::QAddArgs a{nullptr,
                 nullptr,
                 nullptr,
                 static_cast<int32_t>(p.zp_a),
                 p.mult_a,
                 static_cast<int32_t>(p.zp_b),
                 p.mult_b,
                 static_cast<int32_t>(p.zp_out),
                 static_cast<int32_t>(p.lo),
                 static_cast<int32_t>(p.hi)};
  return MakeDeviceStep<kc::QAddArgs>(a, [](const kc::QAddArgs& s, const DeviceRunContext& c) {
    kc::QAddArgs a = s;
    a.a = c.in<int8_t>(0);
    a.b = c.in<int8_t>(1);
    a.y = c.out<int8_t>(0);
    return Launch<kc::QAddBody>(c, c.in_elements(0), a, "QAddBody");
  });
}

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareQLut(const DevicePrepareContext& c) {
  QCC_RETURN_IF_ERROR(c.Decode<NoStepParams>().status());
  return MakeDeviceStep<NoStepParams>({}, [](const NoStepParams&, const DeviceRunContext& c) {
    // The table is the step's weight: its device copy is in the engine's weight section.
    return Launch<kc::QLutBody>(c, c.in_elements(0),
                                {c.in<int8_t>(0), c.out<int8_t>(0), c.in<int8_t>(1)}, "QLutBody");
  });
}

// ---- Pools ----

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareQMaxPool(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const PoolStepParams p, c.Decode<PoolStepParams>());
  return MakeDeviceStep<PoolStepParams>(p, [](const PoolStepParams& s, const DeviceRunContext& c) {
    return Launch<kc::QMaxPoolBody>(c, c.out_elements(0),
                                    {c.in<int8_t>(0), c.out<int8_t>(0), PoolWindowAt(s, c)},
                                    "QMaxPoolBody");
  });
}

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareQAveragePool(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const QAveragePoolStepParams p, c.Decode<QAveragePoolStepParams>());
  return MakeDeviceStep<QAveragePoolStepParams>(
      p, [](const QAveragePoolStepParams& s, const DeviceRunContext& c) {
        kc::QAveragePoolArgs a{c.in<int8_t>(0),
                               c.out<int8_t>(0),
                               PoolWindowAt(s.pool, c),
                               static_cast<int32_t>(s.count_include_pad),
                               static_cast<int32_t>(s.zp_in),
                               s.multiplier,
                               static_cast<int32_t>(s.zp_out),
                               static_cast<int32_t>(s.lo),
                               static_cast<int32_t>(s.hi)};
        return Launch<kc::QAveragePoolBody>(c, c.out_elements(0), a, "QAveragePoolBody");
      });
}

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareQGlobalAveragePool(
    const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const QAveragePoolStepParams p, c.Decode<QAveragePoolStepParams>());
  return MakeDeviceStep<QAveragePoolStepParams>(
      p, [](const QAveragePoolStepParams& s, const DeviceRunContext& c) {
        const int64_t planes = c.in_extent(0, 0) * c.in_extent(0, 1);
        const int64_t size = planes == 0 ? 0 : c.in_elements(0) / planes;
        kc::QGlobalAveragePoolArgs a{c.in<int8_t>(0),
                                     c.out<int8_t>(0),
                                     size,
                                     static_cast<int32_t>(s.zp_in),
                                     s.multiplier,
                                     static_cast<int32_t>(s.zp_out),
                                     static_cast<int32_t>(s.lo),
                                     static_cast<int32_t>(s.hi)};
        return Launch<kc::QGlobalAveragePoolBody>(c, planes, a, "QGlobalAveragePoolBody");
      });
}

// ---- QConcat ----

struct QConcatState {
  int64_t axis = 0;
  QConcatStepParams p;
};

absl::Status EnqueueQConcat(const QConcatState& s, const DeviceRunContext& c) {
  const PlanBuffer& y = c.plan->buffers[c.step->outputs[0]];
  int64_t outer = 1, out_row = 1;
  for (size_t a = 0; a < y.dims.size(); ++a) {
    (static_cast<int64_t>(a) < s.axis ? outer : out_row) *= ExtentAt(y, a, c.batch);
  }
  if (outer == 0 || out_row == 0) return absl::OkStatus();
  int64_t offset = 0;
  for (size_t i = 0; i < c.step->inputs.size(); ++i) {
    const int64_t chunk = c.in_elements(i) / outer;
    // An input computed in place (its slice of the output, a batch-1 plan's concat) is there.
    const bool copy = s.p.multipliers[i] == 1.0f && s.p.zp_in[i] == s.p.zp_out;
    if (copy && outer == 1 && c.in<int8_t>(i) == c.out<int8_t>(0) + offset) {
      offset += chunk;
      continue;
    }
    kc::QConcatArgs a{c.in<int8_t>(i),
                      c.out<int8_t>(0),
                      chunk,
                      out_row,
                      offset,
                      static_cast<int32_t>(s.p.zp_in[i]),
                      s.p.multipliers[i],
                      static_cast<int32_t>(s.p.zp_out)};
    QCC_RETURN_IF_ERROR(Launch<kc::QConcatBody>(c, outer * chunk, a, "QConcatBody"));
    offset += chunk;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DeviceStep>> PrepareQConcat(const DevicePrepareContext& c) {
  QCC_ASSIGN_OR_RETURN(const QConcatStepParams p, c.Decode<QConcatStepParams>());
  const int64_t rank = static_cast<int64_t>(c.input(0).dims.size());
  QConcatState s;
  s.axis = p.axis < 0 ? p.axis + rank : p.axis;
  s.p = p;
  return MakeDeviceStep<QConcatState>(s, EnqueueQConcat);
}

}  // namespace

void RegisterDeviceInt8Steps(DeviceStepRegistry& r) {
  r.Add(StepKind::kQuantize, PrepareQuantize);
  r.Add(StepKind::kDequantize, PrepareDequantize);
  r.Add(StepKind::kRequantize, PrepareRequantize);
  r.Add(StepKind::kQConv, PrepareQConv);
  r.Add(StepKind::kQGemm, PrepareQGemm);
  r.Add(StepKind::kQAdd, PrepareQAdd);
  r.Add(StepKind::kQMaxPool, PrepareQMaxPool);
  r.Add(StepKind::kQAveragePool, PrepareQAveragePool);
  r.Add(StepKind::kQGlobalAveragePool, PrepareQGlobalAveragePool);
  r.Add(StepKind::kQLut, PrepareQLut);
  r.Add(StepKind::kQConcat, PrepareQConcat);
}

}  // namespace qcc::runtime::cuda_exec
