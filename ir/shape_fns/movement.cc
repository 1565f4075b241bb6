// STUB: to be replaced.
#include "ir/shape_fns.h"

namespace qcc::ir {
absl::Status InferFlatten(InferContext& ctx) { return absl::UnimplementedError("InferFlatten"); }
absl::Status InferReshape(InferContext& ctx) { return absl::UnimplementedError("InferReshape"); }
absl::Status InferTranspose(InferContext& ctx) { return absl::UnimplementedError("InferTranspose"); }
absl::Status InferConcat(InferContext& ctx) { return absl::UnimplementedError("InferConcat"); }
absl::Status InferSplit(InferContext& ctx) { return absl::UnimplementedError("InferSplit"); }
absl::Status InferSlice(InferContext& ctx) { return absl::UnimplementedError("InferSlice"); }
absl::Status InferPad(InferContext& ctx) { return absl::UnimplementedError("InferPad"); }
absl::Status InferSqueeze(InferContext& ctx) { return absl::UnimplementedError("InferSqueeze"); }
absl::Status InferUnsqueeze(InferContext& ctx) { return absl::UnimplementedError("InferUnsqueeze"); }
absl::Status InferShapeOp(InferContext& ctx) { return absl::UnimplementedError("InferShapeOp"); }
absl::Status InferSize(InferContext& ctx) { return absl::UnimplementedError("InferSize"); }
absl::Status InferGather(InferContext& ctx) { return absl::UnimplementedError("InferGather"); }
absl::Status InferCast(InferContext& ctx) { return absl::UnimplementedError("InferCast"); }
absl::Status InferConstant(InferContext& ctx) { return absl::UnimplementedError("InferConstant"); }
absl::Status InferConstantOfShape(InferContext& ctx) { return absl::UnimplementedError("InferConstantOfShape"); }
absl::Status InferDropout(InferContext& ctx) { return absl::UnimplementedError("InferDropout"); }
absl::Status InferExpand(InferContext& ctx) { return absl::UnimplementedError("InferExpand"); }
absl::Status InferTile(InferContext& ctx) { return absl::UnimplementedError("InferTile"); }
absl::Status InferRange(InferContext& ctx) { return absl::UnimplementedError("InferRange"); }
absl::Status InferResize(InferContext& ctx) { return absl::UnimplementedError("InferResize"); }
absl::Status InferDepthToSpace(InferContext& ctx) { return absl::UnimplementedError("InferDepthToSpace"); }
absl::Status InferSpaceToDepth(InferContext& ctx) { return absl::UnimplementedError("InferSpaceToDepth"); }
}  // namespace qcc::ir
