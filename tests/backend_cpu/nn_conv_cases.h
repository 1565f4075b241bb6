// The convolution cases the fp32 conv tests share (nn_conv_test.cc, nn_conv_residual_test.cc,
// nn_conv_round_f16_test.cc):
// geometries that reach every kernel path, their kernel parameters and seeded operands.
#ifndef QCC_TESTS_BACKEND_CPU_NN_CONV_CASES_H_
#define QCC_TESTS_BACKEND_CPU_NN_CONV_CASES_H_

#include <cstdint>
#include <vector>

#include "kernels/cpu/conv.h"
#include "support/tensor.h"
#include "tests/backend_cpu/nn_testing.h"

namespace qcc::testing {

struct ConvCase {
  const char* name;
  int64_t n, c, m, group;
  std::vector<int64_t> in, kernel;
  std::vector<int64_t> strides = {}, dilations = {}, pads = {};  // pads: begin..., end...
  bool bias = true;
};

/// The kernel parameters of `cc` at its batch, with the full strides, dilations, leading pads and
/// output extents (every spatial axis) in the out-parameters.
inline cpu::ConvF32Params ParamsOf(const ConvCase& cc, std::vector<int64_t>& strides,
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
inline CaseOperands OperandsOf(const ConvCase& cc) {
  CaseOperands o;
  o.x = RandomF32(NcPlus(cc.n, cc.c, cc.in), 1);
  o.w = RandomF32(NcPlus(cc.m, cc.c / cc.group, cc.kernel), 2);
  o.b = cc.bias ? RandomF32({cc.m}, 3) : Tensor();
  o.p = ParamsOf(cc, o.strides, o.dilations, o.pb, o.out);
  return o;
}

/// The fused activations the epilogue tests run each case with: none, a Clip (both bounds) and a
/// LeakyRelu (the negative slope).
inline std::vector<cpu::ActivationF32> EpilogueActivations() {
  cpu::ActivationF32 clip;
  clip.lo = -0.5f;
  clip.hi = 2.0f;
  cpu::ActivationF32 leaky;
  leaky.negative_slope = 0.125f;
  return {cpu::ActivationF32{}, clip, leaky};
}

/// Every case, named for the path or corner it is there for.
inline const std::vector<ConvCase>& Cases() {
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
      // DepthwisePlaneNarrow with stride 2: on the plane split into its even and odd columns
      // (above, 7 x 7 rows of 20, and the multiplier-3 case below; here 5 x 5, one segment of 13
      // from an odd width), and unsplit where the plane is too large to split on the stack (two
      // segments of 20; one of 15, 7 x 7).
      {"depthwise_5x5_stride2_split_one_segment",
       2,
       3,
       3,
       3,
       {30, 27},
       {5, 5},
       {2, 2},
       {},
       {1, 1, 2, 2}},
      {"depthwise_5x5_stride2_tall_unsplit",
       1,
       2,
       2,
       2,
       {210, 40},
       {5, 5},
       {2, 2},
       {},
       {1, 1, 2, 2}},
      {"depthwise_7x7_stride2_tall_unsplit",
       1,
       2,
       2,
       2,
       {150, 30},
       {7, 7},
       {2, 2},
       {},
       {3, 3, 3, 3}},
      // DepthwisePlaneSplit's zero-padded split (stride 2, 5 x 5 and 7 x 7): no left pad with two
      // segments of 17 (a second segment of one lane); pads larger than the kernel's half (zero
      // columns past the row's end on both sides); an even width whose plane needs more than
      // 4096 floats split (as efficientnet-lite0's 56 x 56); an odd width of 7 x 7 on one segment.
      {"depthwise_5x5_stride2_split_no_left_pad",
       1,
       3,
       3,
       3,
       {12, 35},
       {5, 5},
       {2, 2},
       {},
       {0, 0, 2, 2}},
      {"depthwise_5x5_stride2_split_wide_pads",
       2,
       2,
       2,
       2,
       {9, 21},
       {5, 5},
       {2, 2},
       {},
       {3, 4, 3, 4}},
      {"depthwise_5x5_stride2_split_56_wide",
       1,
       2,
       2,
       2,
       {56, 56},
       {5, 5},
       {2, 2},
       {},
       {1, 1, 2, 2}},
      {"depthwise_7x7_stride2_split_odd_width",
       2,
       2,
       2,
       2,
       {15, 29},
       {7, 7},
       {2, 2},
       {},
       {3, 3, 3, 3}},
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
      // channels per vector, at most 12 positions per tile (a last block of 16 and of 4
      // channels; tiles of 10 and 9, and of 12 and 11).
      {"pointwise_transposed_7x7", 2, 72, 80, 1, {7, 7}, {1, 1}},
      {"pointwise_transposed_13x13_no_bias", 1, 64, 100, 1, {13, 13}, {1, 1}, {}, {}, {}, false},
      // Every AVX-512 tile width, 1 to 12 (positions 0..7 and 8..11 go out through an 8 x 8
      // transpose per 256-bit half each): tiles of 9 then 8 with a last block of 26 channels
      // (16 + 10), of 10, of 7, of 6, of 5, of 4 with a last block of 6, of 3, of 2 without
      // bias, and of 1.
      {"pointwise_transposed_5x5_upper_half", 1, 64, 90, 1, {5, 5}, {1, 1}},
      {"pointwise_transposed_2x5", 1, 64, 64, 1, {2, 5}, {1, 1}},
      {"pointwise_transposed_1x7_wide", 1, 64, 64, 1, {1, 7}, {1, 1}},
      {"pointwise_transposed_2x3_wide", 2, 64, 64, 1, {2, 3}, {1, 1}},
      {"pointwise_transposed_1x5", 1, 80, 64, 1, {1, 5}, {1, 1}},
      {"pointwise_transposed_2x2_batch2", 2, 64, 70, 1, {2, 2}, {1, 1}},
      {"pointwise_transposed_1x3", 1, 65, 64, 1, {1, 3}, {1, 1}},
      {"pointwise_transposed_1x2", 1, 64, 96, 1, {1, 2}, {1, 1}, {}, {}, {}, false},
      {"pointwise_transposed_1x1_wide", 2, 64, 64, 1, {1, 1}, {1, 1}},
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
      // Rows of 32 outputs from rows of 34 inputs (no pads): its positions split among threads
      // in bands of whole tiles, which start on a row (a vector across two rows would read the
      // second with the first's input offset).
      {"implicit_w32_unpadded_bands", 2, 3, 12, 1, {9, 34}, {3, 3}},
      // Implicit im2col on "same"-size convolutions of any width: tile halves that straddle
      // output rows (2-D, dilated, 3-D).
      {"implicit_same_size_odd_width", 2, 5, 9, 1, {11, 13}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"implicit_same_size_dilated", 1, 4, 6, 1, {10, 11}, {3, 3}, {}, {2, 2}, {2, 2, 2, 2}},
      {"implicit_same_size_3d", 1, 2, 5, 1, {3, 5, 6}, {3, 3, 3}, {}, {}, {1, 1, 1, 1, 1, 1}},
      // Implicit im2col in tiles of 48 positions (1024+ positions, 64+ output channels per
      // group): a same-size map whose vectors straddle rows, a last tile of 29 (its third vector
      // empty) and a last block of 6 channels; rows of 32 in two groups at batch 2.
      {"implicit_wide_same_size_odd_width", 1, 3, 70, 1, {31, 35}, {3, 3}, {}, {}, {1, 1, 1, 1}},
      {"implicit_wide_w32_groups_batch2", 2, 4, 128, 2, {32, 32}, {3, 3}, {}, {}, {1, 1, 1, 1}},
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
      // Stride 2 along x on at most 4 channels per group reads the input split by columns
      // (AVX-512 TileStrided; so do the three cases above on 2 to 4 channels): bands of a tall
      // map at batch 2 with a last block of 2 channels and rows of 65 outputs (tiles of 3 and 2
      // vectors); two groups with dilated rows and pads. The same rows on 5 channels stay on the
      // stride-2 im2col.
      {"stride2_split_bands", 2, 3, 10, 1, {60, 130}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},
      {"stride2_split_groups_dilated_rows",
       1,
       6,
       4,
       2,
       {20, 33},
       {3, 3},
       {2, 2},
       {2, 1},
       {2, 1, 2, 1}},
      {"stride2_wide_rows_im2col", 1, 5, 8, 1, {9, 75}, {3, 3}, {2, 2}, {}, {0, 1, 0, 1}},
      {"stride2_rows_past_chunk_table_im2col",
       1,
       5,
       3,
       1,
       {3, 601},
       {3, 3},
       {2, 2},
       {},
       {1, 1, 1, 1}},
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

}  // namespace qcc::testing

#endif  // QCC_TESTS_BACKEND_CPU_NN_CONV_CASES_H_
