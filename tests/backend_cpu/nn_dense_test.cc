// Gemm and MatMul against triple loops written here.
#include <gtest/gtest.h>

#include "kernels/cpu/gemm.h"
#include "tests/backend_cpu/nn_testing.h"
#include "tests/testing/op_test_util.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {
namespace {

TEST(NnDenseTest, GemmAllAttributeCombinations) {
  const int64_t m = 3, k = 5, n = 4;
  struct CCase {
    Dims dims;  // empty Dims with `present` false: no C
    bool present;
  };
  const std::vector<CCase> c_cases = {{{}, false},    {{}, true},     {{1}, true},   {{n}, true},
                                      {{1, n}, true}, {{m, 1}, true}, {{m, n}, true}};
  for (int trans_a = 0; trans_a < 2; ++trans_a)
    for (int trans_b = 0; trans_b < 2; ++trans_b)
      for (const CCase& cc : c_cases) {
        SCOPED_TRACE(absl::StrCat("transA ", trans_a, " transB ", trans_b, " C ",
                                  cc.present ? DimsToString(cc.dims) : "none"));
        const Tensor a = RandomF32(trans_a ? Dims{k, m} : Dims{m, k}, 61);
        const Tensor b = RandomF32(trans_b ? Dims{n, k} : Dims{k, n}, 62);
        const Tensor c = cc.present ? RandomF32(cc.dims, 63) : Tensor();
        ir::GemmAttrs attrs;
        attrs.alpha = 0.5f;
        attrs.beta = 2.0f;
        attrs.transA = trans_a;
        attrs.transB = trans_b;
        auto y = RunSingleOp(ir::OpKind::kGemm, attrs, {{a}, {b, true}, {c, true}});
        ASSERT_TRUE(y.ok()) << y.status();
        Tensor want(DType::kFloat32, {m, n});
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double acc = 0;
            for (int64_t p = 0; p < k; ++p) {
              acc += double{a.data<float>()[trans_a ? p * m + i : i * k + p]} *
                     b.data<float>()[trans_b ? j * k + p : p * n + j];
            }
            double cv = 0;
            if (cc.present) {
              const Dims& d = cc.dims;
              const int64_t ci = d.size() == 2 ? (d[0] == 1 ? 0 : i) : 0;
              const int64_t cj = d.empty() || d.back() == 1 ? 0 : j;
              cv = c.data<float>()[ci * (d.empty() ? 1 : d.back()) + cj];
            }
            want.data<float>()[i * n + j] = static_cast<float>(0.5 * acc + 2.0 * cv);
          }
        EXPECT_EQ(CompareTensors((*y)[0], want, 1e-5, 1e-5), "");
      }
}

// GemmF32 splits large products over its threads by rows (M >= N) or columns; every slicing
// and transpose combination must give the unsplit product.
TEST(NnDenseTest, GemmF32ThreadedSlicesMatchNaive) {
  for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{301, 67, 129},
                                std::tuple<int64_t, int64_t, int64_t>{45, 517, 96}}) {
    for (int trans = 0; trans < 4; ++trans) {
      const bool ta = trans & 1, tb = trans & 2;
      const Tensor a = RandomF32(ta ? Dims{k, m} : Dims{m, k}, 81);
      const Tensor b = RandomF32(tb ? Dims{n, k} : Dims{k, n}, 82);
      Tensor c = RandomF32({m, n}, 83), want = c.Clone();
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (int64_t p = 0; p < k; ++p) {
            acc += double{a.data<float>()[ta ? p * m + i : i * k + p]} *
                   b.data<float>()[tb ? j * k + p : p * n + j];
          }
          float& w = want.data<float>()[i * n + j];
          w = static_cast<float>(1.5 * acc + 0.5 * w);
        }
      cpu::GemmF32Params p;
      p.m = m;
      p.n = n;
      p.k = k;
      p.trans_a = ta;
      p.trans_b = tb;
      p.lda = a.dim(1);
      p.ldb = b.dim(1);
      p.ldc = n;
      p.alpha = 1.5f;
      p.beta = 0.5f;
      p.threads = 3;
      cpu::GemmF32(p, a.data<float>(), b.data<float>(), c.data<float>());
      EXPECT_EQ(CompareTensors(c, want, 1e-5, 1e-4), "") << m << "x" << n << " trans " << trans;
    }
  }
}

TEST(NnDenseTest, GemmRejectsBadShapes) {
  auto y = RunSingleOp(ir::OpKind::kGemm, ir::GemmAttrs{},
                       {{RandomF32({3, 4}, 64)}, {RandomF32({5, 2}, 65), true}});
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("inner"), absl::string_view::npos) << y.status();
  y = RunSingleOp(
      ir::OpKind::kGemm, ir::GemmAttrs{},
      {{RandomF32({3, 4}, 64)}, {RandomF32({4, 2}, 65), true}, {RandomF32({3, 3}, 66), true}});
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("C of shape"), absl::string_view::npos) << y.status();
}

/// numpy.matmul written out: 1-D operands promoted, batch axes broadcast.
Tensor NaiveMatMul(const Tensor& a, const Tensor& b) {
  Dims da = a.dims(), db = b.dims();
  if (da.size() == 1) da.insert(da.begin(), 1);
  if (db.size() == 1) db.push_back(1);
  const int64_t m = da[da.size() - 2], k = da.back(), n = db.back();
  const size_t rank = std::max(da.size(), db.size()) - 2;
  Dims ba(rank, 1), bb(rank, 1), batch(rank);
  std::copy(da.begin(), da.end() - 2, ba.end() - (da.size() - 2));
  std::copy(db.begin(), db.end() - 2, bb.end() - (db.size() - 2));
  for (size_t i = 0; i < rank; ++i) batch[i] = ba[i] == 1 ? bb[i] : ba[i];
  Dims out = batch;
  if (a.rank() > 1) out.push_back(m);
  if (b.rank() > 1) out.push_back(n);
  Tensor y(DType::kFloat32, out);
  const int64_t batches = NumElements(batch);
  for (int64_t t = 0; t < batches; ++t) {
    int64_t oa = 0, ob = 0, rem = t, sa = 1, sb = 1;
    for (size_t i = rank; i-- > 0;) {
      const int64_t idx = rem % batch[i];
      rem /= batch[i];
      oa += (ba[i] == 1 ? 0 : idx) * sa;
      ob += (bb[i] == 1 ? 0 : idx) * sb;
      sa *= ba[i];
      sb *= bb[i];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          acc +=
              double{a.data<float>()[(oa * m + i) * k + p]} * b.data<float>()[(ob * k + p) * n + j];
        }
        y.data<float>()[(t * m + i) * n + j] = static_cast<float>(acc);
      }
  }
  return y;
}

TEST(NnDenseTest, MatMulNumpySemantics) {
  const std::vector<std::pair<Dims, Dims>> cases = {{{3, 4}, {4, 5}},
                                                    {{4}, {4, 5}},
                                                    {{3, 4}, {4}},
                                                    {{4}, {4}},
                                                    {{2, 3, 4}, {4, 5}},
                                                    {{3, 4}, {2, 4, 5}},
                                                    {{2, 1, 3, 4}, {3, 4, 5}},
                                                    {{2, 3, 4}, {2, 4, 1}},
                                                    {{5, 1, 4}, {1, 4, 6}},
                                                    {{2, 3, 4}, {4}},
                                                    {{4}, {2, 4, 3}},
                                                    {{0, 3, 4}, {4, 2}}};
  for (const auto& [da, db] : cases) {
    SCOPED_TRACE(absl::StrCat(DimsToString(da), " x ", DimsToString(db)));
    const Tensor a = RandomF32(da, 71), b = RandomF32(db, 72);
    auto y = RunSingleOp(ir::OpKind::kMatMul, ir::NoAttrs{}, {{a}, {b}});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(CompareTensors((*y)[0], NaiveMatMul(a, b), 1e-5, 1e-5), "");
  }
}

TEST(NnDenseTest, MatMulRejectsMismatchedShapes) {
  for (const auto& [da, db] :
       std::vector<std::pair<Dims, Dims>>{{{3, 4}, {5, 2}}, {{2, 3, 4}, {3, 4, 2}}}) {
    auto y =
        RunSingleOp(ir::OpKind::kMatMul, ir::NoAttrs{}, {{RandomF32(da, 73)}, {RandomF32(db, 74)}});
    ASSERT_FALSE(y.ok()) << DimsToString(da);
    EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument) << y.status();
  }
}

}  // namespace
}  // namespace qcc::testing
