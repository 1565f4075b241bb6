// Registration calls of the movement op files, gathered by RegisterMovementOps (movement.cc).
#ifndef QCC_BACKEND_CPU_OPS_MOVEMENT_OPS_H_
#define QCC_BACKEND_CPU_OPS_MOVEMENT_OPS_H_

#include "backend_cpu/op_registry.h"

namespace qcc::cpu {

/// Transpose, Concat, Split, Slice, Pad, Gather, Expand, Tile, DepthToSpace, SpaceToDepth.
void RegisterMovementIndexOps(OpRegistry& registry);
/// Resize.
void RegisterResizeOps(OpRegistry& registry);

}  // namespace qcc::cpu

#endif  // QCC_BACKEND_CPU_OPS_MOVEMENT_OPS_H_
