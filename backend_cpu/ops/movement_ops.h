// Registration calls of the movement op files, gathered by RegisterMovementOps (movement.cc).
#ifndef QCC_BACKEND_CPU_OPS_MOVEMENT_OPS_H_
#define QCC_BACKEND_CPU_OPS_MOVEMENT_OPS_H_

#include <vector>

#include "backend_cpu/op_registry.h"
#include "ir/shape_fns/movement_params.h"
#include "kernels/cpu/resize.h"

namespace qcc::cpu {

/// Transpose, Concat, Split, Slice, Pad, Gather, Expand, Tile, DepthToSpace, SpaceToDepth.
void RegisterMovementIndexOps(OpRegistry& registry);
/// Resize.
void RegisterResizeOps(OpRegistry& registry);

/// Resize's attributes and resolved scales/roi as the kernel's per-axis parameters (extents left
/// 0 for the caller to set); the evaluator and the plan lowering read Resize through this one map.
std::vector<ResizeAxisParams> ResizeAxes(const ir::ResizeAttrs& attrs,
                                         const ir::ResizeParams& params);

}  // namespace qcc::cpu

#endif  // QCC_BACKEND_CPU_OPS_MOVEMENT_OPS_H_
