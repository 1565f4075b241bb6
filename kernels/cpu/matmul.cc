#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/nn_parallel.h"

namespace qcc::cpu {

void MatMulF32(const MatMulF32Params& p, const float* a, const float* b, float* y) {
  const size_t rank = p.batch.size();
  int64_t batches = 1;
  bool a_full = true, b_shared = true;
  for (size_t i = 0; i < rank; ++i) {
    batches *= p.batch[i];
    a_full = a_full && p.a_batch[i] == p.batch[i];
    b_shared = b_shared && p.b_batch[i] == 1;
  }
  if (batches == 0 || p.m == 0 || p.n == 0) return;
  GemmF32Params gp;
  gp.m = p.m;
  gp.n = p.n;
  gp.k = p.k;
  gp.lda = p.k;
  gp.ldb = p.n;
  gp.ldc = p.n;
  gp.threads = p.num_threads;
  if (a_full && b_shared) {
    // Every batch multiplies the same b: stack the batches of a into one tall matrix.
    gp.m = batches * p.m;
    GemmF32(gp, a, b, y);
    return;
  }
  // Element strides of each operand's batch axes (0 where broadcast), row-major.
  std::vector<int64_t> a_stride(rank), b_stride(rank);
  int64_t as = p.m * p.k, bs = p.k * p.n;
  for (size_t i = rank; i-- > 0;) {
    a_stride[i] = p.a_batch[i] == 1 ? 0 : as;
    b_stride[i] = p.b_batch[i] == 1 ? 0 : bs;
    as *= p.a_batch[i];
    bs *= p.b_batch[i];
  }
  // Many small products (attention's per-head Q.K^T and P.V): the threads take whole products,
  // each one single-threaded (GemmF32's result does not depend on its thread count).
  const bool by_batch = p.num_threads > 1 && batches >= p.num_threads;
  if (by_batch) gp.threads = 1;
  NnParallelFor(by_batch ? p.num_threads : 1, batches, p.m * p.n * p.k,
                [&](int64_t begin, int64_t end) {
                  // The batch index of `begin`, and the operand offsets it gives.
                  std::vector<int64_t> idx(rank, 0);
                  int64_t a_off = 0, b_off = 0;
                  for (int64_t t = begin, i = static_cast<int64_t>(rank); i-- > 0;) {
                    idx[i] = t % p.batch[i];
                    t /= p.batch[i];
                    a_off += idx[i] * a_stride[i];
                    b_off += idx[i] * b_stride[i];
                  }
                  for (int64_t t = begin; t < end; ++t) {
                    GemmF32(gp, a + a_off, b + b_off, y + t * p.m * p.n);
                    // Odometer increment over the batch index, keeping the offsets in step.
                    for (size_t i = rank; i-- > 0;) {
                      a_off += a_stride[i];
                      b_off += b_stride[i];
                      if (++idx[i] < p.batch[i]) break;
                      a_off -= a_stride[i] * idx[i];
                      b_off -= b_stride[i] * idx[i];
                      idx[i] = 0;
                    }
                  }
                });
}

void FillBroadcast2dF32(const float* c, int64_t c_rows, int64_t c_cols, float beta, int64_t m,
                        int64_t n, float* y) {
  for (int64_t i = 0; i < m; ++i) {
    const float* cr = c + (c_rows == 1 ? 0 : i) * c_cols;
    float* yr = y + i * n;
    if (c_cols == 1) {
      std::fill(yr, yr + n, beta * cr[0]);
    } else {
      for (int64_t j = 0; j < n; ++j) yr[j] = beta * cr[j];
    }
  }
}

}  // namespace qcc::cpu
