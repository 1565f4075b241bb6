#include "kernels/cpu/softmax.h"

// As in elementwise_unary.cc: lets GCC vectorize the exp loops' selects (see ExpF32).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#include <cmath>
#include <vector>

#include "kernels/cpu/elementwise_math.h"
#include "kernels/cpu/simd_dispatch.h"

namespace qcc::cpu {
namespace {

/// sum(y[0..n)) in double, over 8 independent partial sums (one vector register of doubles in
/// the AVX-512 build), added pairwise at the end.
template <typename T>
inline __attribute__((always_inline)) double RowSum(const T* y, int64_t n) {
  constexpr int kLanes = 8;
  double s[kLanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int k = 0; k < kLanes; ++k) s[k] += y[j + k];
  }
  for (; j < n; ++j) s[0] += y[j];
  return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

/// One contiguous row of n elements (inlined, so SoftmaxRowsF32's clones vectorize it).
template <typename T>
inline __attribute__((always_inline)) void SoftmaxRow(SoftmaxKind kind, int64_t n, const T* x,
                                                      T* y) {
  if (kind == SoftmaxKind::kHardmax) {
    int64_t arg = 0;
    for (int64_t j = 1; j < n; ++j) arg = x[j] > x[arg] ? j : arg;
    for (int64_t j = 0; j < n; ++j) y[j] = T(0);
    y[arg] = T(1);
    return;
  }
  const T m = RowMax(x, n);
  for (int64_t j = 0; j < n; ++j) y[j] = ExpOf(x[j] - m);
  const double sum = RowSum(y, n);
  if (kind == SoftmaxKind::kSoftmax) {
    const T inv = static_cast<T>(1.0 / sum);  // one division per row, not per element
    for (int64_t j = 0; j < n; ++j) y[j] *= inv;
  } else {
    const T log_sum = static_cast<T>(std::log(sum));
    for (int64_t j = 0; j < n; ++j) y[j] = x[j] - m - log_sum;
  }
}

/// One [n, inner] block, normalised along n for every inner position; the loops run along
/// inner so they stay contiguous. m, sum and arg are scratch rows of `inner` elements.
template <typename T>
void SoftmaxBlock(SoftmaxKind kind, int64_t n, int64_t inner, const T* x, T* y, T* m, T* sum,
                  int64_t* arg) {
  for (int64_t i = 0; i < inner; ++i) {
    m[i] = x[i];
    arg[i] = 0;
    sum[i] = 0;
  }
  for (int64_t j = 1; j < n; ++j) {
    const T* xj = x + j * inner;
    for (int64_t i = 0; i < inner; ++i) {
      if (xj[i] > m[i]) {
        m[i] = xj[i];
        arg[i] = j;
      }
    }
  }
  if (kind == SoftmaxKind::kHardmax) {
    for (int64_t k = 0; k < n * inner; ++k) y[k] = T(0);
    for (int64_t i = 0; i < inner; ++i) y[arg[i] * inner + i] = T(1);
    return;
  }
  for (int64_t j = 0; j < n; ++j) {
    const T* xj = x + j * inner;
    T* yj = y + j * inner;
    for (int64_t i = 0; i < inner; ++i) {
      yj[i] = ExpOf(xj[i] - m[i]);
      sum[i] += yj[i];
    }
  }
  if (kind == SoftmaxKind::kLogSoftmax) {
    for (int64_t i = 0; i < inner; ++i) sum[i] = m[i] + std::log(sum[i]);
  }
  for (int64_t j = 0; j < n; ++j) {
    const T* xj = x + j * inner;
    T* yj = y + j * inner;
    if (kind == SoftmaxKind::kSoftmax) {
      for (int64_t i = 0; i < inner; ++i) yj[i] /= sum[i];
    } else {
      for (int64_t i = 0; i < inner; ++i) yj[i] = xj[i] - sum[i];
    }
  }
}

/// The contiguous rows of a float softmax (attention's [.., 128] rows), in AVX-512, AVX2 and
/// baseline builds (simd_dispatch.h).
inline __attribute__((always_inline)) void SoftmaxRowsF32Body(SoftmaxKind kind, int64_t outer,
                                                              int64_t n, const float* x, float* y) {
  for (int64_t o = 0; o < outer; ++o) SoftmaxRow(kind, n, x + o * n, y + o * n);
}
QCC_SIMD_VARIANTS(void, SoftmaxRowsF32,
                  (SoftmaxKind kind, int64_t outer, int64_t n, const float* x, float* y),
                  (kind, outer, n, x, y))

void SoftmaxRows(SoftmaxKind kind, int64_t outer, int64_t n, const float* x, float* y) {
  SoftmaxRowsF32(kind, outer, n, x, y);
}

/// Attention's rows: x[r] = softmax(x[r] + add[r]) in place (add null: softmax(x[r])). The sum
/// is formed first, as the unfused Add would; the exponentials are ExpNonPositiveF32's, so the
/// result is the Add-then-Softmax one except for terms below 1.2e-38 of a row's largest.
inline __attribute__((always_inline)) void SoftmaxAddRowsF32Body(int64_t rows, int64_t n, float* x,
                                                                 const float* add,
                                                                 int64_t add_row_stride) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * n;
    if (add != nullptr) {
      const float* a = add + r * add_row_stride;
      for (int64_t j = 0; j < n; ++j) row[j] += a[j];
    }
    const float m = RowMax(row, n);
    for (int64_t j = 0; j < n; ++j) row[j] = ExpNonPositiveF32(row[j] - m);
    const float inv = static_cast<float>(1.0 / RowSum(row, n));
    for (int64_t j = 0; j < n; ++j) row[j] *= inv;
  }
}
QCC_SIMD_VARIANTS(void, SoftmaxAddRowsF32,
                  (int64_t rows, int64_t n, float* x, const float* add, int64_t add_row_stride),
                  (rows, n, x, add, add_row_stride))

void SoftmaxRows(SoftmaxKind kind, int64_t outer, int64_t n, const double* x, double* y) {
  for (int64_t o = 0; o < outer; ++o) SoftmaxRow(kind, n, x + o * n, y + o * n);
}

}  // namespace

template <typename T>
void Softmax(const SoftmaxParams& p, const T* x, T* y) {
  if (p.n == 0) return;
  const int64_t block = p.n * p.inner;
  if (p.inner == 1) {
    SoftmaxRows(p.kind, p.outer, p.n, x, y);
    return;
  }
  std::vector<T> m(p.inner), sum(p.inner);
  std::vector<int64_t> arg(p.inner);
  for (int64_t o = 0; o < p.outer; ++o) {
    SoftmaxBlock(p.kind, p.n, p.inner, x + o * block, y + o * block, m.data(), sum.data(),
                 arg.data());
  }
}

void SoftmaxAddRows(int64_t rows, int64_t n, float* x, const float* add, int64_t add_row_stride) {
  if (n > 0) SoftmaxAddRowsF32(rows, n, x, add, add_row_stride);
}

template void Softmax<float>(const SoftmaxParams&, const float*, float*);
template void Softmax<double>(const SoftmaxParams&, const double*, double*);

}  // namespace qcc::cpu
