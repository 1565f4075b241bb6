// Text form of a Graph, for `qcc inspect` and golden tests.
#ifndef QCC_IR_PRINTER_H_
#define QCC_IR_PRINTER_H_

#include <string>

#include "ir/graph.h"

namespace qcc::ir {

/// "f32[N,3,32,32]" (unknown extents as "?", unknown rank as "f32[*]").
std::string TypeToString(const Graph& graph, const TensorType& type);
/// The attributes of `node` that differ from their defaults, as `name=value`, comma separated.
std::string AttrsToString(const Node& node);
/// One line per node: `%out = OpName(%in, ...) {attrs} : types`, with a header for inputs,
/// constants (name, type, element count) and outputs.
std::string PrintGraph(const Graph& graph);

}  // namespace qcc::ir

#endif  // QCC_IR_PRINTER_H_
