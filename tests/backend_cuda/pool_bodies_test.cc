// The pooling kernel bodies (kernels/cuda/pool_bodies.h), run by the host loop
// ForEachIndex, against the backend_cpu pools the CPU runtime calls (qpool.h, pool.h, with the
// geometry runtime/step_exec_*.cc builds), bit for bit (memcmp), over random windows: odd sizes,
// strides, dilations, asymmetric pads, ceil_mode output sizes, count_include_pad, zero points,
// clamps.
#include "kernels/cuda/pool_bodies.h"

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/pool.h"
#include "kernels/cpu/qpool.h"
#include "kernels/cuda/launch.h"

namespace qcc::cuda {
namespace {

template <typename T>
bool SameBytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// ONNX's pooled extent of one axis (ceil_mode drops a last window starting in the end padding).
int64_t PooledExtent(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe,
                     bool ceil_mode) {
  const int64_t span = in + pb + pe - ((k - 1) * d + 1);
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + pb) --out;
  return out;
}

// A random window that yields at least one output.
PoolWindow RandomWindow(std::mt19937& rng, bool* ceil_mode) {
  std::uniform_int_distribution<int> small(1, 4), pad(0, 2), size(1, 13), planes(1, 6);
  std::uniform_int_distribution<int> coin(0, 1);
  for (;;) {
    PoolWindow g{};
    g.planes = planes(rng);
    g.in_h = size(rng);
    g.in_w = size(rng);
    g.kernel_h = small(rng);
    g.kernel_w = small(rng);
    g.stride_h = small(rng);
    g.stride_w = small(rng);
    g.dilation_h = coin(rng) ? 1 : small(rng);
    g.dilation_w = coin(rng) ? 1 : small(rng);
    g.pad_top = pad(rng);
    g.pad_left = pad(rng);
    g.pad_bottom = pad(rng);
    g.pad_right = pad(rng);
    // ONNX: pads smaller than the (dilated) kernel; the CPU pools accept any, keep it realistic.
    if (g.pad_top >= g.kernel_h || g.pad_bottom >= g.kernel_h) g.pad_top = g.pad_bottom = 0;
    if (g.pad_left >= g.kernel_w || g.pad_right >= g.kernel_w) g.pad_left = g.pad_right = 0;
    *ceil_mode = coin(rng) != 0;
    g.out_h = PooledExtent(g.in_h, g.kernel_h, g.stride_h, g.dilation_h, g.pad_top, g.pad_bottom,
                           *ceil_mode);
    g.out_w = PooledExtent(g.in_w, g.kernel_w, g.stride_w, g.dilation_w, g.pad_left, g.pad_right,
                           *ceil_mode);
    if (g.out_h > 0 && g.out_w > 0) return g;
  }
}

// The geometry runtime's S8Geometry / F32Pool build from the same step.
template <typename P>
void FillCpuGeometry(const PoolWindow& g, P* p) {
  p->planes = g.planes;
  p->in = {1, g.in_h, g.in_w};
  p->out = {1, g.out_h, g.out_w};
  p->kernel = {1, g.kernel_h, g.kernel_w};
  p->stride = {1, g.stride_h, g.stride_w};
  p->dilation = {1, g.dilation_h, g.dilation_w};
  p->pad_begin = {0, g.pad_top, g.pad_left};
  p->pad_end = {0, g.pad_bottom, g.pad_right};
}

std::vector<int8_t> RandomInt8(int64_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> u(-128, 127);
  std::vector<int8_t> x(n);
  for (auto& v : x) v = static_cast<int8_t>(u(rng));
  return x;
}

std::vector<float> RandomFloats(int64_t n, std::mt19937& rng, bool specials) {
  std::uniform_real_distribution<float> u(-50.0f, 50.0f);
  std::uniform_int_distribution<int> kind(0, 49);
  std::vector<float> x(n);
  for (auto& v : x) {
    const int k = specials ? kind(rng) : 49;
    v = k == 0   ? std::numeric_limits<float>::quiet_NaN()
        : k == 1 ? std::numeric_limits<float>::infinity()
        : k == 2 ? -std::numeric_limits<float>::infinity()
                 : u(rng);
  }
  return x;
}

constexpr int kCases = 300;

TEST(PoolBodies, QMaxPoolMatchesCpu) {
  std::mt19937 rng(21);
  for (int c = 0; c < kCases; ++c) {
    bool ceil_mode;
    const PoolWindow g = RandomWindow(rng, &ceil_mode);
    const std::vector<int8_t> x = RandomInt8(g.planes * g.in_h * g.in_w, rng);
    const int64_t n = g.planes * g.out_h * g.out_w;
    cpu::PoolGeometry cg;
    FillCpuGeometry(g, &cg);
    std::vector<int8_t> want(n), want_ref(n), got(n);
    cpu::MaxPoolS8(cg, x.data(), want.data(), 1);
    cpu::MaxPoolS8Reference(cg, x.data(), want_ref.data());
    ForEachIndex<QMaxPoolBody>(n, QMaxPoolArgs{x.data(), got.data(), g});
    ASSERT_TRUE(SameBytes(got, want)) << "case " << c;
    ASSERT_TRUE(SameBytes(got, want_ref)) << "case " << c;
  }
}

TEST(PoolBodies, QAveragePoolMatchesCpu) {
  std::mt19937 rng(22);
  std::uniform_int_distribution<int> zp(-128, 127);
  std::uniform_real_distribution<float> mult(0.05f, 3.0f);
  for (int c = 0; c < kCases; ++c) {
    bool ceil_mode;
    const PoolWindow g = RandomWindow(rng, &ceil_mode);
    const std::vector<int8_t> x = RandomInt8(g.planes * g.in_h * g.in_w, rng);
    const int64_t n = g.planes * g.out_h * g.out_w;
    cpu::PoolGeometry cg;
    FillCpuGeometry(g, &cg);
    cpu::AvgPoolS8Quant q;
    q.zp_in = zp(rng);
    q.multiplier = c % 5 == 0 ? 1.0f : mult(rng);
    q.zp_out = zp(rng);
    q.lo = c % 3 == 0 ? std::max(-128, q.zp_out) : -128;
    q.hi = c % 7 == 0 ? 90 : 127;
    const bool include_pad = c % 2 == 0;
    std::vector<int8_t> want(n), got(n);
    cpu::AveragePoolS8(cg, q, include_pad, x.data(), want.data(), 1);
    QAveragePoolArgs a{x.data(), got.data(), g,   include_pad ? 1 : 0, q.zp_in, q.multiplier,
                       q.zp_out, q.lo,       q.hi};
    ForEachIndex<QAveragePoolBody>(n, a);
    ASSERT_TRUE(SameBytes(got, want)) << "case " << c << " ceil_mode " << ceil_mode;
  }
}

TEST(PoolBodies, QGlobalAveragePoolMatchesCpu) {
  std::mt19937 rng(23);
  std::uniform_int_distribution<int> zp(-128, 127), size(0, 300), planes(1, 9);
  std::uniform_real_distribution<float> mult(0.05f, 3.0f);
  for (int c = 0; c < 100; ++c) {
    const int64_t p = planes(rng), s = c == 0 ? 0 : size(rng);
    const std::vector<int8_t> x = RandomInt8(p * s, rng);
    cpu::AvgPoolS8Quant q;
    q.zp_in = zp(rng);
    q.multiplier = mult(rng);
    q.zp_out = zp(rng);
    q.lo = c % 2 == 0 ? std::max(-128, q.zp_out) : -128;
    q.hi = 127;
    std::vector<int8_t> want(p), got(p);
    cpu::GlobalAveragePoolS8(p, s, q, x.data(), want.data(), 1);
    ForEachIndex<QGlobalAveragePoolBody>(
        p, QGlobalAveragePoolArgs{x.data(), got.data(), s, q.zp_in, q.multiplier, q.zp_out, q.lo,
                                  q.hi});
    ASSERT_TRUE(SameBytes(got, want)) << "case " << c;
  }
}

TEST(PoolBodies, MaxPoolF32MatchesCpu) {
  std::mt19937 rng(24);
  for (int c = 0; c < kCases; ++c) {
    bool ceil_mode;
    const PoolWindow g = RandomWindow(rng, &ceil_mode);
    const std::vector<float> x = RandomFloats(g.planes * g.in_h * g.in_w, rng, c % 2 == 0);
    const int64_t n = g.planes * g.out_h * g.out_w;
    cpu::PoolF32Params p;
    FillCpuGeometry(g, &p);
    std::vector<float> want(n), got(n);
    cpu::MaxPoolF32(p, x.data(), want.data(), nullptr, false);
    ForEachIndex<MaxPoolBody>(n, MaxPoolArgs{x.data(), got.data(), g});
    ASSERT_TRUE(SameBytes(got, want)) << "case " << c;
  }
}

TEST(PoolBodies, AveragePoolF32MatchesCpu) {
  std::mt19937 rng(25);
  for (int c = 0; c < kCases; ++c) {
    bool ceil_mode;
    const PoolWindow g = RandomWindow(rng, &ceil_mode);
    const std::vector<float> x = RandomFloats(g.planes * g.in_h * g.in_w, rng, c % 4 == 0);
    const int64_t n = g.planes * g.out_h * g.out_w;
    cpu::PoolF32Params p;
    FillCpuGeometry(g, &p);
    const bool include_pad = c % 2 == 1;
    std::vector<float> want(n), got(n);
    cpu::AveragePoolF32(p, include_pad, x.data(), want.data());
    ForEachIndex<AveragePoolBody>(n, AveragePoolArgs{x.data(), got.data(), g, include_pad ? 1 : 0});
    ASSERT_TRUE(SameBytes(got, want)) << "case " << c << " ceil_mode " << ceil_mode;
  }
}

TEST(PoolBodies, GlobalAveragePoolF32MatchesCpu) {
  std::mt19937 rng(26);
  std::uniform_int_distribution<int> size(0, 500), planes(1, 9);
  for (int c = 0; c < 100; ++c) {
    const int64_t p = planes(rng), s = c == 0 ? 0 : size(rng);
    const std::vector<float> x = RandomFloats(p * s, rng, c % 3 == 0);
    std::vector<float> want(p), got(p);
    cpu::GlobalAveragePoolF32(p, s, x.data(), want.data(), 1);
    ForEachIndex<GlobalAveragePoolBody>(p, GlobalAveragePoolArgs{x.data(), got.data(), s});
    ASSERT_TRUE(SameBytes(got, want)) << "case " << c;
  }
}

// A window entirely in the padding (no tap inside x): max gives the lowest value, averages
// their empty-window values, as the CPU pools do.
TEST(PoolBodies, WindowsWithoutTapsMatchCpu) {
  PoolWindow g{};
  g.planes = 2;
  g.in_h = 1;
  g.in_w = 1;
  g.kernel_h = g.kernel_w = 1;
  g.stride_h = g.stride_w = 2;
  g.dilation_h = g.dilation_w = 1;
  g.pad_top = g.pad_left = 1;
  g.pad_bottom = g.pad_right = 1;
  g.out_h = g.out_w = 2;  // windows at -1 (padding) and 1 (padding)
  const int64_t n = g.planes * 4;
  const std::vector<int8_t> xq = {5, -7};
  const std::vector<float> xf = {5.0f, -7.0f};
  cpu::PoolGeometry cg;
  FillCpuGeometry(g, &cg);
  cpu::PoolF32Params cf;
  FillCpuGeometry(g, &cf);
  std::vector<int8_t> wq(n), gq(n);
  cpu::MaxPoolS8Reference(cg, xq.data(), wq.data());
  ForEachIndex<QMaxPoolBody>(n, QMaxPoolArgs{xq.data(), gq.data(), g});
  EXPECT_TRUE(SameBytes(gq, wq));
  cpu::AvgPoolS8Quant q{3, 0.5f, -9, -128, 127};
  cpu::AveragePoolS8(cg, q, false, xq.data(), wq.data(), 1);
  ForEachIndex<QAveragePoolBody>(
      n, QAveragePoolArgs{xq.data(), gq.data(), g, 0, 3, 0.5f, -9, -128, 127});
  EXPECT_TRUE(SameBytes(gq, wq));
  EXPECT_EQ(gq[0], -9);
  std::vector<float> wf(n), gf(n);
  cpu::MaxPoolF32(cf, xf.data(), wf.data(), nullptr, false);
  ForEachIndex<MaxPoolBody>(n, MaxPoolArgs{xf.data(), gf.data(), g});
  EXPECT_TRUE(SameBytes(gf, wf));
  cpu::AveragePoolF32(cf, true, xf.data(), wf.data());
  ForEachIndex<AveragePoolBody>(n, AveragePoolArgs{xf.data(), gf.data(), g, 1});
  EXPECT_TRUE(SameBytes(gf, wf));
}

}  // namespace
}  // namespace qcc::cuda
