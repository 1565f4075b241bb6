// The AVX-512 Winograd F(2x2, 3x3) convolution (kernels/cpu/conv_winograd_avx512.cc): which
// convolutions take it, its bits against a scalar transcription of its arithmetic written here,
// and its outputs within ConvF32's tolerance of the im2col + sgemm path (itself tested against
// a naive convolution in nn_conv_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend_cpu/evaluator.h"
#include "ir/attrs.h"
#include "ir/shape_inference.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv_avx512_internal.h"
#include "tests/backend_cpu/nn_conv_cases.h"
#include "tests/backend_cpu/nn_testing.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {
namespace {

/// The path's sum, transcribed: for each 2x2 tile of each output channel, the input patches'
/// B^T d B and the kernels' G g G^T (the packing's own function), a std::fma chain from 0 over
/// the input channels at each of the 16 points, A^T P A, then + bias, + residual, activation.
/// Every add in the kernel's order, so its bits, not an approximation.
Tensor WinogradTranscription(const cpu::ConvF32Params& p, const float* x, const float* w,
                             const float* bias, const Dims& out_dims) {
  Tensor y(DType::kFloat32, out_dims);
  const int64_t c_all = p.in_channels, m_all = p.out_channels, depth = p.out[0];
  const int64_t ih = p.in[1], iw = p.in[2], oh = p.out[1], ow = p.out[2];
  std::vector<float> u(m_all * c_all * 16);
  for (int64_t i = 0; i < m_all * c_all; ++i) {
    cpu::internal::WinogradKernelTransform(w + i * 9, u.data() + i * 16);
  }
  const auto at = [&](int64_t n, int64_t c, int64_t z, int64_t iy, int64_t ix) {
    const int64_t iz = z - p.pad[0];  // a 1-deep kernel, stride 1
    if (iz < 0 || iy < 0 || ix < 0 || iz >= p.in[0] || iy >= ih || ix >= iw) return 0.0f;
    return x[(((n * c_all + c) * p.in[0] + iz) * ih + iy) * iw + ix];
  };
  std::vector<float> v(c_all * 16);
  for (int64_t n = 0; n < p.batch; ++n) {
    for (int64_t z = 0; z < depth; ++z) {
      for (int64_t ty = 0; ty < (oh + 1) / 2; ++ty) {
        for (int64_t tx = 0; tx < (ow + 1) / 2; ++tx) {
          for (int64_t c = 0; c < c_all; ++c) {
            float e[4][4];
            for (int r = 0; r < 4; ++r) {
              float d[4];
              for (int j = 0; j < 4; ++j) {
                d[j] = at(n, c, z, 2 * ty - p.pad[1] + r, 2 * tx - p.pad[2] + j);
              }
              e[r][0] = d[0] - d[2];
              e[r][1] = d[1] + d[2];
              e[r][2] = d[2] - d[1];
              e[r][3] = d[1] - d[3];
            }
            float* vc = v.data() + c * 16;
            for (int j = 0; j < 4; ++j) {
              vc[0 + j] = e[0][j] - e[2][j];
              vc[4 + j] = e[1][j] + e[2][j];
              vc[8 + j] = e[2][j] - e[1][j];
              vc[12 + j] = e[1][j] - e[3][j];
            }
          }
          for (int64_t m = 0; m < m_all; ++m) {
            float q[16];
            for (int xi = 0; xi < 16; ++xi) {
              float acc = 0.0f;
              for (int64_t c = 0; c < c_all; ++c) {
                acc = std::fma(u[(m * c_all + c) * 16 + xi], v[c * 16 + xi], acc);
              }
              q[xi] = acc;
            }
            float t[2][4];
            for (int j = 0; j < 4; ++j) {
              t[0][j] = q[0 + j] + q[4 + j] + q[8 + j];
              t[1][j] = q[4 + j] - q[8 + j] - q[12 + j];
            }
            const float b = bias != nullptr ? bias[m] : 0.0f;
            for (int a = 0; a < 2; ++a) {
              const float out[2] = {t[a][0] + t[a][1] + t[a][2] + b,
                                    t[a][1] - t[a][2] - t[a][3] + b};
              for (int k = 0; k < 2; ++k) {
                const int64_t oy = 2 * ty + a, ox = 2 * tx + k;
                if (oy >= oh || ox >= ow) continue;
                const int64_t i = (((n * m_all + m) * depth + z) * oh + oy) * ow + ox;
                float s = out[k];
                if (p.residual != nullptr) s = s + p.residual[i];
                y.data<float>()[i] = p.activation(s);
              }
            }
          }
        }
      }
    }
  }
  return y;
}

TEST(NnConvWinogradTest, TakesThreeByThreeStrideOneConvolutionsOfEightChannelsOrMore) {
  const ConvCase base{"", 1, 16, 16, 1, {8, 8}, {3, 3}, {}, {}, {1, 1, 1, 1}};
  struct Variant {
    const char* name;
    bool takes;
    std::function<void(ConvCase&)> change;
  };
  const Variant variants[] = {
      {"as is", true, [](ConvCase&) {}},
      {"no pad", true, [](ConvCase& c) { c.pads = {}; }},
      {"8 in and out", true, [](ConvCase& c) { c.c = c.m = 8; }},
      {"7 in", false, [](ConvCase& c) { c.c = 7; }},
      {"4 out", false, [](ConvCase& c) { c.m = 4; }},
      {"stride 2", false,
       [](ConvCase& c) {
         c.strides = {2, 2};
       }},
      {"stride 1x2", false,
       [](ConvCase& c) {
         c.strides = {1, 2};
       }},
      {"dilation", false,
       [](ConvCase& c) {
         c.dilations = {2, 2};
       }},
      {"groups", false, [](ConvCase& c) { c.group = 2; }},
      {"5x5", false,
       [](ConvCase& c) {
         c.kernel = {5, 5};
       }},
      {"3x1", false,
       [](ConvCase& c) {
         c.kernel = {3, 1};
       }},
      {"1-D", false,
       [](ConvCase& c) {
         c.in = {8};
         c.kernel = {3};
         c.pads = {1, 1};
       }},
      {"1x3x3", true,
       [](ConvCase& c) {
         c.in = {4, 8, 8};
         c.kernel = {1, 3, 3};
         c.pads = {0, 1, 1, 0, 1, 1};
       }},
      {"3x3x3", false,
       [](ConvCase& c) {
         c.in = {4, 8, 8};
         c.kernel = {3, 3, 3};
         c.pads = {1, 1, 1, 1, 1, 1};
       }},
  };
  for (const Variant& v : variants) {
    ConvCase c = base;
    v.change(c);
    std::vector<int64_t> s, d, pb, out;
    EXPECT_EQ(cpu::internal::UseWinogradAvx512(ParamsOf(c, s, d, pb, out)), v.takes) << v.name;
  }
}

struct WinogradCase {
  ConvCase conv;
  cpu::ActivationF32 act;
  bool residual = false;
};

std::vector<WinogradCase> WinogradCases() {
  cpu::ActivationF32 relu;
  relu.lo = 0.0f;
  cpu::ActivationF32 leaky;
  leaky.negative_slope = 0.125f;
  cpu::ActivationF32 clip;
  clip.lo = -0.5f;
  clip.hi = 0.75f;
  return {
      // resnet20's blocks: 32, 16 and 8 wide (a vector of tiles is one, two and four tile
      // rows), the shortcut added before the ReLU.
      {{"resnet_32x32", 2, 16, 16, 1, {32, 32}, {3, 3}, {}, {}, {1, 1, 1, 1}}, relu, true},
      {{"resnet_16x16", 3, 32, 32, 1, {16, 16}, {3, 3}, {}, {}, {1, 1, 1, 1}}, relu},
      {{"resnet_8x8_batch5", 5, 64, 64, 1, {8, 8}, {3, 3}, {}, {}, {1, 1, 1, 1}}, relu, true},
      {{"resnet_8x8_batch1", 1, 64, 64, 1, {8, 8}, {3, 3}, {}, {}, {1, 1, 1, 1}}, {}},
      // squeezenet's expands: odd maps (a half tile on the right and bottom), tile rows that
      // straddle vectors.
      {{"squeezenet_13x13", 2, 48, 40, 1, {13, 13}, {3, 3}, {}, {}, {1, 1, 1, 1}}, relu},
      {{"odd_55_wide", 1, 16, 24, 1, {9, 55}, {3, 3}, {}, {}, {1, 1, 1, 1}}, relu},
      // Output channels not a multiple of 8, no bias, other activations.
      {{"channel_tail_no_bias", 2, 9, 13, 1, {7, 10}, {3, 3}, {}, {}, {1, 1, 1, 1}, false}, leaky},
      {{"clip_residual", 1, 12, 20, 1, {6, 33}, {3, 3}, {}, {}, {1, 1, 1, 1}}, clip, true},
      // Pads: none (an output smaller than the input), asymmetric, wider than the kernel's.
      {{"no_pad", 2, 8, 8, 1, {10, 11}, {3, 3}}, {}},
      {{"asymmetric_pads", 1, 8, 16, 1, {9, 12}, {3, 3}, {}, {}, {0, 2, 2, 1}}, relu},
      {{"wide_pads", 1, 8, 8, 1, {5, 6}, {3, 3}, {}, {}, {3, 2, 2, 3}}, {}},
      // Narrow maps: one or two tiles a row (16 or 8 runs a vector), a single output row.
      {{"one_tile_wide", 3, 8, 8, 1, {20, 2}, {3, 3}, {}, {}, {1, 1, 1, 1}}, {}},
      {{"three_wide", 4, 10, 8, 1, {7, 3}, {3, 3}, {}, {}, {1, 1, 1, 1}}, relu},
      {{"one_row", 2, 8, 16, 1, {3, 40}, {3, 3}}, {}},
      // A 3-D convolution whose kernel is 1 deep: each depth slice a 2-D convolution.
      {{"depth_slices", 2, 8, 16, 1, {3, 6, 9}, {1, 3, 3}, {}, {}, {0, 1, 1, 0, 1, 1}}, relu},
      {{"depth_padded", 1, 8, 8, 1, {2, 5, 7}, {1, 3, 3}, {}, {}, {1, 1, 1, 2, 1, 1}}, {}, true},
  };
}

// Bit for bit the transcription at 1, 2 and 3 threads, through ConvF32 (which packs per call)
// and ConvF32WithPacked (weights packed once at batch 1, one thread); within 1e-4 of the
// im2col + sgemm path.
TEST(NnConvWinogradTest, MatchesTranscriptionBitForBitAndSgemmClosely) {
  if (!cpu::ConvF32HasAvx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  for (const WinogradCase& wc : WinogradCases()) {
    SCOPED_TRACE(wc.conv.name);
    CaseOperands o = OperandsOf(wc.conv);
    cpu::ConvF32Params& p = o.p;
    ASSERT_TRUE(cpu::internal::UseWinogradAvx512(p));
    p.activation = wc.act;
    const Dims dims = NcPlus(wc.conv.n, wc.conv.m, o.out);
    const Tensor residual = RandomF32(dims, 4);
    if (wc.residual) p.residual = residual.data<float>();
    const float* x = o.x.data<float>();
    const float* w = o.w.data<float>();
    const Tensor want = WinogradTranscription(p, x, w, o.bias(), dims);
    cpu::ConvF32Params one = p;
    one.batch = 1;
    one.num_threads = 1;
    const cpu::PackedConvF32 packed = cpu::PackConvF32Weights(one, w);
    for (int threads : {1, 2, 3}) {
      p.num_threads = threads;
      Tensor y(DType::kFloat32, dims), with_packed(DType::kFloat32, dims);
      std::vector<float> ws(cpu::ConvF32WorkspaceSize(p));
      cpu::ConvF32(p, x, w, o.bias(), y.data<float>(), ws.data());
      EXPECT_EQ(CompareTensors(y, want, 0, 0), "") << "threads " << threads;
      ws.assign(cpu::ConvF32WithPackedWorkspaceSize(p, packed), 0.0f);
      cpu::ConvF32WithPacked(p, x, w, packed, o.bias(), with_packed.data<float>(), ws.data());
      EXPECT_EQ(CompareTensors(with_packed, want, 0, 0), "") << "packed, threads " << threads;
    }
    // The sgemm path takes no residual or activation: added here as ConvF32 does for it.
    cpu::ConvF32Params bare = p;
    bare.residual = nullptr;
    bare.activation = {};
    Tensor sgemm(DType::kFloat32, dims);
    std::vector<float> ws(cpu::ConvF32Im2colWorkspaceSize(bare) + 1);
    cpu::ConvF32Im2col(bare, x, w, o.bias(), sgemm.data<float>(), ws.data());
    for (int64_t i = 0; i < sgemm.numel(); ++i) {
      float s = sgemm.data<float>()[i];
      if (wc.residual) s = s + residual.data<float>()[i];
      sgemm.data<float>()[i] = p.activation(s);
    }
    EXPECT_EQ(CompareTensors(want, sgemm, 1e-4, 1e-4), "");
  }
}

// The transcription is the sum it claims: a 1x1-channel 4x4 input with a 3x3 kernel of ones and
// no pad gives each output the sum of its 3x3 window, exactly (small integers).
TEST(NnConvWinogradTest, TranscriptionSumsWindows) {
  ConvCase cc{"ones", 1, 8, 8, 1, {4, 4}, {3, 3}};
  CaseOperands o = OperandsOf(cc);
  for (int64_t i = 0; i < o.x.numel(); ++i) o.x.data<float>()[i] = static_cast<float>(i % 16);
  for (int64_t i = 0; i < o.w.numel(); ++i) o.w.data<float>()[i] = 1.0f;
  const Dims dims = NcPlus(1, 8, o.out);
  const Tensor y = WinogradTranscription(o.p, o.x.data<float>(), o.w.data<float>(), nullptr, dims);
  // Plane values 0..15 row-major; window sums at (0,0), (0,1), (1,0), (1,1), times 8 channels.
  const float want[4] = {45.0f, 54.0f, 81.0f, 90.0f};
  for (int64_t m = 0; m < 8; ++m) {
    for (int k = 0; k < 4; ++k) EXPECT_EQ(y.data<float>()[m * 4 + k], 8 * want[k]) << m << k;
  }
}

// With winograd false the AVX-512 path sums directly: ConvF32Params::winograd is part of what
// the packing reads, and the two sums differ in their last bits.
TEST(NnConvWinogradTest, WinogradFalseKeepsTheDirectSum) {
  if (!cpu::ConvF32HasAvx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  CaseOperands o = OperandsOf({"", 2, 16, 16, 1, {8, 8}, {3, 3}, {}, {}, {1, 1, 1, 1}});
  cpu::ConvF32Params direct = o.p;
  direct.winograd = false;
  EXPECT_FALSE(cpu::internal::UseWinogradAvx512(direct));
  EXPECT_NE(cpu::PackConvF32Weights(direct, o.w.data<float>()),
            cpu::PackConvF32Weights(o.p, o.w.data<float>()));
  const Dims dims = NcPlus(2, 16, o.out);
  Tensor a(DType::kFloat32, dims), b(DType::kFloat32, dims);
  std::vector<float> ws(
      std::max(cpu::ConvF32WorkspaceSize(direct), cpu::ConvF32WorkspaceSize(o.p)));
  cpu::ConvF32(direct, o.x.data<float>(), o.w.data<float>(), o.bias(), a.data<float>(), ws.data());
  cpu::ConvF32(o.p, o.x.data<float>(), o.w.data<float>(), o.bias(), b.data<float>(), ws.data());
  EXPECT_EQ(CompareTensors(a, b, 1e-4, 1e-4), "");
  EXPECT_NE(CompareTensors(a, b, 0, 0), "") << "the same bits: is either path running?";
  EXPECT_NE(CompareTensors(
                a, WinogradTranscription(o.p, o.x.data<float>(), o.w.data<float>(), o.bias(), dims),
                0, 0),
            "");
}

// A ReLU (a clamp from below only) in the AVX-512 tiles' and the Winograd path's epilogue: the
// bits of max(v, 0) on the same path's output without it.
TEST(NnConvWinogradTest, ReluEpilogueIsMaxOfTheUnactivatedOutput) {
  if (!cpu::ConvF32HasAvx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  const std::vector<ConvCase> cases = {
      {"implicit", 2, 16, 20, 1, {8, 16}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"pointwise", 1, 16, 24, 1, {9, 11}, {1, 1}},
      {"im2col_stride2", 1, 8, 16, 1, {9, 9}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},
  };
  for (const ConvCase& cc : cases) {
    for (bool winograd : {false, true}) {
      SCOPED_TRACE(std::string(cc.name) + (winograd ? " winograd" : " direct"));
      CaseOperands o = OperandsOf(cc);
      cpu::ConvF32Params p = o.p;
      p.winograd = winograd;
      const Dims dims = NcPlus(cc.n, cc.m, o.out);
      Tensor plain(DType::kFloat32, dims), relu(DType::kFloat32, dims);
      std::vector<float> ws(cpu::ConvF32WorkspaceSize(p));
      cpu::ConvF32(p, o.x.data<float>(), o.w.data<float>(), o.bias(), plain.data<float>(),
                   ws.data());
      p.activation.lo = 0.0f;
      cpu::ConvF32(p, o.x.data<float>(), o.w.data<float>(), o.bias(), relu.data<float>(),
                   ws.data());
      int64_t clamped = 0;
      for (int64_t i = 0; i < plain.numel(); ++i) {
        float& v = plain.data<float>()[i];
        clamped += v < 0.0f;
        v = std::max(v, 0.0f);
      }
      EXPECT_GT(clamped, 0);
      EXPECT_EQ(CompareTensors(relu, plain, 0, 0), "");
    }
  }
}

// The evaluator: a run with observers (calibration) takes the direct sum, one without the
// Winograd path, each bit for bit ConvF32 with that setting.
TEST(NnConvWinogradTest, ObservedEvaluatorRunsSumDirectly) {
  if (!cpu::ConvF32HasAvx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  CaseOperands o = OperandsOf({"", 1, 16, 16, 1, {8, 8}, {3, 3}, {}, {}, {1, 1, 1, 1}});
  ir::Graph g;
  g.set_opset(21);
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {1, 16, 8, 8}));
  ir::Node* conv = g.AddNode(ir::OpKind::kConv, "conv",
                             {x, g.NewConstant("w", o.w), g.NewConstant("b", o.b)}, {"y"});
  ir::ConvAttrs a;
  a.pads = {1, 1, 1, 1};
  conv->set_attrs(a);
  ir::Node* observe = g.AddNode(ir::OpKind::kObserve, "observe", {conv->output(0)}, {});
  ir::ObserveAttrs oa;
  oa.observer_id = 0;
  observe->set_attrs(oa);
  g.AddOutput(conv->output(0));
  ASSERT_TRUE(ir::InferShapes(g).ok());
  const Dims dims = NcPlus(1, 16, o.out);
  for (bool observed : {false, true}) {
    SCOPED_TRACE(observed ? "observed" : "not observed");
    cpu::EvalOptions options;
    options.num_threads = 1;
    int observations = 0;
    if (observed) options.on_observe = [&](int64_t, const Tensor&) { ++observations; };
    absl::StatusOr<std::unique_ptr<cpu::Evaluator>> ev = cpu::Evaluator::Create(g, options);
    ASSERT_TRUE(ev.ok()) << ev.status();
    absl::StatusOr<std::vector<Tensor>> y = (*ev)->Run({o.x});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(observations, observed ? 1 : 0);
    cpu::ConvF32Params p = o.p;
    p.winograd = !observed;
    Tensor want(DType::kFloat32, dims);
    std::vector<float> ws(cpu::ConvF32WorkspaceSize(p));
    cpu::ConvF32(p, o.x.data<float>(), o.w.data<float>(), o.bias(), want.data<float>(), ws.data());
    EXPECT_EQ(CompareTensors((*y)[0], want, 0, 0), "");
  }
}

}  // namespace
}  // namespace qcc::testing
