// Reductions over a set of axes (ReduceSum, ReduceMean, ...) and arg-reductions (ArgMax,
// ArgMin) of dense row-major tensors.
#ifndef QCC_KERNELS_CPU_REDUCE_H_
#define QCC_KERNELS_CPU_REDUCE_H_

#include <cstdint>
#include <vector>

#include "support/tensor.h"

namespace qcc::cpu {

/// What a reduction computes over the reduced elements x_1..x_n.
enum class ReduceKind : uint8_t {
  kSum,        // sum x
  kMean,       // sum x / n (integers: truncated)
  kMax,        // max x (NaN propagates; empty: the type's lowest, -inf for floats)
  kMin,        // min x (empty: the type's highest, +inf for floats)
  kProd,       // prod x
  kL1,         // sum |x|
  kL2,         // sqrt(sum x^2)
  kLogSum,     // log(sum x)
  kLogSumExp,  // log(sum exp(x)), evaluated as m + log(sum exp(x - m)) with m = max x
  kSumSquare,  // sum x^2
};

/// A reduction of a tensor of extents `dims` over the axes flagged in `reduced`.
struct ReduceParams {
  ReduceKind kind = ReduceKind::kSum;
  Dims dims;                  // input extents
  std::vector<bool> reduced;  // one flag per input axis
};

/// y = the reduction of x; y holds the kept axes in order (keepdims does not change the data).
/// Floating types accumulate sums in double, integers wrap. T: float, double, int8_t, uint8_t,
/// int16_t, uint16_t, int32_t, uint32_t, int64_t, uint64_t.
template <typename T>
void Reduce(const ReduceParams& p, const T* x, T* y);

/// ArgMax / ArgMin along one axis of a tensor viewed as [outer, n, inner], n >= 1.
struct ArgReduceParams {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
  bool is_max = true;
  bool select_last_index = false;  // ties go to the last index instead of the first
};

/// y[o, i] = the index along n of the max (min) of x[o, :, i]. Same types as Reduce.
template <typename T>
void ArgReduce(const ArgReduceParams& p, const T* x, int64_t* y);

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_REDUCE_H_
