// A small int8 network as a hand-built plan, and its step-by-step recomputation with the
// kernels' reference functions and the numerics contract written out, shared by the engine,
// concurrency and C API tests.
//
//   x f32 [-1,3,8,8] -Quantize-> q [-1,3,8,8] -QConv 3x3 pad 1 relu-> a [-1,8,8,8]
//                                             -QConv 1x1----------> b [-1,8,8,8]
//   QAdd(a, b) -> s -QGlobalAveragePool-> g [-1,8,1,1] -Reshape-> r [-1,8] -QGemm-> l [-1,10]
//   -Dequantize-> logits f32 [-1,10]
#ifndef QCC_TESTS_RUNTIME_ENGINE_TEST_NETWORK_H_
#define QCC_TESTS_RUNTIME_ENGINE_TEST_NETWORK_H_

#include <vector>

#include "kernels/cpu/qconv.h"
#include "kernels/cpu/qgemm.h"
#include "tests/runtime/engine_test_util.h"

namespace qcc::runtime::engine_testing {

struct Int8NetworkWeights {
  std::vector<int8_t> w1 = RandomVector<int8_t>(8 * 3 * 3 * 3, 101, -127, 127);
  std::vector<int32_t> b1 = RandomVector<int32_t>(8, 102, -400, 400);
  std::vector<float> m1 =
      std::vector<float>{0.011f, 0.012f, 0.013f, 0.010f, 0.009f, 0.014f, 0.015f, 0.008f};
  std::vector<int8_t> w2 = RandomVector<int8_t>(8 * 3, 103, -127, 127);
  std::vector<int32_t> b2 = RandomVector<int32_t>(8, 104, -100, 100);
  std::vector<float> m2 = std::vector<float>(8, 0.05f);
  std::vector<int8_t> wf = RandomVector<int8_t>(10 * 8, 105, -127, 127);
  std::vector<int32_t> bf = RandomVector<int32_t>(10, 106, -2000, 2000);
  std::vector<float> mf = std::vector<float>(10, 0.004f);
};

inline constexpr float kNetInScale = 0.02f;
inline constexpr float kNetOutScale = 0.1f;

inline QConvStepParams NetConv(int64_t pad, int64_t lo) {
  QConvStepParams p;
  p.geometry.pad_top = p.geometry.pad_left = p.geometry.pad_bottom = p.geometry.pad_right = pad;
  p.lo = lo;
  return p;
}

inline QAddStepParams NetAdd() {
  QAddStepParams p;
  p.mult_a = 0.6f, p.mult_b = 0.7f, p.zp_out = -5;
  return p;
}

inline QAveragePoolStepParams NetPool() {
  QAveragePoolStepParams p;
  p.multiplier = 1.1f, p.zp_in = -5, p.zp_out = 2;
  return p;
}

/// The network as a plan with real arena reuse (PlanArena).
inline Plan MakeInt8Network() {
  const Int8NetworkWeights w;
  PlanBuilder b(1, 4);
  const int32_t x = b.Input("x", DType::kFloat32, {-1, 3, 8, 8});
  const int32_t q = b.Arena("q", DType::kInt8, {-1, 3, 8, 8});
  const int32_t w1 = b.Weight("conv1.w", DType::kInt8, {8, 3, 3, 3}, w.w1);
  const int32_t b1 = b.Weight("conv1.b", DType::kInt32, {8}, w.b1);
  const int32_t m1 = b.Weight("conv1.m", DType::kFloat32, {8}, w.m1);
  const int32_t w2 = b.Weight("conv2.w", DType::kInt8, {8, 3, 1, 1}, w.w2);
  const int32_t b2 = b.Weight("conv2.b", DType::kInt32, {8}, w.b2);
  const int32_t m2 = b.Weight("conv2.m", DType::kFloat32, {8}, w.m2);
  const int32_t wf = b.Weight("fc.w", DType::kInt8, {10, 8}, w.wf);
  const int32_t bf = b.Weight("fc.b", DType::kInt32, {10}, w.bf);
  const int32_t mf = b.Weight("fc.m", DType::kFloat32, {10}, w.mf);
  const int32_t a = b.Arena("a", DType::kInt8, {-1, 8, 8, 8});
  const int32_t c = b.Arena("b", DType::kInt8, {-1, 8, 8, 8});
  const int32_t s = b.Arena("s", DType::kInt8, {-1, 8, 8, 8});
  const int32_t g = b.Arena("g", DType::kInt8, {-1, 8, 1, 1});
  const int32_t r = b.Arena("r", DType::kInt8, {-1, 8});
  const int32_t l = b.Arena("l", DType::kInt8, {-1, 10});
  const int32_t y = b.Output("logits", DType::kFloat32, {-1, 10});
  b.Step(StepKind::kQuantize, "quant", {x}, {q}, QuantizeParams{kNetInScale, 0});
  b.Step(StepKind::kQConv, "conv1", {q, w1, b1, m1}, {a}, NetConv(1, 0));
  b.Step(StepKind::kQConv, "conv2", {q, w2, b2, m2}, {c}, NetConv(0, -128));
  b.Step(StepKind::kQAdd, "add", {a, c}, {s}, NetAdd());
  b.Step(StepKind::kQGlobalAveragePool, "gap", {s}, {g}, NetPool());
  b.Step(StepKind::kReshape, "flatten", {g}, {r}, NoStepParams{});
  b.Step(StepKind::kQGemm, "fc", {r, wf, bf, mf}, {l}, QGemmStepParams{0, -128, 127});
  b.Step(StepKind::kDequantize, "dequant", {l}, {y}, QuantizeParams{kNetOutScale, 0});
  PlanArena(b.plan());
  return b.plan();
}

/// The network recomputed step by step for x [n, 3, 8, 8].
inline Tensor ReferenceInt8Network(const Tensor& x) {
  const Int8NetworkWeights w;
  const int64_t n = x.dim(0);
  Tensor q(DType::kInt8, {n, 3, 8, 8});
  for (int64_t i = 0; i < q.numel(); ++i) {
    q.data<int8_t>()[i] = RoundClamp(x.data<float>()[i] / kNetInScale, 0);
  }
  Tensor a(DType::kInt8, {n, 8, 8, 8}), b(DType::kInt8, {n, 8, 8, 8});
  for (int conv = 0; conv < 2; ++conv) {
    cpu::QConvParams p;
    p.n = n, p.c = 3, p.h = 8, p.w = 8, p.k = 8;
    p.r = p.s = conv == 0 ? 3 : 1;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = conv == 0 ? 1 : 0;
    p.lo = conv == 0 ? 0 : -128;
    p.input = q.data<int8_t>();
    p.weights = conv == 0 ? w.w1.data() : w.w2.data();
    p.bias = conv == 0 ? w.b1.data() : w.b2.data();
    p.multiplier = conv == 0 ? w.m1.data() : w.m2.data();
    p.output = (conv == 0 ? a : b).data<int8_t>();
    cpu::QConvReference(p);
  }
  const QAddStepParams add = NetAdd();
  const QAveragePoolStepParams pool = NetPool();
  Tensor g(DType::kInt8, {n, 8});
  for (int64_t plane = 0; plane < n * 8; ++plane) {
    int64_t sum = 0;
    for (int64_t i = plane * 64; i < (plane + 1) * 64; ++i) {
      const float ta = static_cast<float>(a.data<int8_t>()[i]) * add.mult_a;
      const float tb = static_cast<float>(b.data<int8_t>()[i]) * add.mult_b;
      sum += RoundClamp(ta + tb, static_cast<int32_t>(add.zp_out)) - pool.zp_in;
    }
    g.data<int8_t>()[plane] = RoundClamp((static_cast<float>(sum) * pool.multiplier) / 64.0f,
                                         static_cast<int32_t>(pool.zp_out));
  }
  Tensor l(DType::kInt8, {n, 10});
  cpu::QGemmParams p;
  p.m = n, p.n = 10, p.k = 8;
  p.a = g.data<int8_t>(), p.b = w.wf.data(), p.bias = w.bf.data(), p.multiplier = w.mf.data();
  p.y = l.data<int8_t>();
  cpu::QGemmReference(p);
  Tensor y(DType::kFloat32, {n, 10});
  for (int64_t i = 0; i < y.numel(); ++i) {
    y.data<float>()[i] = static_cast<float>(l.data<int8_t>()[i]) * kNetOutScale;
  }
  return y;
}

}  // namespace qcc::runtime::engine_testing

#endif  // QCC_TESTS_RUNTIME_ENGINE_TEST_NETWORK_H_
