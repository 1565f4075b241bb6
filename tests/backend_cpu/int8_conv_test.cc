// The int8 convolution (kernels/cpu/qconv.h): the reference against hand-computed values
// and an independent naive evaluation of the contract, and the fast paths (VNNI and AVX2, each
// the direct and the depthwise kernel) bit-identical to the reference over many geometries,
// extreme values, wrapping accumulators and thread counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "kernels/cpu/qconv.h"
#include "kernels/cpu/qint8_vnni_internal.h"

namespace qcc::cpu {
namespace {

struct Geometry {
  int64_t n, c, h, w, k, r, s;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1, group = 1;
};

std::string Describe(const Geometry& g) {
  return absl::StrCat("N", g.n, " C", g.c, " ", g.h, "x", g.w, " K", g.k, " ", g.r, "x", g.s,
                      " stride ", g.stride_h, ",", g.stride_w, " pads ", g.pad_top, ",", g.pad_left,
                      ",", g.pad_bottom, ",", g.pad_right, " dil ", g.dilation_h, ",", g.dilation_w,
                      " group ", g.group);
}

/// A convolution's buffers and params (pointers into the buffers).
struct Conv {
  QConvParams p;
  std::vector<int8_t> input, weights;
  std::vector<int32_t> bias;
  std::vector<float> multiplier;

  explicit Conv(const Geometry& g) {
    p.n = g.n, p.c = g.c, p.h = g.h, p.w = g.w, p.k = g.k, p.r = g.r, p.s = g.s;
    p.stride_h = g.stride_h, p.stride_w = g.stride_w;
    p.pad_top = g.pad_top, p.pad_left = g.pad_left;
    p.pad_bottom = g.pad_bottom, p.pad_right = g.pad_right;
    p.dilation_h = g.dilation_h, p.dilation_w = g.dilation_w, p.group = g.group;
    input.resize(g.n * g.c * g.h * g.w);
    weights.resize(g.k * (g.c / g.group) * g.r * g.s);
    bias.resize(g.k);
    multiplier.resize(g.k);
    Bind();
  }
  void Bind() {
    p.input = input.data();
    p.weights = weights.data();
    p.bias = bias.data();
    p.multiplier = multiplier.data();
  }
  int64_t OutputSize() const { return p.n * p.k * p.out_h() * p.out_w(); }
};

/// Random operands: inputs in [-128, 127], weights in [-127, 127], bias and multipliers that
/// land the outputs across the int8 range (some saturating), random pad value, zp and clamp.
void Randomize(Conv& conv, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> x(-128, 127), w(-127, 127), zp(-20, 20);
  for (int8_t& v : conv.input) v = static_cast<int8_t>(x(rng));
  for (int8_t& v : conv.weights) v = static_cast<int8_t>(w(rng));
  const double fan_in = static_cast<double>(conv.weights.size() / conv.p.k);
  std::uniform_int_distribution<int> bias(-50000, 50000);
  std::uniform_real_distribution<double> log_scale(-1.5, 0.5);
  for (int64_t k = 0; k < conv.p.k; ++k) {
    conv.bias[k] = bias(rng);
    // About 127 / (typical |acc|), times a factor in [0.03, 3].
    conv.multiplier[k] =
        static_cast<float>(std::pow(10.0, log_scale(rng)) * 127.0 / (8000.0 * std::sqrt(fan_in)));
  }
  conv.p.pad_value = static_cast<int8_t>(x(rng));
  conv.p.zp_out = rng() % 4 != 0 ? zp(rng) : rng() % 2 == 0 ? -128 : 127;
  conv.p.lo = rng() % 2 == 0 ? -128 : std::max(-128, conv.p.zp_out);  // sometimes a fused ReLU
  conv.p.hi = rng() % 3 == 0 ? std::min(127, conv.p.zp_out + 60) : 127;
}

/// The contract evaluated independently: exact integer sum (int64), fp32 scale, nearbyint.
std::vector<int8_t> NaiveConv(const QConvParams& p) {
  const int64_t oh = p.out_h(), ow = p.out_w(), cg = p.c / p.group, kg = p.k / p.group;
  std::vector<int8_t> out(p.n * p.k * oh * ow);
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t k = 0; k < p.k; ++k) {
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t x = 0; x < ow; ++x) {
          int64_t acc = p.bias != nullptr ? p.bias[k] : 0;
          for (int64_t c = 0; c < cg; ++c) {
            for (int64_t r = 0; r < p.r; ++r) {
              for (int64_t s = 0; s < p.s; ++s) {
                const int64_t iy = y * p.stride_h + r * p.dilation_h - p.pad_top;
                const int64_t ix = x * p.stride_w + s * p.dilation_w - p.pad_left;
                const int64_t ch = k / kg * cg + c;
                const int v = iy < 0 || iy >= p.h || ix < 0 || ix >= p.w
                                  ? p.pad_value
                                  : p.input[((n * p.c + ch) * p.h + iy) * p.w + ix];
                acc += v * p.weights[((k * cg + c) * p.r + r) * p.s + s];
              }
            }
          }
          const float scaled = static_cast<float>(acc) * p.multiplier[k];
          const double q = std::nearbyint(static_cast<double>(scaled)) + p.zp_out;
          out[((n * p.k + k) * oh + y) * ow + x] =
              static_cast<int8_t>(std::clamp<double>(q, p.lo, p.hi));
        }
      }
    }
  }
  return out;
}

std::vector<int8_t> RunReference(Conv& conv) {
  std::vector<int8_t> out(conv.OutputSize());
  conv.p.output = out.data();
  QConvReference(conv.p);
  return out;
}

/// Runs QConv with weights packed for `path`, checking that neither the output nor the
/// workspace is written past its end.
std::vector<int8_t> RunPacked(Conv& conv, QKernelPath path, int threads) {
  conv.p.num_threads = threads;
  const PackedQConvWeights packed = PackQConvWeights(conv.p, path);
  using Layout = PackedQConvWeights::Layout;
  if (path == QKernelPath::kFastest && (QInt8HasVnni() || QInt8HasAvx2())) {
    EXPECT_NE(packed.layout, Layout::kReference);
  }
  if (path == QKernelPath::kAvx2 && QInt8HasAvx2()) {
    EXPECT_EQ(packed.layout,
              conv.p.c == conv.p.group ? Layout::kAvx2Depthwise : Layout::kAvx2Direct);
  }
  constexpr int64_t kGuard = 256;
  constexpr int8_t kSentinel = 0x5a;
  const int64_t size = conv.OutputSize();
  std::vector<int8_t> out(size + kGuard, kSentinel);
  std::vector<uint8_t> workspace(QConvWorkspaceBytes(conv.p, packed) + kGuard, kSentinel);
  conv.p.output = out.data();
  QConv(conv.p, packed, workspace.data());
  for (int64_t i = 0; i < kGuard; ++i) {
    EXPECT_EQ(out[size + i], kSentinel) << "output overrun at +" << i;
    EXPECT_EQ(workspace[workspace.size() - kGuard + i], kSentinel) << "workspace overrun";
  }
  out.resize(size);
  return out;
}

TEST(Int8ConvReferenceTest, HandComputedWithPaddingAndTies) {
  // x = [[1, 2], [3, 4]], 2x2 kernels, pad top/left 1, pad_value 5, zp_out -3.
  Conv conv({1, 1, 2, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0});
  conv.input = {1, 2, 3, 4};
  conv.weights = {1, -1, 2, 0, /*k=1*/ 0, 0, 0, 1};
  conv.bias = {10, 0};
  conv.multiplier = {0.5f, 1.5f};
  conv.Bind();
  conv.p.pad_value = 5;
  conv.p.zp_out = -3;
  // k=0: acc = 20, 12, 24, 15 -> 10, 6, 12, 7.5 (ties to 8) -> -3.
  // k=1: acc = x = 1, 2, 3, 4 -> 1.5 (to 2), 3, 4.5 (to 4), 6 -> -3.
  EXPECT_EQ(RunReference(conv), (std::vector<int8_t>{7, 3, 9, 5, -1, 0, 1, 3}));
}

TEST(Int8ConvReferenceTest, SaturatesAndClamps) {
  Conv conv({1, 2, 1, 3, 2, 1, 1});
  conv.input = {100, -100, 1, 100, -100, 1};  // channels 0 and 1
  conv.weights = {127, 127, /*k=1*/ 1, 0};
  conv.bias = {0, -7};
  conv.multiplier = {1.0f, 1.0f};
  conv.Bind();
  // k=0: acc = 25400, -25400, 254 -> saturates to 127, -128, 127.
  // k=1: acc = 93, -107, -6 -> clamped to [lo, hi] = [-5, 90] (a fused clip): 90, -5, -5.
  conv.p.lo = -5;
  conv.p.hi = 90;
  EXPECT_EQ(RunReference(conv), (std::vector<int8_t>{90, -5, 90, 90, -5, -5}));
  conv.p.lo = -128;
  conv.p.hi = 127;
  EXPECT_EQ(RunReference(conv), (std::vector<int8_t>{127, -128, 127, 93, -107, -6}));
}

const std::vector<Geometry>& Geometries() {
  static const std::vector<Geometry> kAll = {
      {1, 8, 5, 7, 16, 1, 1},                                 // 1x1
      {1, 16, 8, 8, 16, 3, 3, 1, 1, 1, 1, 1, 1},              // 3x3, resnet-like
      {1, 5, 9, 11, 17, 5, 5, 1, 1, 2, 2, 2, 2},              // 5x5, odd channels
      {1, 32, 10, 12, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 32},  // depthwise 3x3
      {3, 8, 11, 9, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8},     // depthwise x2, stride 2, batch 3
      {1, 6, 7, 40, 6, 5, 5, 1, 2, 0, 3, 2, 1, 2, 2, 6},      // depthwise 5x5, dilation 2
      {1, 3, 5, 64, 3, 3, 3, 1, 1, 0, 1, 0, 1, 1, 30, 3},     // depthwise, window too wide
      {1, 12, 7, 7, 18, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3},     // grouped
      {2, 16, 17, 15, 32, 3, 3, 2, 2, 1, 1, 1, 1},            // stride 2
      {1, 7, 9, 10, 9, 3, 3, 1, 1, 0, 2, 1, 3},               // asymmetric pads
      {1, 4, 12, 12, 8, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},        // dilation 2
      {3, 3, 8, 8, 5, 3, 3, 1, 1, 1, 1, 1, 1},                // C=3, batch 3
      {1, 17, 6, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1},               // C=17, K=3
      {1, 5, 11, 13, 4, 3, 3, 3, 3, 1, 0, 2, 1},              // stride 3 (scalar rewrite)
      {1, 9, 6, 20, 11, 1, 3, 1, 2, 0, 1, 0, 1},              // 1x3, stride (1, 2)
      {2, 6, 10, 1, 7, 3, 1, 2, 1, 1, 0, 1, 0},               // 3x1 on a 1-wide map
      {1, 4, 2, 2, 3, 3, 3, 1, 1, 2, 2, 2, 2},                // kernel larger than the input
      {1, 16, 1, 100, 20, 1, 7, 1, 1, 0, 3, 0, 3},            // one row, 1x7
      {2, 16, 32, 32, 16, 3, 3, 1, 1, 1, 1, 1, 1},            // big enough to split on threads
      {1, 32, 16, 16, 64, 3, 3, 2, 2, 1, 1, 1, 1},            // resnet20 down-sampling
      {1, 64, 16, 18, 24, 1, 1, 2, 2},                        // 1x1 stride 2 (shortcut)
      {2, 1, 9, 17, 5, 1, 1},                                 // C=1 (one half-empty pair)
      {1, 3, 19, 23, 7, 3, 3, 1, 1, 1, 1, 1, 1},              // odd C, odd widths (row tails)
      {1, 9, 9, 9, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3},       // grouped, C/group = 3 (odd)
      {2, 10, 13, 11, 15, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 5},   // grouped 5x5 stride 2, K/group 3
      {1, 6, 21, 19, 10, 3, 3, 2, 1, 3, 2, 1, 0, 2, 3},       // stride (2, 1), dilation (2, 3)
      {1, 5, 15, 25, 9, 5, 5, 1, 1, 4, 4, 4, 4, 2, 2},        // 5x5 dilation 2, odd C and K
      {1, 7, 13, 14, 7, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 7},     // depthwise stride 3
      {2, 5, 9, 31, 15, 3, 5, 2, 3, 1, 2, 0, 3, 2, 1, 5},     // depthwise x3, strides, dilation
      {1, 4, 6, 70, 4, 1, 9, 1, 1, 0, 4, 0, 4, 1, 1, 4},      // depthwise 1x9 on a wide row
      {1, 2, 5, 5, 2, 5, 5},                                  // kernel as large as the input
      {1, 3, 12, 13, 6, 9, 9, 1, 2, 4, 4, 4, 4, 1, 1, 3},     // depthwise 9x9 (81 taps), x2
      {1, 6, 12, 13, 4, 9, 9, 2, 1, 4, 4, 4, 4, 1, 1, 2},     // grouped 9x9
      {1, 8, 14, 21, 8, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 8},     // depthwise dilation 2, stride 1
      // Narrow outputs: the VNNI depthwise path folds 2 to 4 rows into one 16-lane segment.
      {1, 24, 7, 7, 24, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 24},    // efficientnet's 7x7 5x5
      {1, 16, 14, 14, 16, 5, 5, 2, 2, 1, 1, 2, 2, 1, 1, 16},  // 14 -> 7, stride 2, TF pads
      {2, 8, 4, 4, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8},      // 4x4, fold 4, x2, batch 2
      {1, 8, 6, 6, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8},       // 6x6: fold 2, last fold cut
      // The AVX2 direct path: rows rewritten as one run (stride 1, no left or right pad), and
      // chunks of tiles run per output-channel block.
      {1, 10, 9, 7, 12, 3, 1, 1, 1, 1, 0, 2, 0},  // 3x1, top and bottom pads only
      {1, 40, 7, 7, 20, 1, 1},                    // 7x7 1x1: a 1-lane last tile
      {1, 16, 40, 40, 24, 1, 1},                  // 67 tiles: 16-tile chunks
      {1, 300, 9, 9, 9, 1, 1},                    // C=300: one tile per chunk
      // The VNNI direct path's unpadded stride-1 rewrite (a channel's rows as one run), with
      // the image split among threads mid-row.
      {1, 7, 21, 23, 9, 3, 3},   // 3x3 without pads, odd C
      {1, 13, 11, 11, 6, 1, 1},  // 1x1, C % 4 = 1
      // The VNNI direct path's windows on padded rows: 32 wide (two whole windows a row, the
      // pad columns never computed; tiles of 3 windows span rows) and 28 wide (windows that
      // start past the pad columns mid-row), batch 2.
      {2, 8, 5, 32, 12, 3, 3, 1, 1, 1, 1, 1, 1},
      {2, 6, 9, 28, 10, 3, 3, 1, 1, 1, 1, 1, 1},
      // The VNNI channel-blocked depthwise kernel (16 channels to a register) on small maps:
      // partial channel blocks, row phases, dilation_h; and the per-plane kernel's two-segment
      // rows (21 wide).
      {2, 40, 20, 21, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 40},  // 20 x 21: per-plane, 16 + 5 columns
      // The per-plane kernel's shared padded rows (3x3 and 5x5, stride 1 or 2 in height):
      // groups of 4 output rows, a last group of fewer, one and two segments.
      {1, 6, 40, 36, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 6},     // 3x3 s2: 20 x 18
      {1, 3, 30, 20, 3, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 3},     // 3x3 stride (2, 1): 15 x 20
      {1, 5, 23, 38, 5, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 5},     // 5x5 s1: 23 x 38
      {2, 4, 41, 45, 4, 5, 5, 2, 2, 1, 2, 2, 1, 1, 1, 4},     // 5x5 s2, asymmetric pads: 20 x 22
      {2, 40, 12, 13, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 40},  // blocks of 16, 16, 8
      {1, 20, 9, 12, 20, 5, 5, 2, 1, 2, 2, 2, 2, 1, 1, 20},   // stride (2, 1): two row phases
      {1, 17, 7, 7, 17, 3, 3, 1, 1, 0, 1, 1, 0, 1, 1, 17},    // asymmetric pads, a 1-channel block
      {1, 16, 9, 9, 16, 3, 3, 1, 1, 2, 1, 2, 1, 2, 1, 16},    // dilation (2, 1)
      // Tall narrow maps on the per-plane kernel (past the channel-blocked one's 16 x 16):
      // folded rows, 6 and 7 wide.
      {1, 8, 41, 6, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8},    // 41 x 6: fold 2
      {1, 5, 70, 13, 5, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, 5},   // 5x5 stride 2: 35 x 7
      {3, 32, 5, 6, 32, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 32},  // 7x7 stride 2 (tap quads 2), batch 3
      // The VNNI pointwise kernel (1x1 on maps of <= 64 positions, output channels in lanes):
      // blocks of 48 channels with tails, tiles of 7 positions with tails, odd C.
      {2, 24, 8, 8, 100, 1, 1},  // 64 positions, K = 48 + 48 + 4
      {1, 37, 7, 7, 64, 1, 1},   // 49 positions, odd C
      {3, 16, 1, 1, 16, 1, 1},   // one position
      {1, 50, 5, 9, 17, 1, 1},   // 45 positions, one block of 17
      // The VNNI small-map kernel (one group, K in blocks of 3 or 4 vectors, <= 256 output
      // positions of padded or strided maps, output channels in lanes): tails of blocks and
      // tiles, tiles spanning rows, strides, dilation.
      {1, 32, 8, 8, 64, 3, 3, 1, 1, 1, 1, 1, 1},       // resnet20's 8x8 stage: tiles of 6
      {2, 20, 16, 16, 48, 3, 3, 1, 1, 1, 1, 1, 1},     // 256 positions, 3 vectors, batch 2
      {1, 13, 13, 13, 96, 3, 3, 1, 1, 1, 1, 1, 1},     // 169 positions, 2 blocks of 3, odd C
      {1, 9, 9, 11, 100, 3, 3, 2, 2, 1, 0, 1, 2},      // stride 2, asymmetric pads, 64 + 36
      {3, 5, 6, 7, 33, 5, 5, 1, 1, 2, 2, 2, 2, 2, 2},  // 5x5 dilation 2, K = 48 - 15, batch 3
      {1, 16, 12, 12, 40, 3, 3, 2, 2, 1, 1, 1, 1},     // stride 2, K = 40 in one block of 48
      // The direct path's block-major order (1x1, K of several blocks of 8): more tiles than a
      // group of 256 (13,200 positions), a partial last block, batch 2; and a strided 1x1 whose
      // phase planes have lanes that are no output.
      {2, 16, 120, 110, 20, 1, 1},
      {2, 20, 31, 33, 40, 1, 1, 2, 2},
      // The direct path's slices of output channels at batch 1 (QConvDirectSlices): a 1x1 on
      // 14 x 14 (5 tiles; 10 blocks, the last partial), an expanding 1x1 on 23 x 23 (12 tiles,
      // 8 blocks), and strided 1x1s of one tile too small to split, so that one thread runs
      // every slice on the image it rewrote once (4 blocks on 3 threads: slices of 2, 2, none).
      {1, 24, 14, 14, 76, 1, 1},
      {1, 16, 23, 23, 64, 1, 1},
      {1, 4, 9, 9, 24, 1, 1, 2, 2},
      {1, 4, 9, 9, 32, 1, 1, 2, 2},
      // The AMX path (C/group >= 32, not depthwise): quads in equal chunks of <= 16 with the
      // last chunk reading past C/group (68 channels: 2 chunks of 9 quads for 17; 140: 3 of 12
      // for 35), over several phases (stride 2) and at the buffer's end; groups; dilation; K in
      // pairs of 16-channel blocks with partial ones; maps of one 32-position unit and less.
      {2, 68, 9, 10, 33, 3, 3, 2, 2, 1, 1, 1, 1},
      {1, 140, 6, 7, 70, 1, 1},
      {1, 64, 9, 11, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2},
      {1, 36, 11, 13, 96, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},
      {3, 128, 4, 5, 17, 1, 1},
      {1, 48, 3, 3, 65, 3, 3, 1, 1, 1, 1, 1, 1},
  };
  return kAll;
}

TEST(Int8ConvReferenceTest, MatchesNaiveEvaluation) {
  uint32_t seed = 1;
  for (const Geometry& g : Geometries()) {
    SCOPED_TRACE(Describe(g));
    Conv conv(g);
    Randomize(conv, seed++);
    EXPECT_EQ(RunReference(conv), NaiveConv(conv.p));
  }
}

TEST(Int8ConvTest, ReferencePackingRunsTheReference) {
  Conv conv(Geometries()[7]);
  Randomize(conv, 99);
  EXPECT_EQ(RunPacked(conv, QKernelPath::kReference, 2), RunReference(conv));
}

/// The fast paths this CPU runs: kFastest (AMX and VNNI) when it has VNNI, kVnni (VNNI
/// without AMX) when it also has AMX, kAvx2 when it has AVX2 (kFastest is AVX2 then, unless it
/// also has VNNI).
std::vector<QKernelPath> FastPaths() {
  std::vector<QKernelPath> paths;
  if (QInt8HasVnni()) paths.push_back(QKernelPath::kFastest);
  if (QInt8HasAmx()) paths.push_back(QKernelPath::kVnni);
  if (QInt8HasAvx2()) paths.push_back(QKernelPath::kAvx2);
  return paths;
}

std::string PathName(QKernelPath path) {
  switch (path) {
    case QKernelPath::kAvx2:
      return "avx2";
    case QKernelPath::kVnni:
      return "vnni";
    case QKernelPath::kFastest:
      return "fastest";
    default:
      return "ref";
  }
}

#define SKIP_WITHOUT_FAST_PATH() \
  if (FastPaths().empty())       \
  GTEST_SKIP() << "this CPU lacks AVX2 and AVX-512 VNNI: no int8 fast path to test"

TEST(Int8ConvTest, FastestPicksVnniElseAvx2) {
  Conv conv(Geometries()[1]);
  Conv depthwise(Geometries()[3]);
  using Layout = PackedQConvWeights::Layout;
  const Layout direct = PackQConvWeights(conv.p).layout;
  const Layout dw = PackQConvWeights(depthwise.p).layout;
  if (QInt8HasVnni()) {
    EXPECT_EQ(direct, Layout::kVnniDirect);
    EXPECT_EQ(dw, Layout::kVnniDepthwise);
  } else if (QInt8HasAvx2()) {
    EXPECT_EQ(direct, Layout::kAvx2Direct);
    EXPECT_EQ(dw, Layout::kAvx2Depthwise);
  } else {
    EXPECT_EQ(direct, Layout::kReference);
    EXPECT_EQ(dw, Layout::kReference);
  }
  const Layout forced = PackQConvWeights(conv.p, QKernelPath::kAvx2).layout;
  EXPECT_EQ(forced, QInt8HasAvx2() ? Layout::kAvx2Direct : Layout::kReference);
}

// Which convolutions the AMX path takes (a pure function of the shape): dense or grouped ones
// of at least 32 channels per group, not depthwise; kFastest packs them for it where the CPU
// has AMX, kVnni never.
TEST(Int8ConvTest, AmxTakesConvsOfAtLeast32ChannelsPerGroup) {
  const auto takes = [](const Geometry& g) { return internal::QConvAmxTakes(Conv(g).p); };
  EXPECT_TRUE(takes({1, 32, 16, 16, 64, 3, 3, 2, 2, 1, 1, 1, 1}));
  EXPECT_TRUE(takes({1, 512, 13, 13, 1000, 1, 1}));
  EXPECT_TRUE(takes({1, 64, 9, 11, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2}));
  EXPECT_FALSE(takes({1, 16, 112, 112, 96, 1, 1}));
  EXPECT_FALSE(takes({1, 64, 9, 11, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4}));
  EXPECT_FALSE(takes({1, 96, 28, 28, 96, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 96}));
  using Layout = PackedQConvWeights::Layout;
  const Conv dense({1, 512, 13, 13, 1000, 1, 1});
  EXPECT_EQ(PackQConvWeights(dense.p).layout == Layout::kAmxDirect, QInt8HasAmx());
  EXPECT_NE(PackQConvWeights(dense.p, QKernelPath::kVnni).layout, Layout::kAmxDirect);
  EXPECT_EQ(PackQConvWeights(dense.p, QKernelPath::kVnni).layout == Layout::kReference,
            !QInt8HasVnni());
}

// Which depthwise shapes the VNNI layout runs channel-blocked (a pure function of the shape,
// so checked on any CPU): maps of at most 16 x 16 outputs at any stride; not the wider ones
// that the per-plane kernel runs faster, nor a channel multiplier or dilation_w.
TEST(Int8ConvTest, DepthwiseBlockedRunsOnSmallMaps) {
  const auto blocked = [](const Geometry& g) {
    return internal::QConvDepthwiseBlockedRuns(Conv(g).p);
  };
  EXPECT_TRUE(blocked({1, 1152, 7, 7, 1152, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1152}));
  EXPECT_TRUE(blocked({1, 480, 14, 14, 480, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 480}));
  EXPECT_TRUE(blocked({1, 240, 28, 28, 240, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 240}));
  EXPECT_TRUE(blocked({1, 20, 9, 12, 20, 5, 5, 2, 1, 2, 2, 2, 2, 1, 1, 20}));
  EXPECT_TRUE(blocked({1, 16, 9, 9, 16, 3, 3, 1, 1, 2, 1, 2, 1, 2, 1, 16}));
  EXPECT_FALSE(blocked({2, 40, 20, 21, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 40}));
  EXPECT_FALSE(blocked({1, 240, 28, 28, 240, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 240}));
  EXPECT_FALSE(blocked({1, 88, 3, 96, 88, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 88}));
  EXPECT_FALSE(blocked({1, 144, 56, 56, 144, 5, 5, 2, 2, 1, 1, 2, 2, 1, 1, 144}));
  EXPECT_FALSE(blocked({1, 16, 7, 7, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16}));
  EXPECT_FALSE(blocked({1, 16, 9, 9, 16, 3, 3, 1, 1, 1, 2, 1, 2, 1, 2, 16}));
}

// How the VNNI direct path splits one image among threads (a pure function of the shape and
// thread count, so checked on any CPU): a 1x1 conv by slices of output channels where that
// costs less than splitting each output plane by positions (rewriting the whole image per
// thread against the imbalance of its tiles and the writes near the other thread's).
TEST(Int8ConvTest, DirectPathSlicesOutputChannelsOfOneImage) {
  const auto slices = [](const Geometry& g, int threads) {
    Conv conv(g);
    conv.p.num_threads = threads;
    return internal::QConvDirectSlices(conv.p);
  };
  // efficientnet-lite0's 1x1 convs on 14 x 14: 5 tiles.
  EXPECT_EQ(slices({1, 80, 14, 14, 480, 1, 1}, 2), 2);
  EXPECT_EQ(slices({1, 480, 14, 14, 80, 1, 1}, 2), 2);
  EXPECT_EQ(slices({1, 80, 14, 14, 480, 1, 1}, 3), 3);
  EXPECT_EQ(slices({1, 24, 14, 14, 76, 1, 1}, 2), 2);
  EXPECT_EQ(slices({1, 4, 9, 9, 24, 1, 1, 2, 2}, 2), 2);
  EXPECT_EQ(slices({1, 4, 9, 9, 32, 1, 1, 2, 2}, 3), 3);
  // Expanding 1x1s (squeezenet1.1's and efficientnet-lite0's); not the projections back.
  EXPECT_EQ(slices({1, 16, 55, 55, 64, 1, 1}, 2), 2);
  EXPECT_EQ(slices({1, 16, 23, 23, 64, 1, 1}, 2), 2);
  EXPECT_EQ(slices({1, 24, 56, 56, 144, 1, 1}, 2), 2);
  EXPECT_EQ(slices({1, 144, 56, 56, 24, 1, 1}, 2), 1);
  EXPECT_EQ(slices({1, 240, 28, 28, 40, 1, 1}, 2), 1);
  EXPECT_EQ(slices({1, 64, 55, 55, 16, 1, 1}, 2), 1);
  // One thread, several images, groups, fewer blocks than threads, 3x3: never.
  EXPECT_EQ(slices({1, 80, 14, 14, 480, 1, 1}, 1), 1);
  EXPECT_EQ(slices({2, 80, 14, 14, 480, 1, 1}, 2), 1);
  EXPECT_EQ(slices({1, 80, 14, 14, 480, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 2}, 2), 1);
  EXPECT_EQ(slices({1, 80, 14, 14, 8, 1, 1}, 2), 1);
  EXPECT_EQ(slices({1, 16, 55, 55, 64, 3, 3, 1, 1, 1, 1, 1, 1}, 2), 1);
  EXPECT_EQ(slices({1, 3, 224, 224, 64, 3, 3, 2, 2}, 2), 1);
}

TEST(Int8ConvFastTest, BitIdenticalToReferenceOnRandomData) {
  SKIP_WITHOUT_FAST_PATH();
  for (const QKernelPath path : FastPaths()) {
    uint32_t seed = 100;
    for (const Geometry& g : Geometries()) {
      // 2 and 3 threads on batches of 1 to 3: fewer images than threads (the direct paths'
      // threads then each transform only the rows of an image their tiles read), as many, and
      // more.
      for (int threads : {1, 2, 3}) {
        SCOPED_TRACE(absl::StrCat(PathName(path), ": ", Describe(g), ", threads ", threads));
        Conv conv(g);
        Randomize(conv, seed++);
        EXPECT_EQ(RunPacked(conv, path, threads), RunReference(conv));
        conv.p.bias = nullptr;
        EXPECT_EQ(RunPacked(conv, path, threads), RunReference(conv));
      }
    }
  }
}

// Which dense shapes the VNNI layout runs on the small-map kernel (a pure function of the
// shape): one group, K in blocks of 48 or 64, at most 256 output positions, padding columns in
// the direct path's planes, and not a 1x1 the pointwise kernel takes.
TEST(Int8ConvTest, SmallMapKernelRunsDenseSmallMaps) {
  const auto small = [](const Geometry& g) { return internal::QConvSmallMapVnniPacks(Conv(g).p); };
  EXPECT_TRUE(small({1, 32, 8, 8, 64, 3, 3, 1, 1, 1, 1, 1, 1}));
  EXPECT_TRUE(small({1, 32, 32, 32, 64, 3, 3, 2, 2, 1, 1, 1, 1}));          // 16 x 16 out
  EXPECT_TRUE(small({1, 16, 12, 12, 40, 3, 3, 2, 2, 1, 1, 1, 1}));          // K = 40: 3 vectors
  EXPECT_FALSE(small({1, 16, 12, 12, 40, 1, 1, 1, 1, 1, 1, 1, 1}));         // its pads are outputs
  EXPECT_FALSE(small({1, 16, 12, 12, 40, 1, 1, 2, 2}));                     // no padding column
  EXPECT_FALSE(small({1, 480, 14, 14, 80, 1, 1}));                          // no padding column
  EXPECT_FALSE(small({1, 32, 17, 16, 64, 3, 3, 1, 1, 1, 1, 1, 1}));         // 272 positions
  EXPECT_FALSE(small({1, 16, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1}));           // K = 32: 2 vectors
  EXPECT_FALSE(small({1, 32, 8, 8, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2}));  // grouped
  EXPECT_FALSE(small({1, 24, 8, 8, 100, 1, 1}));                            // pointwise's
}

// QConv's contract lets H and W change after packing: the pointwise layout, chosen for a 7 x 7
// map, still runs a 12 x 12 one (three chunks of 64 positions) and a 3 x 5 one.
TEST(Int8ConvFastTest, PointwiseLayoutRunsOtherMapSizes) {
  SKIP_WITHOUT_FAST_PATH();
  Conv packed_for({1, 20, 7, 7, 40, 1, 1});
  Randomize(packed_for, 31);
  const PackedQConvWeights packed = PackQConvWeights(packed_for.p);
  if (QInt8HasVnni()) {
    EXPECT_EQ(packed.layout, PackedQConvWeights::Layout::kVnniPointwise);
  }
  for (const Geometry& g : {Geometry{2, 20, 12, 12, 40, 1, 1}, Geometry{1, 20, 3, 5, 40, 1, 1}}) {
    SCOPED_TRACE(Describe(g));
    Conv conv(g);
    Randomize(conv, 32);
    conv.weights = packed_for.weights;
    conv.bias = packed_for.bias;
    conv.multiplier = packed_for.multiplier;
    conv.p.zp_out = packed_for.p.zp_out;
    conv.p.lo = packed_for.p.lo;
    conv.p.hi = packed_for.p.hi;
    conv.Bind();
    conv.p.num_threads = 2;
    std::vector<int8_t> out(conv.OutputSize());
    std::vector<uint8_t> workspace(QConvWorkspaceBytes(conv.p, packed));
    conv.p.output = out.data();
    QConv(conv.p, packed, workspace.data());
    EXPECT_EQ(out, RunReference(conv));
  }
}

TEST(Int8ConvFastTest, BitIdenticalToReferenceOnExtremeValues) {
  SKIP_WITHOUT_FAST_PATH();
  struct Extreme {
    int8_t x, w, pad;
  };
  for (const QKernelPath path : FastPaths()) {
    uint32_t seed = 500;
    for (const Geometry& g : Geometries()) {
      for (const Extreme e :
           {Extreme{-128, 127, -128}, Extreme{127, -127, 127}, Extreme{-128, -128, 127},
            Extreme{127, 127, -128}, Extreme{-128, -128, -128}}) {
        SCOPED_TRACE(absl::StrCat(PathName(path), ": ", Describe(g), ", x ", e.x, " w ", e.w,
                                  " pad ", e.pad));
        Conv conv(g);
        Randomize(conv, seed++);  // random multipliers, zp and clamps
        std::fill(conv.input.begin(), conv.input.end(), e.x);
        std::fill(conv.weights.begin(), conv.weights.end(), e.w);
        conv.p.pad_value = e.pad;
        EXPECT_EQ(RunPacked(conv, path, 2), RunReference(conv));
      }
    }
  }
}

TEST(Int8ConvFastTest, BitIdenticalWhenTheAccumulatorWraps) {
  SKIP_WITHOUT_FAST_PATH();
  // C * R * S = 147456 products of -128 * 127 sum to -2.4e9: past int32, so both paths must
  // wrap modulo 2^32 the same way. One and two output columns.
  for (const QKernelPath path : FastPaths()) {
    for (const Geometry& g :
         {Geometry{1, 16384, 3, 3, 3, 3, 3}, Geometry{1, 16384, 3, 4, 3, 3, 3}}) {
      SCOPED_TRACE(absl::StrCat(PathName(path), ": ", Describe(g)));
      Conv conv(g);
      Randomize(conv, 7);
      std::fill(conv.input.begin(), conv.input.end(), -128);
      std::fill(conv.weights.begin(), conv.weights.end(), 127);
      for (int64_t k = 0; k < conv.p.k; ++k) conv.multiplier[k] = 1e-7f * static_cast<float>(k + 1);
      EXPECT_EQ(RunPacked(conv, path, 1), RunReference(conv));
    }
  }
}

TEST(Int8ConvFastTest, BitIdenticalWhenTheBiasWraps) {
  SKIP_WITHOUT_FAST_PATH();
  // Biases at the ends of int32 make small sums wrap too, in every kernel (the depthwise ones
  // included, whose sums are too short to wrap otherwise); multipliers tiny enough that the
  // wrapped values land inside int8 on both sides.
  for (const QKernelPath path : FastPaths()) {
    uint32_t seed = 900;
    for (const Geometry& g : Geometries()) {
      SCOPED_TRACE(absl::StrCat(PathName(path), ": ", Describe(g)));
      Conv conv(g);
      Randomize(conv, seed++);
      for (int64_t k = 0; k < conv.p.k; ++k) {
        conv.bias[k] = k % 2 == 0 ? std::numeric_limits<int32_t>::max() - static_cast<int32_t>(k)
                                  : std::numeric_limits<int32_t>::min() + static_cast<int32_t>(k);
        conv.multiplier[k] = 2.5e-8f;
      }
      conv.p.lo = -128;
      conv.p.hi = 127;
      const std::vector<int8_t> reference = RunReference(conv);
      EXPECT_EQ(RunPacked(conv, path, 2), reference);
    }
  }
}

TEST(Int8ConvFastTest, BitIdenticalAtTheEndsOfThePackedRequantization) {
  // The packing epilogue (RequantizePackX48) runs when every |multiplier| <= 0.5: biases at the
  // ends of int32 make |acc * m| reach 2^30 there. One multiplier above 0.5 sends the conv to
  // the float-clamping epilogue, whose products pass 2^31; both must give the reference's bits.
  SKIP_WITHOUT_FAST_PATH();
  for (const QKernelPath path : FastPaths()) {
    for (const Geometry& g : {Geometries()[1], Geometries()[19], Geometries()[20],
                              Geometries()[Geometries().size() - 6]}) {
      for (const float big : {0.5f, 0.75f, 3.0f, 1e6f}) {
        SCOPED_TRACE(absl::StrCat(PathName(path), ": ", Describe(g), ", multiplier ", big));
        Conv conv(g);
        Randomize(conv, 31);
        const std::vector<float> halves = {0.5f, -0.5f, 0.4999f, 1e-9f, -0.25f};
        for (int64_t k = 0; k < conv.p.k; ++k) {
          conv.bias[k] = k % 2 == 0 ? std::numeric_limits<int32_t>::max() - 40000
                                    : std::numeric_limits<int32_t>::min() + 40000;
          conv.multiplier[k] = halves[k % halves.size()];
        }
        conv.multiplier[conv.p.k - 1] = big;
        EXPECT_EQ(
            internal::PackedRequantApplies(conv.multiplier.data(), conv.p.k, conv.p.lo, conv.p.hi),
            big <= 0.5f);
        EXPECT_EQ(RunPacked(conv, path, 2), RunReference(conv));
      }
    }
  }
}

TEST(Int8ConvFastTest, OddMultipliersAndZeroPointsFallBackToTheReference) {
  // NaN and infinite multipliers (never emitted by the compiler) and a zp_out outside int8 are
  // outside the fast epilogue's preconditions: QConv must still give the contract's bits.
  for (const Geometry& g : {Geometries()[1], Geometries()[3]}) {
    for (const QKernelPath path : {QKernelPath::kFastest, QKernelPath::kAvx2}) {
      SCOPED_TRACE(absl::StrCat(PathName(path), ": ", Describe(g)));
      Conv conv(g);
      Randomize(conv, 21);
      conv.multiplier[0] = std::numeric_limits<float>::quiet_NaN();
      conv.multiplier[1] = std::numeric_limits<float>::infinity();
      conv.multiplier[2] = -std::numeric_limits<float>::infinity();
      conv.bias[1] = conv.bias[2] = 0;  // so some accumulators are 0 (0 * inf = NaN)
      const std::vector<int8_t> reference = RunReference(conv);
      EXPECT_EQ(RunPacked(conv, path, 2), reference);
      // NaN gives zp_out (clamped), whatever the accumulator.
      const int64_t plane = conv.p.out_h() * conv.p.out_w();
      for (int64_t i = 0; i < plane; ++i) {
        EXPECT_EQ(reference[i], std::clamp(conv.p.zp_out, conv.p.lo, conv.p.hi));
      }
      Randomize(conv, 22);
      conv.p.zp_out = 300;
      conv.p.lo = -128;
      conv.p.hi = 127;
      EXPECT_EQ(RunPacked(conv, path, 1), RunReference(conv));
    }
  }
}

TEST(Int8ConvFastTest, PackedWeightsServeNewInputExtents) {
  SKIP_WITHOUT_FAST_PATH();
  for (const QKernelPath path : FastPaths()) {
    // Packing depends on K, C, R, S, group, strides and dilations only: one packing serves
    // several batch sizes, map sizes and pads.
    for (const Geometry& base : {Geometry{1, 16, 8, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1},
                                 Geometry{1, 24, 8, 8, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 24}}) {
      Conv first(base);
      Randomize(first, 3);
      const PackedQConvWeights packed = PackQConvWeights(first.p, path);
      for (const auto& [n, h, w, pad] :
           {std::tuple{1, 8, 8, 1}, std::tuple{3, 13, 21, 0}, std::tuple{2, 32, 5, 2}}) {
        Geometry g = base;
        g.n = n, g.h = h, g.w = w;
        g.pad_top = g.pad_left = g.pad_bottom = g.pad_right = pad;
        SCOPED_TRACE(absl::StrCat(PathName(path), ": ", Describe(g)));
        Conv conv(g);
        Randomize(conv, 11);
        conv.weights = first.weights;
        conv.Bind();
        std::vector<int8_t> out(conv.OutputSize());
        std::vector<uint8_t> workspace(QConvWorkspaceBytes(conv.p, packed));
        conv.p.output = out.data();
        QConv(conv.p, packed, workspace.data());
        EXPECT_EQ(out, RunReference(conv));
      }
    }
  }
}

// ---- The fused residual Add (QConvParams::residual) ----

/// A residual of conv's output shape and random Add parameters on conv.p (a fused ReLU or a
/// conv zero point other than add.zp_a now and then).
std::vector<int8_t> RandomResidual(Conv& conv, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> x(-128, 127), zp(-20, 20);
  std::uniform_real_distribution<float> mult(0.2f, 2.0f);
  std::vector<int8_t> residual(conv.OutputSize());
  for (int8_t& v : residual) v = static_cast<int8_t>(x(rng));
  AddS8Params& a = conv.p.add;
  a.zp_a = rng() % 4 != 0 ? conv.p.zp_out : zp(rng);
  a.mult_a = mult(rng);
  a.zp_b = zp(rng);
  a.mult_b = mult(rng);
  a.zp_out = zp(rng);
  a.lo = rng() % 2 == 0 ? -128 : a.zp_out;
  a.hi = 127;
  return residual;
}

TEST(Int8ConvReferenceTest, FusedResidualIsTheAddAfterTheConv) {
  for (const Geometry& g : {Geometries()[0], Geometries()[1], Geometries()[3]}) {
    SCOPED_TRACE(Describe(g));
    Conv conv(g);
    Randomize(conv, 41);
    const std::vector<int8_t> residual = RandomResidual(conv, 42);
    std::vector<int8_t> want = NaiveConv(conv.p);
    for (size_t i = 0; i < want.size(); ++i) {
      const AddS8Params& a = conv.p.add;
      // AddValue spelled out: two fp32 products, one fp32 sum, round half to even, clamp.
      const float ta = static_cast<float>(want[i] - a.zp_a) * a.mult_a;
      const float tb = static_cast<float>(residual[i] - a.zp_b) * a.mult_b;
      const double q = std::nearbyint(static_cast<double>(ta + tb)) + a.zp_out;
      want[i] = static_cast<int8_t>(std::clamp<double>(q, a.lo, a.hi));
    }
    conv.p.residual = residual.data();
    EXPECT_EQ(RunReference(conv), want);
  }
}

TEST(Int8ConvFastTest, FusedResidualBitIdenticalToReference) {
  SKIP_WITHOUT_FAST_PATH();
  using Layout = PackedQConvWeights::Layout;
  absl::flat_hash_set<int> fused_layouts;
  for (const QKernelPath path : FastPaths()) {
    uint32_t seed = 700;
    for (const Geometry& g : Geometries()) {
      for (int threads : {1, 2, 3}) {
        SCOPED_TRACE(absl::StrCat(PathName(path), ": ", Describe(g), ", threads ", threads));
        Conv conv(g);
        Randomize(conv, seed);
        const std::vector<int8_t> residual = RandomResidual(conv, seed++);
        conv.p.residual = residual.data();
        const PackedQConvWeights packed = PackQConvWeights(conv.p, path);
        if (internal::QConvFusesResidual(conv.p, packed)) {
          fused_layouts.insert(static_cast<int>(packed.layout));
        }
        EXPECT_EQ(RunPacked(conv, path, threads), RunReference(conv));
      }
    }
  }
  if (QInt8HasVnni()) {
    // The geometries reach every layout that fuses the Add into its epilogue.
    EXPECT_TRUE(fused_layouts.contains(static_cast<int>(Layout::kVnniDirect)));
    EXPECT_TRUE(fused_layouts.contains(static_cast<int>(Layout::kVnniPointwise)));
    EXPECT_TRUE(fused_layouts.contains(static_cast<int>(Layout::kVnniSmallMap)));
  }
  if (QInt8HasAmx()) {
    EXPECT_TRUE(fused_layouts.contains(static_cast<int>(Layout::kAmxDirect)));
  }
}

TEST(Int8ConvFastTest, FusedResidualWithHugeMultipliersOrWideZeroPointsTakesTheTwoPassRoute) {
  // Multipliers past ResidualAddApplies' bound (products that may be infinite, sums NaN) and
  // zero points outside int8 (never emitted by the compiler): the conv, then AddS8, which must
  // still give the reference's bits.
  SKIP_WITHOUT_FAST_PATH();
  for (const QKernelPath path : FastPaths()) {
    for (const Geometry& g : {Geometries()[1], Geometries()[3]}) {
      SCOPED_TRACE(absl::StrCat(PathName(path), ": ", Describe(g)));
      Conv conv(g);
      Randomize(conv, 51);
      const std::vector<int8_t> residual = RandomResidual(conv, 52);
      conv.p.residual = residual.data();
      conv.p.add.mult_a = 3e38f;
      conv.p.add.mult_b = -3e38f;
      EXPECT_FALSE(internal::QConvFusesResidual(conv.p, PackQConvWeights(conv.p, path)));
      EXPECT_EQ(RunPacked(conv, path, 2), RunReference(conv));
      conv.p.add.mult_a = 0.5f;
      conv.p.add.mult_b = 0.7f;
      conv.p.add.zp_b = 200;
      EXPECT_EQ(RunPacked(conv, path, 1), RunReference(conv));
    }
  }
}

TEST(Int8ConvTest, ValidateRejectsBadGeometry) {
  QConvParams p;
  p.c = 4, p.k = 6, p.h = 5, p.w = 5, p.r = 3, p.s = 3;
  EXPECT_TRUE(ValidateQConvParams(p).ok());
  QConvParams bad = p;
  bad.group = 4;  // K = 6 is not a multiple of 4
  EXPECT_EQ(ValidateQConvParams(bad).code(), absl::StatusCode::kInvalidArgument);
  bad = p;
  bad.h = 2;  // 3x3 kernel on a 2-high map without padding
  EXPECT_EQ(ValidateQConvParams(bad).code(), absl::StatusCode::kInvalidArgument);
  bad = p;
  bad.stride_w = 0;
  EXPECT_EQ(ValidateQConvParams(bad).code(), absl::StatusCode::kInvalidArgument);
  bad = p;
  bad.lo = 10, bad.hi = 5;
  EXPECT_EQ(ValidateQConvParams(bad).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace qcc::cpu
