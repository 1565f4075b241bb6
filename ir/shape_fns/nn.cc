// STUB: to be replaced.
#include "ir/shape_fns.h"

namespace qcc::ir {
absl::Status InferConv(InferContext& ctx) { return absl::UnimplementedError("InferConv"); }
absl::Status InferConvTranspose(InferContext& ctx) { return absl::UnimplementedError("InferConvTranspose"); }
absl::Status InferBatchNorm(InferContext& ctx) { return absl::UnimplementedError("InferBatchNorm"); }
absl::Status InferLayerNorm(InferContext& ctx) { return absl::UnimplementedError("InferLayerNorm"); }
absl::Status InferPool(InferContext& ctx) { return absl::UnimplementedError("InferPool"); }
absl::Status InferGlobalPool(InferContext& ctx) { return absl::UnimplementedError("InferGlobalPool"); }
absl::Status InferGemm(InferContext& ctx) { return absl::UnimplementedError("InferGemm"); }
absl::Status InferMatMul(InferContext& ctx) { return absl::UnimplementedError("InferMatMul"); }
}  // namespace qcc::ir
