// CudaEngine on a CUDA device against the CPU runtime (the oracle): small hand-built plans for
// every step kind, int8 outputs bit for bit and float outputs within 1e-4 relative, at two
// batches of a dynamic-batch plan; concurrency (4 threads x 25 runs, one context each);
// CUDA Graph replay; the device step observer; Enqueue's shape errors. Skipped without a device.
#include <array>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "backend_cuda/cuda_info.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/cuda/cuda_engine.h"
#include "runtime/step_exec.h"
#include "support/float16.h"
#include "tests/runtime/engine_test_network.h"
#include "tests/runtime/engine_test_util.h"

namespace qcc::runtime {
namespace {

using namespace engine_testing;  // NOLINT: the plan builders

#define QCC_SKIP_WITHOUT_GPU() \
  if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA device: GPU test skipped"

std::shared_ptr<const CudaEngine> MakeCudaEngine(const Plan& plan, CudaEngineOptions options = {}) {
  absl::StatusOr<std::shared_ptr<const CudaEngine>> engine =
      CudaEngine::Create(RoundTrip(plan), options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? *engine : nullptr;
}

std::vector<Tensor> RunOnGpu(const CudaEngine& engine, const std::vector<Tensor>& inputs) {
  absl::StatusOr<std::unique_ptr<CudaExecutionContext>> ctx = engine.CreateContext();
  EXPECT_TRUE(ctx.ok()) << ctx.status();
  if (!ctx.ok()) return {};
  absl::StatusOr<std::vector<Tensor>> out = (*ctx)->Run(inputs);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? std::move(*out) : std::vector<Tensor>{};
}

/// Every output of `plan` on the GPU equals the CPU runtime's: bit for bit for integer (and
/// f16) outputs or when `exact`, within 1e-4 relative for f32 otherwise. `make_inputs(batch)`
/// gives the inputs at a batch; the plan runs at its batch_max and batch_min.
template <typename MakeInputs>
void ExpectGpuMatchesCpu(const Plan& plan, MakeInputs make_inputs, bool exact = false) {
  std::shared_ptr<const CudaEngine> engine = MakeCudaEngine(plan);
  ASSERT_NE(engine, nullptr);
  for (int64_t batch : {plan.batch_max, plan.batch_min}) {
    SCOPED_TRACE(::testing::Message() << "batch " << batch);
    const std::vector<Tensor> inputs = make_inputs(batch);
    const std::vector<Tensor> want = RunPlan(plan, inputs);
    const std::vector<Tensor> got = RunOnGpu(*engine, inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "output " << i << " '" << plan.outputs[i].name << "'");
      if (exact || want[i].dtype() != kF32) {
        ExpectTensorsEqual(got[i], want[i]);
        EXPECT_TRUE(got[i].BitwiseEquals(want[i]));
      } else {
        ExpectTensorsNear(got[i], want[i], 1e-4);
      }
    }
  }
}

std::vector<float> RandomFloats(size_t n, uint64_t seed, float lo, float hi) {
  std::vector<float> v(n);
  TestRandom r(seed);
  for (float& x : v) x = r.Float(lo, hi);
  return v;
}

int64_t Out(int64_t in, int64_t k, int64_t stride, int64_t pb, int64_t pe, int64_t dil = 1,
            bool ceil_mode = false) {
  return WindowOutExtent(in, k, stride, pb, pe, dil, ceil_mode);
}

// ---- int8 kinds ----

TEST(CudaEngineGpuTest, QuantizeDequantizeRequantize) {
  QCC_SKIP_WITHOUT_GPU();
  PlanBuilder b(1, 3);
  const int32_t x = b.Input("x", kF32, {-1, 3, 5, 7});
  const int32_t xq = b.Input("xq", kI8, {-1, 3, 5, 7});
  const int32_t q = b.Output("q", kI8, {-1, 3, 5, 7});
  const int32_t d = b.Output("d", kF32, {-1, 3, 5, 7});
  const int32_t r = b.Output("r", kI8, {-1, 3, 5, 7});
  b.Step(StepKind::kQuantize, "quant", {x}, {q}, QuantizeParams{0.021f, -3});
  b.Step(StepKind::kDequantize, "dequant", {xq}, {d}, QuantizeParams{0.037f, 5});
  b.Step(StepKind::kRequantize, "requant", {xq}, {r}, RequantizeParams{0.73f, 5, -2, -100, 110});
  ExpectGpuMatchesCpu(
      b.plan(),
      [](int64_t n) {
        return std::vector<Tensor>{RandomFloat({n, 3, 5, 7}, 1, -3.0f, 3.0f),
                                   RandomInt8({n, 3, 5, 7}, 2)};
      },
      /*exact=*/true);
}

/// One QConv step: x i8 [-1, c, h, w], w [k, c/group, r, s]; `recorded` (if not kNone) is
/// the step's kernel choice, in a plan for target "cuda".
Plan QConvPlan(int64_t c, int64_t h, int64_t w, int64_t k, int64_t r, int64_t s,
               const ConvGeometry& g, CudaKernel recorded, uint64_t seed) {
  PlanBuilder b(1, 3);
  const int32_t x = b.Input("x", kI8, {-1, c, h, w});
  const int32_t wt = b.Weight("w", kI8, {k, c / g.group, r, s},
                              RandomVector<int8_t>(k * c / g.group * r * s, seed, -127, 127));
  const int32_t bias = b.Weight("b", kI32, {k}, RandomVector<int32_t>(k, seed + 1, -900, 900));
  const int32_t mult = b.Weight("m", kF32, {k}, RandomFloats(k, seed + 2, 0.001f, 0.02f));
  const int64_t oh = Out(h, r, g.stride_h, g.pad_top, g.pad_bottom, g.dilation_h);
  const int64_t ow = Out(w, s, g.stride_w, g.pad_left, g.pad_right, g.dilation_w);
  const int32_t y = b.Output("y", kI8, {-1, k, oh, ow});
  QConvStepParams p;
  p.geometry = g;
  p.pad_value = -3;
  p.zp_out = 4;
  p.lo = -100;
  p.hi = 120;
  b.Step(StepKind::kQConv, "qconv", {x, wt, bias, mult}, {y}, p);
  if (recorded != CudaKernel::kNone) {
    b.plan().target = std::string(kCudaTarget);
    b.plan().steps[0].cuda_kernel = recorded;
  }
  return b.plan();
}

ConvGeometry Geometry(int64_t stride, int64_t pad, int64_t dilation, int64_t group) {
  ConvGeometry g;
  g.stride_h = g.stride_w = stride;
  g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = pad;
  g.dilation_h = g.dilation_w = dilation;
  g.group = group;
  return g;
}

TEST(CudaEngineGpuTest, QConvIm2colImmaAndDirect) {
  QCC_SKIP_WITHOUT_GPU();
  struct Case {
    int64_t c, h, w, k, r, s;
    ConvGeometry g;
    CudaKernel recorded;
  };
  ConvGeometry asym = Geometry(2, 1, 1, 1);
  asym.pad_bottom = 0;
  asym.stride_w = 1;
  const Case cases[] = {
      {5, 9, 11, 6, 3, 3, Geometry(2, 1, 1, 1), CudaKernel::kNone},  // im2col-imma, odd sizes
      {3, 8, 8, 8, 1, 1, Geometry(1, 0, 1, 1), CudaKernel::kNone},   // 1x1
      {7, 10, 9, 5, 3, 2, asym, CudaKernel::kNone},                  // asymmetric
      {4, 7, 7, 4, 3, 3, Geometry(1, 1, 1, 4), CudaKernel::kNone},   // depthwise: direct
      {4, 9, 9, 6, 3, 3, Geometry(1, 2, 2, 2), CudaKernel::kNone},   // grouped, dilated: direct
      // grouped on batched IMMA; group 1 direct
      {4, 9, 9, 6, 3, 3, Geometry(1, 2, 2, 2), CudaKernel::kIm2colImma},
      {5, 9, 11, 6, 3, 3, Geometry(2, 1, 1, 1), CudaKernel::kDirectQConv},
  };
  uint64_t seed = 10;
  for (const Case& t : cases) {
    SCOPED_TRACE(::testing::Message()
                 << "conv c" << t.c << " k" << t.k << " " << t.r << "x" << t.s << " group "
                 << t.g.group << " " << CudaKernelName(t.recorded));
    const Plan plan = QConvPlan(t.c, t.h, t.w, t.k, t.r, t.s, t.g, t.recorded, seed += 10);
    ExpectGpuMatchesCpu(plan, [&](int64_t n) {
      return std::vector<Tensor>{RandomInt8({n, t.c, t.h, t.w}, seed + 5)};
    });
  }
}

TEST(CudaEngineGpuTest, QGemmPaddedAndUnpaddedReduction) {
  QCC_SKIP_WITHOUT_GPU();
  for (const auto& [rows, n, k] : {std::array<int64_t, 3>{1, 7, 13}, {2, 5, 16}, {3, 33, 1}}) {
    SCOPED_TRACE(::testing::Message() << "rows " << rows << " n " << n << " k " << k);
    PlanBuilder b(1, 4);
    const int32_t a = b.Input("a", kI8, {-1, rows, k});
    const int32_t w = b.Weight("w", kI8, {n, k}, RandomVector<int8_t>(n * k, 41, -127, 127));
    const int32_t bias = b.Weight("b", kI32, {n}, RandomVector<int32_t>(n, 42, -2000, 2000));
    const int32_t m = b.Weight("m", kF32, {n}, RandomFloats(n, 43, 0.002f, 0.03f));
    const int32_t y = b.Output("y", kI8, {-1, rows, n});
    b.Step(StepKind::kQGemm, "qgemm", {a, w, bias, m}, {y}, QGemmStepParams{-7, -128, 100});
    ExpectGpuMatchesCpu(b.plan(), [&](int64_t batch) {
      return std::vector<Tensor>{RandomInt8({batch, rows, k}, 44)};
    });
  }
}

TEST(CudaEngineGpuTest, QAddQLutAndQConcat) {
  QCC_SKIP_WITHOUT_GPU();
  PlanBuilder b(1, 3);
  const int32_t x0 = b.Input("x0", kI8, {-1, 3, 4, 5});
  const int32_t x1 = b.Input("x1", kI8, {-1, 3, 4, 5});
  const int32_t x2 = b.Input("x2", kI8, {-1, 2, 4, 5});
  const int32_t table = b.Weight("lut", kI8, {256}, RandomVector<int8_t>(256, 51, -128, 127));
  const int32_t sum = b.Output("sum", kI8, {-1, 3, 4, 5});
  const int32_t lut = b.Output("lut_out", kI8, {-1, 3, 4, 5});
  const int32_t cat = b.Output("cat", kI8, {-1, 8, 4, 5});
  QAddStepParams add;
  add.mult_a = 0.61f, add.mult_b = 1.3f, add.zp_a = -4, add.zp_b = 9, add.zp_out = 2, add.lo = -5;
  b.Step(StepKind::kQAdd, "qadd", {x0, x1}, {sum}, add);
  b.Step(StepKind::kQLut, "qlut", {x0, table}, {lut}, NoStepParams{});
  QConcatStepParams concat;
  concat.axis = 1;
  concat.multipliers = {1.0f, 0.7f, 1.9f};
  concat.zp_in = {3, -2, 0};
  concat.zp_out = 3;
  b.Step(StepKind::kQConcat, "qconcat", {x0, x1, x2}, {cat}, concat);
  ExpectGpuMatchesCpu(b.plan(), [](int64_t n) {
    return std::vector<Tensor>{RandomInt8({n, 3, 4, 5}, 52), RandomInt8({n, 3, 4, 5}, 53),
                               RandomInt8({n, 2, 4, 5}, 54)};
  });
}

PoolStepParams Window(int64_t kh, int64_t kw, int64_t stride, int64_t pad, int64_t ceil_mode) {
  PoolStepParams w;
  w.kernel_h = kh, w.kernel_w = kw, w.stride_h = w.stride_w = stride;
  w.pad_top = w.pad_left = pad;
  w.pad_bottom = w.pad_right = pad;
  w.ceil_mode = ceil_mode;
  return w;
}

TEST(CudaEngineGpuTest, Int8Pools) {
  QCC_SKIP_WITHOUT_GPU();
  for (const PoolStepParams& w :
       {Window(3, 3, 2, 1, 0), Window(3, 2, 2, 1, 1), Window(2, 2, 2, 0, 0)}) {
    PlanBuilder b(1, 3);
    const int32_t x = b.Input("x", kI8, {-1, 3, 9, 10});
    const int64_t oh = Out(9, w.kernel_h, w.stride_h, w.pad_top, w.pad_bottom, 1, w.ceil_mode);
    const int64_t ow = Out(10, w.kernel_w, w.stride_w, w.pad_left, w.pad_right, 1, w.ceil_mode);
    const int32_t ymax = b.Output("max", kI8, {-1, 3, oh, ow});
    const int32_t yavg = b.Output("avg", kI8, {-1, 3, oh, ow});
    const int32_t yavg_pad = b.Output("avg_pad", kI8, {-1, 3, oh, ow});
    const int32_t ygap = b.Output("gap", kI8, {-1, 3, 1, 1});
    b.Step(StepKind::kQMaxPool, "max", {x}, {ymax}, w);
    QAveragePoolStepParams avg;
    avg.pool = w;
    avg.multiplier = 0.9f, avg.zp_in = -3, avg.zp_out = 6, avg.lo = -120;
    b.Step(StepKind::kQAveragePool, "avg", {x}, {yavg}, avg);
    avg.count_include_pad = 1;
    b.Step(StepKind::kQAveragePool, "avg_pad", {x}, {yavg_pad}, avg);
    b.Step(StepKind::kQGlobalAveragePool, "gap", {x}, {ygap}, avg);
    ExpectGpuMatchesCpu(b.plan(), [](int64_t n) {
      return std::vector<Tensor>{RandomInt8({n, 3, 9, 10}, 61)};
    });
  }
}

// ---- movement ----

TEST(CudaEngineGpuTest, ReshapeTransposeSliceAndPad) {
  QCC_SKIP_WITHOUT_GPU();
  PlanBuilder b(1, 3);
  const int32_t xi = b.Input("xi", kI8, {-1, 6, 7});
  const int32_t xf = b.Input("xf", kF32, {-1, 3, 4, 5});
  const int32_t reshaped = b.Output("reshaped", kI8, {-1, 42});
  const int32_t transposed = b.Output("transposed", kF32, {-1, 4, 5, 3});
  const int32_t sliced = b.Output("sliced", kI8, {-1, 3, 2});
  const int32_t padded_i8 = b.Output("padded_i8", kI8, {-1, 9, 8});
  const int32_t padded_f32 = b.Output("padded_f32", kF32, {-1, 4, 7, 6});
  b.Step(StepKind::kReshape, "reshape", {xi}, {reshaped}, NoStepParams{});
  b.Step(StepKind::kTranspose, "transpose", {xf}, {transposed}, TransposeStepParams{{0, 2, 3, 1}});
  b.Step(StepKind::kSlice, "slice", {xi}, {sliced}, SliceStepParams{{0, 5, 1}, {1, -2, 3}});
  PadStepParams pi;
  pi.pads = {0, 1, 0, 0, 2, 1};
  pi.int_value = -7;
  b.Step(StepKind::kPad, "pad_i8", {xi}, {padded_i8}, pi);
  PadStepParams pf;
  pf.pads = {0, 0, 1, 1, 0, 1, 2, 0};
  pf.value = 1.5f;
  b.Step(StepKind::kPad, "pad_f32", {xf}, {padded_f32}, pf);
  ExpectGpuMatchesCpu(
      b.plan(),
      [](int64_t n) {
        return std::vector<Tensor>{RandomInt8({n, 6, 7}, 71), RandomFloat({n, 3, 4, 5}, 72)};
      },
      /*exact=*/true);
}

TEST(CudaEngineGpuTest, CastF16ToF32AndBack) {
  QCC_SKIP_WITHOUT_GPU();
  PlanBuilder b(1, 2);
  const int32_t x = b.Input("x", DType::kFloat16, {-1, 37});
  const int32_t f = b.Arena("f", kF32, {-1, 37});
  const int32_t r = b.Arena("r", kF32, {-1, 37});
  const int32_t y = b.Output("y", DType::kFloat16, {-1, 37});
  const int32_t wide = b.Output("wide", kF32, {-1, 37});
  b.Step(StepKind::kCast, "widen", {x}, {f}, NoStepParams{});
  UnaryStepParams relu;
  b.Step(StepKind::kUnary, "relu", {f}, {r}, relu);
  b.Step(StepKind::kCast, "narrow", {r}, {y}, NoStepParams{});
  b.Step(StepKind::kCast, "widen2", {x}, {wide}, NoStepParams{});
  ExpectGpuMatchesCpu(
      b.plan(),
      [](int64_t n) {
        Tensor t(DType::kFloat16, {n, 37});
        TestRandom r(81);
        for (int64_t i = 0; i < t.numel(); ++i) {
          t.data<uint16_t>()[i] = FloatToHalf(r.Float(-70000.0f, 70000.0f) * 0.001f);
        }
        return std::vector<Tensor>{t};
      },
      /*exact=*/true);
}

// ---- fp32 kinds ----

TEST(CudaEngineGpuTest, ConvIm2colGemmAndDirect) {
  QCC_SKIP_WITHOUT_GPU();
  struct Case {
    int64_t c, k, r;
    ConvGeometry g;
    bool bias;
    CudaKernel recorded = CudaKernel::kNone;
  };
  const Case cases[] = {
      {5, 6, 3, Geometry(2, 1, 1, 1), true},   // im2col + GEMM
      {4, 4, 3, Geometry(1, 1, 1, 4), true},   // depthwise: direct
      {4, 6, 3, Geometry(1, 2, 2, 2), false},  // grouped, dilated: direct
      {3, 8, 1, Geometry(1, 0, 1, 1), false},  // 1x1: the GEMM reads the input itself
      {3, 8, 1, Geometry(2, 0, 1, 1), true},   // 1x1 stride 2: im2col
      // grouped convs on GEMMs (one per group; the 1x1 one reading the input at group offsets),
      // and a group-1 conv on the direct kernel
      {4, 6, 3, Geometry(1, 2, 2, 2), true, CudaKernel::kIm2colGemm},
      {6, 9, 1, Geometry(1, 0, 1, 3), true, CudaKernel::kIm2colGemm},
      {5, 6, 3, Geometry(2, 1, 1, 1), true, CudaKernel::kDirectConv},
  };
  for (const Case& t : cases) {
    SCOPED_TRACE(::testing::Message()
                 << "conv c" << t.c << " k" << t.k << " " << t.r << "x" << t.r << " group "
                 << t.g.group << " stride " << t.g.stride_h << " " << CudaKernelName(t.recorded));
    PlanBuilder b(1, 3);
    const int64_t h = 9, w = 10;
    const int32_t x = b.Input("x", kF32, {-1, t.c, h, w});
    const int32_t wt = b.Weight("w", kF32, {t.k, t.c / t.g.group, t.r, t.r},
                                RandomFloats(t.k * t.c / t.g.group * t.r * t.r, 91, -1, 1));
    const int64_t oh = Out(h, t.r, t.g.stride_h, t.g.pad_top, t.g.pad_bottom, t.g.dilation_h);
    const int64_t ow = Out(w, t.r, t.g.stride_w, t.g.pad_left, t.g.pad_right, t.g.dilation_w);
    const int32_t y = b.Output("y", kF32, {-1, t.k, oh, ow});
    ConvStepParams p;
    p.geometry = t.g;
    p.activation.lo = -0.5f;
    p.activation.hi = 2.0f;
    p.activation.negative_slope = 0.1f;
    std::vector<int32_t> inputs = {x, wt};
    if (t.bias) inputs.push_back(b.Weight("b", kF32, {t.k}, RandomFloats(t.k, 92, -1, 1)));
    b.Step(StepKind::kConv, "conv", inputs, {y}, p);
    if (t.recorded != CudaKernel::kNone) {
      b.plan().target = std::string(kCudaTarget);
      b.plan().steps[0].cuda_kernel = t.recorded;
    }
    ExpectGpuMatchesCpu(b.plan(), [&](int64_t n) {
      return std::vector<Tensor>{RandomFloat({n, t.c, h, w}, 93)};
    });
  }
}

// An fp16 plan's group-1 convs run as cuBLASLt fp16 GEMMs with fp32 accumulation. Weights and
// inputs are fp16 values there (the plan stores f16 weights, its Cast steps round activations),
// so the products are exact in fp32 and the GPU matches the CPU's fp32 to summation order.
TEST(CudaEngineGpuTest, Fp16PlanConvRunsOnHalfGemmWithFp32Accumulation) {
  QCC_SKIP_WITHOUT_GPU();
  auto half_values = [](std::vector<float> v) {
    for (float& x : v) x = HalfToFloat(FloatToHalf(x));
    return v;
  };
  PlanBuilder b(1, 4);
  const int64_t c = 13, k = 10, h = 11, w = 9;  // Kred 117 and K 10: padded to multiples of 8
  const int32_t x = b.Input("x", kF32, {-1, c, h, w});
  const int32_t wt =
      b.Weight("w", kF32, {k, c, 3, 3}, half_values(RandomFloats(k * c * 9, 95, -1, 1)));
  const int32_t bias = b.Weight("b", kF32, {k}, RandomFloats(k, 96, -1, 1));
  const int32_t y = b.Output("y", kF32, {-1, k, h, w});
  ConvStepParams p;
  p.geometry = Geometry(1, 1, 1, 1);
  b.Step(StepKind::kConv, "conv", {x, wt, bias}, {y}, p);
  Plan plan = b.plan();
  // The compiler records the fp16 GEMM for a conv of fp16 weights (the engine sees them widened).
  plan.target = std::string(kCudaTarget);
  plan.steps[0].cuda_kernel = CudaKernel::kIm2colHalfGemm;
  std::shared_ptr<const CudaEngine> engine = MakeCudaEngine(plan);
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->step_kernel(0), "im2col-gemm-fp16");
  ExpectGpuMatchesCpu(plan, [&](int64_t n) {
    Tensor t = RandomFloat({n, c, h, w}, 97);
    float* d = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) d[i] = HalfToFloat(FloatToHalf(d[i]));
    return std::vector<Tensor>{std::move(t)};
  });
}

TEST(CudaEngineGpuTest, GemmTransposesAlphaBetaAndBroadcastC) {
  QCC_SKIP_WITHOUT_GPU();
  {
    // A [N, 6] x B^T (B [9, 6] weight) + C [9], ReLU: the classifier layout.
    PlanBuilder b(1, 4);
    const int32_t a = b.Input("a", kF32, {-1, 6});
    const int32_t w = b.Weight("w", kF32, {9, 6}, RandomFloats(54, 101, -1, 1));
    const int32_t c = b.Weight("c", kF32, {9}, RandomFloats(9, 102, -1, 1));
    const int32_t y = b.Output("y", kF32, {-1, 9});
    GemmStepParams p;
    p.trans_b = 1;
    p.activation.lo = 0.0f;
    b.Step(StepKind::kGemm, "fc", {a, w, c}, {y}, p);
    ExpectGpuMatchesCpu(b.plan(), [](int64_t n) {
      return std::vector<Tensor>{RandomFloat({n, 6}, 103)};
    });
  }
  {
    // A^T (A [5, 3]) x B (B [5, 4]) with alpha 0.5, beta 2 and C [3, 1].
    PlanBuilder b(1, 1);
    const int32_t a = b.Input("a", kF32, {5, 3});
    const int32_t bb = b.Input("b", kF32, {5, 4});
    const int32_t c = b.Weight("c", kF32, {3, 1}, RandomFloats(3, 104, -1, 1));
    const int32_t y = b.Output("y", kF32, {3, 4});
    GemmStepParams p;
    p.trans_a = 1;
    p.alpha = 0.5f;
    p.beta = 2.0f;
    b.Step(StepKind::kGemm, "gemm", {a, bb, c}, {y}, p);
    ExpectGpuMatchesCpu(b.plan(), [](int64_t) {
      return std::vector<Tensor>{RandomFloat({5, 3}, 105), RandomFloat({5, 4}, 106)};
    });
  }
}

TEST(CudaEngineGpuTest, SoftmaxUnaryAndBinary) {
  QCC_SKIP_WITHOUT_GPU();
  PlanBuilder b(1, 3);
  const int32_t x = b.Input("x", kF32, {-1, 4, 3, 5});
  const int32_t z = b.Input("z", kF32, {3, 1});
  std::vector<int32_t> outputs;
  const int32_t s_last = b.Output("softmax_last", kF32, {-1, 4, 3, 5});
  const int32_t s_mid = b.Output("softmax_mid", kF32, {-1, 4, 3, 5});
  b.Step(StepKind::kSoftmax, "softmax_last", {x}, {s_last}, AxisStepParams{-1});
  b.Step(StepKind::kSoftmax, "softmax_mid", {x}, {s_mid}, AxisStepParams{1});
  for (int64_t op = 0; op <= static_cast<int64_t>(UnaryFn::kLeakyRelu); ++op) {
    const int32_t y = b.Output("unary" + std::to_string(op), kF32, {-1, 4, 3, 5});
    UnaryStepParams p;
    p.op = op;
    p.alpha = op == static_cast<int64_t>(UnaryFn::kClip) ? -0.5f : 0.2f;
    p.beta = op == static_cast<int64_t>(UnaryFn::kClip) ? 0.75f : 0.5f;
    b.Step(StepKind::kUnary, "unary" + std::to_string(op), {x}, {y}, p);
  }
  for (int64_t op = 0; op <= static_cast<int64_t>(BinaryOp::kDiv); ++op) {
    const int32_t y = b.Output("binary" + std::to_string(op), kF32, {-1, 4, 3, 5});
    BinaryStepParams p;
    p.op = op;
    p.activation.lo = -1.0f;
    p.activation.hi = 1.5f;
    p.activation.negative_slope = 0.1f;
    b.Step(StepKind::kBinary, "binary" + std::to_string(op), {x, z}, {y}, p);
  }
  ExpectGpuMatchesCpu(b.plan(), [](int64_t n) {
    return std::vector<Tensor>{RandomFloat({n, 4, 3, 5}, 111, -4.0f, 4.0f),
                               RandomFloat({3, 1}, 112, 0.5f, 2.0f)};
  });
}

TEST(CudaEngineGpuTest, FloatPoolsAndConcat) {
  QCC_SKIP_WITHOUT_GPU();
  const PoolStepParams w = Window(3, 2, 2, 1, 1);
  PlanBuilder b(1, 3);
  const int32_t x = b.Input("x", kF32, {-1, 3, 9, 10});
  const int32_t x1 = b.Input("x1", kF32, {-1, 2, 9, 10});
  const int64_t oh = Out(9, w.kernel_h, w.stride_h, w.pad_top, w.pad_bottom, 1, true);
  const int64_t ow = Out(10, w.kernel_w, w.stride_w, w.pad_left, w.pad_right, 1, true);
  const int32_t ymax = b.Output("max", kF32, {-1, 3, oh, ow});
  const int32_t yavg = b.Output("avg", kF32, {-1, 3, oh, ow});
  const int32_t ygap = b.Output("gap", kF32, {-1, 3, 1, 1});
  const int32_t ycat = b.Output("cat", kF32, {-1, 5, 9, 10});
  b.Step(StepKind::kMaxPool, "max", {x}, {ymax}, w);
  b.Step(StepKind::kAveragePool, "avg", {x}, {yavg}, AveragePoolStepParams{w, 1});
  b.Step(StepKind::kGlobalAveragePool, "gap", {x}, {ygap}, NoStepParams{});
  b.Step(StepKind::kConcat, "concat", {x, x1}, {ycat}, AxisStepParams{1});
  ExpectGpuMatchesCpu(b.plan(), [](int64_t n) {
    return std::vector<Tensor>{RandomFloat({n, 3, 9, 10}, 121), RandomFloat({n, 2, 9, 10}, 122)};
  });
}

// ---- whole plans, contexts, graphs, errors ----

TEST(CudaEngineGpuTest, Int8NetworkMatchesTheCpuRuntimeAtEveryBatch) {
  QCC_SKIP_WITHOUT_GPU();
  const Plan plan = MakeInt8Network();
  std::shared_ptr<const CudaEngine> engine = MakeCudaEngine(plan);
  ASSERT_NE(engine, nullptr);
  for (int64_t n = plan.batch_min; n <= plan.batch_max; ++n) {
    const std::vector<Tensor> inputs = {RandomFloat({n, 3, 8, 8}, 200 + n)};
    const std::vector<Tensor> want = RunPlan(plan, inputs);
    const std::vector<Tensor> got = RunOnGpu(*engine, inputs);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(got[0].BitwiseEquals(want[0])) << "batch " << n;
  }
}

TEST(CudaEngineGpuTest, FourThreadsWithOwnContextsGiveIdenticalResults) {
  QCC_SKIP_WITHOUT_GPU();
  const Plan plan = MakeInt8Network();
  std::shared_ptr<const CudaEngine> engine = MakeCudaEngine(plan);
  ASSERT_NE(engine, nullptr);
  const std::vector<Tensor> inputs = {RandomFloat({4, 3, 8, 8}, 301)};
  const std::vector<Tensor> want = RunPlan(plan, inputs);
  ASSERT_EQ(want.size(), 1u);
  std::vector<int> mismatches(4, 0), failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      absl::StatusOr<std::unique_ptr<CudaExecutionContext>> ctx = engine->CreateContext();
      if (!ctx.ok()) {
        failures[t] = 25;
        return;
      }
      for (int run = 0; run < 25; ++run) {
        absl::StatusOr<std::vector<Tensor>> out = (*ctx)->Run(inputs);
        if (!out.ok() || out->size() != 1) {
          ++failures[t];
        } else if (!(*out)[0].BitwiseEquals(want[0])) {
          ++mismatches[t];
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(failures[t], 0) << "thread " << t;
    EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  }
}

TEST(CudaEngineGpuTest, CudaGraphReplayGivesTheSameResults) {
  QCC_SKIP_WITHOUT_GPU();
  const Plan plan = MakeInt8Network();
  std::shared_ptr<const CudaEngine> engine = MakeCudaEngine(plan, CudaEngineOptions{0, true});
  ASSERT_NE(engine, nullptr);
  absl::StatusOr<std::unique_ptr<CudaExecutionContext>> ctx = engine->CreateContext();
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  for (int round = 0; round < 3; ++round) {
    for (int64_t n : {int64_t{1}, int64_t{3}}) {
      // New data each round through the same staging pointers: the replayed graph reads it.
      const std::vector<Tensor> inputs = {RandomFloat({n, 3, 8, 8}, 400 + 10 * round + n)};
      const std::vector<Tensor> want = RunPlan(plan, inputs);
      absl::StatusOr<std::vector<Tensor>> got = (*ctx)->Run(inputs);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_TRUE((*got)[0].BitwiseEquals(want[0])) << "round " << round << " batch " << n;
    }
  }
}

TEST(CudaEngineGpuTest, DeviceStepObserverSeesEveryStepOutput) {
  QCC_SKIP_WITHOUT_GPU();
  const Plan plan = MakeInt8Network();
  std::shared_ptr<const CudaEngine> engine = MakeCudaEngine(plan, CudaEngineOptions{0, true});
  ASSERT_NE(engine, nullptr);
  absl::StatusOr<std::unique_ptr<CudaExecutionContext>> ctx = engine->CreateContext();
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  std::vector<size_t> steps;
  std::vector<Dims> dims;
  (*ctx)->set_device_step_observer(
      [&](size_t step, int32_t buffer, const void* data, DType dtype, const Dims& d, void* stream) {
        steps.push_back(step);
        dims.push_back(d);
        EXPECT_NE(data, nullptr);
        EXPECT_EQ(stream, (*ctx)->stream());
        EXPECT_EQ(dtype, engine->plan().buffers[buffer].dtype);
      });
  ASSERT_TRUE((*ctx)->Run({RandomFloat({2, 3, 8, 8}, 501)}).ok());
  ASSERT_EQ(steps.size(), engine->plan().steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i], i);
    EXPECT_EQ(dims[i][0], 2);
  }
}

TEST(CudaEngineGpuTest, EnqueueRejectsWrongShapesAndBatches) {
  QCC_SKIP_WITHOUT_GPU();
  const Plan plan = MakeInt8Network();  // x f32 [-1,3,8,8] -> logits f32 [-1,10], batch 1..4
  std::shared_ptr<const CudaEngine> engine = MakeCudaEngine(plan);
  ASSERT_NE(engine, nullptr);
  absl::StatusOr<std::unique_ptr<CudaExecutionContext>> ctx = engine->CreateContext();
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  // Any non-null addresses: the checks come before anything touches them.
  void* p = reinterpret_cast<void*>(uintptr_t{256});
  const DeviceTensorRef good_in{p, kF32, {2, 3, 8, 8}}, good_out{p, kF32, {2, 10}};
  const std::vector<std::pair<std::vector<DeviceTensorRef>, std::vector<DeviceTensorRef>>> bad = {
      {{{p, kF32, {2, 3, 8, 9}}}, {good_out}},  // wrong extent
      {{{p, kI8, {2, 3, 8, 8}}}, {good_out}},   // wrong dtype
      {{{p, kF32, {3, 3, 8, 8}}}, {good_out}},  // batch differs from the argument
      {{{p, kF32, {2, 3, 8}}}, {good_out}},     // wrong rank
      {{good_in}, {{p, kF32, {2, 11}}}},        // wrong output
      {{}, {good_out}},                         // missing input
      {{{nullptr, kF32, {2, 3, 8, 8}}}, {good_out}},
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    const absl::Status s = (*ctx)->Enqueue(bad[i].first, bad[i].second, 2);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << "case " << i << ": " << s;
  }
  const absl::Status batch = (*ctx)->Enqueue({{p, kF32, {5, 3, 8, 8}}}, {{p, kF32, {5, 10}}}, 5);
  EXPECT_EQ(batch.code(), absl::StatusCode::kInvalidArgument) << batch;
  // The context still works after rejected Enqueues.
  EXPECT_TRUE((*ctx)->Run({RandomFloat({2, 3, 8, 8}, 601)}).ok());
}

TEST(CudaEngineGpuTest, EveryStepKindHasACudaKernel) {
  QCC_SKIP_WITHOUT_GPU();
  // The plans above cover every kind; this names the kernel paths chosen for the int8 network.
  std::shared_ptr<const CudaEngine> engine = MakeCudaEngine(MakeInt8Network());
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(engine->step_kernel(1), "im2col-imma");
  EXPECT_EQ(engine->step_kernel(5), "alias");
  EXPECT_EQ(engine->step_kernel(6), "imma");
  EXPECT_GT(engine->weight_bytes(), 0u);
  EXPECT_FALSE(engine->device_name().empty());
}

// A cpu plan's Conv with the shortcut Add fused in (a fourth input, the residual) is refused with
// a clear error naming the step, never run without its residual.
TEST(CudaEngineGpuTest, AConvWithAFusedResidualIsRefused) {
  QCC_SKIP_WITHOUT_GPU();
  PlanBuilder b(1, 2);
  const int32_t x = b.Input("x", DType::kFloat32, {-1, 4, 5, 5});
  const int32_t r = b.Input("r", DType::kFloat32, {-1, 4, 5, 5});
  const int32_t w = b.Weight("w", DType::kFloat32, {4, 4, 3, 3}, std::vector<float>(144, 0.25f));
  const int32_t y = b.Output("y", DType::kFloat32, {-1, 4, 5, 5});
  ConvStepParams p;
  p.geometry.pad_top = p.geometry.pad_left = p.geometry.pad_bottom = p.geometry.pad_right = 1;
  b.Step(StepKind::kConv, "block.conv2", {x, w, -1, r}, {y}, p);
  const absl::StatusOr<std::shared_ptr<const CudaEngine>> engine =
      CudaEngine::Create(RoundTrip(b.plan()));
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.status().code(), absl::StatusCode::kUnimplemented) << engine.status();
  EXPECT_THAT(std::string(engine.status().message()), ::testing::HasSubstr("fused residual"));
  EXPECT_THAT(std::string(engine.status().message()), ::testing::HasSubstr("'block.conv2'"));
}

}  // namespace
}  // namespace qcc::runtime
