#include "backend_cpu/kernels/gemm.h"

#include <cblas.h>

#include <atomic>

namespace qcc::cpu {

void GemmF32(const GemmF32Params& p, const float* a, const float* b, float* c) {
  if (p.m == 0 || p.n == 0) return;
  if (p.k == 0) {
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) c[i * p.ldc + j] = p.beta == 0.0f ? 0.0f : p.beta * c[i * p.ldc + j];
    }
    return;
  }
  cblas_sgemm(CblasRowMajor, p.trans_a ? CblasTrans : CblasNoTrans,
              p.trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(p.m),
              static_cast<blasint>(p.n), static_cast<blasint>(p.k), p.alpha, a,
              static_cast<blasint>(p.lda), b, static_cast<blasint>(p.ldb), p.beta, c,
              static_cast<blasint>(p.ldc));
}

void SetGemmThreads(int num_threads) {
  static std::atomic<int> current{-1};
  if (current.exchange(num_threads) != num_threads) openblas_set_num_threads(num_threads);
}

}  // namespace qcc::cpu
