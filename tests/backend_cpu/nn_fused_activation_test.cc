// Fused activations (ir/attrs.h QCC_FUSED_ACTIVATION_FIELDS) in the CPU kernels: every conv
// kernel (sgemm im2col in both its per-image and batched forms, the AVX-512 microkernel with
// explicit and implicit im2col, both depthwise kernels) against the unfused kernel followed by
// the activation written out here; Conv, Gemm and Add through the evaluator with hand values;
// and the errors for activations on non-float data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/cpu_features.h"
#include "tests/backend_cpu/nn_conv_cases.h"
#include "tests/backend_cpu/nn_testing.h"
#include "tests/testing/op_test_util.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {
namespace {

/// The activations under test, in the kernels' form, with their reference written out.
struct Act {
  const char* name;
  cpu::ActivationF32 kernel;
  float (*ref)(float);
};

const std::vector<Act>& Acts() {
  static const auto* acts = new std::vector<Act>{
      {"relu", {0.0f}, [](float v) { return std::max(v, 0.0f); }},
      {"clip", {-0.25f, 0.5f}, [](float v) { return std::min(std::max(v, -0.25f), 0.5f); }},
      {"leaky", {-INFINITY, INFINITY, 0.1f}, [](float v) { return v < 0 ? 0.1f * v : v; }},
  };
  return *acts;
}

using ConvFn = void (*)(const cpu::ConvF32Params&, const float*, const float*, const float*, float*,
                        float*);

Tensor RunKernel(ConvFn fn, const cpu::ConvF32Params& p, const Tensor& x, const Tensor& w,
                 const Tensor& b) {
  Tensor y(DType::kFloat32, {p.batch, p.out_channels, p.out[1], p.out[2]});
  std::vector<float> ws(std::max({cpu::ConvF32Im2colWorkspaceSize(p), cpu::ConvF32WorkspaceSize(p),
                                  cpu::ConvF32HasAvx512() ? cpu::ConvF32Avx512WorkspaceSize(p) : 0,
                                  cpu::Cpu().avx2 ? cpu::ConvF32Avx2WorkspaceSize(p) : 0}) +
                        1);
  fn(p, x.data<float>(), w.data<float>(), b.data<float>(), y.data<float>(), ws.data());
  return y;
}

void Dispatch(const cpu::ConvF32Params& p, const float* x, const float* w, const float* b, float* y,
              float* ws) {
  cpu::ConvF32(p, x, w, b, y, ws);
}
void Depthwise(const cpu::ConvF32Params& p, const float* x, const float* w, const float* b,
               float* y, float*) {
  cpu::ConvF32DepthwiseDirect(p, x, w, b, y);
}
void DepthwiseAvx2(const cpu::ConvF32Params& p, const float* x, const float* w, const float* b,
                   float* y, float*) {
  cpu::ConvF32DepthwiseAvx2(p, x, w, b, y);
}
void DepthwiseAvx512(const cpu::ConvF32Params& p, const float* x, const float* w, const float* b,
                     float* y, float*) {
  cpu::ConvF32DepthwiseAvx512(p, x, w, b, y);
}

TEST(NnFusedActivationTest, EveryConvKernelAppliesItInTheEpilogue) {
  // Strides and pads (begin and end) as nn_conv_cases.h's ConvCase takes them.
  const std::vector<ConvCase> geometries = {
      {"pointwise", 2, 8, 12, 1, {5, 7}, {1, 1}},
      {"pointwise_transposed", 2, 64, 72, 1, {7, 7}, {1, 1}},
      {"3x3_pad_per_image", 2, 3, 10, 1, {9, 9}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"small_maps_batched", 5, 4, 6, 1, {3, 3}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"implicit_w16", 2, 4, 9, 1, {6, 16}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"stride2_grouped", 1, 4, 6, 2, {9, 11}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},
      {"large_banded", 1, 16, 8, 1, {64, 64}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"depthwise", 2, 8, 8, 8, {10, 21}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"depthwise_stride2", 1, 5, 5, 5, {9, 40}, {5, 5}, {2, 2}, {}, {2, 2, 2, 2}},
      {"depthwise_blocked", 1, 24, 24, 24, {7, 7}, {5, 5}, {}, {}, {2, 2, 2, 2}},
      // DepthwisePlaneNarrow: 5 x 5 on a 14-wide map (one segment, 8 rows a group), 7 x 7 on a
      // 26-wide one (two segments, 4 rows a group).
      {"depthwise_5x5_narrow", 2, 6, 6, 6, {13, 14}, {5, 5}, {}, {}, {2, 2, 2, 2}},
      {"depthwise_7x7_narrow_two_segments", 1, 4, 4, 4, {11, 26}, {7, 7}, {}, {}, {3, 3, 3, 3}},
  };
  for (const ConvCase& geo : geometries) {
    const CaseOperands o = OperandsOf(geo);
    cpu::ConvF32Params p = o.p;
    const Tensor &x = o.x, &w = o.w, &b = o.b;
    std::vector<std::pair<const char*, ConvFn>> kernels = {{"sgemm", cpu::ConvF32Im2col},
                                                           {"dispatch", Dispatch}};
    if (cpu::ConvF32HasAvx512()) kernels.push_back({"avx512", cpu::ConvF32Im2colAvx512});
    if (cpu::Cpu().avx2 && cpu::Cpu().fma && !(p.IsDepthwise() && geo.group > 1)) {
      kernels.push_back({"avx2", cpu::ConvF32Avx2});
    }
    if (p.IsDepthwise()) kernels.push_back({"depthwise", Depthwise});
    if (p.IsDepthwise() && cpu::ConvF32HasAvx512() && cpu::ConvF32DepthwiseAvx512Fits(p)) {
      kernels.push_back({"depthwise_avx512", DepthwiseAvx512});
    }
    if (p.IsDepthwise() && cpu::Cpu().avx2 && cpu::Cpu().fma && cpu::ConvF32DepthwiseAvx2Fits(p)) {
      kernels.push_back({"depthwise_avx2", DepthwiseAvx2});
    }
    for (int threads : {1, 3}) {
      p.num_threads = threads;
      p.activation = {};
      const Tensor plain = RunKernel(cpu::ConvF32Im2col, p, x, w, b);
      for (const Act& act : Acts()) {
        Tensor want = plain.Clone();
        for (int64_t i = 0; i < want.numel(); ++i) {
          want.data<float>()[i] = act.ref(want.data<float>()[i]);
        }
        p.activation = act.kernel;
        for (const auto& [kname, fn] : kernels) {
          SCOPED_TRACE(std::string(geo.name) + " " + act.name + " " + kname + " threads " +
                       std::to_string(threads));
          EXPECT_EQ(CompareTensors(RunKernel(fn, p, x, w, b), want, 1e-5, 1e-5), "");
        }
      }
    }
  }
}

// NaN from the product stays NaN through every form (the AVX-512 max/min keep it too).
TEST(NnFusedActivationTest, NanPassesThrough) {
  for (const Act& act : Acts()) {
    float v = NAN;
    cpu::ApplyActivationF32(act.kernel, &v, 1);
    EXPECT_TRUE(std::isnan(v)) << act.name;
  }
}

TEST(NnFusedActivationTest, ConvGemmAndAddThroughTheEvaluator) {
  // Conv: 1x1, weight 1, bias -1, Clip [0, 2]: y = clip(x - 1, 0, 2).
  ir::ConvAttrs ca;
  ca.activation = ir::Activation::kClip;
  ca.activation_min = 0.0f;
  ca.activation_max = 2.0f;
  auto y = RunSingleOp(ir::OpKind::kConv, ca,
                       {{F32({1, 1, 1, 4}, {-1, 1.5f, 2.5f, 9})},
                        {F32({1, 1, 1, 1}, {1}), true},
                        {F32({1}, {-1}), true}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(CompareTensors((*y)[0], F32({1, 1, 1, 4}, {0, 0.5f, 1.5f, 2}), 0, 0), "");
  // Gemm: [1, -2] x I + [0, -2] = [1, -4], LeakyRelu 0.5 -> [1, -2].
  ir::GemmAttrs ga;
  ga.activation = ir::Activation::kLeakyRelu;
  ga.activation_alpha = 0.5f;
  y = RunSingleOp(ir::OpKind::kGemm, ga,
                  {{F32({1, 2}, {1, -2})}, {F32({2, 2}, {1, 0, 0, 1}), true}, {F32({2}, {0, -2})}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(CompareTensors((*y)[0], F32({1, 2}, {1, -2}), 0, 0), "");
  // Add + Relu with broadcasting: [[1, -3], [-1, 4]] + [1, -1] = [[2, -4], [0, 3]] -> relu.
  ir::AddAttrs aa;
  aa.activation = ir::Activation::kRelu;
  y = RunSingleOp(ir::OpKind::kAdd, aa, {{F32({2, 2}, {1, -3, -1, 4})}, {F32({2}, {1, -1})}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(CompareTensors((*y)[0], F32({2, 2}, {2, 0, 0, 3}), 0, 0), "");
}

TEST(NnFusedActivationTest, NonFloatDataIsAnError) {
  // The kernel refuses an Add with an activation on int64 data...
  ir::AddAttrs aa;
  aa.activation = ir::Activation::kRelu;
  auto y = RunSingleOp(ir::OpKind::kAdd, aa, {{I64({2}, {1, -3})}, {I64({2}, {1, 1})}});
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("fused activation"), absl::string_view::npos);
  // ...and so does the verifier once the output type is known.
  ir::Graph g;
  ir::Value* a = g.AddInput("a", ir::TensorType(DType::kInt64, {2}));
  ir::Node* add = g.AddNode(ir::OpKind::kAdd, "add", {a, a}, {"y"});
  add->set_attrs(aa);
  g.AddOutput(add->output(0));
  ASSERT_TRUE(ir::InferShapes(g).ok());
  const absl::Status s = ir::Verify(g);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("fused activation"), absl::string_view::npos) << s;
  // Reversed Clip bounds are refused by the kernel with the node named.
  ir::AddAttrs bad;
  bad.activation = ir::Activation::kClip;
  bad.activation_min = 1.0f;
  bad.activation_max = 0.0f;
  y = RunSingleOp(ir::OpKind::kAdd, bad, {{F32({1}, {1})}, {F32({1}, {1})}});
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(y.status().message().find("'op'"), absl::string_view::npos) << y.status();
}

}  // namespace
}  // namespace qcc::testing
