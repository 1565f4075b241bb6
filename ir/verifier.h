// Structural checks of a Graph: the invariants every pass must keep.
#ifndef QCC_IR_VERIFIER_H_
#define QCC_IR_VERIFIER_H_

#include "absl/status/status.h"
#include "ir/graph.h"

namespace qcc::ir {

/// Checks input/output counts against the op table, attribute types, that every input is
/// defined before use (topological order), use lists, unique value names, and that a fused
/// activation (Conv, Gemm, Add) sits only on an op with a float (or not yet inferred) output.
/// The error names the node and what is wrong.
absl::Status Verify(const Graph& graph);

}  // namespace qcc::ir

#endif  // QCC_IR_VERIFIER_H_
