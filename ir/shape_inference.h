// Shape and dtype inference. One shape function per op kind (named in ops.def), used both
// symbolically over a Graph and concretely by the CPU evaluator before it allocates outputs.
#ifndef QCC_IR_SHAPE_INFERENCE_H_
#define QCC_IR_SHAPE_INFERENCE_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "ir/symbolic_values.h"
#include "ir/types.h"
#include "support/tensor.h"

namespace qcc::ir {

/// What a shape function sees of one node: its input types, the data of inputs whose values are
/// known (constants, or everything when the evaluator runs), the symbolic values of small
/// integer inputs computed from shapes (ir/symbolic_values.h), and the output types to fill in.
struct InferContext {
  const Node& node;
  std::vector<TensorType> inputs;     // dtype kUndefined for an omitted optional input
  std::vector<const Tensor*> values;  // nullptr where the value is not known
  std::vector<TensorType> outputs;    // one per node output, to be set
  std::vector<const SymbolicValue*> symbolic = {};  // may be shorter than inputs

  int num_inputs() const { return static_cast<int>(inputs.size()); }
  /// True when input `i` is present (not omitted, not past the end).
  bool has_input(int i) const { return i < num_inputs() && inputs[i].dtype != DType::kUndefined; }
  const TensorType& input(int i) const { return inputs[i]; }
  /// The data of input `i` when known, else nullptr.
  const Tensor* value(int i) const { return i < num_inputs() ? values[i] : nullptr; }
  /// The symbolic value of input `i` when some of it is known and its data is not, else nullptr.
  const SymbolicValue* symbolic_value(int i) const {
    return i < static_cast<int>(symbolic.size()) && value(i) == nullptr ? symbolic[i] : nullptr;
  }
  template <typename T>
  const T& attrs() const {
    return node.attrs<T>();
  }
  /// An InvalidArgument error naming this node and its op.
  absl::Status Error(absl::string_view message) const;
};

/// Signature of a shape function.
using ShapeFn = absl::Status (*)(InferContext&);

/// The shape function of `kind`.
ShapeFn GetShapeFn(OpKind kind);

/// Runs the shape function of `node` over the given inputs; returns the output types.
absl::StatusOr<std::vector<TensorType>> InferNode(const Node& node, std::vector<TensorType> inputs,
                                                  std::vector<const Tensor*> values,
                                                  std::vector<const SymbolicValue*> symbolic = {});

/// Infers every node's output types in topological order, using constant values and the
/// symbolic values of shape arithmetic where known. Where a model already declared a more precise
/// output type (e.g. a graph output shape), the inferred one must agree with it. When `symbolic`
/// is given, it receives every value's symbolic value (as ComputeSymbolicValues would).
absl::Status InferShapes(Graph& graph, SymbolicValues* symbolic = nullptr);

}  // namespace qcc::ir

#endif  // QCC_IR_SHAPE_INFERENCE_H_
