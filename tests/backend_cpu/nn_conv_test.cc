// Conv on the CPU against hand values and a naive direct convolution written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend_cpu/evaluator.h"
#include "ir/shape_inference.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv_internal.h"
#include "kernels/cpu/cpu_features.h"
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

struct ConvCase {
  const char* name;
  int64_t n, c, m, group;
  std::vector<int64_t> in, kernel;
  std::vector<int64_t> strides = {}, dilations = {}, pads = {};  // pads: begin..., end...
  bool bias = true;
};

/// The kernel parameters of `cc` at its batch, with the full strides, dilations, leading pads and
/// output extents (every spatial axis) in the out-parameters.
cpu::ConvF32Params ParamsOf(const ConvCase& cc, std::vector<int64_t>& strides,
                            std::vector<int64_t>& dilations, std::vector<int64_t>& pb,
                            std::vector<int64_t>& out) {
  const size_t r = cc.in.size();
  pb.assign(r, 0);
  out.assign(r, 0);
  strides.assign(r, 1);
  dilations.assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    if (!cc.strides.empty()) strides[i] = cc.strides[i];
    if (!cc.dilations.empty()) dilations[i] = cc.dilations[i];
    const int64_t pe = cc.pads.empty() ? 0 : cc.pads[r + i];
    pb[i] = cc.pads.empty() ? 0 : cc.pads[i];
    out[i] = (cc.in[i] + pb[i] + pe - ((cc.kernel[i] - 1) * dilations[i] + 1)) / strides[i] + 1;
  }
  cpu::ConvF32Params p;
  p.batch = cc.n;
  p.in_channels = cc.c;
  p.out_channels = cc.m;
  p.groups = cc.group;
  p.in = To3(cc.in, 1);
  p.out = To3(out, 1);
  p.kernel = To3(cc.kernel, 1);
  p.stride = To3(strides, 1);
  p.dilation = To3(dilations, 1);
  p.pad = To3(pb, 0);
  return p;
}

/// A case's seeded operands and its kernel parameters (ParamsOf) at its batch.
struct CaseOperands {
  Tensor x, w, b;
  std::vector<int64_t> strides, dilations, pb, out;
  cpu::ConvF32Params p;
  const float* bias() const { return b.defined() ? b.data<float>() : nullptr; }
};
CaseOperands OperandsOf(const ConvCase& cc) {
  CaseOperands o;
  o.x = RandomF32(NcPlus(cc.n, cc.c, cc.in), 1);
  o.w = RandomF32(NcPlus(cc.m, cc.c / cc.group, cc.kernel), 2);
  o.b = cc.bias ? RandomF32({cc.m}, 3) : Tensor();
  o.p = ParamsOf(cc, o.strides, o.dilations, o.pb, o.out);
  return o;
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

const std::vector<ConvCase>& Cases() {
  static const auto* cases = new std::vector<ConvCase>{
      {"pointwise_1x1", 2, 8, 4, 1, {5, 7}, {1, 1}},
      {"pointwise_odd_channels_no_bias", 1, 3, 5, 1, {4, 4}, {1, 1}, {}, {}, {}, false},
      {"pointwise_grouped", 2, 6, 4, 2, {5, 5}, {1, 1}},
      {"pointwise_stride2", 1, 4, 4, 1, {6, 6}, {1, 1}, {2, 2}},
      {"pointwise_padded", 1, 3, 2, 1, {3, 4}, {1, 1}, {}, {}, {1, 0, 0, 1}},
      {"3x3_pad1_batch3", 3, 3, 5, 1, {8, 8}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"resnet_block_batch4", 4, 16, 16, 1, {8, 8}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"stride2_asymmetric_pads", 2, 4, 6, 1, {9, 7}, {3, 2}, {2, 2}, {}, {1, 0, 2, 1}},
      {"stride_gt_kernel", 1, 2, 3, 1, {10, 11}, {2, 2}, {3, 3}},
      {"dilation", 1, 3, 4, 1, {9, 9}, {3, 3}, {}, {2, 3}, {2, 2, 2, 2}},
      {"groups2", 2, 4, 6, 2, {6, 6}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"depthwise_stride2", 2, 6, 6, 6, {7, 7}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},
      {"depthwise_multiplier2_dilated", 1, 4, 8, 4, {6, 5}, {3, 3}, {}, {2, 2}, {2, 1, 2, 1}},
      {"depthwise_5x5_no_bias", 1, 3, 3, 3, {9, 8}, {5, 5}, {}, {}, {2, 2, 2, 2}, false},
      {"depthwise_wide_rows_stride2", 2, 5, 5, 5, {6, 41}, {3, 5}, {2, 2}, {}, {1, 2, 1, 2}},
      {"depthwise_wide_rows_dilated", 1, 3, 6, 3, {5, 37}, {3, 3}, {}, {1, 3}, {1, 3, 1, 3}},
      {"depthwise_stride2_dilated_odd", 1, 4, 4, 4, {7, 35}, {2, 3}, {1, 2}, {2, 2}, {0, 1, 1, 2}},
      // DepthwisePlaneRows: kernel heights 3, 5 and 7, vertical stride 1 and 2, planes whose
      // height is not a multiple of its 4-row groups, TF-style "same" pads (more at the end).
      {"depthwise_3x3_stride1_13_rows", 1, 3, 3, 3, {13, 40}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"depthwise_5x5_stride2_same_pads", 2, 6, 6, 6, {14, 14}, {5, 5}, {2, 2}, {}, {1, 1, 2, 2}},
      {"depthwise_7x7_stride1", 1, 3, 3, 3, {11, 18}, {7, 7}, {}, {}, {3, 3, 3, 3}},
      // DepthwisePlaneNarrow (stride 1, square 5 x 5 and 7 x 7 kernels, rows of one or two
      // segments, eight accumulators): 13 rows (a group of 8 and one of 5) of 14 outputs; a
      // channel multiplier of 2 with asymmetric pads and 28 outputs (a segment of 12); rows of
      // exactly 32 and of 17 outputs (a second segment of one lane), 7 x 7 without pads.
      {"depthwise_5x5_narrow_one_segment", 2, 6, 6, 6, {13, 14}, {5, 5}, {}, {}, {2, 2, 2, 2}},
      {"depthwise_5x5_narrow_multiplier2", 1, 3, 6, 3, {10, 30}, {5, 5}, {}, {}, {1, 2, 3, 0}},
      {"depthwise_7x7_narrow_32_wide", 1, 4, 4, 4, {9, 32}, {7, 7}, {}, {}, {3, 3, 3, 3}},
      {"depthwise_7x7_narrow_17_wide", 2, 2, 2, 2, {20, 23}, {7, 7}},
      {"depthwise_7x7_stride2_wide", 1, 2, 2, 2, {13, 40}, {7, 7}, {2, 2}, {}, {3, 3, 3, 3}},
      {"depthwise_3x3_stride_2x1", 1, 4, 4, 4, {10, 9}, {3, 3}, {2, 1}, {}, {1, 1, 1, 1}},
      // Stride 2 over rows of several segments with no left pad, a channel multiplier with
      // stride 2, and stride 3 with dilation and a kernel wider than tall.
      {"depthwise_stride2_wide_no_left_pad", 1, 3, 3, 3, {9, 70}, {3, 3}, {2, 2}, {}, {0, 0, 1, 1}},
      {"depthwise_multiplier3_stride2", 2, 2, 6, 2, {8, 37}, {5, 5}, {2, 2}, {}, {2, 2, 2, 2}},
      {"depthwise_stride3_dilated", 1, 4, 4, 4, {11, 50}, {3, 4}, {3, 3}, {1, 2}, {1, 2, 0, 1}},
      // 16 channels or more on a small map, one output each: the AVX-512 path's channel-blocked
      // kernel (16 channels to a register; blocks of 16, 16 and 8; rows of 7 and 11 outputs,
      // groups of 8 and fewer; stride 2 with uneven pads and input rows no output reads; a
      // dilated 3x3; an asymmetric kernel on a 1-wide map).
      {"depthwise_blocked_7x7_5x5", 1, 40, 40, 40, {7, 7}, {5, 5}, {}, {}, {2, 2, 2, 2}},
      {"depthwise_blocked_stride2_same_pads",
       2,
       33,
       33,
       33,
       {14, 14},
       {5, 5},
       {2, 2},
       {},
       {1, 1, 2, 2}},
      {"depthwise_blocked_stride2_unread_rows",
       1,
       16,
       16,
       16,
       {10, 9},
       {3, 3},
       {2, 2},
       {},
       {0, 0, 0, 0}},
      {"depthwise_blocked_dilated_no_bias",
       1,
       20,
       20,
       20,
       {9, 11},
       {3, 3},
       {},
       {2, 2},
       {2, 2, 2, 2},
       false},
      {"depthwise_blocked_3x1_one_column", 2, 17, 17, 17, {12, 1}, {3, 1}, {}, {}, {1, 0, 1, 0}},
      {"kernel_covers_input", 1, 3, 2, 1, {4, 4}, {4, 4}},
      {"conv1d", 2, 3, 4, 1, {10}, {3}, {2}, {}, {1, 1}},
      {"conv3d", 1, 2, 3, 1, {4, 5, 6}, {2, 3, 3}, {1, 2, 1}, {}, {0, 1, 1, 1, 0, 1}},
      {"large_map_banded", 1, 16, 8, 1, {64, 64}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"small_map_batched", 5, 8, 4, 1, {3, 3}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"channel_tail_13_odd_width", 2, 5, 13, 1, {9, 37}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"banded_wide_k", 1, 64, 24, 1, {40, 40}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"pointwise_large_grouped", 2, 32, 48, 2, {17, 19}, {1, 1}},
      // Column bands of the AVX-512 path (about 64 KiB of columns each, all blocks of weights
      // over one band before the next): 600 positions of 64 channels in three bands, the last
      // ending in a partial tile; a stride-2 im2col whose k = 288 makes bands of one tile.
      {"pointwise_column_bands", 1, 64, 20, 1, {24, 25}, {1, 1}},
      {"im2col_column_bands", 2, 32, 12, 1, {40, 40}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},
      // More output channels than positions: the pointwise path splits channels first and
      // walks blocks of weights in the outer loop.
      {"pointwise_small_map_many_channels", 1, 40, 72, 1, {7, 7}, {1, 1}},
      {"pointwise_small_map_batch2", 2, 24, 80, 1, {5, 3}, {1, 1}},
      // Pointwise on small maps with 64+ channels in and out run transposed: 32 output
      // channels per vector, at most 8 positions per tile (a last block of 16 and of 4
      // channels; tiles of 7, and of 8 then 1).
      {"pointwise_transposed_7x7", 2, 72, 80, 1, {7, 7}, {1, 1}},
      {"pointwise_transposed_13x13_no_bias", 1, 64, 100, 1, {13, 13}, {1, 1}, {}, {}, {}, false},
      // Every AVX-512 tile width (its results go out through an 8 x 8 transpose per 256-bit
      // half): tiles of 8 then 6 positions with a last block of 26 channels (16 + 10), of 5, of
      // 4 with a last block of 6, of 3, and of 2 without bias.
      {"pointwise_transposed_5x6_upper_half", 1, 64, 90, 1, {5, 6}, {1, 1}},
      {"pointwise_transposed_2x5", 1, 64, 64, 1, {2, 5}, {1, 1}},
      {"pointwise_transposed_2x2_batch2", 2, 64, 70, 1, {2, 2}, {1, 1}},
      {"pointwise_transposed_1x3", 1, 65, 64, 1, {1, 3}, {1, 1}},
      {"pointwise_transposed_1x2", 1, 64, 96, 1, {1, 2}, {1, 1}, {}, {}, {}, false},
      // The AVX2 transposed tiles (an eighth or more of the position lanes empty): a 1x1 map
      // at batch 3 with 3 chunks of k and a 2-channel last block; 5x5, 5 channels in the last
      // block, no bias; maps of 7 and 6 positions (last tiles of 3 and 2).
      {"pointwise_transposed_1x1_map", 3, 130, 50, 1, {1, 1}, {1, 1}},
      {"pointwise_transposed_5x5_odd", 1, 70, 29, 1, {5, 5}, {1, 1}, {}, {}, {}, false},
      {"pointwise_transposed_1x7", 2, 66, 24, 1, {1, 7}, {1, 1}},
      {"pointwise_transposed_2x3", 1, 40, 48, 1, {2, 3}, {1, 1}},
      // 1x1 convolutions of 64+ channels that are not pointwise on a small map: the evaluator
      // packs weights before it knows extents, strides and pads, and on AVX-512 their packing
      // depends on them (ConvF32PackingDependsOnExtents): 256 and 400 positions, stride 2.
      {"pointwise_64ch_16x16", 1, 64, 64, 1, {16, 16}, {1, 1}},
      {"pointwise_64ch_20x20", 1, 64, 96, 1, {20, 20}, {1, 1}},
      {"conv1x1_stride2_64ch", 2, 64, 72, 1, {10, 10}, {1, 1}, {2, 2}},
      // Stride 1 with output rows of whole 16-lane vectors: the AVX-512 implicit-im2col path.
      {"implicit_w16_dilated_pads", 2, 6, 10, 1, {7, 16}, {3, 3}, {}, {1, 2}, {1, 2, 1, 2}},
      {"implicit_w32_groups_batch1", 1, 4, 6, 2, {5, 32}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"implicit_3d_w16", 1, 3, 9, 1, {3, 4, 16}, {2, 3, 3}, {}, {}, {1, 1, 1, 0, 1, 1}},
      {"implicit_1x5_channel_tail", 2, 3, 17, 1, {6, 48}, {1, 5}, {}, {}, {0, 2, 0, 2}},
      // Implicit im2col on "same"-size convolutions of any width: tile halves that straddle
      // output rows (2-D, dilated, 3-D).
      {"implicit_same_size_odd_width", 2, 5, 9, 1, {11, 13}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"implicit_same_size_dilated", 1, 4, 6, 1, {10, 11}, {3, 3}, {}, {2, 2}, {2, 2, 2, 2}},
      {"implicit_same_size_3d", 1, 2, 5, 1, {3, 5, 6}, {3, 3, 3}, {}, {}, {1, 1, 1, 1, 1, 1}},
      // Stride-2 im2col rows of 16 outputs at a time and a tail (CopyEvenAvx512).
      {"stride2_wide_rows", 1, 3, 8, 1, {9, 75}, {3, 3}, {2, 2}, {}, {0, 1, 0, 1}},
      // Stride-2 im2col rows built per 16-column chunk (Im2colStride2Avx512): a left pad past
      // the first chunk's first lanes, dilation 2, taps whose rows fall wholly in the pads, a
      // vertical stride of 1, and rows of 300 outputs (past the chunk table: the row path).
      {"stride2_chunks_left_pad_dilated",
       2,
       3,
       5,
       1,
       {7, 70},
       {3, 3},
       {2, 2},
       {1, 2},
       {3, 5, 0, 2}},
      {"stride_1x2_rows_in_pads", 1, 4, 6, 1, {3, 37}, {5, 3}, {1, 2}, {}, {3, 1, 3, 0}},
      {"stride2_rows_past_chunk_table", 1, 2, 3, 1, {3, 601}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},
      // An im2col path on a map of two tiles (8 x 8, resnet20's stride-2 layer): on several
      // threads its bands stay a tile wide and the pieces split the output channels (at 3
      // threads 2 bands x 2 chunks of 4 blocks).
      {"stride2_small_map_channel_chunks",
       1,
       32,
       64,
       1,
       {16, 16},
       {3, 3},
       {2, 2},
       {},
       {1, 1, 1, 1}},
      // The AVX2 implicit-im2col path (4+ channels per group, k up to 1152): phase planes for
      // strides (2, 1) and 3 with dilation, maps narrower than a vector (several store runs per
      // vector), output channels split among threads, k at the limit and just past it (im2col).
      {"implicit_grouped_stride_2x1", 2, 8, 12, 2, {9, 10}, {3, 3}, {2, 1}, {}, {1, 1, 1, 1}},
      {"implicit_stride3_dilated", 1, 6, 5, 1, {13, 14}, {3, 3}, {3, 3}, {2, 2}, {2, 2, 1, 1}},
      {"implicit_narrow_map_many_channels", 1, 16, 40, 1, {4, 5}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"implicit_k_at_limit", 1, 128, 9, 1, {6, 6}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"im2col_past_k_limit", 1, 130, 6, 1, {5, 5}, {3, 3}, {}, {}, {1, 1, 1, 1}},
  };
  return *cases;
}

TEST(NnConvTest, MatchesNaiveConvolution) {
  for (const ConvCase& cc : Cases()) RunConvCase(cc);
}

// A residual (ConvF32Params::residual) on every case, through ConvF32 and ConvF32WithPacked at 1
// and 3 threads, with and without an activation: bit for bit the convolution without it, then
// act(y + residual) element by element (what a Conv step followed by an Add step computes). On
// AVX-512 the microkernels add it in their epilogue (the plain tile, the implicit-im2col tile and
// the transposed one); the depthwise and other paths add it in a pass after the convolution.
TEST(NnConvTest, ResidualIsAddedBeforeTheActivation) {
  cpu::ActivationF32 clip;
  clip.lo = -0.5f;
  clip.hi = 2.0f;
  cpu::ActivationF32 leaky;
  leaky.negative_slope = 0.125f;
  for (const ConvCase& cc : Cases()) {
    SCOPED_TRACE(cc.name);
    CaseOperands o = OperandsOf(cc);
    const Tensor &x = o.x, &w = o.w;
    cpu::ConvF32Params& p = o.p;
    const Dims y_dims = NcPlus(cc.n, cc.m, o.out);
    const Tensor r = RandomF32(y_dims, 4);
    const float* bias = o.bias();
    cpu::ConvF32Params one = p;
    one.batch = 1;
    const std::vector<float> packed = cpu::PackConvF32Weights(one, w.data<float>());
    for (const cpu::ActivationF32& act : {cpu::ActivationF32{}, clip, leaky}) {
      for (int threads : {1, 3}) {
        p.num_threads = threads;
        p.activation = cpu::ActivationF32{};
        p.residual = nullptr;
        Tensor want(DType::kFloat32, y_dims);
        std::vector<float> ws(cpu::ConvF32WorkspaceSize(p) + 1);
        cpu::ConvF32(p, x.data<float>(), w.data<float>(), bias, want.data<float>(), ws.data());
        for (int64_t i = 0; i < want.numel(); ++i) {
          want.data<float>()[i] = act(want.data<float>()[i] + r.data<float>()[i]);
        }
        p.activation = act;
        p.residual = r.data<float>();
        Tensor y(DType::kFloat32, y_dims), with_packed(DType::kFloat32, y_dims);
        ws.assign(cpu::ConvF32WorkspaceSize(p) + 1, 0.0f);
        cpu::ConvF32(p, x.data<float>(), w.data<float>(), bias, y.data<float>(), ws.data());
        EXPECT_EQ(CompareTensors(y, want, 0, 0), "")
            << "ConvF32, threads " << threads << ", slope " << act.negative_slope;
        ws.assign(cpu::ConvF32WithPackedWorkspaceSize(p, packed) + 1, 0.0f);
        cpu::ConvF32WithPacked(p, x.data<float>(), w.data<float>(), packed, bias,
                               with_packed.data<float>(), ws.data());
        EXPECT_EQ(CompareTensors(with_packed, want, 0, 0), "")
            << "ConvF32WithPacked, threads " << threads << ", slope " << act.negative_slope;
      }
    }
  }
}

// The im2col behind the AVX-512 and AVX2 tiles (Im2colRowsF32), for stride 2 in x (its AVX-512
// rows are built 16 columns at a time with per-tap masks) and stride 1, against the definition:
// row (c, tap) column (oy - r0, ox) holds x[c, oy * sy - pad_y + ky * dy, ox * sx - pad_x + kx *
// dx], 0 outside x. Every width from 1 to 40 and a few wider, pads 0 to 3 on either side (past
// a 3-wide kernel's reach), dilations 1 and 2, bands of rows that start inside the map.
TEST(NnConvTest, Im2colRowsMatchTheDefinition) {
  int checked = 0;
  for (int64_t width : {1, 2, 5, 15, 16, 17, 31, 32, 33, 40, 97, 255, 513}) {
    for (int64_t sx : {1, 2}) {
      for (int64_t pad_l : {0, 1, 3}) {
        for (int64_t pad_r : {0, 2}) {
          for (int64_t dx : {1, 2}) {
            cpu::ConvF32Params p;
            p.in_channels = 2;
            p.in = {1, 7, width};
            p.kernel = {1, 3, 3};
            p.stride = {1, 2, sx};
            p.dilation = {1, 1, dx};
            p.pad = {0, 1, pad_l};
            const int64_t reach_x = 2 * dx + 1;
            if (width + pad_l + pad_r < reach_x) continue;
            p.out = {1, (7 + 1 + 1 - 3) / 2 + 1, (width + pad_l + pad_r - reach_x) / sx + 1};
            const int64_t ow = p.out[2], oh = p.out[1];
            std::vector<float> x(2 * 7 * width);
            for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i + 1);
            for (int64_t r0 : {int64_t{0}, int64_t{1}}) {
              const int64_t r1 = oh, ld = (r1 - r0) * ow + 5;
              std::vector<float> col(2 * 9 * ld, -7.0f);
              cpu::internal::Im2colRowsF32(p, 2, x.data(), r0, r1, col.data(), ld, 2, 1);
              for (int64_t c = 0; c < 2; ++c) {
                for (int64_t k = 0; k < 9; ++k) {
                  const int64_t ky = k / 3, kx = k % 3;
                  for (int64_t oy = r0; oy < r1; ++oy) {
                    for (int64_t ox = 0; ox < ow; ++ox) {
                      const int64_t iy = oy * 2 - 1 + ky, ix = ox * sx - pad_l + kx * dx;
                      const float want = iy >= 0 && iy < 7 && ix >= 0 && ix < width
                                             ? x[(c * 7 + iy) * width + ix]
                                             : 0.0f;
                      const float got = col[(c * 9 + k) * ld + 2 + (oy - r0) * ow + ox];
                      ASSERT_EQ(got, want) << "width " << width << " sx " << sx << " pads " << pad_l
                                           << "," << pad_r << " dx " << dx << " r0 " << r0 << " c "
                                           << c << " tap " << k << " oy " << oy << " ox " << ox;
                    }
                  }
                  // Nothing written before the column offset or past the band's columns.
                  ASSERT_EQ(col[(c * 9 + k) * ld], -7.0f);
                  ASSERT_EQ(col[(c * 9 + k) * ld + 1], -7.0f);
                  ASSERT_EQ(col[(c * 9 + k) * ld + 2 + (r1 - r0) * ow], -7.0f);
                  ++checked;
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
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
    const std::vector<float> packed = cpu::PackConvF32Weights(one, w.data<float>());
    const bool microkernel = cpu::ConvF32HasAvx512() || cpu::ConvF32HasAvx2();
    EXPECT_EQ(packed.empty(), !microkernel || (p.IsDepthwise() && cc.group > 1));
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

// An empty convolution (no images, or no output channels) gives an empty result on every
// kernel path and thread count: sizes, packing and the run itself (no division by zero).
// PackConvF32Weights's contract: what it packs from channels, groups and the kernel's volume
// alone (as the evaluator calls it, before it knows extents) is what it packs with a case's
// extents, strides and pads, except where ConvF32PackingDependsOnExtents says otherwise (there
// the evaluator packs for the graph's static extents, or not ahead at all).
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
        const std::vector<float> packed = cpu::PackConvF32Weights(p, w.data());
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
