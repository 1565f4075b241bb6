// The float GEMM of ONNX Gemm on the CUDA backend against the CPU GEMM, on the host, and the
// GEMM problem description itself: ReferenceGemm's column-major semantics, the IMMA constraint
// check on good and bad problems, and the weight packing.
#include "kernels/cuda/gemm_problem.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/qconv.h"
#include "kernels/cpu/qgemm.h"
#include "kernels/cuda/conv_bodies.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/weight_packing.h"
#include "support/float16.h"
#include "tests/backend_cuda/conv_gemm_test_util.h"

namespace qcc::cuda {
namespace {

using namespace ::qcc::cuda::test_util;  // NOLINT: the shared cases and helpers
using ::testing::HasSubstr;

// ---- float GEMM (ONNX Gemm) ----

TEST(CudaGemmF32Host, OnnxGemmProblemMatchesCpuGemm) {
  std::mt19937 rng(1357);
  const int64_t shapes[][3] = {{1, 10, 64}, {7, 5, 3}, {16, 33, 17}, {3, 1, 9}, {1, 1, 1}};
  // C broadcast shapes as (rows, cols) of C: 0 = no C.
  const int64_t c_shapes[][2] = {{0, 0}, {1, 1}, {1, -1}, {-1, 1}, {-1, -1}};
  int checked = 0;
  for (const auto& s : shapes) {
    for (int trans = 0; trans < 4; ++trans) {
      for (const auto& cs : c_shapes) {
        const int64_t m = s[0], n = s[1], k = s[2];
        const bool ta = trans & 1, tb = trans & 2;
        const float alpha = 0.75f, beta = cs[0] == 0 ? 0.0f : 1.5f;
        const Act act = kActs[checked % 4];
        SCOPED_TRACE(absl::StrCat("M", m, " N", n, " K", k, " transA ", ta, " transB ", tb, " C ",
                                  cs[0], "x", cs[1]));
        const std::vector<float> a = RandomFloats(rng, m * k, -1.0f, 1.0f);
        const std::vector<float> b = RandomFloats(rng, k * n, -1.0f, 1.0f);
        const int64_t c_rows = cs[0] < 0 ? m : cs[0], c_cols = cs[1] < 0 ? n : cs[1];
        const std::vector<float> c =
            RandomFloats(rng, std::max<int64_t>(1, c_rows * c_cols), -1.0f, 1.0f);
        // The CPU runtime's way (runtime/step_exec_float.cc RunGemm).
        std::vector<float> want(m * n, 0.0f);
        cpu::GemmF32Params gp;
        gp.m = m;
        gp.n = n;
        gp.k = k;
        gp.trans_a = ta;
        gp.trans_b = tb;
        gp.lda = ta ? m : k;
        gp.ldb = tb ? k : n;
        gp.ldc = n;
        gp.alpha = alpha;
        gp.beta = 0.0f;
        const int64_t rs = c_rows == 1 ? 0 : c_cols, cst = c_cols == 1 ? 0 : 1;
        if (cs[0] != 0) {
          for (int64_t i = 0; i < m; ++i) {
            for (int64_t j = 0; j < n; ++j) want[i * n + j] = beta * c[i * rs + j * cst];
          }
          gp.beta = 1.0f;
        }
        cpu::GemmF32(gp, a.data(), b.data(), want.data());
        cpu::ActivationF32 cact;
        cact.lo = act.lo;
        cact.hi = act.hi;
        cact.negative_slope = act.slope;
        cpu::ApplyActivationF32(cact, want.data(), m * n);

        const GemmProblem prob = FloatGemm(m, n, k, ta, tb, alpha, 0.0f);
        ASSERT_TRUE(CheckGemmProblem(prob).ok()) << CheckGemmProblem(prob);
        std::vector<float> y(m * n, std::nanf(""));
        ReferenceGemm(prob, b.data(), a.data(), y.data());  // a = ONNX B, b = ONNX A
        GemmEpilogueF32Args e;
        e.acc = y.data();  // in place
        e.ldc = n;
        e.c = cs[0] != 0 ? c.data() : nullptr;
        e.c_row_stride = rs;
        e.c_col_stride = cst;
        e.beta = beta;
        e.y = y.data();
        e.cols = n;
        e.lo = act.lo;
        e.hi = act.hi;
        e.negative_slope = act.slope;
        ForEachIndex<GemmEpilogueF32>(m * n, e);

        std::vector<float> scale(m * n);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            float sum = cs[0] != 0 ? std::fabs(beta * c[i * rs + j * cst]) : 0.0f;
            for (int64_t q = 0; q < k; ++q) {
              sum +=
                  std::fabs(alpha * a[ta ? q * m + i : i * k + q] * b[tb ? j * k + q : q * n + j]);
            }
            scale[i * n + j] = sum;
          }
        }
        ExpectClose(y, want, scale, "onnx gemm");
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 5 * 4 * 5);
}

// ---- ReferenceGemm semantics and the IMMA check ----

TEST(GemmProblemTest, ReferenceGemmIsColumnMajorWithOps) {
  // A 2x3 (op(A)), B 3x2 (op(B)) written out by hand; every op combination stores them
  // differently and must give the same C (2x2, ldc 3 with a guard row that must stay put).
  const float a_nn[] = {1, 4, 2, 5, 3, 6};     // column-major 2x3: rows (1 2 3), (4 5 6)
  const float a_t[] = {1, 2, 3, 4, 5, 6};      // column-major 3x2 = A^T
  const float b_nn[] = {7, 9, 11, 8, 10, 12};  // column-major 3x2: rows (7 8), (9 10), (11 12)
  const float b_t[] = {7, 8, 9, 10, 11, 12};   // column-major 2x3 = B^T
  const float want[] = {58, 139, -1, 64, 154, -1};
  for (int ops = 0; ops < 4; ++ops) {
    GemmProblem p;
    p.op_a = ops & 1 ? GemmOp::kT : GemmOp::kN;
    p.op_b = ops & 2 ? GemmOp::kT : GemmOp::kN;
    p.m = 2;
    p.n = 2;
    p.k = 3;
    p.lda = ops & 1 ? 3 : 2;
    p.ldb = ops & 2 ? 2 : 3;
    p.ldc = 3;
    ASSERT_TRUE(CheckGemmProblem(p).ok()) << CheckGemmProblem(p);
    float c[6] = {0, 0, -1, 0, 0, -1};
    ReferenceGemm(p, ops & 1 ? a_t : a_nn, ops & 2 ? b_t : b_nn, c);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(c[i], want[i]) << "ops " << ops << " i " << i;
  }
  // alpha and beta, and int8 wrap-around.
  GemmProblem p = FloatConvGemm(1, 1, 1);
  p.alpha = 2.0f;
  p.beta = 0.5f;
  const float one = 3.0f, two = 4.0f;
  float c = 10.0f;
  ReferenceGemm(p, &one, &two, &c);
  EXPECT_EQ(c, 29.0f);
  GemmProblem q = Int8ConvGemm(4, 4, 1);
  q.beta = 1.0f;
  const int8_t a8[16] = {-128, -128, -128, -128};
  const int8_t b8[4] = {-128, -128, -128, -128};
  int32_t c32[4] = {std::numeric_limits<int32_t>::max() - 65535, 0, 0, 0};
  ReferenceGemm(q, a8, b8, c32);  // 65536 + (2^31 - 65536) wraps to -2^31
  EXPECT_EQ(c32[0], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(c32[1], 0);
}

TEST(GemmProblemTest, ImmaAcceptsEveryBuilderProblem) {
  for (int64_t kout : {1, 3, 4, 5, 64, 1000}) {
    for (int64_t kred : {1, 3, 9, 27, 64, 75, 576}) {
      for (int64_t npix : {1, 7, 1024, 3 * 32 * 32}) {
        for (int64_t groups : {1, 2, 3, 32}) {
          const ConvGemmShape s = MakeConvGemmShape(kout * groups, kred, 1, 1, groups, 4);
          const GemmProblem p = Int8ConvGemm(s.kout_pad, s.kred_pad, npix, s.groups);
          EXPECT_TRUE(CheckImmaConstraints(p).ok()) << CheckImmaConstraints(p);
          const ConvGemmShape gs = MakeGemmShape(kout, kred, kInt8GemmAlign);
          const GemmProblem q = Int8Gemm(npix, gs.kout_pad, gs.kred_pad);
          EXPECT_TRUE(CheckImmaConstraints(q).ok()) << CheckImmaConstraints(q);
        }
      }
    }
  }
}

TEST(GemmProblemTest, ImmaRejectsBadProblemsNamingTheField) {
  const GemmProblem good = Int8ConvGemm(8, 12, 5, 2);
  ASSERT_TRUE(CheckImmaConstraints(good).ok());
  struct Bad {
    const char* field;
    void (*mutate)(GemmProblem*);
  };
  const Bad bads[] = {
      {"op_a", [](GemmProblem* p) { p->op_a = GemmOp::kN; }},
      {"op_b", [](GemmProblem* p) { p->op_b = GemmOp::kT; }},
      {"m=", [](GemmProblem* p) { p->m = 6; }},
      {"k=", [](GemmProblem* p) { p->k = 10; }},
      {"lda=", [](GemmProblem* p) { p->lda = 13; }},
      {"ldb=", [](GemmProblem* p) { p->ldb = 14; }},
      {"ldc=", [](GemmProblem* p) { p->ldc = 9; }},
      {"stride_a", [](GemmProblem* p) { p->stride_a = 98; }},
      {"stride_b", [](GemmProblem* p) { p->stride_b = 62; }},
      {"a_type", [](GemmProblem* p) { p->a_type = GemmType::kHalf; }},
      {"b_type", [](GemmProblem* p) { p->b_type = GemmType::kFloat32; }},
      {"c_type", [](GemmProblem* p) { p->c_type = GemmType::kFloat32; }},
      {"compute", [](GemmProblem* p) { p->compute = GemmCompute::kFloat32; }},
      {"alpha", [](GemmProblem* p) { p->alpha = 0.5f; }},
      {"ldb is less", [](GemmProblem* p) { p->ldb = 8; }},
      {"n must be positive", [](GemmProblem* p) { p->n = 0; }},
      {"stride_c", [](GemmProblem* p) { p->stride_c = 8; }},
  };
  for (const Bad& b : bads) {
    GemmProblem p = good;
    b.mutate(&p);
    const absl::Status s = CheckImmaConstraints(p);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << b.field;
    EXPECT_THAT(std::string(s.message()), HasSubstr(b.field));
  }
  // The float builders are well formed but not IMMA problems.
  EXPECT_TRUE(CheckGemmProblem(HalfConvGemm(8, 16, 5)).ok());
  EXPECT_FALSE(CheckImmaConstraints(HalfConvGemm(8, 16, 5)).ok());
  EXPECT_TRUE(CheckGemmProblem(FloatGemm(3, 5, 7, true, false, 1.0f, 0.0f)).ok());
}

TEST(GemmProblemTest, WeightPackingZeroesThePadding) {
  // K=6 in 2 groups, C/g=1, 3x1 kernel: kout 3 -> 4, kred 3 -> 4.
  std::vector<int8_t> w(18);
  for (int i = 0; i < 18; ++i) w[i] = static_cast<int8_t>(i + 1);
  const ConvGemmShape s = MakeConvGemmShape(6, 1, 3, 1, 2, 4);
  EXPECT_EQ(s.kout, 3);
  EXPECT_EQ(s.kout_pad, 4);
  EXPECT_EQ(s.kred, 3);
  EXPECT_EQ(s.kred_pad, 4);
  const std::vector<int8_t> packed = PackInt8Weights(w.data(), s);
  const std::vector<int8_t> want = {1,  2,  3,  0, 4,  5,  6,  0, 7,  8,  9,  0, 0, 0, 0, 0,
                                    10, 11, 12, 0, 13, 14, 15, 0, 16, 17, 18, 0, 0, 0, 0, 0};
  EXPECT_EQ(packed, want);
  std::vector<float> wf(w.begin(), w.end());
  const std::vector<uint16_t> half = PackHalfWeights(wf.data(), s);
  ASSERT_EQ(half.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(HalfToFloat(half[i]), want[i]) << i;
}

}  // namespace
}  // namespace qcc::cuda
