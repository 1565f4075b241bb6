// GPU checks of the kernel bodies and the observers' device statistics: bodies launched with
// LaunchIndex (through kernels/cuda/body_selftest.h) give the host loop's bits, and
// EnqueueBatchStats gives BatchStatsHost's record. Skipped, by name, without a CUDA device.
//
// NaN payloads: x86 propagates an input NaN's payload through arithmetic, the GPU returns its
// canonical NaN, so float outputs compare bit for bit except that a NaN matches any NaN.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "backend_cuda/cuda_info.h"
#include "gtest/gtest.h"
#include "kernels/cuda/elementwise_bodies.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/movement_bodies.h"
#include "kernels/cuda/observer_bodies.h"
#include "kernels/cuda/pool_bodies.h"
#include "support/float16.h"

#if defined(QCC_HAVE_CUDA)
#include "kernels/cuda/body_selftest.h"
#endif

namespace qcc::cuda {
namespace {

#define QCC_SKIP_WITHOUT_GPU() \
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device"

#if defined(QCC_HAVE_CUDA)
#define QCC_ASSERT_CUDA(expr)                                                           \
  do {                                                                                  \
    const int qcc_code = (expr);                                                        \
    ASSERT_EQ(qcc_code, 0) << #expr << ": " << selftest::SelfTestErrorString(qcc_code); \
  } while (0)
#endif

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

#if defined(QCC_HAVE_CUDA)
std::vector<float> RandomFloats(int64_t n, uint32_t seed, float spread, bool specials) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-spread, spread);
  std::uniform_int_distribution<int> kind(0, 29);
  std::vector<float> x(n);
  for (auto& v : x) {
    const int k = specials ? kind(rng) : 29;
    v = k == 0   ? kNaN
        : k == 1 ? kInf
        : k == 2 ? -kInf
        : k == 3 ? -0.0f
        : k == 4 ? std::ldexp(u(rng), -135)
                 : u(rng);
  }
  return x;
}

// Bit-equal floats, any NaN matching any NaN.
::testing::AssertionResult SameFloats(const std::vector<float>& got,
                                      const std::vector<float>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(want[i])) continue;
    if (BitCast<uint32_t>(got[i]) != BitCast<uint32_t>(want[i])) {
      return ::testing::AssertionFailure()
             << "element " << i << ": " << got[i] << " vs " << want[i];
    }
  }
  return ::testing::AssertionSuccess();
}
#endif  // QCC_HAVE_CUDA

TEST(GpuBodies, QuantizeOnDeviceMatchesHostLoop) {
  QCC_SKIP_WITHOUT_GPU();
#if defined(QCC_HAVE_CUDA)
  const int64_t n = 100003;
  const std::vector<float> x = RandomFloats(n, 1, 40.0f, true);
  std::vector<int8_t> want(n), got(n);
  ForEachIndex<QuantizeBody>(n, QuantizeArgs{x.data(), want.data(), 0.0625f, -3});
  QCC_ASSERT_CUDA(selftest::RunQuantize(QuantizeArgs{x.data(), got.data(), 0.0625f, -3}, n));
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), n));
#endif
}

TEST(GpuBodies, UnaryOnDeviceMatchesHostLoop) {
  QCC_SKIP_WITHOUT_GPU();
#if defined(QCC_HAVE_CUDA)
  const int64_t n = 50001;
  // The functions the CUDA lowering takes (up to LeakyRelu), and Erf, Sqrt and GELU, which it
  // does not take yet.
  for (int32_t op = 0; op <= static_cast<int32_t>(UnaryFn::kGelu); ++op) {
    const std::vector<float> x = RandomFloats(n, 10 + op, 60.0f, true);
    const bool clip = op == static_cast<int32_t>(UnaryFn::kClip);
    const float alpha = clip ? -1.0f : 0.2f, beta = clip ? 6.0f : 0.5f;
    std::vector<float> want(n), got(n);
    ForEachIndex<UnaryBody>(n, UnaryArgs{x.data(), want.data(), op, alpha, beta});
    QCC_ASSERT_CUDA(selftest::RunUnary(UnaryArgs{x.data(), got.data(), op, alpha, beta}, n));
    EXPECT_TRUE(SameFloats(got, want)) << "op " << op;
  }
#endif
}

TEST(GpuBodies, BinaryAndSoftmaxOnDeviceMatchHostLoop) {
  QCC_SKIP_WITHOUT_GPU();
#if defined(QCC_HAVE_CUDA)
  const int64_t ad[] = {2, 1, 5, 7}, bd[] = {3, 1, 7};
  const std::vector<float> a = RandomFloats(70, 20, 10.0f, true),
                           b = RandomFloats(21, 21, 10.0f, true);
  BinaryArgs args{};
  args.a = a.data();
  args.b = b.data();
  args.rank = 4;
  const int64_t yd[] = {2, 3, 5, 7};
  for (int k = 0; k < 4; ++k) args.out_dims[k] = yd[k];
  BroadcastStrides(ad, 4, 4, args.a_strides);
  BroadcastStrides(bd, 3, 4, args.b_strides);
  args.act = {0.0f, 6.0f, 0.1f};
  for (int32_t op = kBinaryAdd; op <= kBinaryDiv; ++op) {
    args.op = op;
    std::vector<float> want(210), got(210);
    args.y = want.data();
    ForEachIndex<BinaryBody>(210, args);
    args.y = got.data();
    QCC_ASSERT_CUDA(selftest::RunBinary(args, 70, 21));
    EXPECT_TRUE(SameFloats(got, want)) << "op " << op;
  }
  for (int64_t inner : {1, 9}) {
    const int64_t outer = 13, axis_n = 1001, elems = outer * axis_n * inner;
    const std::vector<float> x = RandomFloats(elems, 30, 30.0f, false);
    std::vector<float> want(elems), got(elems);
    ForEachIndex<SoftmaxBody>(outer * inner,
                              SoftmaxArgs{x.data(), want.data(), outer, axis_n, inner});
    QCC_ASSERT_CUDA(selftest::RunSoftmax(SoftmaxArgs{x.data(), got.data(), outer, axis_n, inner}));
    EXPECT_TRUE(SameFloats(got, want)) << "inner " << inner;
  }
#endif
}

TEST(GpuBodies, PoolAndTransposeOnDeviceMatchHostLoop) {
  QCC_SKIP_WITHOUT_GPU();
#if defined(QCC_HAVE_CUDA)
  PoolWindow g{};
  g.planes = 6;
  g.in_h = 17;
  g.in_w = 13;
  g.kernel_h = 3;
  g.kernel_w = 2;
  g.stride_h = 2;
  g.stride_w = 2;
  g.pad_top = 1;
  g.pad_left = 1;
  g.pad_bottom = 1;
  g.pad_right = 1;
  g.dilation_h = 1;
  g.dilation_w = 2;
  g.out_h = 9;  // ceil_mode
  g.out_w = 7;
  std::mt19937 rng(40);
  std::vector<int8_t> x(g.planes * g.in_h * g.in_w);
  for (auto& v : x) v = static_cast<int8_t>(rng());
  const int64_t n = g.planes * g.out_h * g.out_w;
  std::vector<int8_t> want(n), got(n);
  ForEachIndex<QAveragePoolBody>(
      n, QAveragePoolArgs{x.data(), want.data(), g, 1, -5, 0.37f, 4, -128, 127});
  QCC_ASSERT_CUDA(selftest::RunQAveragePool(
      QAveragePoolArgs{x.data(), got.data(), g, 1, -5, 0.37f, 4, -128, 127}));
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), n));

  const int64_t dims[] = {3, 4, 5, 6, 2};
  const int64_t perm[] = {4, 2, 0, 3, 1};
  for (int32_t es : {1, 2, 4}) {
    const int64_t elems = 3 * 4 * 5 * 6 * 2;
    std::vector<uint8_t> in(elems * es), w(elems * es), d(elems * es);
    for (auto& v : in) v = static_cast<uint8_t>(rng());
    StridedCopyArgs a{};
    ASSERT_TRUE(MakeTransposeArgs(dims, 5, perm, es, in.data(), w.data(), &a));
    ForEachIndex<TransposeBody>(elems, a);
    a.y = d.data();
    QCC_ASSERT_CUDA(selftest::RunStridedCopy(a, elems));
    EXPECT_EQ(0, std::memcmp(d.data(), w.data(), d.size())) << "elem size " << es;
  }
#endif
}

TEST(GpuObservers, DeviceBatchStatsEqualHostReference) {
  QCC_SKIP_WITHOUT_GPU();
#if defined(QCC_HAVE_CUDA)
  // Sizes around the block boundaries, a large batch that caps the grid, and runs of zeros.
  const int64_t sizes[] = {0, 1, 255, 4096, 4097, 1 << 20, 20000003};
  int c = 0;
  for (int64_t n : sizes) {
    for (bool specials : {false, true}) {
      std::vector<float> x = RandomFloats(n, 50 + c, c % 3 == 0 ? 1e-20f : 1e6f, specials);
      for (int64_t i = 0; i < n; i += 3) x[i] = 0.0f;  // ReLU-like zeros: shared-atomic hot spot
      auto want = std::make_unique<BatchStats>();
      auto got = std::make_unique<BatchStats>();
      BatchStatsHost(x.data(), n, want.get());
      QCC_ASSERT_CUDA(selftest::RunBatchStats(x.data(), n, got.get()));
      EXPECT_EQ(0, std::memcmp(got.get(), want.get(), sizeof(BatchStats)))
          << "n " << n << " specials " << specials << ": count " << got->count << "/" << want->count
          << " nan " << got->nan << "/" << want->nan << " range " << got->range_log2 << "/"
          << want->range_log2 << " min " << got->min << "/" << want->min << " max " << got->max
          << "/" << want->max;
      ++c;
    }
  }
  // All non-finite: no range, no bins.
  const std::vector<float> x = {kNaN, kInf, -kInf};
  auto want = std::make_unique<BatchStats>();
  auto got = std::make_unique<BatchStats>();
  BatchStatsHost(x.data(), 3, want.get());
  QCC_ASSERT_CUDA(selftest::RunBatchStats(x.data(), 3, got.get()));
  EXPECT_EQ(0, std::memcmp(got.get(), want.get(), sizeof(BatchStats)));
#endif
}

}  // namespace
}  // namespace qcc::cuda
