// fp32 and fp16 convolution of the CUDA backend, on the host: the per-image NCHW GEMMs
// (gemm_problem.h FloatConvGemmNchw) on the operands the im2col bodies produce, and the direct
// convolution body, against the CPU conv within summation-order rounding (the direct body also
// bit for bit against an in-order loop).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/qconv.h"
#include "kernels/cpu/qgemm.h"
#include "kernels/cuda/conv_bodies.h"
#include "kernels/cuda/gemm_problem.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/weight_packing.h"
#include "support/float16.h"
#include "tests/backend_cuda/conv_gemm_test_util.h"

namespace qcc::cuda {
namespace {

using namespace ::qcc::cuda::test_util;  // NOLINT: the shared cases and helpers

cpu::ConvF32Params ToF32Params(const ConvCase& g, const Act& act) {
  const ConvDims d = ToDims(g);
  cpu::ConvF32Params p;
  p.batch = g.n;
  p.in_channels = g.c;
  p.out_channels = g.k;
  p.groups = g.group;
  p.in = {1, g.h, g.w};
  p.out = {1, d.oh, d.ow};
  p.kernel = {1, g.r, g.s};
  p.stride = {1, g.stride_h, g.stride_w};
  p.dilation = {1, g.dilation_h, g.dilation_w};
  p.pad = {0, g.pad_top, g.pad_left};
  p.activation.lo = act.lo;
  p.activation.hi = act.hi;
  p.activation.negative_slope = act.slope;
  return p;
}

std::vector<float> CpuConv(const ConvCase& g, const Act& act, const std::vector<float>& x,
                           const std::vector<float>& w, const std::vector<float>& bias) {
  const cpu::ConvF32Params p = ToF32Params(g, act);
  const ConvDims d = ToDims(g);
  std::vector<float> y(g.n * g.k * d.oh * d.ow);
  std::vector<float> ws(std::max<int64_t>(1, cpu::ConvF32WorkspaceSize(p)));
  cpu::ConvF32(p, x.data(), w.data(), bias.data(), y.data(), ws.data());
  return y;
}

// Per output, the sum of |terms| (bias and products): the scale of its rounding error.
std::vector<float> AbsSums(const ConvCase& g, const std::vector<float>& x,
                           const std::vector<float>& w, const std::vector<float>& bias) {
  std::vector<float> ax(x.size()), aw(w.size()), ab(bias.size());
  for (size_t i = 0; i < x.size(); ++i) ax[i] = std::fabs(x[i]);
  for (size_t i = 0; i < w.size(); ++i) aw[i] = std::fabs(w[i]);
  for (size_t i = 0; i < bias.size(); ++i) ab[i] = std::fabs(bias[i]);
  DirectConvArgs a;
  a.d = ToDims(g);
  a.x = ax.data();
  a.w = aw.data();
  a.bias = ab.data();
  std::vector<float> y(g.n * g.k * a.d.oh * a.d.ow);
  a.y = y.data();
  ForEachIndex<DirectConv>(DirectConvIndices(a.d), a);
  return y;
}

// conv_bodies.h's DirectConv contract written out: per output, bias[k] then the products over
// (c, r, s) in the weights' order, padding skipped, each added in fp32 as it comes.
std::vector<float> InOrderConv(const ConvCase& g, const Act& act, const std::vector<float>& x,
                               const std::vector<float>& w, const std::vector<float>& bias) {
  const ConvDims d = ToDims(g);
  const int64_t cg = g.c / g.group, kg = g.k / g.group;
  std::vector<float> y(g.n * g.k * d.oh * d.ow);
  float* out = y.data();
  for (int64_t img = 0; img < g.n; ++img) {
    for (int64_t k = 0; k < g.k; ++k) {
      for (int64_t oy = 0; oy < d.oh; ++oy) {
        for (int64_t ox = 0; ox < d.ow; ++ox) {
          float acc = bias[k];
          for (int64_t c = 0; c < cg; ++c) {
            for (int64_t r = 0; r < g.r; ++r) {
              for (int64_t s = 0; s < g.s; ++s) {
                const int64_t iy = oy * d.stride_h - d.pad_top + r * d.dilation_h;
                const int64_t ix = ox * d.stride_w - d.pad_left + s * d.dilation_w;
                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                const float prod = w[((k * cg + c) * g.r + r) * g.s + s] *
                                   x[((img * g.c + k / kg * cg + c) * g.h + iy) * g.w + ix];
                acc = acc + prod;
              }
            }
          }
          *out++ = internal::Activate(acc, act.lo, act.hi, act.slope);
        }
      }
    }
  }
  return y;
}

// The CUDA runtime's float conv on the host: im2col (or the input itself), one NCHW GEMM per
// group (ReferenceGemm at the operand offsets the runtime uses), the epilogue.
std::vector<float> FloatConvViaGemm(const ConvCase& g, const Act& act, const std::vector<float>& x,
                                    const std::vector<float>& w, const std::vector<float>& bias,
                                    bool half) {
  const ConvDims d = ToDims(g);
  const ConvGemmShape shape = MakeConvGemmShape(g.k, g.c / g.group, g.r, g.s, g.group,
                                                half ? kHalfGemmAlign : kFloatGemmAlign);
  const NchwConvGemmShape ns = MakeNchwConvGemmShape(d, shape, half);
  const GemmProblem prob = FloatConvGemmNchw(ns, half ? GemmType::kHalf : GemmType::kFloat32);
  EXPECT_TRUE(CheckGemmProblem(prob).ok()) << CheckGemmProblem(prob);
  EXPECT_EQ(prob.m, d.oh * d.ow);
  EXPECT_EQ(prob.n, g.k / g.group);
  EXPECT_EQ(prob.k, g.c / g.group * g.r * g.s);
  EXPECT_EQ(prob.batch_count, g.n);
  // The output buffer: fp32 GEMMs write it directly (ldc = OH*OW), fp16 ones accumulators.
  std::vector<float> y(g.n * g.k * d.oh * d.ow, std::nanf(""));
  std::vector<float> acc_half(half ? g.n * ns.stride_c : 0, std::nanf(""));
  float* acc = half ? acc_half.data() : y.data();
  if (half) {
    EXPECT_EQ(ns.lda % kHalfGemmAlign, 0);
    const std::vector<uint16_t> packed = PackHalfWeights(w.data(), shape);
    std::vector<uint16_t> a(g.n * ns.stride_a, 0x7e00);
    Im2colNchwFloatToHalfArgs im{d, x.data(), a.data(), ns.lda};
    ForEachIndex<Im2colNchwFloatToHalf>(static_cast<int64_t>(a.size()), im);
    // Im2colNchwHalf from fp16 input gives the same bits.
    std::vector<uint16_t> xh(x.size()), a2(a.size(), 0x7e00);
    for (size_t i = 0; i < x.size(); ++i) xh[i] = FloatToHalf(x[i]);
    Im2colNchwHalfArgs im2{d, xh.data(), a2.data(), ns.lda};
    ForEachIndex<Im2colNchwHalf>(static_cast<int64_t>(a2.size()), im2);
    EXPECT_EQ(a, a2);
    for (int64_t grp = 0; grp < g.group; ++grp) {
      ReferenceGemm(prob, a.data() + grp * ns.kred * ns.lda,
                    packed.data() + grp * shape.kout_pad * shape.kred_pad,
                    acc + grp * ns.kout * ns.ldc);
    }
  } else {
    EXPECT_EQ(shape.kred_pad, shape.kred);
    std::vector<float> a;
    const float* a_base = x.data();
    if (!FloatConvReadsInput(d)) {
      a.assign(g.n * ns.stride_a, std::nanf(""));
      Im2colNchwFloatArgs im{d, x.data(), a.data(), ns.lda};
      ForEachIndex<Im2colNchwFloat>(static_cast<int64_t>(a.size()), im);
      a_base = a.data();
    } else {
      EXPECT_EQ(ns.stride_a * g.n, static_cast<int64_t>(x.size()));
    }
    for (int64_t grp = 0; grp < g.group; ++grp) {
      ReferenceGemm(prob, a_base + grp * ns.kred * ns.lda, w.data() + grp * ns.kout * ns.kred,
                    acc + grp * ns.kout * ns.ldc);
    }
  }
  FloatEpilogueArgs e;
  e.acc = acc;
  e.ldc = ns.ldc;
  e.bias = bias.data();
  e.y = y.data();
  e.channels = g.k;
  e.pixels = d.oh * d.ow;
  e.lo = act.lo;
  e.hi = act.hi;
  e.negative_slope = act.slope;
  ForEachIndex<FloatEpilogue>(static_cast<int64_t>(y.size()), e);
  return y;
}

TEST(CudaConvF32Host, GemmPathAndDirectMatchCpuConv) {
  std::mt19937 rng(4321);
  int checked = 0;
  for (const ConvCase& g : ConvCases()) {
    for (const Act& act : kActs) {
      SCOPED_TRACE(absl::StrCat(Describe(g), " act [", act.lo, ",", act.hi, "] slope ", act.slope));
      const std::vector<float> x = RandomFloats(rng, g.n * g.c * g.h * g.w, -2.0f, 2.0f);
      const std::vector<float> w = RandomFloats(rng, g.k * g.c / g.group * g.r * g.s, -1.0f, 1.0f);
      const std::vector<float> bias = RandomFloats(rng, g.k, -1.0f, 1.0f);
      const std::vector<float> want = CpuConv(g, act, x, w, bias);
      const std::vector<float> scale = AbsSums(g, x, w, bias);
      ExpectClose(FloatConvViaGemm(g, act, x, w, bias, false), want, scale, "fp32 gemm");
      DirectConvArgs a;
      a.d = ToDims(g);
      a.x = x.data();
      a.w = w.data();
      a.bias = bias.data();
      std::vector<float> y(want.size(), std::nanf(""));
      a.y = y.data();
      a.lo = act.lo;
      a.hi = act.hi;
      a.negative_slope = act.slope;
      ForEachIndex<DirectConv>(DirectConvIndices(a.d), a);
      ExpectClose(y, want, scale, "direct");
      const std::vector<float> in_order = InOrderConv(g, act, x, w, bias);
      EXPECT_EQ(0, std::memcmp(in_order.data(), y.data(), y.size() * sizeof(float)));
      // The int32-offset form (what the GPU runs for such sizes) gives the same bits.
      EXPECT_TRUE(DirectConvFitsInt32(a.d));
      std::vector<float> y32(want.size(), std::nanf(""));
      a.y = y32.data();
      ForEachIndex<DirectConv32>(DirectConvIndices(a.d), a);
      EXPECT_EQ(0, std::memcmp(y32.data(), y.data(), y.size() * sizeof(float)));
      ++checked;
    }
  }
  EXPECT_EQ(checked, static_cast<int>(ConvCases().size()) * 4);
}

TEST(CudaConvF16Host, HalfGemmPathMatchesCpuConvOnRoundedOperands) {
  // fp16 operands, fp32 accumulation: equal to the fp32 conv of the fp16-rounded operands up to
  // summation order.
  std::mt19937 rng(2468);
  for (const ConvCase& g : ConvCases()) {
    const Act act = kActs[1];
    SCOPED_TRACE(Describe(g));
    std::vector<float> x = RandomFloats(rng, g.n * g.c * g.h * g.w, -2.0f, 2.0f);
    std::vector<float> w = RandomFloats(rng, g.k * g.c / g.group * g.r * g.s, -1.0f, 1.0f);
    const std::vector<float> bias = RandomFloats(rng, g.k, -1.0f, 1.0f);
    const std::vector<float> y = FloatConvViaGemm(g, act, x, w, bias, true);
    for (float& v : x) v = HalfToFloat(FloatToHalf(v));
    for (float& v : w) v = HalfToFloat(FloatToHalf(v));
    ExpectClose(y, CpuConv(g, act, x, w, bias), AbsSums(g, x, w, bias), "fp16 gemm");
  }
}

TEST(CudaConvF16Host, EpilogueWritesHalfBits) {
  const float acc[] = {1.5f, -2.25f, 70000.0f, -0.1f};
  const float bias[] = {0.5f};
  uint16_t y[4] = {};
  FloatEpilogueArgs e;
  e.acc = acc;
  e.ldc = 1;
  e.bias = bias;
  e.y_half = y;
  e.channels = 1;
  e.pixels = 1;
  e.lo = -1.0f;
  ForEachIndex<FloatEpilogue>(4, e);
  EXPECT_EQ(y[0], FloatToHalf(2.0f));
  EXPECT_EQ(y[1], FloatToHalf(-1.0f));
  EXPECT_EQ(y[2], FloatToHalf(70000.5f));  // +inf in fp16
  EXPECT_EQ(y[3], FloatToHalf(-0.1f + 0.5f));
}

}  // namespace
}  // namespace qcc::cuda
