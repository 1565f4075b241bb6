// The elementwise kernel bodies (kernels/cuda/elementwise_bodies.h), run by the host loop
// ForEachIndex, against the backend_cpu kernels the CPU runtime calls (runtime/step_exec_*.cc),
// bit for bit (memcmp), on random data with fixed seeds, special values included.
//
// Sigmoid, Tanh and Softmax are bit-exact too: the bodies repeat backend_cpu's ExpF32 / TanhF32
// (elementwise_math.h) operation for operation, so no tolerance is needed anywhere. The one
// relaxation: Softmax rows holding NaN or inf, and the Unary functions, compare NaN as equal to
// any NaN (see SameFloatsNaNAsNaN); every other value, in every test, is compared bit for bit.
#include "kernels/cuda/elementwise_bodies.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/elementwise_binary.h"
#include "kernels/cpu/elementwise_math.h"
#include "kernels/cpu/elementwise_unary.h"
#include "kernels/cpu/qelementwise.h"
#include "kernels/cpu/qlut.h"
#include "kernels/cpu/softmax.h"
#include "kernels/cuda/launch.h"
#include "runtime/steps.h"
#include "support/float16.h"

namespace qcc::cuda {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// The enum's numbers are runtime's (the runtime casts BinaryStepParams::op).
static_assert(kBinaryAdd == static_cast<int>(runtime::BinaryOp::kAdd));
static_assert(kBinarySub == static_cast<int>(runtime::BinaryOp::kSub));
static_assert(kBinaryMul == static_cast<int>(runtime::BinaryOp::kMul));
static_assert(kBinaryDiv == static_cast<int>(runtime::BinaryOp::kDiv));

template <typename T>
bool SameBytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// First differing element, for failure messages.
template <typename T>
int64_t FirstDiff(const std::vector<T>& a, const std::vector<T>& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return static_cast<int64_t>(i);
  }
  return -1;
}

#define EXPECT_SAME_BYTES(a, b) \
  EXPECT_TRUE(SameBytes(a, b)) << "first difference at element " << FirstDiff(a, b)

// Bit-identical floats, except that a NaN matches any NaN: which NaN a sum of two NaNs gives
// (sign, payload) depends on operand order, and GCC may swap the operands of the CPU kernel's
// commutative additions. Every non-NaN result is still compared bit for bit.
::testing::AssertionResult SameFloatsNaNAsNaN(const std::vector<float>& got,
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

// Floats of every kind: wide magnitudes, small ones, exact zeros of both signs, ties of typical
// scales, denormals, huge values, infinities and NaN.
std::vector<float> RandomFloats(int64_t n, uint32_t seed, float spread = 10.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-spread, spread);
  std::uniform_int_distribution<int> kind(0, 39);
  std::vector<float> x(n);
  for (auto& v : x) {
    switch (kind(rng)) {
      case 0:
        v = kNaN;
        break;
      case 1:
        v = kInf;
        break;
      case 2:
        v = -kInf;
        break;
      case 3:
        v = 0.0f;
        break;
      case 4:
        v = -0.0f;
        break;
      case 5:
        v = std::ldexp(u(rng), -140);  // denormal
        break;
      case 6:
        v = std::ldexp(u(rng), 100);  // huge
        break;
      case 7:
        v = (static_cast<float>(static_cast<int>(u(rng) * 10)) + 0.5f) * 0.05f;  // ties
        break;
      case 8:
        v = u(rng) * 1e-3f;
        break;
      case 9:
        v = u(rng) * 100.0f;
        break;
      default:
        v = u(rng);
    }
  }
  return x;
}

std::vector<int8_t> RandomInt8(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(-128, 127);
  std::vector<int8_t> x(n);
  for (auto& v : x) v = static_cast<int8_t>(u(rng));
  return x;
}

constexpr int64_t kSizes[] = {1, 7, 64, 1000, 4099};

// ---- int8 and precision boundaries ----------------------------------------------------------

TEST(ElementwiseBodies, QuantizeMatchesCpu) {
  const float scales[] = {1.0f, 0.05f, 0.0039215689f, 3.7f, 1e-6f};
  const int32_t zps[] = {0, -128, 127, 13};
  int cases = 0;
  for (int64_t n : kSizes) {
    for (float scale : scales) {
      for (int32_t zp : zps) {
        const std::vector<float> x = RandomFloats(n, 100 + cases, 20.0f);
        std::vector<int8_t> want(n), want_ref(n), got(n);
        cpu::QuantizeF32ToS8({scale, zp}, n, x.data(), want.data(), 1);
        cpu::QuantizeF32ToS8Reference({scale, zp}, n, x.data(), want_ref.data());
        ForEachIndex<QuantizeBody>(n, QuantizeArgs{x.data(), got.data(), scale, zp});
        EXPECT_SAME_BYTES(got, want) << "n " << n << " scale " << scale << " zp " << zp;
        EXPECT_SAME_BYTES(got, want_ref);
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 100);
}

TEST(ElementwiseBodies, DequantizeMatchesCpu) {
  for (int64_t n : kSizes) {
    for (float scale : {1.0f, 0.0173f, 123.5f}) {
      for (int32_t zp : {0, -128, 127, -5}) {
        const std::vector<int8_t> x = RandomInt8(n, static_cast<uint32_t>(n + zp));
        std::vector<float> want(n), got(n);
        cpu::DequantizeS8ToF32({scale, zp}, n, x.data(), want.data(), 1);
        ForEachIndex<DequantizeBody>(n, DequantizeArgs{x.data(), got.data(), scale, zp});
        EXPECT_SAME_BYTES(got, want) << "n " << n << " scale " << scale << " zp " << zp;
      }
    }
  }
}

TEST(ElementwiseBodies, RequantizeMatchesCpu) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mult(0.001f, 4.0f);
  std::uniform_int_distribution<int> zp(-128, 127);
  for (int c = 0; c < 60; ++c) {
    const int64_t n = kSizes[c % 5];
    cpu::RequantizeS8Params p;
    p.zp_in = zp(rng);
    p.multiplier = c % 7 == 0 ? 1.0f : (c % 7 == 1 ? 0.5f : mult(rng));  // ties with 0.5
    p.zp_out = zp(rng);
    p.lo = c % 3 == 0 ? std::max(-128, p.zp_out) : -128;  // fused ReLU
    p.hi = c % 5 == 0 ? 100 : 127;
    const std::vector<int8_t> x = RandomInt8(n, 200 + c);
    std::vector<int8_t> want(n), got(n);
    cpu::RequantizeS8(p, n, x.data(), want.data(), 1);
    ForEachIndex<RequantizeBody>(
        n, RequantizeArgs{x.data(), got.data(), p.zp_in, p.multiplier, p.zp_out, p.lo, p.hi});
    EXPECT_SAME_BYTES(got, want) << "case " << c;
  }
}

TEST(ElementwiseBodies, QAddMatchesCpu) {
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> mult(0.01f, 2.0f);
  std::uniform_int_distribution<int> zp(-128, 127);
  for (int c = 0; c < 60; ++c) {
    const int64_t n = kSizes[c % 5];
    cpu::AddS8Params p;
    p.zp_a = zp(rng);
    p.mult_a = c % 4 == 0 ? 0.5f : mult(rng);
    p.zp_b = zp(rng);
    p.mult_b = c % 4 == 0 ? 0.5f : mult(rng);
    p.zp_out = zp(rng);
    p.lo = c % 2 == 0 ? std::max(-128, p.zp_out) : -128;
    p.hi = 127;
    const std::vector<int8_t> a = RandomInt8(n, 300 + c), b = RandomInt8(n, 400 + c);
    std::vector<int8_t> want(n), got(n);
    cpu::AddS8(p, n, a.data(), b.data(), want.data(), 1);
    ForEachIndex<QAddBody>(n, QAddArgs{a.data(), b.data(), got.data(), p.zp_a, p.mult_a, p.zp_b,
                                       p.mult_b, p.zp_out, p.lo, p.hi});
    EXPECT_SAME_BYTES(got, want) << "case " << c;
  }
}

TEST(ElementwiseBodies, QLutMatchesCpu) {
  const UnaryFn fns[] = {UnaryFn::kSigmoid, UnaryFn::kTanh, UnaryFn::kHardSigmoid,
                         UnaryFn::kHardSwish};
  int c = 0;
  for (UnaryFn fn : fns) {
    for (int64_t n : kSizes) {
      const cpu::Int8Lut table = cpu::BuildLut({fn, 0.2f, 0.5f}, 0.05f, c % 9 - 4, 1.0f / 128, -3);
      std::vector<int8_t> x = RandomInt8(n, 500 + c);
      if (n >= 2) {
        x[0] = -128;  // both ends of the table
        x[1] = 127;
      }
      std::vector<int8_t> want(n), got(n);
      cpu::ApplyLut(table, n, x.data(), want.data(), 1);
      ForEachIndex<QLutBody>(n, QLutArgs{x.data(), got.data(), table.data()});
      EXPECT_SAME_BYTES(got, want) << "case " << c;
      ++c;
    }
  }
}

TEST(ElementwiseBodies, CastF32ToF16MatchesCpu) {
  // Random bit patterns cover every exponent, the rounding ties, subnormal results and NaNs.
  std::mt19937 rng(9);
  const int64_t n = 1 << 16;
  std::vector<float> x(n);
  for (auto& v : x) v = BitCast<float>(static_cast<uint32_t>(rng()));
  const std::vector<float> extra = RandomFloats(4099, 10, 70000.0f);
  x.insert(x.end(), extra.begin(), extra.end());
  std::vector<uint16_t> want(x.size()), got(x.size());
  cpu::ConvertF32ToF16(static_cast<int64_t>(x.size()), x.data(), want.data(), 1);
  ForEachIndex<CastF32ToF16Body>(static_cast<int64_t>(x.size()),
                                 CastF32ToF16Args{x.data(), got.data()});
  EXPECT_SAME_BYTES(got, want);
}

TEST(ElementwiseBodies, CastF16ToF32MatchesCpuOnEveryValue) {
  std::vector<uint16_t> x(1 << 16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint16_t>(i);
  std::vector<float> want(x.size()), got(x.size());
  cpu::ConvertF16ToF32(static_cast<int64_t>(x.size()), x.data(), want.data(), 1);
  ForEachIndex<CastF16ToF32Body>(static_cast<int64_t>(x.size()),
                                 CastF16ToF32Args{x.data(), got.data()});
  EXPECT_SAME_BYTES(got, want);
}

// ---- Unary ----------------------------------------------------------------------------------

// What runtime's RunUnary computes for `op`: the CPU kernel, vectorized.
void CpuUnary(int32_t op, float alpha, float beta, const std::vector<float>& x,
              std::vector<float>& y) {
  cpu::UnaryFloat<float>({static_cast<UnaryFn>(op), alpha, beta}, x.data(), y.data(),
                         static_cast<int64_t>(x.size()), 1);
}

TEST(ElementwiseBodies, UnaryMatchesCpuForEveryOp) {
  struct Case {
    int32_t op;
    float alpha, beta;
  };
  auto fn = [](UnaryFn f) { return static_cast<int32_t>(f); };
  std::vector<Case> cases = {
      {fn(UnaryFn::kHardSigmoid), 0.2f, 0.5f},
      {fn(UnaryFn::kHardSigmoid), 1.0f / 6, 0.5f},
      {fn(UnaryFn::kClip), 0.0f, 6.0f},
      {fn(UnaryFn::kClip), -1.5f, 2.25f},
      {fn(UnaryFn::kLeakyRelu), 0.01f, 0},
      {fn(UnaryFn::kLeakyRelu), 0.2f, 0},
      {fn(UnaryFn::kThresholdedRelu), 1.5f, 0},
      {fn(UnaryFn::kShrink), 0.5f, 0.25f},
      {fn(UnaryFn::kElu), 0.7f, 0},
      {fn(UnaryFn::kCelu), 1.5f, 0},
  };
  // Every other function (the CUDA lowering takes those up to LeakyRelu so far).
  for (int32_t op = 0; op < kNumUnaryFns; ++op) {
    if (std::none_of(cases.begin(), cases.end(), [&](const Case& k) { return k.op == op; })) {
      cases.push_back({op, 0.0f, 0.0f});
    }
  }
  int c = 0;
  for (const Case& k : cases) {
    for (int64_t n : kSizes) {
      for (float spread : {3.0f, 30.0f, 120.0f}) {
        const std::vector<float> x = RandomFloats(n, 600 + c, spread);
        std::vector<float> want(n), got(n);
        CpuUnary(k.op, k.alpha, k.beta, x, want);
        ForEachIndex<UnaryBody>(n, UnaryArgs{x.data(), got.data(), k.op, k.alpha, k.beta});
        // A NaN in gives a NaN out, of either sign: the CPU kernel's vectorized loop and its
        // scalar remainder already give opposite signs for Sigmoid(NaN) and Erf(NaN) (seen with
        // the kernel before support/unary_fn.h too), and a GPU makes its NaNs 0x7fffffff.
        EXPECT_TRUE(SameFloatsNaNAsNaN(got, want))
            << "op " << k.op << " n " << n << " spread " << spread;
        ++c;
      }
    }
  }
}

// ---- Binary ---------------------------------------------------------------------------------

cpu::ActivationF32 ToCpuActivation(const ActivationArgs& a) {  // runtime's ToActivation
  cpu::ActivationF32 act;
  act.lo = a.lo <= -FLT_MAX ? -kInf : a.lo;
  act.hi = a.hi >= FLT_MAX ? kInf : a.hi;
  act.negative_slope = a.negative_slope;
  return act;
}

Dims BroadcastOut(const Dims& a, const Dims& b) {
  const size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t ea = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    const int64_t eb = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    out[i] = ea == 1 ? eb : ea;
  }
  return out;
}

TEST(ElementwiseBodies, BinaryBroadcastMatchesCpu) {
  const std::pair<Dims, Dims> shapes[] = {
      {{2, 3, 4, 5}, {2, 3, 4, 5}},
      {{2, 3, 4, 5}, {5}},
      {{2, 3, 4, 5}, {1, 3, 1, 1}},
      {{2, 1, 4, 1}, {3, 1, 5}},
      {{1}, {2, 3}},
      {{7}, {1}},
      {{3, 1}, {1, 4}},
      {{2, 1, 3, 1, 2, 3}, {1, 2, 1, 4, 1, 3}},
      {{1, 1, 1, 1, 1, 5}, {3, 2, 1, 2, 2, 1}},
      {{4, 1, 17}, {4, 9, 17}},
  };
  const ActivationArgs acts[] = {
      {-FLT_MAX, FLT_MAX, 1.0f},  // none
      {0.0f, FLT_MAX, 1.0f},      // Relu
      {0.0f, 6.0f, 1.0f},         // Relu6
      {-FLT_MAX, FLT_MAX, 0.1f},  // LeakyRelu
      {-1.0f, 1.0f, 0.25f},
  };
  int c = 0;
  for (const auto& [ad, bd] : shapes) {
    const Dims yd = BroadcastOut(ad, bd);
    const std::vector<float> a = RandomFloats(NumElements(ad), 700 + c);
    const std::vector<float> b = RandomFloats(NumElements(bd), 800 + c);
    const int64_t n = NumElements(yd);
    for (int32_t op = kBinaryAdd; op <= kBinaryDiv; ++op) {
      for (const ActivationArgs& act : acts) {
        std::vector<float> want(n), got(n);
        const cpu::BroadcastPlan plan = cpu::MakeBroadcastPlan({ad, bd}, yd);
        switch (op) {
          case kBinaryAdd:
            cpu::BinaryBroadcast(plan, a.data(), b.data(), want.data(), cpu::AddFn(), 1);
            break;
          case kBinarySub:
            cpu::BinaryBroadcast(plan, a.data(), b.data(), want.data(), cpu::SubFn(), 1);
            break;
          case kBinaryMul:
            cpu::BinaryBroadcast(plan, a.data(), b.data(), want.data(), cpu::MulFn(), 1);
            break;
          case kBinaryDiv:
            cpu::BinaryBroadcast(plan, a.data(), b.data(), want.data(), cpu::DivFn(), 1);
            break;
        }
        cpu::ApplyActivationF32(ToCpuActivation(act), want.data(), n);

        BinaryArgs args{};
        args.a = a.data();
        args.b = b.data();
        args.y = got.data();
        args.op = op;
        args.rank = static_cast<int32_t>(yd.size());
        for (size_t k = 0; k < yd.size(); ++k) args.out_dims[k] = yd[k];
        BroadcastStrides(ad.data(), static_cast<int>(ad.size()), args.rank, args.a_strides);
        BroadcastStrides(bd.data(), static_cast<int>(bd.size()), args.rank, args.b_strides);
        args.act = act;
        ForEachIndex<BinaryBody>(n, args);
        EXPECT_SAME_BYTES(got, want) << "shape case " << c << " op " << op << " act [" << act.lo
                                     << ", " << act.hi << "] " << act.negative_slope;
      }
    }
    ++c;
  }
}

TEST(ElementwiseBodies, BroadcastStridesFollowNumpy) {
  const int64_t in[] = {3, 1, 5};
  int64_t s[5];
  BroadcastStrides(in, 3, 5, s);
  EXPECT_EQ(s[0], 0);
  EXPECT_EQ(s[1], 0);
  EXPECT_EQ(s[2], 5);
  EXPECT_EQ(s[3], 0);
  EXPECT_EQ(s[4], 1);
}

// ---- Softmax --------------------------------------------------------------------------------

TEST(ElementwiseBodies, SoftmaxMatchesCpu) {
  struct Shape {
    int64_t outer, n, inner;
  };
  const Shape shapes[] = {{1, 1, 1}, {3, 7, 1},  {2, 1000, 1}, {5, 4, 1},  {1, 9, 1},
                          {2, 3, 5}, {1, 10, 7}, {4, 1, 3},    {2, 33, 16}};
  int c = 0;
  for (const Shape& s : shapes) {
    for (float spread : {1.0f, 20.0f, 200.0f}) {
      for (bool specials : {false, true}) {
        const int64_t elems = s.outer * s.n * s.inner;
        std::vector<float> x;
        if (specials) {
          x = RandomFloats(elems, 900 + c, spread);
        } else {
          std::mt19937 rng(900 + c);
          std::uniform_real_distribution<float> u(-spread, spread);
          for (int64_t i = 0; i < elems; ++i) x.push_back(u(rng));
        }
        std::vector<float> want(elems), got(elems);
        cpu::SoftmaxParams p;
        p.outer = s.outer;
        p.n = s.n;
        p.inner = s.inner;
        cpu::Softmax<float>(p, x.data(), want.data());
        ForEachIndex<SoftmaxBody>(s.outer * s.inner,
                                  SoftmaxArgs{x.data(), got.data(), s.outer, s.n, s.inner});
        EXPECT_TRUE(SameFloatsNaNAsNaN(got, want))
            << "[" << s.outer << ", " << s.n << ", " << s.inner << "] spread " << spread
            << " specials " << specials;
        ++c;
      }
    }
  }
}

}  // namespace
}  // namespace qcc::cuda
