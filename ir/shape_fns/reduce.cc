// STUB: to be replaced.
#include "ir/shape_fns.h"

namespace qcc::ir {
absl::Status InferReduce(InferContext& ctx) { return absl::UnimplementedError("InferReduce"); }
absl::Status InferArgReduce(InferContext& ctx) { return absl::UnimplementedError("InferArgReduce"); }
}  // namespace qcc::ir
