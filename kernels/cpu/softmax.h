// Softmax, LogSoftmax and Hardmax along one axis of a tensor viewed as [outer, n, inner].
#ifndef QCC_KERNELS_CPU_SOFTMAX_H_
#define QCC_KERNELS_CPU_SOFTMAX_H_

#include <cstdint>

namespace qcc::cpu {

/// Which normalisation along the axis.
enum class SoftmaxKind : uint8_t {
  kSoftmax,     // exp(x - m) / sum exp(x - m), m = max x
  kLogSoftmax,  // x - m - log(sum exp(x - m))
  kHardmax,     // 1 at the first maximum, 0 elsewhere
};

/// The layout: `n` normalised elements at stride `inner`, repeated outer * inner times. The
/// opset < 13 form (flatten to 2-D at the axis) is inner = 1, n = product of the trailing axes.
struct SoftmaxParams {
  SoftmaxKind kind = SoftmaxKind::kSoftmax;
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
};

/// y = the normalisation of x; T is float or double. x and y must not alias.
template <typename T>
void Softmax(const SoftmaxParams& p, const T* x, T* y);

/// Softmax of `rows` contiguous rows of n floats in place, each after adding its row of `add`
/// (row r at add + r * add_row_stride; null: nothing added): attention's masked scores. Equal to
/// an Add followed by Softmax over the last axis.
void SoftmaxAddRows(int64_t rows, int64_t n, float* x, const float* add, int64_t add_row_stride);

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_SOFTMAX_H_
