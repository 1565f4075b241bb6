// fp32 batched MatMul with numpy broadcasting, and the bias fill of Gemm; both on GemmF32.
#ifndef QCC_KERNELS_CPU_MATMUL_H_
#define QCC_KERNELS_CPU_MATMUL_H_

#include <cstdint>
#include <vector>

namespace qcc::cpu {

/// y[b] = a[b] (m x k) * b[b] (k x n) for every batch index b of `batch`. `a_batch` and
/// `b_batch` are the operands' batch extents right-aligned to `batch` (same length, each equal
/// to batch's extent or 1 to broadcast). All tensors dense row-major.
struct MatMulF32Params {
  std::vector<int64_t> batch, a_batch, b_batch;
  int64_t m = 0, k = 0, n = 0;
  int num_threads = 1;  // for the GEMMs
};

/// Runs the batched product as few sgemm calls as the layout allows (one when b is shared by
/// every batch and a is not broadcast).
void MatMulF32(const MatMulF32Params& p, const float* a, const float* b, float* y);

/// y[i, j] = beta * c[i % c_rows, j % c_cols] for an m x n y, where c is c_rows x c_cols with
/// c_rows in {1, m} and c_cols in {1, n}: Gemm's broadcast bias, before y += alpha * A * B.
void FillBroadcast2dF32(const float* c, int64_t c_rows, int64_t c_cols, float beta, int64_t m,
                        int64_t n, float* y);

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_MATMUL_H_
