// The float loops of Sigmoid, Tanh, Exp, GeluTanh, HardSigmoid and HardSwish run in the widest
// SIMD build the CPU has (kernels/cpu/simd_dispatch.h); every element must have the bits of the
// one formula (support/unary_fn.h's UnaryValueOf) evaluated one float at a time here. ctest also
// runs these tests under QCC_CPU_FEATURES=avx2 and =baseline (tests/CMakeLists.txt), so each
// build is checked on a CPU that has it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/elementwise_unary.h"
#include "kernels/cpu/simd_dispatch.h"
#include "support/float16.h"  // BitCast
#include "support/unary_fn.h"
#include "tests/backend_cpu/elementwise_testing.h"

namespace qcc::cpu {
namespace {

uint32_t Bits(float v) { return BitCast<uint32_t>(v); }

/// Inputs over every exponent and sign (one float of each 2^16 bit patterns), the edges of
/// e^x's range and of tanh's saturation, zeros, infinities, NaN, subnormals, and a dense
/// uniform sweep where the activations bend.
std::vector<float> Inputs() {
  std::vector<float> x;
  for (uint32_t hi = 0; hi < (1u << 16); ++hi) x.push_back(BitCast<float>(hi << 16 | 0x5a5au));
  const float lim = std::numeric_limits<float>::max();
  const float tiny = std::numeric_limits<float>::denorm_min();
  for (float v : {0.0f,
                  -0.0f,
                  1.0f,
                  -1.0f,
                  88.72f,
                  88.73f,
                  -87.33f,
                  -103.97f,
                  -104.0f,
                  9.0f,
                  -9.0f,
                  10.0f,
                  3.0f,
                  -3.0f,
                  lim,
                  -lim,
                  tiny,
                  -tiny,
                  1e-40f,
                  -1e-40f,
                  std::numeric_limits<float>::min(),
                  std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN()}) {
    x.push_back(v);
  }
  for (float v : testing::UniformFloats(40000, -30.0f, 30.0f, 5)) x.push_back(v);
  for (float v : testing::UniformFloats(20000, -110.0f, 90.0f, 6)) x.push_back(v);
  return x;
}

template <UnaryFn F>
void ExpectFormulaBits(const char* name) {
  UnaryCall call;
  call.fn = F;
  call.alpha = 0.2f;  // HardSigmoid's a and b
  call.beta = 0.5f;
  const std::vector<float> x = Inputs();
  // Lengths off a multiple of 16 too: the loops' tails.
  for (const int64_t n : {static_cast<int64_t>(x.size()), int64_t{1}, int64_t{15}, int64_t{37}}) {
    std::vector<float> got(n, 1234.5f);
    UnaryFloat<float>(call, x.data(), got.data(), n, 1);
    int64_t mismatches = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float want = UnaryValueOf<F, float>(call.alpha, call.beta, call.gamma, x[i]);
      // A NaN's payload is not part of the formula: a NaN must give a NaN.
      const bool same = std::isnan(want) ? std::isnan(got[i]) : Bits(got[i]) == Bits(want);
      if (!same && ++mismatches <= 5) {
        ADD_FAILURE() << name << "(" << x[i] << " = 0x" << std::hex << Bits(x[i]) << "): got 0x"
                      << Bits(got[i]) << ", the formula gives 0x" << Bits(want) << std::dec
                      << " (SIMD level " << static_cast<int>(CpuSimdLevel()) << ")";
      }
    }
    EXPECT_EQ(mismatches, 0) << name << ", n = " << n;
  }
}

TEST(UnarySimdTest, FloatLoopsGiveTheFormulasBits) {
  ExpectFormulaBits<UnaryFn::kSigmoid>("Sigmoid");
  ExpectFormulaBits<UnaryFn::kTanh>("Tanh");
  ExpectFormulaBits<UnaryFn::kExp>("Exp");
  ExpectFormulaBits<UnaryFn::kGeluTanh>("GeluTanh");
  ExpectFormulaBits<UnaryFn::kHardSigmoid>("HardSigmoid");
  ExpectFormulaBits<UnaryFn::kHardSwish>("HardSwish");
}

}  // namespace
}  // namespace qcc::cpu
