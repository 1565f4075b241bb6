// Running a large batch as slices of a few images (ExecutionContext::Execute). A plan runs step
// by step over the whole batch, so at batch 32 every activation of an ImageNet-size model is
// tens of MB (efficientnet-lite0's int8 arena: 48 MB) and each step reads its input back from
// memory; a slice of images whose arena fits in cache runs every step on data the previous one
// left there. This is only done for a plan whose every step treats the images of a batch apart
// (ImagesIndependent): then the outputs of a slice are those rows of the batch's outputs.
#ifndef QCC_RUNTIME_BATCH_SLICES_H_
#define QCC_RUNTIME_BATCH_SLICES_H_

#include <cstdint>
#include <string>

#include "runtime/plan.h"

namespace qcc::runtime {

/// Arena bytes a slice may take (SliceImages): about what stays in a server core's share of the
/// last-level cache. efficientnet-lite0 at batch 32 (1 thread): int8 slices of 2..8 images (3 to
/// 12 MB) and fp32 slices of 2 (12 MB) ran 8-12% faster than the whole batch; fp32 slices of 8
/// (48 MB) no faster.
inline constexpr uint64_t kSliceArenaBytes = uint64_t{12} << 20;

/// True when image i of every batched output depends only on image i of the batched inputs, in
/// every step: every buffer but the weights has the batch as its leading extent, and every step
/// is per image (convolutions, pools, elementwise ops and their broadcasts from weights without
/// a batch, GEMMs over rows, Reshape/Transpose/Slice/Pad/Concat/Softmax/Reduce that keep the
/// batch axis whole). Otherwise `why` (when given) says which step or buffer keeps it.
bool ImagesIndependent(const Plan& plan, std::string* why = nullptr);

/// The most images a slice holds with the arena bytes they touch within `arena_budget` (at
/// least 1), or 0 when the plan cannot run in slices (not ImagesIndependent, or batch_max 1).
int64_t SliceImages(const Plan& plan, uint64_t arena_budget = kSliceArenaBytes);

}  // namespace qcc::runtime

#endif  // QCC_RUNTIME_BATCH_SLICES_H_
