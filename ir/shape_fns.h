// Declarations of the shape functions named in ops.def, plus helpers they share.
#ifndef QCC_IR_SHAPE_FNS_H_
#define QCC_IR_SHAPE_FNS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "ir/shape_inference.h"

namespace qcc::ir {

#define OP(kind, name, attrs, shape_fn, min_in, max_in, min_out, max_out) \
  absl::Status shape_fn(InferContext& ctx);
#include "ir/ops.def"
#undef OP

/// Numpy broadcasting of two symbolic shapes; error when two known extents differ and neither is 1.
absl::StatusOr<std::vector<Dim>> BroadcastDims(const std::vector<Dim>& a,
                                               const std::vector<Dim>& b);
/// Normalises a possibly negative axis into [0, rank); error when out of range.
absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank);
/// Product of dims, or kUnknownDim when any is not known.
Dim DimProduct(const std::vector<Dim>& dims, size_t begin, size_t end);

}  // namespace qcc::ir

#endif  // QCC_IR_SHAPE_FNS_H_
