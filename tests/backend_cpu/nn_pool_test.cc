// MaxPool, AveragePool and the global pools against hand values and naive loops written here.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/pool.h"
#include "support/float16.h"  // BitCast
#include "tests/backend_cpu/nn_testing.h"
#include "tests/testing/op_test_util.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {
namespace {

enum class Kind { kMax, kAvg, kAvgIncludePad };

struct PoolCase {
  const char* name;
  int64_t n, c;
  std::vector<int64_t> in, kernel;
  std::vector<int64_t> strides = {}, dilations = {}, pads = {};
  bool ceil_mode = false;
};

/// Output extent, written out independently: floor or ceil of (in + pads - eff_k) / s, + 1, and
/// under ceil_mode a last window starting in the end padding dropped.
int64_t PoolOut(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, bool ceil) {
  const double span = static_cast<double>(in + pb + pe - ((k - 1) * d + 1)) / s;
  int64_t out = static_cast<int64_t>(ceil ? std::ceil(span) : std::floor(span)) + 1;
  if (ceil && (out - 1) * s >= in + pb) --out;
  return out;
}

/// The oracle, plus row-major argmax indices for MaxPool.
Tensor NaivePool(Kind kind, const Tensor& x, const PoolCase& pc, Tensor* indices) {
  const size_t r = pc.in.size();
  std::vector<int64_t> pb(r), pe(r), out(r);
  for (size_t i = 0; i < r; ++i) {
    pb[i] = pc.pads.empty() ? 0 : pc.pads[i];
    pe[i] = pc.pads.empty() ? 0 : pc.pads[r + i];
    out[i] = PoolOut(pc.in[i], pc.kernel[i], pc.strides.empty() ? 1 : pc.strides[i],
                     pc.dilations.empty() ? 1 : pc.dilations[i], pb[i], pe[i], pc.ceil_mode);
  }
  const auto in3 = To3(pc.in, 1), k3 = To3(pc.kernel, 1), s3 = To3(pc.strides, 1);
  const auto d3 = To3(pc.dilations, 1), b3 = To3(pb, 0), e3 = To3(pe, 0), o3 = To3(out, 1);
  Tensor y(DType::kFloat32, NcPlus(pc.n, pc.c, out));
  if (indices != nullptr) *indices = Tensor(DType::kInt64, y.dims());
  int64_t at = 0;
  for (int64_t plane = 0; plane < pc.n * pc.c; ++plane)
    for (int64_t oz = 0; oz < o3[0]; ++oz)
      for (int64_t oy = 0; oy < o3[1]; ++oy)
        for (int64_t ox = 0; ox < o3[2]; ++ox, ++at) {
          double sum = 0;
          float best = -std::numeric_limits<float>::infinity();
          int64_t best_i = -1, inside = 0, padded = 0;
          for (int64_t kz = 0; kz < k3[0]; ++kz)
            for (int64_t ky = 0; ky < k3[1]; ++ky)
              for (int64_t kx = 0; kx < k3[2]; ++kx) {
                const std::array<int64_t, 3> p = {oz * s3[0] - b3[0] + kz * d3[0],
                                                  oy * s3[1] - b3[1] + ky * d3[1],
                                                  ox * s3[2] - b3[2] + kx * d3[2]};
                bool in_x = true, in_padded = true;
                for (int a = 0; a < 3; ++a) {
                  in_x = in_x && p[a] >= 0 && p[a] < in3[a];
                  in_padded = in_padded && p[a] >= -b3[a] && p[a] < in3[a] + e3[a];
                }
                padded += in_padded;
                if (!in_x) continue;
                ++inside;
                const int64_t i = ((plane * in3[0] + p[0]) * in3[1] + p[1]) * in3[2] + p[2];
                const float v = x.data<float>()[i];
                sum += v;
                if (v > best) best = v, best_i = i;
              }
          float v = 0;
          switch (kind) {
            case Kind::kMax:
              v = best;
              break;
            case Kind::kAvg:
              v = static_cast<float>(sum / inside);
              break;
            case Kind::kAvgIncludePad:
              v = static_cast<float>(sum / padded);
              break;
          }
          y.data<float>()[at] = v;
          if (indices != nullptr) indices->data<int64_t>()[at] = best_i;
        }
  return y;
}

ir::PoolAttrs AttrsOf(const PoolCase& pc) {
  ir::PoolAttrs a;
  a.kernel_shape = pc.kernel;
  a.strides = pc.strides;
  a.dilations = pc.dilations;
  a.pads = pc.pads;
  a.ceil_mode = pc.ceil_mode;
  return a;
}

const std::vector<PoolCase>& Cases() {
  static const auto* cases = new std::vector<PoolCase>{
      {"2x2_stride2", 1, 1, {4, 4}, {2, 2}, {2, 2}},
      {"3x3_stride2_pad1_batch2", 2, 3, {7, 6}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},
      {"1x1", 1, 2, {3, 5}, {1, 1}},
      {"asymmetric_pads", 1, 2, {5, 5}, {3, 2}, {1, 2}, {}, {0, 1, 2, 0}},
      {"ceil_mode", 1, 1, {4, 4}, {3, 3}, {2, 2}, {}, {}, true},
      {"ceil_mode_drops_window_in_pad", 1, 1, {5, 5}, {2, 2}, {2, 2}, {}, {1, 1, 1, 1}, true},
      {"dilation", 1, 2, {7, 7}, {2, 2}, {1, 1}, {2, 2}},
      {"stride_gt_kernel", 2, 1, {8, 9}, {2, 2}, {3, 3}},
      {"pool1d", 2, 2, {9}, {3}, {2}, {}, {1, 1}},
      {"pool3d", 1, 2, {4, 5, 6}, {2, 3, 2}, {2, 1, 2}, {}, {0, 1, 1, 1, 1, 0}},
  };
  return *cases;
}

TEST(NnPoolTest, MaxPoolMatchesNaive) {
  for (const PoolCase& pc : Cases()) {
    SCOPED_TRACE(pc.name);
    const Tensor x = RandomF32(NcPlus(pc.n, pc.c, pc.in), 21);
    auto y = RunSingleOp(ir::OpKind::kMaxPool, AttrsOf(pc), {{x}});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(CompareTensors((*y)[0], NaivePool(Kind::kMax, x, pc, nullptr), 0, 0), "");
  }
}

TEST(NnPoolTest, AveragePoolMatchesNaive) {
  for (const PoolCase& pc : Cases()) {
    for (bool include_pad : {false, true}) {
      SCOPED_TRACE(absl::StrCat(pc.name, include_pad ? " count_include_pad" : ""));
      const Tensor x = RandomF32(NcPlus(pc.n, pc.c, pc.in), 22);
      ir::PoolAttrs a = AttrsOf(pc);
      a.count_include_pad = include_pad;
      auto y = RunSingleOp(ir::OpKind::kAveragePool, a, {{x}});
      ASSERT_TRUE(y.ok()) << y.status();
      const Kind kind = include_pad ? Kind::kAvgIncludePad : Kind::kAvg;
      EXPECT_EQ(CompareTensors((*y)[0], NaivePool(kind, x, pc, nullptr), 1e-5, 1e-6), "");
    }
  }
}

// ONNX test_maxpool_2d_ceil and a 3x3 ramp averaged with a padded 2x2 window.
TEST(NnPoolTest, HandValues) {
  std::vector<float> ramp16(16);
  for (int i = 0; i < 16; ++i) ramp16[i] = static_cast<float>(i + 1);
  ir::PoolAttrs a;
  a.kernel_shape = {3, 3};
  a.strides = {2, 2};
  a.ceil_mode = 1;
  auto y = RunSingleOp(ir::OpKind::kMaxPool, a, {{F32({1, 1, 4, 4}, ramp16)}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(CompareTensors((*y)[0], F32({1, 1, 2, 2}, {11, 12, 15, 16}), 0, 0), "");

  const Tensor x = F32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  ir::PoolAttrs avg;
  avg.kernel_shape = {2, 2};
  avg.pads = {1, 1, 0, 0};
  y = RunSingleOp(ir::OpKind::kAveragePool, avg, {{x}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(CompareTensors((*y)[0], F32({1, 1, 3, 3}, {1, 1.5, 2.5, 2.5, 3, 4, 5.5, 6, 7}), 0, 0),
            "");
  avg.count_include_pad = 1;
  y = RunSingleOp(ir::OpKind::kAveragePool, avg, {{x}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(
      CompareTensors((*y)[0], F32({1, 1, 3, 3}, {0.25, 0.75, 1.25, 1.25, 3, 4, 2.75, 6, 7}), 0, 0),
      "");
}

TEST(NnPoolTest, MaxPoolIndicesBothStorageOrders) {
  const PoolCase pc = {"indices", 2, 2, {5, 4}, {2, 3}, {2, 1}, {}, {1, 1, 0, 1}};
  const Tensor x = RandomF32(NcPlus(pc.n, pc.c, pc.in), 23);
  Tensor want_idx;
  const Tensor want = NaivePool(Kind::kMax, x, pc, &want_idx);
  for (int64_t order : {0, 1}) {
    ir::PoolAttrs a = AttrsOf(pc);
    a.storage_order = order;
    auto y = RunSingleOp(ir::OpKind::kMaxPool, a, {{x}}, 2);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(CompareTensors((*y)[0], want, 0, 0), "");
    Tensor idx = want_idx.Clone();
    if (order == 1) {
      // Column-major spatial index: h + w * H inside each plane.
      const int64_t plane = 5 * 4;
      for (int64_t i = 0; i < idx.numel(); ++i) {
        int64_t& v = idx.data<int64_t>()[i];
        const int64_t base = v / plane * plane, h = v % plane / 4, w = v % 4;
        v = base + h + w * 5;
      }
    }
    EXPECT_EQ(CompareTensors((*y)[1], idx, 0, 0), "") << "storage_order " << order;
  }
}

// Rows wide enough for the vector row kernels (AVX-512: 16 outputs, AVX2: 8, then a masked
// tail), stride 1 and 2, with and without pads, on the exact scalar rule: each window's first
// tap, then any tap `v > best`. The values repeat and include -0.0, +0.0 and NaN, so the order of
// the taps shows in the bits. The last plane ends the buffer exactly (no read past it). Planes 5
// and 12 rows high: 3 x 3 stride 2 (and 2 x 2) carry one row's maxima from output row to row,
// AVX-512 four vectors of outputs at a time (widths 161 and 225: 80 and 112 outputs, a group of
// four and one of one or three), or of four planes where a row is one vector (7 planes: a group
// of four, then of two, as the last plane's plain loads would pass the buffer's end).
TEST(NnPoolTest, WideRowsMatchTheScalarRuleBitForBit) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float values[] = {-0.0f, 0.0f, 1.5f, -2.0f, nan, 1.5f, 0.0f, -0.0f, 3.25f, -7.0f, 2.0f};
  for (int64_t width : {7, 8, 9, 16, 17, 31, 40, 113, 161, 225}) {
    for (int64_t stride : {1, 2}) {
      for (int64_t k : {2, 3, 5}) {
        for (int64_t pad : {0, 1}) {
          for (int64_t height : {5, 12}) {
            cpu::PoolF32Params p;
            p.planes = 7;
            p.in = {1, height, width};
            p.kernel = {1, k, k};
            p.stride = {1, stride, stride};
            p.pad_begin = {0, pad, pad};
            p.pad_end = {0, pad, pad};
            p.out = {1, (height + 2 * pad - k) / stride + 1, (width + 2 * pad - k) / stride + 1};
            if (p.out[2] < 1) continue;
            p.num_threads = 2;
            std::vector<float> x(p.planes * p.in_size());
            for (size_t i = 0; i < x.size(); ++i) x[i] = values[(i * 7 + i / 5) % 11];
            std::vector<float> want(p.planes * p.out_size());
            for (int64_t plane = 0, o = 0; plane < p.planes; ++plane) {
              for (int64_t oy = 0; oy < p.out[1]; ++oy) {
                for (int64_t ox = 0; ox < p.out[2]; ++ox, ++o) {
                  bool first = true;
                  float best = std::numeric_limits<float>::lowest();
                  for (int64_t ky = 0; ky < k; ++ky) {
                    for (int64_t kx = 0; kx < k; ++kx) {
                      const int64_t iy = oy * stride - pad + ky, ix = ox * stride - pad + kx;
                      if (iy < 0 || iy >= height || ix < 0 || ix >= width) continue;
                      const float v = x[(plane * height + iy) * width + ix];
                      if (first || v > best) best = v;
                      first = false;
                    }
                  }
                  want[o] = best;
                }
              }
            }
            std::vector<float> got(want.size());
            cpu::MaxPoolF32(p, x.data(), got.data(), nullptr, false);
            for (size_t i = 0; i < want.size(); ++i) {
              ASSERT_EQ(BitCast<uint32_t>(got[i]), BitCast<uint32_t>(want[i]))
                  << "height " << height << " width " << width << " stride " << stride << " kernel "
                  << k << " pad " << pad << " output " << i;
            }
          }
        }
      }
    }
  }
}

// auto_pad SAME_UPPER / SAME_LOWER: out = ceil(in / s); with in 5, k 3, s 2 -> out 3 and a
// total pad of 2 (1 + 1); with in 6 -> out 3, total 1: at the end (UPPER) or start (LOWER).
TEST(NnPoolTest, AutoPad) {
  const Tensor x = RandomF32({1, 2, 5, 6}, 24);
  for (auto [mode, pads] :
       {std::make_pair(ir::AutoPad::kSameUpper, std::vector<int64_t>{1, 0, 1, 1}),
        std::make_pair(ir::AutoPad::kSameLower, std::vector<int64_t>{1, 1, 1, 0}),
        std::make_pair(ir::AutoPad::kValid, std::vector<int64_t>{})}) {
    ir::PoolAttrs a;
    a.auto_pad = mode;
    a.kernel_shape = {3, 3};
    a.strides = {2, 2};
    auto y = RunSingleOp(ir::OpKind::kMaxPool, a, {{x}});
    ASSERT_TRUE(y.ok()) << y.status();
    const PoolCase pc = {"auto_pad", 1, 2, {5, 6}, {3, 3}, {2, 2}, {}, pads};
    EXPECT_EQ(CompareTensors((*y)[0], NaivePool(Kind::kMax, x, pc, nullptr), 0, 0), "")
        << static_cast<int>(mode);
  }
}

TEST(NnPoolTest, ByteMaxPoolIsExact) {
  Tensor x(DType::kUInt8, {1, 1, 2, 3});
  const uint8_t v[] = {3, 250, 7, 0, 9, 255};
  std::copy(v, v + 6, x.data<uint8_t>());
  ir::PoolAttrs a;
  a.kernel_shape = {2, 2};
  auto y = RunSingleOp(ir::OpKind::kMaxPool, a, {{x}});
  ASSERT_TRUE(y.ok()) << y.status();
  ASSERT_EQ((*y)[0].dtype(), DType::kUInt8);
  EXPECT_EQ((*y)[0].data<uint8_t>()[0], 250);
  EXPECT_EQ((*y)[0].data<uint8_t>()[1], 255);
}

TEST(NnPoolTest, GlobalPools) {
  const Tensor x = RandomF32({3, 5, 4, 7}, 25);
  Tensor avg(DType::kFloat32, {3, 5, 1, 1}), mx(DType::kFloat32, {3, 5, 1, 1});
  for (int64_t p = 0; p < 15; ++p) {
    double s = 0;
    float m = -2;
    for (int64_t i = 0; i < 28; ++i) {
      s += x.data<float>()[p * 28 + i];
      m = std::max(m, x.data<float>()[p * 28 + i]);
    }
    avg.data<float>()[p] = static_cast<float>(s / 28);
    mx.data<float>()[p] = m;
  }
  // The same sums in the same order (15 planes: a group of 8 and 7 alone): the same bits.
  auto y = RunSingleOp(ir::OpKind::kGlobalAveragePool, ir::NoAttrs{}, {{x}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(CompareTensors((*y)[0], avg, 0, 0), "");
  y = RunSingleOp(ir::OpKind::kGlobalMaxPool, ir::NoAttrs{}, {{x}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(CompareTensors((*y)[0], mx, 0, 0), "");
}

// GlobalAveragePoolF32 called directly, bit for bit each plane's sum in order in double: planes
// in blocks of 16 (the AVX-512 path, where the CPU has it), 8 and alone; sizes below, at and past
// a block of 16 positions and squeezenet's 169; 1 and 3 threads (1000 planes of 169: pieces that
// start off a block of 16).
TEST(NnPoolTest, GlobalAveragePoolSumsInOrder) {
  for (int64_t planes : {1, 16, 23, 40, 57, 1000}) {
    for (int64_t size : {0, 1, 15, 16, 17, 49, 169}) {
      const Tensor x = RandomF32({planes, std::max<int64_t>(size, 1)}, 27);
      std::vector<float> want(planes);
      for (int64_t p = 0; p < planes; ++p) {
        double s = 0;
        for (int64_t i = 0; i < size; ++i) s += x.data<float>()[p * size + i];
        want[p] = size > 0 ? static_cast<float>(s / static_cast<double>(size)) : 0.0f;
      }
      for (int threads : {1, 3}) {
        std::vector<float> got(planes, -1.0f);
        cpu::GlobalAveragePoolF32(planes, size, x.data<float>(), got.data(), threads);
        for (int64_t p = 0; p < planes; ++p) {
          ASSERT_EQ(BitCast<uint32_t>(got[p]), BitCast<uint32_t>(want[p]))
              << "plane " << p << " of " << planes << ", size " << size << ", threads " << threads;
        }
      }
    }
  }
}

TEST(NnPoolTest, RejectsBadAttributes) {
  const Tensor x = RandomF32({1, 1, 4, 4}, 26);
  ir::PoolAttrs no_kernel;
  auto y = RunSingleOp(ir::OpKind::kMaxPool, no_kernel, {{x}});
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("kernel_shape"), absl::string_view::npos) << y.status();
  ir::PoolAttrs big;
  big.kernel_shape = {5, 5};
  y = RunSingleOp(ir::OpKind::kAveragePool, big, {{x}});
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument) << y.status();
  ir::PoolAttrs wrong_rank;
  wrong_rank.kernel_shape = {2};
  y = RunSingleOp(ir::OpKind::kMaxPool, wrong_rank, {{x}});
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("spatial axes"), absl::string_view::npos) << y.status();
}

// MaxPoolF32 without indices (the evaluator's case) takes its own loop: the same values bit for
// bit as with indices, whose loop states the contract (the first tap, then any greater one), on
// NaNs, zeros of both signs, ties, padding, dilation and windows hanging past the end.
TEST(MaxPoolF32Kernel, WithoutIndicesTheSameBitsAsWithThem) {
  const float kNan = std::numeric_limits<float>::quiet_NaN();
  // Widths: rows of 16 outputs at a time and a tail (the AVX-512 rows), and rows narrower than
  // 16 (only the masked tail), whose stride-2 taps span one or two loads.
  for (const int64_t width : {45, 27, 13, 6}) {
    for (const auto& [kernel, stride, dilation, pad] : std::vector<std::array<int64_t, 4>>{
             {3, 2, 1, 0}, {3, 1, 1, 1}, {2, 2, 2, 1}, {3, 3, 1, 2}}) {
      cpu::PoolF32Params p;
      p.planes = 3;
      p.in = {1, 9, width};
      p.kernel = {1, kernel, kernel};
      p.stride = {1, stride, stride};
      p.dilation = {1, dilation, dilation};
      p.pad_begin = {0, pad, pad};
      p.pad_end = {0, pad + 1, pad + 1};  // the last windows hang past the end (ceil_mode)
      for (int a = 1; a < 3; ++a) {
        p.out[a] =
            (p.in[a] + p.pad_begin[a] + p.pad_end[a] - dilation * (kernel - 1) - 1) / stride + 1;
      }
      std::vector<float> x(p.planes * p.in_size());
      for (size_t i = 0; i < x.size(); ++i) {
        const int k = static_cast<int>((i * 37) % 13);
        x[i] = k == 0   ? kNan
               : k == 1 ? -0.0f
               : k == 2 ? 0.0f
               : k == 3 ? 2.5f
                        : 0.25f * static_cast<float>(k) - 1.0f;
      }
      std::vector<float> with(p.planes * p.out_size()), without(with.size());
      std::vector<int64_t> indices(with.size());
      cpu::MaxPoolF32(p, x.data(), with.data(), indices.data(), false);
      cpu::MaxPoolF32(p, x.data(), without.data(), nullptr, false);
      int nans = 0;
      for (size_t i = 0; i < with.size(); ++i) {
        nans += std::isnan(with[i]);
        EXPECT_EQ(BitCast<uint32_t>(with[i]), BitCast<uint32_t>(without[i]))
            << "width " << width << " kernel " << kernel << " stride " << stride << " output " << i;
      }
      if (width == 45) {
        EXPECT_GT(nans, 0);  // some window starts at a NaN
      }
    }
  }
}

// Geometries at the edges of the AVX-512 rows: a row in which no window is whole (the kernel is
// wider than the input), and a depth window that a pad leaves empty (every output is then the
// lowest float). Again the same bits with and without indices.
TEST(MaxPoolF32Kernel, EdgeGeometriesWithoutIndicesTheSameBitsAsWithThem) {
  struct Case {
    std::array<int64_t, 3> in, kernel, stride, pad_begin, pad_end;
  };
  for (const Case& c : {Case{{1, 4, 2}, {1, 3, 3}, {1, 1, 1}, {0, 1, 1}, {0, 1, 1}},
                        Case{{1, 6, 40}, {1, 3, 3}, {2, 1, 2}, {1, 0, 0}, {0, 0, 0}}}) {
    cpu::PoolF32Params p;
    p.planes = 2;
    p.in = c.in;
    p.kernel = c.kernel;
    p.stride = c.stride;
    p.pad_begin = c.pad_begin;
    p.pad_end = c.pad_end;
    for (int a = 0; a < 3; ++a) {
      p.out[a] = (p.in[a] + p.pad_begin[a] + p.pad_end[a] - p.kernel[a]) / p.stride[a] + 1;
    }
    std::vector<float> x(p.planes * p.in_size());
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7) % 19) - 9.0f;
    std::vector<float> with(p.planes * p.out_size()), without(with.size());
    std::vector<int64_t> indices(with.size());
    cpu::MaxPoolF32(p, x.data(), with.data(), indices.data(), false);
    cpu::MaxPoolF32(p, x.data(), without.data(), nullptr, false);
    for (size_t i = 0; i < with.size(); ++i) {
      EXPECT_EQ(BitCast<uint32_t>(with[i]), BitCast<uint32_t>(without[i])) << "output " << i;
    }
    if (c.pad_begin[0] == 1) {  // the depth window holds no tap
      for (float v : without) EXPECT_EQ(v, std::numeric_limits<float>::lowest());
    }
  }
}

}  // namespace
}  // namespace qcc::testing
