// Convolution and GEMM of the CUDA backend, on the host: the exact cuBLASLt problems the
// backend submits (gemm_problem.h), computed with ReferenceGemm on the operands the index bodies
// (conv_bodies.h, run by ForEachIndex) and the weight packing produce, against the CPU reference
// kernels: int8 conv/GEMM bit for bit (memcmp), fp32/fp16 within summation-order rounding. Also
// the direct convolution bodies, and the IMMA constraint check on good and bad problems.
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

namespace qcc::cuda {
namespace {

using ::testing::HasSubstr;

struct ConvCase {
  int64_t n, c, h, w, k, r, s;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1, group = 1;
};

std::string Describe(const ConvCase& g) {
  return absl::StrCat("N", g.n, " C", g.c, " ", g.h, "x", g.w, " K", g.k, " ", g.r, "x", g.s,
                      " stride ", g.stride_h, ",", g.stride_w, " pads ", g.pad_top, ",", g.pad_left,
                      ",", g.pad_bottom, ",", g.pad_right, " dil ", g.dilation_h, ",", g.dilation_w,
                      " group ", g.group);
}

std::vector<ConvCase> ConvCases() {
  std::vector<ConvCase> cases;
  auto add = [&](ConvCase c) { cases.push_back(c); };
  add({1, 3, 8, 8, 4, 1, 1});                               // 1x1
  add({1, 8, 7, 9, 16, 1, 1});                              // 1x1, odd spatial
  add({3, 5, 6, 6, 7, 1, 1, 2, 2});                         // 1x1 stride 2, batch 3
  add({3, 6, 5, 7, 4, 1, 1});                               // 1x1, batch 3 (fp32: no im2col)
  add({2, 10, 6, 6, 10, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 5});  // grouped 1x1, batch 2
  add({1, 3, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1});             // 3x3 pad 1
  add({3, 7, 10, 11, 5, 3, 3, 2, 2, 1, 1, 1, 1});           // 3x3 stride 2, odd C/K
  add({1, 5, 12, 12, 6, 5, 5, 1, 1, 2, 2, 2, 2});           // 5x5 pad 2
  add({1, 4, 13, 11, 3, 5, 5, 2, 1, 0, 2, 1, 0});           // asymmetric stride and pads
  add({1, 6, 12, 12, 4, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2});     // dilation 2
  add({3, 3, 9, 8, 5, 3, 2, 1, 2, 1, 0, 0, 1, 1, 3});       // non-square kernel, dil 1/3
  add({1, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8});    // depthwise
  add({3, 6, 8, 7, 12, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 6});   // depthwise, multiplier 2
  add({1, 12, 7, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3});   // grouped (4 -> 2 per group)
  add({1, 10, 6, 6, 10, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 5});  // grouped 1x1
  add({1, 14, 5, 5, 21, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 7});  // 7 groups, odd sizes
  add({1, 3, 1, 1, 5, 1, 1});                               // 1x1 image
  add({1, 16, 4, 4, 9, 4, 4});                              // kernel = image
  add({3, 32, 5, 5, 33, 3, 3, 1, 1, 1, 1, 1, 1});           // K not a multiple of 4
  add({1, 2, 5, 5, 3, 3, 3, 3, 3, 2, 2, 2, 2});             // pads beyond stride
  return cases;
}

struct QuantCase {
  int32_t pad_value, zp_out, lo, hi;
};

const QuantCase kQuantCases[] = {
    {0, 0, -128, 127},                             // symmetric
    {-7, 13, -128, 127},                           // zero points
    {-128, -128, -128, 127}, {25, -20, -20, 127},  // ReLU clamp at zp_out
    {3, 5, 5, 60},                                 // ReLU6-like clamp
};

ConvDims ToDims(const ConvCase& g) {
  ConvDims d;
  d.n = g.n;
  d.c = g.c;
  d.h = g.h;
  d.w = g.w;
  d.k = g.k;
  d.r = g.r;
  d.s = g.s;
  d.stride_h = g.stride_h;
  d.stride_w = g.stride_w;
  d.pad_top = g.pad_top;
  d.pad_left = g.pad_left;
  d.dilation_h = g.dilation_h;
  d.dilation_w = g.dilation_w;
  d.group = g.group;
  d.oh = (g.h + g.pad_top + g.pad_bottom - g.dilation_h * (g.r - 1) - 1) / g.stride_h + 1;
  d.ow = (g.w + g.pad_left + g.pad_right - g.dilation_w * (g.s - 1) - 1) / g.stride_w + 1;
  return d;
}

template <typename T>
std::vector<T> RandomInts(std::mt19937& rng, size_t count, int lo, int hi) {
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<T> v(count);
  for (T& x : v) x = static_cast<T>(dist(rng));
  return v;
}

std::vector<float> RandomFloats(std::mt19937& rng, size_t count, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

// Requantization multipliers that spread the outputs over the int8 range for sums of `kred`
// products of int8 values.
std::vector<float> Multipliers(std::mt19937& rng, int64_t count, int64_t kred) {
  const float base = 60.0f / (std::sqrt(static_cast<float>(kred)) * 127.0f * 70.0f);
  return RandomFloats(rng, count, 0.5f * base, 2.0f * base);
}

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

// ---- float convolution ----

struct Act {
  float lo, hi, slope;
};
constexpr float kInf = std::numeric_limits<float>::infinity();
const Act kActs[] = {
    {-kInf, kInf, 1.0f}, {0.0f, kInf, 1.0f}, {0.0f, 6.0f, 1.0f}, {-kInf, kInf, 0.1f}};

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

void ExpectClose(const std::vector<float>& got, const std::vector<float>& want,
                 const std::vector<float>& scale, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float tol = 1e-5f * scale[i] + 1e-30f;
    if (!(std::fabs(got[i] - want[i]) <= tol)) {
      if (++bad <= 5) {
        ADD_FAILURE() << what << " [" << i << "]: " << got[i] << " vs " << want[i] << " (tol "
                      << tol << ")";
      }
    }
  }
  EXPECT_EQ(bad, 0) << what;
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

// ---- float GEMM (ONNX Gemm) ----

TEST(CudaGemmF32Host, OnnxGemmProblemMatchesCpuGemm) {
  std::mt19937 rng(1357);
  const int64_t shapes[][3] = {{1, 10, 64}, {7, 5, 3}, {16, 33, 17}, {3, 1, 9}, {1, 1, 1}};
  // C broadcast shapes as (rows, cols) of C: 0 = no C.
  const int64_t c_shapes[][2] = {{0, 0}, {1, 1}, {1, -1}, {-1, 1}, {-1, -1}};
  int checked = 0;
  for (const auto& s : shapes) {
    for (int trans = 0; trans < 4; ++trans) {
      for (const auto& cs : c_shapes) {
        const int64_t m = s[0], n = s[1], k = s[2];
        const bool ta = trans & 1, tb = trans & 2;
        const float alpha = 0.75f, beta = cs[0] == 0 ? 0.0f : 1.5f;
        const Act act = kActs[checked % 4];
        SCOPED_TRACE(absl::StrCat("M", m, " N", n, " K", k, " transA ", ta, " transB ", tb, " C ",
                                  cs[0], "x", cs[1]));
        const std::vector<float> a = RandomFloats(rng, m * k, -1.0f, 1.0f);
        const std::vector<float> b = RandomFloats(rng, k * n, -1.0f, 1.0f);
        const int64_t c_rows = cs[0] < 0 ? m : cs[0], c_cols = cs[1] < 0 ? n : cs[1];
        const std::vector<float> c =
            RandomFloats(rng, std::max<int64_t>(1, c_rows * c_cols), -1.0f, 1.0f);
        // The CPU runtime's way (runtime/step_exec_float.cc RunGemm).
        std::vector<float> want(m * n, 0.0f);
        cpu::GemmF32Params gp;
        gp.m = m;
        gp.n = n;
        gp.k = k;
        gp.trans_a = ta;
        gp.trans_b = tb;
        gp.lda = ta ? m : k;
        gp.ldb = tb ? k : n;
        gp.ldc = n;
        gp.alpha = alpha;
        gp.beta = 0.0f;
        const int64_t rs = c_rows == 1 ? 0 : c_cols, cst = c_cols == 1 ? 0 : 1;
        if (cs[0] != 0) {
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) want[i * n + j] = beta * c[i * rs + j * cst];
          }
          gp.beta = 1.0f;
        }
        cpu::GemmF32(gp, a.data(), b.data(), want.data());
        cpu::ActivationF32 cact;
        cact.lo = act.lo;
        cact.hi = act.hi;
        cact.negative_slope = act.slope;
        cpu::ApplyActivationF32(cact, want.data(), m * n);

        const GemmProblem prob = FloatGemm(m, n, k, ta, tb, alpha, 0.0f);
        ASSERT_TRUE(CheckGemmProblem(prob).ok()) << CheckGemmProblem(prob);
        std::vector<float> y(m * n, std::nanf(""));
        ReferenceGemm(prob, b.data(), a.data(), y.data());  // a = ONNX B, b = ONNX A
        GemmEpilogueF32Args e;
        e.acc = y.data();  // in place
        e.ldc = n;
        e.c = cs[0] != 0 ? c.data() : nullptr;
        e.c_row_stride = rs;
        e.c_col_stride = cst;
        e.beta = beta;
        e.y = y.data();
        e.cols = n;
        e.lo = act.lo;
        e.hi = act.hi;
        e.negative_slope = act.slope;
        ForEachIndex<GemmEpilogueF32>(m * n, e);

        std::vector<float> scale(m * n);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            float sum = cs[0] != 0 ? std::fabs(beta * c[i * rs + j * cst]) : 0.0f;
            for (int64_t q = 0; q < k; ++q) {
              sum +=
                  std::fabs(alpha * a[ta ? q * m + i : i * k + q] * b[tb ? j * k + q : q * n + j]);
            }
            scale[i * n + j] = sum;
          }
        }
        ExpectClose(y, want, scale, "onnx gemm");
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 5 * 4 * 5);
}

// ---- ReferenceGemm semantics and the IMMA check ----

TEST(GemmProblemTest, ReferenceGemmIsColumnMajorWithOps) {
  // A 2x3 (op(A)), B 3x2 (op(B)) written out by hand; every op combination stores them
  // differently and must give the same C (2x2, ldc 3 with a guard row that must stay put).
  const float a_nn[] = {1, 4, 2, 5, 3, 6};     // column-major 2x3: rows (1 2 3), (4 5 6)
  const float a_t[] = {1, 2, 3, 4, 5, 6};      // column-major 3x2 = A^T
  const float b_nn[] = {7, 9, 11, 8, 10, 12};  // column-major 3x2: rows (7 8), (9 10), (11 12)
  const float b_t[] = {7, 8, 9, 10, 11, 12};   // column-major 2x3 = B^T
  const float want[] = {58, 139, -1, 64, 154, -1};
  for (int ops = 0; ops < 4; ++ops) {
    GemmProblem p;
    p.op_a = ops & 1 ? GemmOp::kT : GemmOp::kN;
    p.op_b = ops & 2 ? GemmOp::kT : GemmOp::kN;
    p.m = 2;
    p.n = 2;
    p.k = 3;
    p.lda = ops & 1 ? 3 : 2;
    p.ldb = ops & 2 ? 2 : 3;
    p.ldc = 3;
    ASSERT_TRUE(CheckGemmProblem(p).ok()) << CheckGemmProblem(p);
    float c[6] = {0, 0, -1, 0, 0, -1};
    ReferenceGemm(p, ops & 1 ? a_t : a_nn, ops & 2 ? b_t : b_nn, c);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(c[i], want[i]) << "ops " << ops << " i " << i;
  }
  // alpha and beta, and int8 wrap-around.
  GemmProblem p = FloatConvGemm(1, 1, 1);
  p.alpha = 2.0f;
  p.beta = 0.5f;
  const float one = 3.0f, two = 4.0f;
  float c = 10.0f;
  ReferenceGemm(p, &one, &two, &c);
  EXPECT_EQ(c, 29.0f);
  GemmProblem q = Int8ConvGemm(4, 4, 1);
  q.beta = 1.0f;
  const int8_t a8[16] = {-128, -128, -128, -128};
  const int8_t b8[4] = {-128, -128, -128, -128};
  int32_t c32[4] = {std::numeric_limits<int32_t>::max() - 65535, 0, 0, 0};
  ReferenceGemm(q, a8, b8, c32);  // 65536 + (2^31 - 65536) wraps to -2^31
  EXPECT_EQ(c32[0], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(c32[1], 0);
}

TEST(GemmProblemTest, ImmaAcceptsEveryBuilderProblem) {
  for (int64_t kout : {1, 3, 4, 5, 64, 1000}) {
    for (int64_t kred : {1, 3, 9, 27, 64, 75, 576}) {
      for (int64_t npix : {1, 7, 1024, 3 * 32 * 32}) {
        for (int64_t groups : {1, 2, 3, 32}) {
          const ConvGemmShape s = MakeConvGemmShape(kout * groups, kred, 1, 1, groups, 4);
          const GemmProblem p = Int8ConvGemm(s.kout_pad, s.kred_pad, npix, s.groups);
          EXPECT_TRUE(CheckImmaConstraints(p).ok()) << CheckImmaConstraints(p);
          const ConvGemmShape gs = MakeGemmShape(kout, kred, kInt8GemmAlign);
          const GemmProblem q = Int8Gemm(npix, gs.kout_pad, gs.kred_pad);
          EXPECT_TRUE(CheckImmaConstraints(q).ok()) << CheckImmaConstraints(q);
        }
      }
    }
  }
}

TEST(GemmProblemTest, ImmaRejectsBadProblemsNamingTheField) {
  const GemmProblem good = Int8ConvGemm(8, 12, 5, 2);
  ASSERT_TRUE(CheckImmaConstraints(good).ok());
  struct Bad {
    const char* field;
    void (*mutate)(GemmProblem*);
  };
  const Bad bads[] = {
      {"op_a", [](GemmProblem* p) { p->op_a = GemmOp::kN; }},
      {"op_b", [](GemmProblem* p) { p->op_b = GemmOp::kT; }},
      {"m=", [](GemmProblem* p) { p->m = 6; }},
      {"k=", [](GemmProblem* p) { p->k = 10; }},
      {"lda=", [](GemmProblem* p) { p->lda = 13; }},
      {"ldb=", [](GemmProblem* p) { p->ldb = 14; }},
      {"ldc=", [](GemmProblem* p) { p->ldc = 9; }},
      {"stride_a", [](GemmProblem* p) { p->stride_a = 98; }},
      {"stride_b", [](GemmProblem* p) { p->stride_b = 62; }},
      {"a_type", [](GemmProblem* p) { p->a_type = GemmType::kHalf; }},
      {"b_type", [](GemmProblem* p) { p->b_type = GemmType::kFloat32; }},
      {"c_type", [](GemmProblem* p) { p->c_type = GemmType::kFloat32; }},
      {"compute", [](GemmProblem* p) { p->compute = GemmCompute::kFloat32; }},
      {"alpha", [](GemmProblem* p) { p->alpha = 0.5f; }},
      {"ldb is less", [](GemmProblem* p) { p->ldb = 8; }},
      {"n must be positive", [](GemmProblem* p) { p->n = 0; }},
      {"stride_c", [](GemmProblem* p) { p->stride_c = 8; }},
  };
  for (const Bad& b : bads) {
    GemmProblem p = good;
    b.mutate(&p);
    const absl::Status s = CheckImmaConstraints(p);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << b.field;
    EXPECT_THAT(std::string(s.message()), HasSubstr(b.field));
  }
  // The float builders are well formed but not IMMA problems.
  EXPECT_TRUE(CheckGemmProblem(HalfConvGemm(8, 16, 5)).ok());
  EXPECT_FALSE(CheckImmaConstraints(HalfConvGemm(8, 16, 5)).ok());
  EXPECT_TRUE(CheckGemmProblem(FloatGemm(3, 5, 7, true, false, 1.0f, 0.0f)).ok());
}

TEST(GemmProblemTest, WeightPackingZeroesThePadding) {
  // K=6 in 2 groups, C/g=1, 3x1 kernel: kout 3 -> 4, kred 3 -> 4.
  std::vector<int8_t> w(18);
  for (int i = 0; i < 18; ++i) w[i] = static_cast<int8_t>(i + 1);
  const ConvGemmShape s = MakeConvGemmShape(6, 1, 3, 1, 2, 4);
  EXPECT_EQ(s.kout, 3);
  EXPECT_EQ(s.kout_pad, 4);
  EXPECT_EQ(s.kred, 3);
  EXPECT_EQ(s.kred_pad, 4);
  const std::vector<int8_t> packed = PackInt8Weights(w.data(), s);
  const std::vector<int8_t> want = {1,  2,  3,  0, 4,  5,  6,  0, 7,  8,  9,  0, 0, 0, 0, 0,
                                    10, 11, 12, 0, 13, 14, 15, 0, 16, 17, 18, 0, 0, 0, 0, 0};
  EXPECT_EQ(packed, want);
  std::vector<float> wf(w.begin(), w.end());
  const std::vector<uint16_t> half = PackHalfWeights(wf.data(), s);
  ASSERT_EQ(half.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(HalfToFloat(half[i]), want[i]) << i;
}

}  // namespace
}  // namespace qcc::cuda
