// Conv on the CPU against hand values and a naive direct convolution written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "backend_cpu/evaluator.h"
#include "ir/shape_inference.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/cpu_features.h"
#include "tests/backend_cpu/nn_conv_cases.h"
#include "tests/backend_cpu/nn_testing.h"
#include "tests/testing/op_test_util.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {
namespace {

/// The oracle: y[n, m, o] = b[m] + sum_{c in group, k} x[n, c, o * s - p + k * d] * w[m, c, k].
Tensor NaiveConv(const Tensor& x, const Tensor& w, const Tensor& b, int64_t group,
                 const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                 const std::vector<int64_t>& pads_begin, const std::vector<int64_t>& out) {
  const int64_t n_img = x.dim(0), c_all = x.dim(1), m_all = w.dim(0);
  const int64_t cg = c_all / group, mg = m_all / group;
  const auto in3 = To3(SpatialOf(x.dims()), 1), k3 = To3(SpatialOf(w.dims()), 1);
  const auto s3 = To3(strides, 1), d3 = To3(dilations, 1), p3 = To3(pads_begin, 0);
  const auto o3 = To3(out, 1);
  Tensor y(DType::kFloat32, NcPlus(n_img, m_all, out));
  const float* xp = x.data<float>();
  const float* wp = w.data<float>();
  float* yp = y.data<float>();
  for (int64_t n = 0; n < n_img; ++n)
    for (int64_t m = 0; m < m_all; ++m)
      for (int64_t oz = 0; oz < o3[0]; ++oz)
        for (int64_t oy = 0; oy < o3[1]; ++oy)
          for (int64_t ox = 0; ox < o3[2]; ++ox) {
            double acc = b.defined() ? b.data<float>()[m] : 0.0;
            for (int64_t ci = 0; ci < cg; ++ci) {
              const int64_t c = m / mg * cg + ci;
              for (int64_t kz = 0; kz < k3[0]; ++kz)
                for (int64_t ky = 0; ky < k3[1]; ++ky)
                  for (int64_t kx = 0; kx < k3[2]; ++kx) {
                    const int64_t iz = oz * s3[0] - p3[0] + kz * d3[0];
                    const int64_t iy = oy * s3[1] - p3[1] + ky * d3[1];
                    const int64_t ix = ox * s3[2] - p3[2] + kx * d3[2];
                    if (iz < 0 || iy < 0 || ix < 0 || iz >= in3[0] || iy >= in3[1] ||
                        ix >= in3[2]) {
                      continue;
                    }
                    acc +=
                        double{xp[(((n * c_all + c) * in3[0] + iz) * in3[1] + iy) * in3[2] + ix]} *
                        wp[(((m * cg + ci) * k3[0] + kz) * k3[1] + ky) * k3[2] + kx];
                  }
            }
            yp[(((n * m_all + m) * o3[0] + oz) * o3[1] + oy) * o3[2] + ox] =
                static_cast<float>(acc);
          }
  return y;
}

/// The AVX2 microkernel's sum (conv_avx2.cc): the bias (or 0), then one std::fma per
/// k = (channel, tap) in that order, a tap outside x multiplying 0 (the im2col's zeros), then
/// the activation. Exact: its bits, not an approximation.
Tensor FmaChainConv(const cpu::ConvF32Params& p, const float* x, const float* w, const float* bias,
                    const Dims& out_dims) {
  Tensor y(DType::kFloat32, out_dims);
  const int64_t cg = p.in_channels / p.groups, mg = p.out_channels / p.groups;
  const int64_t kvol = p.kernel_size(), out_sp = p.out_size(), in_sp = p.in_size();
  for (int64_t n = 0; n < p.batch; ++n) {
    for (int64_t m = 0; m < p.out_channels; ++m) {
      const int64_t grp = m / mg;
      for (int64_t q = 0; q < out_sp; ++q) {
        const int64_t o[3] = {q / (p.out[1] * p.out[2]), q / p.out[2] % p.out[1], q % p.out[2]};
        float acc = bias != nullptr ? bias[m] : 0.0f;
        for (int64_t c = 0; c < cg; ++c) {
          const float* xc = x + (n * p.in_channels + grp * cg + c) * in_sp;
          for (int64_t t = 0; t < kvol; ++t) {
            const int64_t k[3] = {t / (p.kernel[1] * p.kernel[2]), t / p.kernel[2] % p.kernel[1],
                                  t % p.kernel[2]};
            int64_t at = 0;
            bool inside = true;
            for (int a = 0; a < 3; ++a) {
              const int64_t i = o[a] * p.stride[a] - p.pad[a] + k[a] * p.dilation[a];
              inside = inside && i >= 0 && i < p.in[a];
              at = at * p.in[a] + i;
            }
            acc = std::fma(w[(m * cg + c) * kvol + t], inside ? xc[at] : 0.0f, acc);
          }
        }
        y.data<float>()[(n * p.out_channels + m) * out_sp + q] = p.activation(acc);
      }
    }
  }
  return y;
}

// Through the evaluator (Conv with constant W and bias, which it packs once): within 1e-4 of the
// oracle, and bit for bit ConvF32 called directly (which packs on every call).
void RunConvCase(const ConvCase& cc) {
  SCOPED_TRACE(cc.name);
  const CaseOperands o = OperandsOf(cc);
  const Tensor &x = o.x, &w = o.w, &b = o.b;
  const cpu::ConvF32Params& p = o.p;
  ir::ConvAttrs a;
  a.group = cc.group;
  a.strides = cc.strides;
  a.dilations = cc.dilations;
  a.pads = cc.pads;
  auto y = RunSingleOp(ir::OpKind::kConv, a, {{x}, {w, true}, {b, true}});
  ASSERT_TRUE(y.ok()) << y.status();
  const Tensor want = NaiveConv(x, w, b, cc.group, o.strides, o.dilations, o.pb, o.out);
  EXPECT_EQ(CompareTensors((*y)[0], want, 1e-4, 1e-4), "");
  Tensor direct(DType::kFloat32, want.dims());
  std::vector<float> ws(cpu::ConvF32WorkspaceSize(p) + 1);
  cpu::ConvF32(p, x.data<float>(), w.data<float>(), o.bias(), direct.data<float>(), ws.data());
  EXPECT_EQ(CompareTensors((*y)[0], direct, 0, 0), "");
}

TEST(NnConvTest, MatchesNaiveConvolution) {
  for (const ConvCase& cc : Cases()) RunConvCase(cc);
}

// Every kernel behind ConvF32 (sgemm, AVX-512 microkernel, direct depthwise) against the
// oracle, called directly with 1 and 3 threads: the op tests above only reach the one that
// ConvF32 picks on this CPU. And W packed once (PackConvF32Weights, at batch 1 on one thread, as
// a plan's Conv step does) with ConvF32WithPacked gives ConvF32's bits at the case's batch and
// every thread count (the packing depends on the convolution's shape only).
TEST(NnConvTest, EveryKernelMatchesNaive) {
  int depthwise_avx2_cases = 0;
  for (const ConvCase& cc : Cases()) {
    SCOPED_TRACE(cc.name);
    CaseOperands o = OperandsOf(cc);
    const Tensor &x = o.x, &w = o.w, &b = o.b;
    cpu::ConvF32Params& p = o.p;
    const Tensor want = NaiveConv(x, w, b, cc.group, o.strides, o.dilations, o.pb, o.out);
    const float* bias = o.bias();
    cpu::ConvF32Params one = p;
    one.batch = 1;
    const cpu::PackedConvF32 packed = cpu::PackConvF32Weights(one, w.data<float>());
    const bool microkernel = cpu::ConvF32HasAvx512() || cpu::ConvF32HasAvx2();
    EXPECT_EQ(packed.empty(), !microkernel || (p.IsDepthwise() && cc.group > 1));
    // Whole cache lines: the kernels read packed weights in 64-byte vectors.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(packed.data()) % 64, 0u);
    for (int threads : {1, 3}) {
      p.num_threads = threads;
      Tensor direct(DType::kFloat32, want.dims()), with_packed(DType::kFloat32, want.dims());
      std::vector<float> ws(cpu::ConvF32WorkspaceSize(p) + 1);
      cpu::ConvF32(p, x.data<float>(), w.data<float>(), bias, direct.data<float>(), ws.data());
      ws.assign(cpu::ConvF32WithPackedWorkspaceSize(p, packed) + 1, 0.0f);
      cpu::ConvF32WithPacked(p, x.data<float>(), w.data<float>(), packed, bias,
                             with_packed.data<float>(), ws.data());
      EXPECT_EQ(CompareTensors(with_packed, direct, 0, 0), "") << "packed, threads " << threads;
      Tensor y(DType::kFloat32, want.dims());
      ws.assign(cpu::ConvF32Im2colWorkspaceSize(p) + 1, 0.0f);
      cpu::ConvF32Im2col(p, x.data<float>(), w.data<float>(), bias, y.data<float>(), ws.data());
      EXPECT_EQ(CompareTensors(y, want, 1e-4, 1e-4), "") << "sgemm, threads " << threads;
      if (cpu::ConvF32HasAvx512()) {
        y = Tensor(DType::kFloat32, want.dims());
        ws.assign(cpu::ConvF32Avx512WorkspaceSize(p) + 1, 0.0f);
        cpu::ConvF32Im2colAvx512(p, x.data<float>(), w.data<float>(), bias, y.data<float>(),
                                 ws.data());
        EXPECT_EQ(CompareTensors(y, want, 1e-4, 1e-4), "") << "avx512, threads " << threads;
      }
      // Wherever the CPU can run it (ConvF32 picks it only without AVX-512), bit for bit the
      // std::fma chain.
      if (cpu::Cpu().avx2 && cpu::Cpu().fma &&
          !(p.IsDepthwise() && cc.group > 1 && !p.IsPointwise())) {
        y = Tensor(DType::kFloat32, want.dims());
        ws.assign(cpu::ConvF32Avx2WorkspaceSize(p) + 1, 0.0f);
        cpu::ConvF32Avx2(p, x.data<float>(), w.data<float>(), bias, y.data<float>(), ws.data());
        EXPECT_EQ(CompareTensors(y, want, 1e-4, 1e-4), "") << "avx2, threads " << threads;
        EXPECT_EQ(
            CompareTensors(y, FmaChainConv(p, x.data<float>(), w.data<float>(), bias, want.dims()),
                           0, 0),
            "")
            << "avx2 bits, threads " << threads;
      }
      if (p.IsDepthwise()) {
        y = Tensor(DType::kFloat32, want.dims());
        cpu::ConvF32DepthwiseDirect(p, x.data<float>(), w.data<float>(), bias, y.data<float>());
        EXPECT_EQ(CompareTensors(y, want, 1e-4, 1e-4), "") << "depthwise, threads " << threads;
        // The AVX2 form wherever the CPU can run it: the direct path's bits.
        if (cpu::Cpu().avx2 && cpu::Cpu().fma && cpu::ConvF32DepthwiseAvx2Fits(p)) {
          Tensor v(DType::kFloat32, want.dims());
          cpu::ConvF32DepthwiseAvx2(p, x.data<float>(), w.data<float>(), bias, v.data<float>());
          EXPECT_EQ(CompareTensors(v, y, 0, 0), "") << "depthwise avx2, threads " << threads;
          ++depthwise_avx2_cases;
        }
      }
      if (p.IsDepthwise() && cpu::ConvF32HasAvx512() && cpu::ConvF32DepthwiseAvx512Fits(p)) {
        y = Tensor(DType::kFloat32, want.dims());
        cpu::ConvF32DepthwiseAvx512(p, x.data<float>(), w.data<float>(), bias, y.data<float>());
        EXPECT_EQ(CompareTensors(y, want, 1e-4, 1e-4), "")
            << "depthwise avx512, threads " << threads;
        // Every tap from the bias in (row, column) order: the std::fma chain's bits.
        EXPECT_EQ(
            CompareTensors(y, FmaChainConv(p, x.data<float>(), w.data<float>(), bias, want.dims()),
                           0, 0),
            "")
            << "depthwise avx512 bits, threads " << threads;
      }
    }
  }
  // Every 2-D depthwise case with horizontal stride 1 or 2, at 1 and 3 threads.
  if (cpu::Cpu().avx2 && cpu::Cpu().fma) {
    EXPECT_GE(depthwise_avx2_cases, 2 * 10);
  }
}

// The AVX2 depthwise form against the direct path, bit for bit (any NaN for a NaN), on what a
// blend must keep: a -0 bias that taps outside x must not turn into +0, infinite weights (inf * 0
// would be NaN), NaN and infinite inputs; with widths up to 70 (segments of 8 and their tails),
// strides 1 and 2, dilations 1 and 3, pads past the kernel's reach, a channel multiplier of 2 and
// every activation form.
TEST(NnConvTest, DepthwiseAvx2KeepsTheDirectPathsBits) {
  if (!cpu::Cpu().avx2 || !cpu::Cpu().fma) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uni(-2.0f, 2.0f);
  const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN};
  int cases = 0;
  for (int64_t width : {1, 5, 8, 9, 16, 23, 31, 70}) {
    for (int64_t stride : {1, 2}) {
      for (int64_t dilation : {1, 3}) {
        for (int64_t kernel : {1, 3, 5}) {
          for (int64_t pad : {0, 1, 4}) {
            cpu::ConvF32Params p;
            p.batch = 2;
            p.in_channels = 3;
            p.groups = 3;
            p.out_channels = kernel == 3 ? 6 : 3;  // a channel multiplier of 2 too
            p.in = {1, 6, width};
            p.kernel = {1, kernel, kernel};
            p.stride = {1, stride, stride};
            p.dilation = {1, dilation, dilation};
            p.pad = {0, pad, pad};
            const int64_t reach = (kernel - 1) * dilation + 1;
            const int64_t oh = (6 + 2 * pad - reach) / stride + 1;
            const int64_t ow = (width + 2 * pad - reach) / stride + 1;
            if (oh <= 0 || ow <= 0) continue;
            p.out = {1, oh, ow};
            ASSERT_TRUE(cpu::ConvF32DepthwiseAvx2Fits(p));
            std::vector<float> x(p.batch * p.in_channels * p.in_size());
            std::vector<float> w(p.out_channels * p.kernel_size()), b(p.out_channels);
            for (float& v : x) v = rng() % 16 == 0 ? special[rng() % 5] : uni(rng);
            for (float& v : w) v = rng() % 24 == 0 ? special[rng() % 4] : uni(rng);
            for (float& v : b) v = rng() % 2 == 0 ? -0.0f : uni(rng);
            const std::vector<cpu::ActivationF32> acts = {
                {}, {0.0f}, {0.0f, 6.0f}, {-INFINITY, INFINITY, 0.1f}};
            for (const cpu::ActivationF32& act : acts) {
              p.activation = act;
              for (int threads : {1, 2}) {
                p.num_threads = threads;
                const size_t n = p.batch * p.out_channels * p.out_size();
                std::vector<float> want(n), got(n, 12345.0f);
                cpu::ConvF32DepthwiseDirect(p, x.data(), w.data(), b.data(), want.data());
                cpu::ConvF32DepthwiseAvx2(p, x.data(), w.data(), b.data(), got.data());
                // Bit for bit, but for which NaN: when both operands of an add or multiply are
                // NaN, x86 keeps the first one's payload, and the direct path's own scalar and
                // vectorized loops order them differently.
                for (size_t i = 0; i < n; ++i) {
                  if (std::isnan(want[i]) && std::isnan(got[i])) continue;
                  uint32_t a, c;
                  std::memcpy(&a, &want[i], 4);
                  std::memcpy(&c, &got[i], 4);
                  ASSERT_EQ(a, c) << "output " << i << " width " << width << " stride " << stride
                                  << " dilation " << dilation << " kernel " << kernel << " pad "
                                  << pad << " slope " << act.negative_slope << " threads "
                                  << threads;
                }
                ++cases;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 500);

  // Its tap table holds 256 (segment, kernel column) pairs: a wider row takes the direct path.
  cpu::ConvF32Params wide;
  wide.in_channels = wide.groups = wide.out_channels = 2;
  wide.kernel = {1, 1, 3};
  wide.in = {1, 1, 8 * 85 + 2};
  wide.out = {1, 1, 8 * 85};
  EXPECT_TRUE(cpu::ConvF32DepthwiseAvx2Fits(wide));
  wide.in[2] += 8;
  wide.out[2] += 8;
  EXPECT_FALSE(cpu::ConvF32DepthwiseAvx2Fits(wide));
}

// The AVX-512 depthwise plane kernels that build taps from aligned loads (3 x 3 and 5 x 5; stride
// 2: the even and odd columns of each row segment, a lane moved in from beside it where a tap
// reaches past it; stride 1: the segment moved by valignd with its neighbours) against the
// std::fma chain, bit for bit: planes too large for the channel-blocked path, every left padding
// they take and ones past it (which go elsewhere), right paddings 0-2, widths of less than a
// segment and ones that end on, before and after a segment's input columns, an odd and an even
// height, and 1 and 3 threads.
TEST(NnConvTest, DepthwiseAvx512AlignedTapsKeepTheFmaChainsBits) {
  if (!cpu::ConvF32HasAvx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
  std::mt19937 rng(23);
  std::uniform_real_distribution<float> uni(-2.0f, 2.0f);
  int cases = 0;
  for (int64_t stride : {1, 2}) {
    for (int64_t kernel : {3, 5}) {
      for (int64_t left = 0; left <= 2; ++left) {
        for (int64_t right = 0; right <= 2; ++right) {
          for (int64_t width : {9, 31, 32, 33, 64, 70, 97}) {
            for (int64_t height : {47, 50}) {
              cpu::ConvF32Params p;
              p.batch = 1;
              p.in_channels = p.groups = p.out_channels = 3;
              p.in = {1, height, width};
              p.kernel = {1, kernel, kernel};
              p.stride = {1, stride, stride};
              p.pad = {0, left, left};
              const int64_t oh = (height + left + right - kernel) / stride + 1;
              const int64_t ow = (width + left + right - kernel) / stride + 1;
              p.out = {1, oh, ow};
              // ConvF32Params pads both ends alike; the end padding only sets the output size.
              ASSERT_TRUE(cpu::ConvF32DepthwiseAvx512Fits(p));
              ASSERT_GT(p.out_size(), 64) << "a plane the channel-blocked path would take";
              std::vector<float> x(p.in_channels * p.in_size()), w(3 * p.kernel_size()), b(3);
              for (float& v : x) v = uni(rng);
              for (float& v : w) v = uni(rng);
              for (float& v : b) v = uni(rng);
              for (const cpu::ActivationF32& act :
                   {cpu::ActivationF32{}, cpu::ActivationF32{0.0f, 6.0f}}) {
                p.activation = act;
                const Tensor want = FmaChainConv(p, x.data(), w.data(), b.data(), {1, 3, oh, ow});
                for (int threads : {1, 3}) {
                  p.num_threads = threads;
                  Tensor got(DType::kFloat32, {1, 3, oh, ow});
                  cpu::ConvF32DepthwiseAvx512(p, x.data(), w.data(), b.data(), got.data<float>());
                  ASSERT_EQ(CompareTensors(got, want, 0, 0), "")
                      << "stride " << stride << " kernel " << kernel << " pads " << left << ","
                      << right << " width " << width << " height " << height << " threads "
                      << threads;
                  ++cases;
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 2 * 2 * 3 * 3 * 7 * 2 * 2 * 2);
}

// An empty convolution (no images, or no output channels) gives an empty result on every
// kernel path and thread count: sizes, packing and the run itself (no division by zero).
// PackConvF32Weights's contract: what it packs from channels, groups, the kernel, strides and
// dilations alone (as the evaluator calls it, before it knows extents: the attributes only) is
// what it packs with a case's extents and pads, except where ConvF32PackingDependsOnExtents says
// otherwise (there the evaluator packs for the graph's static extents, or not ahead at all).
TEST(NnConvTest, PackingDependsOnExtentsOnlyWhereItSays) {
  int compared = 0;
  for (const ConvCase& cc : Cases()) {
    SCOPED_TRACE(cc.name);
    std::vector<int64_t> strides, dilations, pb, out;
    const cpu::ConvF32Params p = ParamsOf(cc, strides, dilations, pb, out);
    cpu::ConvF32Params bare;  // what the evaluator knows
    bare.in_channels = p.in_channels;
    bare.out_channels = p.out_channels;
    bare.groups = p.groups;
    bare.kernel = p.kernel;
    bare.stride = p.stride;
    bare.dilation = p.dilation;
    if (cpu::ConvF32PackingDependsOnExtents(bare)) continue;
    const Tensor w = RandomF32(NcPlus(cc.m, cc.c / cc.group, cc.kernel), 2);
    EXPECT_EQ(cpu::PackConvF32Weights(bare, w.data<float>()),
              cpu::PackConvF32Weights(p, w.data<float>()));
    ++compared;
  }
  EXPECT_GT(compared, 0);
}

// A 1x1 conv of 64 channels in and 72 out on a 7x7 map, whose packing depends on its extents:
// the evaluator packs it once for the graph's static extents (or, with symbolic ones, leaves
// it to each run), and every run gives ConvF32's bits.
TEST(NnConvTest, TheEvaluatorPacksExtentDependentConvsForStaticExtents) {
  constexpr int64_t kC = 64, kM = 72, kHw = 7;
  cpu::ConvF32Params bare;
  bare.in_channels = kC;
  bare.out_channels = kM;
  ASSERT_TRUE(cpu::ConvF32PackingDependsOnExtents(bare) || !cpu::ConvF32HasAvx512());
  const Tensor x = RandomF32({1, kC, kHw, kHw}, 31), w = RandomF32({kM, kC, 1, 1}, 32),
               b = RandomF32({kM}, 33);
  cpu::ConvF32Params p = bare;
  p.in = {1, kHw, kHw};
  p.out = {1, kHw, kHw};
  p.num_threads = 2;
  Tensor want(DType::kFloat32, {1, kM, kHw, kHw});
  std::vector<float> ws(cpu::ConvF32WorkspaceSize(p) + 1);
  cpu::ConvF32(p, x.data<float>(), w.data<float>(), b.data<float>(), want.data<float>(), ws.data());
  for (bool symbolic : {false, true}) {
    SCOPED_TRACE(symbolic ? "symbolic extents" : "static extents");
    ir::Graph g;
    g.set_opset(17);
    std::vector<ir::Dim> dims = {1, kC, kHw, kHw};
    if (symbolic) {
      g.AddSymbol("H");
      g.AddSymbol("W");
      dims = {1, kC, ir::SymbolDim(0), ir::SymbolDim(1)};
    }
    ir::Value* in = g.AddInput("x", ir::TensorType(DType::kFloat32, dims));
    ir::Value* wv = g.NewConstant("w", w);
    ir::Value* bv = g.NewConstant("b", b);
    g.AddOutput(g.AddNode(ir::OpKind::kConv, "conv", {in, wv, bv}, {"y"})->output(0));
    ASSERT_TRUE(ir::InferShapes(g).ok());
    cpu::EvalOptions options;
    options.num_threads = 2;
    auto ev = cpu::Evaluator::Create(g, options);
    ASSERT_TRUE(ev.ok()) << ev.status();
    for (int run = 0; run < 2; ++run) {
      auto y = (*ev)->Run({x});
      ASSERT_TRUE(y.ok()) << y.status();
      EXPECT_EQ(CompareTensors((*y)[0], want, 0, 0), "") << "run " << run;
    }
  }
}

TEST(NnConvTest, EmptyConvolutionsRunOnEveryPath) {
  for (int64_t batch : {0, 2}) {
    for (int64_t out_channels : {0, 8}) {
      for (int threads : {1, 4}) {
        cpu::ConvF32Params p;
        p.batch = batch;
        p.in_channels = 4;
        p.out_channels = out_channels;
        p.in = {1, 6, 6};
        p.out = {1, 6, 6};
        p.kernel = {1, 3, 3};
        p.pad = {0, 1, 1};
        p.num_threads = threads;
        const std::vector<float> x(std::max<int64_t>(1, batch * 4 * 36), 1.0f);
        const std::vector<float> w(std::max<int64_t>(1, out_channels * 4 * 9), 0.5f);
        std::vector<float> y(std::max<int64_t>(1, batch * out_channels * 36), -1.0f);
        const cpu::PackedConvF32 packed = cpu::PackConvF32Weights(p, w.data());
        std::vector<float> ws(cpu::ConvF32WithPackedWorkspaceSize(p, packed) +
                              cpu::ConvF32WorkspaceSize(p) + 1);
        cpu::ConvF32WithPacked(p, x.data(), w.data(), packed, nullptr, y.data(), ws.data());
        cpu::ConvF32(p, x.data(), w.data(), nullptr, y.data(), ws.data());
        if (batch * out_channels == 0) continue;
        // Interior outputs: 4 channels x 9 taps x 1 x 0.5.
        EXPECT_EQ(y[7], 18.0f) << batch << " " << out_channels << " " << threads;
      }
    }
  }
}

// ONNX's documented example: 5x5 ramp, 3x3 ones, with and without padding.
TEST(NnConvTest, HandValues) {
  std::vector<float> ramp(25);
  for (int i = 0; i < 25; ++i) ramp[i] = static_cast<float>(i);
  const Tensor x = F32({1, 1, 5, 5}, ramp);
  const Tensor w = F32({1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  ir::ConvAttrs a;
  a.pads = {1, 1, 1, 1};
  auto y = RunSingleOp(ir::OpKind::kConv, a, {{x}, {w, true}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(CompareTensors((*y)[0], F32({1, 1, 5, 5}, {12,  21,  27, 33,  24,  33,  54, 63,  72,
                                                       51,  63,  99, 108, 117, 81,  93, 144, 153,
                                                       162, 111, 72, 111, 117, 123, 84}),
                           0, 0),
            "");
  a.pads = {};
  a.kernel_shape = {3, 3};
  y = RunSingleOp(ir::OpKind::kConv, a, {{x}, {w, true}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(
      CompareTensors((*y)[0], F32({1, 1, 3, 3}, {54, 63, 72, 99, 108, 117, 144, 153, 162}), 0, 0),
      "");
}

// auto_pad: SAME_UPPER puts the odd padding pixel at the end, SAME_LOWER at the beginning;
// VALID pads nothing. Input 6, kernel 3, stride 2: out 3, total pad (3-1)*2+3-6 = 1.
TEST(NnConvTest, AutoPad) {
  const Tensor x = RandomF32({2, 2, 6, 7}, 4);
  const Tensor w = RandomF32({3, 2, 3, 3}, 5);
  const Tensor b = RandomF32({3}, 6);
  struct Case {
    ir::AutoPad mode;
    std::vector<int64_t> out, pads_begin;
  };
  // Width 7: SAME out 4, total (4-1)*2+3-7 = 2 -> 1 each side; VALID out (7-3)/2+1 = 3.
  for (const Case& c :
       {Case{ir::AutoPad::kSameUpper, {3, 4}, {0, 1}},
        Case{ir::AutoPad::kSameLower, {3, 4}, {1, 1}}, Case{ir::AutoPad::kValid, {2, 3}, {0, 0}}}) {
    ir::ConvAttrs a;
    a.auto_pad = c.mode;
    a.strides = {2, 2};
    a.pads = {5, 5, 5, 5};  // ignored under auto_pad
    auto y = RunSingleOp(ir::OpKind::kConv, a, {{x}, {w, true}, {b, true}});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(
        CompareTensors((*y)[0], NaiveConv(x, w, b, 1, {2, 2}, {}, c.pads_begin, c.out), 1e-4, 1e-4),
        "")
        << static_cast<int>(c.mode);
  }
}

TEST(NnConvTest, RejectsInconsistentShapes) {
  const Tensor x = RandomF32({1, 4, 5, 5}, 7);
  struct Case {
    const char* what;
    Dims w_dims;
    int64_t group;
    Dims b_dims;
  };
  for (const Case& c :
       {Case{"channels", {6, 3, 3, 3}, 1, {}}, Case{"multiple of group", {5, 2, 3, 3}, 2, {}},
        Case{"rank", {6, 4, 3}, 1, {}}, Case{"B (bias)", {6, 4, 3, 3}, 1, {5}},
        Case{"larger than the input", {6, 4, 7, 3}, 1, {}}}) {
    ir::ConvAttrs a;
    a.group = c.group;
    const Tensor b = c.b_dims.empty() ? Tensor() : RandomF32(c.b_dims, 8);
    auto y = RunSingleOp(ir::OpKind::kConv, a, {{x}, {RandomF32(c.w_dims, 9), true}, {b, true}});
    ASSERT_FALSE(y.ok()) << c.what;
    EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument) << y.status();
    EXPECT_NE(y.status().message().find(c.what), absl::string_view::npos) << y.status();
  }
}

TEST(NnConvTest, RejectsNonFloatInputs) {
  const Tensor x = Tensor(DType::kFloat64, {1, 1, 3, 3});
  const Tensor w = Tensor(DType::kFloat64, {1, 1, 1, 1});
  auto y = RunSingleOp(ir::OpKind::kConv, ir::ConvAttrs{}, {{x}, {w, true}});
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), absl::StatusCode::kUnimplemented) << y.status();
}

}  // namespace
}  // namespace qcc::testing
