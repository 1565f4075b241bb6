// GemmF32's contract on each of Eigen's three builds (kernels/cpu/gemm_eigen_internal.h), called
// directly where this CPU runs them: every transpose, strided operands (leading dimensions wider
// than the rows), alpha and beta (beta 0 must overwrite a C that holds NaN, beta 1 accumulate),
// one-row and one-column products.
#include "kernels/cpu/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm_eigen_internal.h"

namespace qcc::cpu {
namespace {

using SgemmFn = void (*)(const GemmF32Params&, const float*, const float*, float*);

struct Build {
  std::string name;
  SgemmFn fn;
  bool runs;  // this CPU has its instructions
};

std::vector<Build> Builds() {
  const CpuFeatures& f = Cpu();
  return {{"avx512", internal::SgemmEigenAvx512, f.avx512f && f.fma},
          {"avx2", internal::SgemmEigenAvx2, f.avx2 && f.fma},
          {"baseline", internal::SgemmEigenBaseline, true},
          {"GemmF32 (2 threads)",
           [](const GemmF32Params& p, const float* a, const float* b, float* c) {
             GemmF32Params q = p;
             q.threads = 2;
             GemmF32(q, a, b, c);
           },
           true}};
}

TEST(GemmF32Test, EveryBuildKeepsTheContract) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // m, n, k: a classifier's one row, one column, ragged edges, a block bigger than the kernels'.
  const int shapes[][3] = {{1, 1000, 320}, {37, 1, 50}, {1, 1, 7}, {13, 29, 31}, {96, 80, 300}};
  for (const Build& build : Builds()) {
    if (!build.runs) continue;
    for (const auto& s : shapes) {
      const int m = s[0], n = s[1], k = s[2];
      for (int trans = 0; trans < 4; ++trans) {
        for (const float beta : {0.0f, 1.0f, -0.5f}) {
          const bool ta = trans & 1, tb = trans & 2;
          SCOPED_TRACE(::testing::Message()
                       << build.name << " " << m << "x" << n << "x" << k << " trans_a " << ta
                       << " trans_b " << tb << " beta " << beta);
          // Stored operands with 3 spare columns each (leading dimension = columns + 3).
          const int a_rows = ta ? k : m, a_cols = ta ? m : k;
          const int b_rows = tb ? n : k, b_cols = tb ? k : n;
          const int lda = a_cols + 3, ldb = b_cols + 3, ldc = n + 3;
          std::vector<float> a(a_rows * lda), b(b_rows * ldb), c(m * ldc);
          for (float& x : a) x = u(rng);
          for (float& x : b) x = u(rng);
          for (float& x : c) x = beta == 0.0f ? nan : u(rng);
          const std::vector<float> c0 = c;
          GemmF32Params p;
          p.m = m;
          p.n = n;
          p.k = k;
          p.trans_a = ta;
          p.trans_b = tb;
          p.lda = lda;
          p.ldb = ldb;
          p.ldc = ldc;
          p.alpha = 0.75f;
          p.beta = beta;
          build.fn(p, a.data(), b.data(), c.data());
          for (int i = 0; i < m; ++i) {
            for (int j = 0; j < ldc; ++j) {
              const float got = c[i * ldc + j];
              if (j >= n) {  // the spare columns are not C's: untouched
                ASSERT_TRUE(std::isnan(got) ? std::isnan(c0[i * ldc + j]) : got == c0[i * ldc + j])
                    << "wrote outside C at " << i << "," << j;
                continue;
              }
              double acc = 0, magnitude = 0;
              for (int t = 0; t < k; ++t) {
                const double term =
                    double{a[ta ? t * lda + i : i * lda + t]} * b[tb ? j * ldb + t : t * ldb + j];
                acc += term;
                magnitude += std::fabs(term);
              }
              const double c_term = beta == 0.0f ? 0.0 : beta * c0[i * ldc + j];
              const double want = 0.75 * acc + c_term;
              // fp32 summation's bound: about (k + 2) roundings of the terms' magnitude.
              const double tolerance =
                  (k + 2) * 6e-8 * (0.75 * magnitude + std::fabs(c_term)) + 1e-7;
              ASSERT_NEAR(got, want, tolerance) << "at " << i << "," << j;
            }
          }
        }
      }
    }
  }
}

TEST(GemmF32Test, AlphaZeroReadsNeitherAOrB) {
  // BLAS's contract, which ONNX Gemm's alpha attribute passes through: C = beta * C.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a(4 * 5, nan), b(5 * 3, nan), c(4 * 3, 2.0f);
  GemmF32Params p;
  p.m = 4;
  p.n = 3;
  p.k = 5;
  p.lda = 5;
  p.ldb = 3;
  p.ldc = 3;
  p.alpha = 0.0f;
  p.beta = 0.5f;
  GemmF32(p, a.data(), b.data(), c.data());
  for (float v : c) EXPECT_EQ(v, 1.0f);
}

}  // namespace
}  // namespace qcc::cpu
