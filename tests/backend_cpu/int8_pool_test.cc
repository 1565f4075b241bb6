// int8 MaxPool / AveragePool / GlobalAveragePool kernels against hand values and naive loops
// written here, and the AVX-512 and AVX2 MaxPools against its reference bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/qelementwise.h"
#include "kernels/cpu/qpool.h"

namespace qcc::cpu {
namespace {

/// A 2-D pool case: pads are (top, left, bottom, right) as in ONNX.
struct Pool2d {
  int64_t planes, h, w, kh, kw, sh = 1, sw = 1, dh = 1, dw = 1;
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  bool ceil_mode = false;
};

/// ONNX's output extent: floor or ceil of (in + pads - effective kernel) / s, + 1, and under
/// ceil_mode a last window starting in the end padding dropped.
int64_t OutExtent(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe, bool ceil) {
  const int64_t span = in + pb + pe - ((k - 1) * d + 1);
  int64_t out = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (out - 1) * s >= in + pb) --out;
  return out;
}

PoolGeometry Geometry(const Pool2d& c) {
  PoolGeometry g;
  g.planes = c.planes;
  g.in = {1, c.h, c.w};
  g.kernel = {1, c.kh, c.kw};
  g.stride = {1, c.sh, c.sw};
  g.dilation = {1, c.dh, c.dw};
  g.pad_begin = {0, c.pads[0], c.pads[1]};
  g.pad_end = {0, c.pads[2], c.pads[3]};
  g.out = {1, OutExtent(c.h, c.kh, c.sh, c.dh, c.pads[0], c.pads[2], c.ceil_mode),
           OutExtent(c.w, c.kw, c.sw, c.dw, c.pads[1], c.pads[3], c.ceil_mode)};
  return g;
}

/// The naive pools: every tap of every window, bounds-checked. Average: sum of (x - zp_in) over
/// taps inside x; the count also includes taps in the padding when count_include_pad.
enum class Mode { kMax, kAvg, kAvgIncludePad };
std::vector<int8_t> NaivePool(Mode mode, const Pool2d& c, const AvgPoolS8Quant& q,
                              const std::vector<int8_t>& x) {
  const PoolGeometry g = Geometry(c);
  std::vector<int8_t> y;
  for (int64_t p = 0; p < c.planes; ++p) {
    for (int64_t oy = 0; oy < g.out[1]; ++oy) {
      for (int64_t ox = 0; ox < g.out[2]; ++ox) {
        int best = -128;
        int64_t sum = 0, count = 0;
        for (int64_t ky = 0; ky < c.kh; ++ky) {
          for (int64_t kx = 0; kx < c.kw; ++kx) {
            const int64_t iy = oy * c.sh - c.pads[0] + ky * c.dh;
            const int64_t ix = ox * c.sw - c.pads[1] + kx * c.dw;
            const bool inside = iy >= 0 && iy < c.h && ix >= 0 && ix < c.w;
            const bool in_pad = iy >= -c.pads[0] && iy < c.h + c.pads[2] && ix >= -c.pads[1] &&
                                ix < c.w + c.pads[3];
            if (inside) {
              const int v = x[(p * c.h + iy) * c.w + ix];
              best = std::max(best, v);
              sum += v - q.zp_in;
            }
            count += mode == Mode::kAvgIncludePad ? in_pad : inside;
          }
        }
        if (mode == Mode::kMax) {
          y.push_back(static_cast<int8_t>(best));
          continue;
        }
        const float v = static_cast<float>(sum) * q.multiplier / static_cast<float>(count);
        const double r = std::nearbyint(v) + q.zp_out;  // half to even
        y.push_back(static_cast<int8_t>(std::clamp<double>(r, q.lo, q.hi)));
      }
    }
  }
  return y;
}

std::vector<int8_t> RandomInt8(int64_t n, std::mt19937& rng, int lo = -128, int hi = 127) {
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<int8_t> v(n);
  for (int8_t& b : v) b = static_cast<int8_t>(dist(rng));
  return v;
}

TEST(Int8MaxPoolTest, HandValues) {
  // 3x3 plane of negatives, 3x3 window, pad 1: padding (0 in real terms) never wins.
  const std::vector<int8_t> x = {-100, -99, -98, -97, -96, -95, -94, -93, -92};
  Pool2d c{1, 3, 3, 3, 3};
  c.pads = {1, 1, 1, 1};
  const PoolGeometry g = Geometry(c);
  std::vector<int8_t> y(9);
  MaxPoolS8Reference(g, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<int8_t>{-96, -95, -95, -93, -92, -92, -93, -92, -92}));
  MaxPoolS8(g, x.data(), y.data(), 1);
  EXPECT_EQ(y, (std::vector<int8_t>{-96, -95, -95, -93, -92, -92, -93, -92, -92}));
  // 1x5 row, kernel 2, stride 2, ceil_mode: 3 outputs, the last window holds one tap.
  const std::vector<int8_t> row = {-128, 5, 127, -3, -7};
  const Pool2d r{1, 1, 5, 1, 2, 1, 2, 1, 1, {0, 0, 0, 0}, true};
  ASSERT_EQ(Geometry(r).out[2], 3);
  std::vector<int8_t> ry(3);
  MaxPoolS8Reference(Geometry(r), row.data(), ry.data());
  EXPECT_EQ(ry, (std::vector<int8_t>{5, 127, -7}));
}

TEST(Int8MaxPoolTest, ReferenceAndFastPathMatchNaive) {
  std::mt19937 rng(7);
  // Widths up to 200: rows for the separable VBMI form (at most 128 input bytes, 64 outputs)
  // and wider ones for the 64-lane tiles.
  std::uniform_int_distribution<int64_t> size(1, 200), ker(1, 4), str(1, 3), dil(1, 2), pad(0, 2);
  std::vector<Pool2d> cases = {
      {64, 56, 56, 3, 3, 2, 2, 1, 1, {1, 1, 1, 1}},  // ResNet stem pool, threaded
      {8, 32, 32, 2, 2, 2, 2},
      {3, 7, 130, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}},  // width over two 64-lane tiles
      {2, 9, 129, 3, 5, 2, 2, 2, 2, {2, 1, 0, 2}, true},
      {2, 5, 17, 1, 17, 1, 1},  // one output per row
  };
  for (int i = 0; i < 60; ++i) {
    Pool2d c{1 + i % 3, size(rng) % 20 + 1, size(rng), ker(rng), ker(rng),
             str(rng),  str(rng),           dil(rng),  dil(rng)};
    c.pads = {pad(rng), pad(rng), pad(rng), pad(rng)};
    c.ceil_mode = i % 2;
    for (int a = 0; a < 2; ++a) {  // ONNX: pads smaller than the (dilated) kernel
      const int64_t eff = a ? (c.kw - 1) * c.dw + 1 : (c.kh - 1) * c.dh + 1;
      c.pads[a] = std::min(c.pads[a], eff - 1);
      c.pads[a + 2] = std::min(c.pads[a + 2], eff - 1);
    }
    const PoolGeometry g = Geometry(c);
    if (g.out[1] < 1 || g.out[2] < 1) continue;
    cases.push_back(c);
  }
  int fast_cases = 0, vbmi_cases = 0, avx2_cases = 0;
  for (const Pool2d& c : cases) {
    const PoolGeometry g = Geometry(c);
    const std::vector<int8_t> x = RandomInt8(c.planes * c.h * c.w, rng);
    const std::vector<int8_t> want = NaivePool(Mode::kMax, c, {}, x);
    std::vector<int8_t> ref(want.size());
    MaxPoolS8Reference(g, x.data(), ref.data());
    ASSERT_EQ(ref, want) << c.h << "x" << c.w << " k" << c.kh << "x" << c.kw;
    vbmi_cases += MaxPoolS8FitsVbmi(g);
    fast_cases += MaxPoolS8UsesAvx512(g) && !MaxPoolS8FitsVbmi(g);
    avx2_cases += MaxPoolS8UsesAvx2(g) && !MaxPoolS8FitsVbmi(g);
    for (int threads : {1, 2}) {
      std::vector<int8_t> got(want.size(), 99);
      MaxPoolS8(g, x.data(), got.data(), threads);
      ASSERT_EQ(got, want) << c.h << "x" << c.w << " k" << c.kh << "x" << c.kw << " s" << c.sh
                           << "x" << c.sw << " threads " << threads;
    }
  }
  if (!CpuHasAvx512Int8()) {
    if (!Cpu().avx2) GTEST_SKIP() << "CPU lacks avx512f/bw/vl and avx2: only the reference ran";
    EXPECT_GT(avx2_cases, 10);  // the AVX2 path
    return;
  }
  EXPECT_GT(fast_cases, 10);
  if (vbmi_cases == 0) GTEST_SKIP() << "CPU lacks avx512vbmi: the separable form did not run";
  EXPECT_GT(vbmi_cases, 20);
}

TEST(Int8AveragePoolTest, HandValues) {
  // 2x2 plane [[1, 2], [3, 4]], zp_in = 1, so x - zp = [[0, 1], [2, 3]]; kernel 2x2, pad 1:
  // 3x3 outputs. Corner windows hold one tap, edges two, the centre four.
  const std::vector<int8_t> x = {1, 2, 3, 4};
  Pool2d c{1, 2, 2, 2, 2};
  c.pads = {1, 1, 1, 1};
  const PoolGeometry g = Geometry(c);
  const AvgPoolS8Quant q{1, 2.0f, -3, -128, 127};  // M = 2, zp_out = -3
  std::vector<int8_t> y(9);
  AveragePoolS8(g, q, false, x.data(), y.data(), 1);
  // Taps inside only: (0)*2/1, (0+1)*2/2, (1)*2/1 / (0+2)*2/2, 6*2/4 = 3, (1+3)*2/2 / 4, 5, 6.
  EXPECT_EQ(y, (std::vector<int8_t>{-3, -2, -1, -1, 0, 1, 1, 2, 3}));
  AveragePoolS8(g, q, true, x.data(), y.data(), 1);
  // count 4 everywhere: 0, 0.5 -> 0, 0.5 -> 0 / 1, 3, 2 / 1, 2.5 -> 2, 1.5 -> 2.
  EXPECT_EQ(y, (std::vector<int8_t>{-3, -3, -3, -2, 0, -1, -2, -1, -1}));
  // ceil_mode: 1x5 row, kernel 2, stride 2 -> 3 windows, the last one hangs past the end with no
  // padding to count, so its count is 1 either way.
  const std::vector<int8_t> row = {10, 20, 30, 41, 50};
  const Pool2d r{1, 1, 5, 1, 2, 1, 2, 1, 1, {0, 0, 0, 0}, true};
  std::vector<int8_t> ry(3);
  for (bool include_pad : {false, true}) {
    AveragePoolS8(Geometry(r), {0, 1.0f, 0, -128, 127}, include_pad, row.data(), ry.data(), 1);
    EXPECT_EQ(ry, (std::vector<int8_t>{15, 36, 50}));  // 35.5 -> 36
  }
}

TEST(Int8AveragePoolTest, MatchesNaive) {
  std::mt19937 rng(8);
  std::uniform_int_distribution<int64_t> size(1, 40), ker(1, 4), str(1, 3), pad(0, 1);
  const AvgPoolS8Quant quants[] = {
      {0, 1.0f, 0, -128, 127}, {-5, 0.73f, 9, 9, 127}, {3, 4.1f, -2, -128, 127}};
  std::vector<Pool2d> cases = {{64, 28, 28, 3, 3, 1, 1, 1, 1, {1, 1, 1, 1}}};  // threaded
  for (int i = 0; i < 40; ++i) {
    Pool2d c{1 + i % 2, size(rng), size(rng), ker(rng), ker(rng), str(rng), str(rng)};
    c.pads = {pad(rng), pad(rng), pad(rng), pad(rng)};
    for (int64_t& p : c.pads) p = std::min(p, std::min(c.kh, c.kw) - 1);
    c.ceil_mode = i % 2;
    const PoolGeometry g = Geometry(c);
    if (g.out[1] >= 1 && g.out[2] >= 1) cases.push_back(c);
  }
  for (const Pool2d& c : cases) {
    const std::vector<int8_t> x = RandomInt8(c.planes * c.h * c.w, rng);
    for (const AvgPoolS8Quant& q : quants) {
      for (bool include_pad : {false, true}) {
        const auto want = NaivePool(include_pad ? Mode::kAvgIncludePad : Mode::kAvg, c, q, x);
        for (int threads : {1, 2}) {
          std::vector<int8_t> got(want.size());
          AveragePoolS8(Geometry(c), q, include_pad, x.data(), got.data(), threads);
          ASSERT_EQ(got, want) << c.h << "x" << c.w << " k" << c.kh << "x" << c.kw << " pad "
                               << include_pad;
        }
      }
    }
  }
}

TEST(Int8GlobalAveragePoolTest, HandValuesAndNaive) {
  // [1, 2, 3, 4]: 10 / 4 = 2.5 -> 2; [1, 2, 3, 6]: 3; with zp_in = 1: 6 / 4 = 1.5 -> 2, + zp_out.
  const std::vector<int8_t> x = {1, 2, 3, 4, 1, 2, 3, 6};
  std::vector<int8_t> y(2);
  GlobalAveragePoolS8(2, 4, {0, 1.0f, 0, -128, 127}, x.data(), y.data(), 1);
  EXPECT_EQ(y, (std::vector<int8_t>{2, 3}));
  GlobalAveragePoolS8(2, 4, {1, 1.0f, 10, -128, 127}, x.data(), y.data(), 1);
  EXPECT_EQ(y, (std::vector<int8_t>{12, 12}));  // 1.5 -> 2, 2.0 -> 2
  GlobalAveragePoolS8(2, 4, {1, 100.0f, 0, -128, 127}, x.data(), y.data(), 1);
  EXPECT_EQ(y, (std::vector<int8_t>{127, 127}));

  std::mt19937 rng(9);
  const AvgPoolS8Quant q{-7, 0.61f, 4, -128, 120};
  for (int64_t size : {1, 49, 1000, 4099}) {
    const int64_t planes = 37;
    const std::vector<int8_t> data = RandomInt8(planes * size, rng);
    const Pool2d c{planes, 1, size, 1, size};
    const auto want = NaivePool(Mode::kAvg, c, q, data);
    for (int threads : {1, 2}) {
      std::vector<int8_t> got(planes);
      GlobalAveragePoolS8(planes, size, q, data.data(), got.data(), threads);
      ASSERT_EQ(got, want) << "size " << size;
    }
  }
}

}  // namespace
}  // namespace qcc::cpu
