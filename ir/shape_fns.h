// Declarations of the shape functions named in ops.def, plus helpers they share.
#ifndef QCC_IR_SHAPE_FNS_H_
#define QCC_IR_SHAPE_FNS_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/shape_inference.h"

namespace qcc::ir {

#define OP(kind, name, attrs, shape_fn, min_in, max_in, min_out, max_out, int8, unary) \
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

/// One element of a 1-D shape-like input (a Reshape target, Expand shape, Resize sizes): its
/// value when it is a known constant; otherwise the extent it is (a symbol such as the batch,
/// from shape arithmetic on a symbolic Shape), or kUnknownDim.
struct ShapeEntry {
  std::optional<int64_t> constant;
  Dim dim = kUnknownDim;
};
/// The entries of input `i` from its data or its symbolic value; nullopt when neither is known
/// (or the input is not 1-D).
std::optional<std::vector<ShapeEntry>> ShapeEntries(const InferContext& ctx, int i);

}  // namespace qcc::ir

#endif  // QCC_IR_SHAPE_FNS_H_
