// A stable hash of a graph's structure and weights, naming the model a calibration table is for.
#ifndef QCC_IR_FINGERPRINT_H_
#define QCC_IR_FINGERPRINT_H_

#include <string>

#include "ir/graph.h"

namespace qcc::ir {

/// 16 hex digits hashing the graph: opset, symbols, inputs and outputs (names and types), every
/// constant (name, type, bytes) and every node (op kind by name, every attribute exactly,
/// input/output value names and types). Node names are left out (renaming a node changes no
/// computation); tensor names are in (calibration tables are keyed by them). The hash is our own
/// (FNV-1a for text, a word-wise FNV variant for bulk bytes), the same across runs, builds and
/// little-endian machines.
std::string Fingerprint(const Graph& graph);

}  // namespace qcc::ir

#endif  // QCC_IR_FINGERPRINT_H_
