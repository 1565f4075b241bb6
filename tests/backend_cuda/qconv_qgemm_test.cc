// int8 convolution and GEMM of the CUDA backend, on the host: the exact cuBLASLt problems the
// backend submits (gemm_problem.h), computed with ReferenceGemm on the operands the index bodies
// (conv_bodies.h, run by ForEachIndex) and the weight packing produce, bit for bit (memcmp)
// against the CPU reference kernels; the direct convolution body likewise.
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

struct QuantCase {
  int32_t pad_value, zp_out, lo, hi;
};

const QuantCase kQuantCases[] = {
    {0, 0, -128, 127},                             // symmetric
    {-7, 13, -128, 127},                           // zero points
    {-128, -128, -128, 127}, {25, -20, -20, 127},  // ReLU clamp at zp_out
    {3, 5, 5, 60},                                 // ReLU6-like clamp
};

// ---- int8 convolution ----

struct QConvData {
  cpu::QConvParams p;
  std::vector<int8_t> x, w, y_ref;
  std::vector<int32_t> bias;
  std::vector<float> mult;
};

QConvData MakeQConv(const ConvCase& g, const QuantCase& q, std::mt19937& rng, bool huge_bias) {
  QConvData d;
  cpu::QConvParams& p = d.p;
  p.n = g.n;
  p.c = g.c;
  p.h = g.h;
  p.w = g.w;
  p.k = g.k;
  p.r = g.r;
  p.s = g.s;
  p.stride_h = g.stride_h;
  p.stride_w = g.stride_w;
  p.pad_top = g.pad_top;
  p.pad_left = g.pad_left;
  p.pad_bottom = g.pad_bottom;
  p.pad_right = g.pad_right;
  p.dilation_h = g.dilation_h;
  p.dilation_w = g.dilation_w;
  p.group = g.group;
  p.pad_value = static_cast<int8_t>(q.pad_value);
  p.zp_out = q.zp_out;
  p.lo = q.lo;
  p.hi = q.hi;
  const int64_t kred = g.c / g.group * g.r * g.s;
  d.x = RandomInts<int8_t>(rng, g.n * g.c * g.h * g.w, -128, 127);
  d.w = RandomInts<int8_t>(rng, g.k * kred, -127, 127);
  if (huge_bias) {
    // Near the int32 limits: acc + bias wraps in some outputs, which every path must agree on.
    d.bias = RandomInts<int32_t>(rng, g.k, std::numeric_limits<int32_t>::max() - 100000,
                                 std::numeric_limits<int32_t>::max());
    for (size_t i = 0; i < d.bias.size(); i += 2) d.bias[i] = -d.bias[i] - 1;
  } else {
    d.bias = RandomInts<int32_t>(rng, g.k, -20000, 20000);
  }
  d.mult = Multipliers(rng, g.k, kred);
  p.input = d.x.data();
  p.weights = d.w.data();
  p.bias = d.bias.data();
  p.multiplier = d.mult.data();
  d.y_ref.assign(g.n * g.k * p.out_h() * p.out_w(), 0);
  p.output = d.y_ref.data();
  EXPECT_TRUE(cpu::ValidateQConvParams(p).ok()) << Describe(g);
  cpu::QConvReference(p);
  return d;
}

// im2col + packed weights + the exact IMMA problem + the requantize epilogue.
// The CUDA runtime's int8 conv on the host: im2col rows per image, one IMMA-form GEMM per group
// (ReferenceGemm at the operand offsets the runtime uses), the requantize epilogue.
std::vector<int8_t> QConvViaGemm(const ConvCase& g, const QConvData& data) {
  const ConvDims d = ToDims(g);
  const ConvGemmShape shape =
      MakeConvGemmShape(g.k, g.c / g.group, g.r, g.s, g.group, kInt8GemmAlign);
  EXPECT_EQ(shape.kred, d.kred());
  EXPECT_EQ(shape.kout_pad % 4, 0);
  EXPECT_EQ(shape.kred_pad % 4, 0);
  const std::vector<int8_t> packed = PackInt8Weights(data.w.data(), shape);
  const NchwConvGemmShape ns = MakeInt8NchwConvGemmShape(d, shape);
  EXPECT_EQ(ns.pixels, RoundUpTo(d.oh * d.ow, 4));

  std::vector<int8_t> a(g.n * ns.stride_a, 0x55);  // poison: every byte written
  Im2colRowsInt8Args im;
  im.d = d;
  im.x = data.x.data();
  im.a = a.data();
  im.pixels_pad = ns.pixels;
  im.kred_pad = ns.kred;
  im.pad_value = data.p.pad_value;
  ForEachIndex<Im2colRowsInt8>(static_cast<int64_t>(a.size()) / 4, im);
  for (int64_t img = 0; img < g.n; ++img) {  // the padding rows are zero
    for (int64_t grp = 0; grp < g.group; ++grp) {
      const int8_t* rows = a.data() + img * ns.stride_a + grp * ns.pixels * ns.kred;
      for (int64_t i = d.oh * d.ow * ns.kred; i < ns.pixels * ns.kred; ++i) EXPECT_EQ(rows[i], 0);
    }
  }

  const GemmProblem prob = Int8ConvGemmNchw(ns);
  EXPECT_TRUE(CheckImmaConstraints(prob).ok()) << CheckImmaConstraints(prob);
  EXPECT_TRUE(CheckGemmProblem(prob).ok()) << CheckGemmProblem(prob);
  EXPECT_EQ(prob.batch_count, g.n);
  std::vector<int32_t> acc(g.n * ns.stride_c, 0x5a5a5a5a);
  for (int64_t grp = 0; grp < g.group; ++grp) {
    ReferenceGemm(prob, a.data() + grp * ns.pixels * ns.kred,
                  packed.data() + grp * shape.kout_pad * shape.kred_pad,
                  acc.data() + grp * ns.kout * ns.ldc);
  }

  std::vector<int8_t> y(data.y_ref.size(), 0x33);
  RequantEpilogueNchwArgs e;
  e.acc = acc.data();
  e.ldc = ns.ldc;
  e.bias = data.bias.data();
  e.multiplier = data.mult.data();
  e.y = y.data();
  e.channels = g.k;
  e.pixels = d.oh * d.ow;
  e.zp_out = data.p.zp_out;
  e.lo = data.p.lo;
  e.hi = data.p.hi;
  ForEachIndex<RequantEpilogueNchw>(static_cast<int64_t>(y.size()), e);
  return y;
}

std::vector<int8_t> QConvDirect(const ConvCase& g, const QConvData& data) {
  DirectQConvArgs a;
  a.d = ToDims(g);
  a.x = data.x.data();
  a.w = data.w.data();
  a.bias = data.bias.data();
  a.multiplier = data.mult.data();
  std::vector<int8_t> y(data.y_ref.size(), 0x33);
  a.y = y.data();
  a.pad_value = data.p.pad_value;
  a.zp_out = data.p.zp_out;
  a.lo = data.p.lo;
  a.hi = data.p.hi;
  ForEachIndex<DirectQConv>(DirectConvIndices(a.d), a);
  // The int32-offset form (what the GPU runs for such sizes) writes the same bytes.
  EXPECT_TRUE(DirectConvFitsInt32(a.d));
  std::vector<int8_t> y32(y.size(), 0x44);
  a.y = y32.data();
  ForEachIndex<DirectQConv32>(DirectConvIndices(a.d), a);
  EXPECT_EQ(y32, y);
  return y;
}

TEST(CudaQConvHost, GemmPathAndDirectAreBitExact) {
  std::mt19937 rng(1234);
  int checked = 0;
  for (const ConvCase& g : ConvCases()) {
    for (const QuantCase& q : kQuantCases) {
      for (bool huge_bias : {false, true}) {
        SCOPED_TRACE(absl::StrCat(Describe(g), " pad_value ", q.pad_value, " zp_out ", q.zp_out,
                                  " clamp [", q.lo, ",", q.hi, "] huge_bias ", huge_bias));
        const QConvData data = MakeQConv(g, q, rng, huge_bias);
        const std::vector<int8_t> gemm = QConvViaGemm(g, data);
        const std::vector<int8_t> direct = QConvDirect(g, data);
        ASSERT_EQ(gemm.size(), data.y_ref.size());
        EXPECT_EQ(std::memcmp(gemm.data(), data.y_ref.data(), gemm.size()), 0);
        EXPECT_EQ(std::memcmp(direct.data(), data.y_ref.data(), direct.size()), 0);
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, static_cast<int>(ConvCases().size()) * 5 * 2);
}

TEST(CudaQConvHost, OutputsAreNotDegenerate) {
  // The multipliers must spread the outputs: a test whose outputs all saturate proves little.
  std::mt19937 rng(99);
  const ConvCase g{1, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1};
  const QConvData data = MakeQConv(g, kQuantCases[1], rng, false);
  int distinct[256] = {};
  for (int8_t v : data.y_ref) distinct[v + 128] = 1;
  EXPECT_GT(std::count(std::begin(distinct), std::end(distinct), 1), 60);
}

TEST(CudaQConvHost, PaddingUsesTheInputZeroPoint) {
  // A 3x3 all-ones kernel over an all-zero image with pad_value 10: the corner output sums
  // 5 padded taps (50), the centre none (0). Checks im2col's padding value end to end.
  const ConvCase g{1, 1, 3, 3, 1, 3, 3, 1, 1, 1, 1, 1, 1};
  QConvData data;
  data.x.assign(9, 0);
  data.w.assign(9, 1);
  data.bias = {0};
  data.mult = {1.0f};
  data.p.pad_value = 10;
  data.p.zp_out = 0;
  data.p.lo = -128;
  data.p.hi = 127;
  data.y_ref.assign(9, 0);
  const std::vector<int8_t> y = QConvViaGemm(g, data);
  const std::vector<int8_t> want = {50, 30, 50, 30, 0, 30, 50, 30, 50};
  EXPECT_EQ(y, want);
  EXPECT_EQ(QConvDirect(g, data), want);
}

// ---- int8 GEMM ----

TEST(CudaQGemmHost, GemmPathIsBitExact) {
  std::mt19937 rng(777);
  const int64_t shapes[][3] = {{1, 10, 64},  {1, 1000, 512}, {3, 7, 5}, {5, 4, 4},
                               {17, 33, 65}, {64, 3, 3},     {2, 1, 1}, {8, 12, 130}};
  int checked = 0;
  for (const auto& s : shapes) {
    for (const QuantCase& q : kQuantCases) {
      const int64_t m = s[0], n = s[1], k = s[2];
      SCOPED_TRACE(absl::StrCat("M", m, " N", n, " K", k, " zp_out ", q.zp_out));
      std::vector<int8_t> a = RandomInts<int8_t>(rng, m * k, -128, 127);
      std::vector<int8_t> w = RandomInts<int8_t>(rng, n * k, -127, 127);
      std::vector<int32_t> bias = RandomInts<int32_t>(rng, n, -30000, 30000);
      std::vector<float> mult = Multipliers(rng, n, k);
      std::vector<int8_t> y_ref(m * n), y(m * n, 0x44);
      cpu::QGemmParams p;
      p.m = m;
      p.n = n;
      p.k = k;
      p.a = a.data();
      p.b = w.data();
      p.bias = bias.data();
      p.multiplier = mult.data();
      p.zp_out = q.zp_out;
      p.lo = q.lo;
      p.hi = q.hi;
      p.y = y_ref.data();
      cpu::QGemmReference(p);

      const ConvGemmShape shape = MakeGemmShape(n, k, kInt8GemmAlign);
      const std::vector<int8_t> packed = PackInt8Weights(w.data(), shape);
      std::vector<int8_t> a_pad(m * shape.kred_pad, 0x66);
      PadRowsInt8Args pa;
      pa.x = a.data();
      pa.out = a_pad.data();
      pa.cols = k;
      pa.cols_pad = shape.kred_pad;
      ForEachIndex<PadRowsInt8>(static_cast<int64_t>(a_pad.size()), pa);
      EXPECT_EQ(a_pad, PadRowsInt8Host(a.data(), m, k, shape.kred_pad));

      const GemmProblem prob = Int8Gemm(m, shape.kout_pad, shape.kred_pad);
      ASSERT_TRUE(CheckImmaConstraints(prob).ok()) << CheckImmaConstraints(prob);
      std::vector<int32_t> acc(prob.c_elements(), 0x5a5a5a5a);
      ReferenceGemm(prob, packed.data(), a_pad.data(), acc.data());

      RequantEpilogueArgs e;
      e.acc = acc.data();
      e.ldc = prob.ldc;
      e.bias = bias.data();
      e.multiplier = mult.data();
      e.y = y.data();
      e.images = m;
      e.channels = n;
      e.spatial = 1;
      e.zp_out = q.zp_out;
      e.lo = q.lo;
      e.hi = q.hi;
      ForEachIndex<RequantEpilogue>(m * n, e);
      EXPECT_EQ(std::memcmp(y.data(), y_ref.data(), y.size()), 0);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 8 * 5);
}

}  // namespace
}  // namespace qcc::cuda
