// Symbolic values of the small integer tensors exporters use for shape arithmetic.
//
// A Shape of x:[N,3,224,224] is not a constant while N is symbolic, but its elements are known
// as SymInts: [N, 3, 224, 224]. This analysis pushes such values through the ops exporters put
// between Shape and the ops that take shapes (Gather, Slice, Concat, Unsqueeze, Cast, integer
// arithmetic, comparisons, Where, ...), element by element. Shape inference uses the values for
// Reshape/Expand/Resize/... targets, fold-constants folds the ones that turn out constant, and
// the lowering computes the rest at run time from the batch.
#ifndef QCC_IR_SYMBOLIC_VALUES_H_
#define QCC_IR_SYMBOLIC_VALUES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "ir/graph.h"
#include "ir/sym_int.h"
#include "ir/types.h"
#include "support/tensor.h"

namespace qcc::ir {

/// The elements of a tensor of rank 0 or 1, row-major; nullopt for an element not known.
/// Float and bool tensors are tracked while every element is an integer (Cast(Shape(x), float)).
using SymbolicValue = std::vector<std::optional<SymInt>>;

/// Tensors larger than this are not tracked (shape vectors are short).
inline constexpr int64_t kMaxSymbolicElements = 64;

/// The symbolic value of a constant: nullopt when it is larger than kMaxSymbolicElements, of
/// rank > 1, or holds a non-integral (or huge) float.
std::optional<SymbolicValue> SymbolicOfTensor(const Tensor& t);

/// True when every element is known and constant.
bool IsConstant(const SymbolicValue& v);
/// The constant tensor of `type` (rank 0 or 1, static) holding a constant `v`.
Tensor ConstantOfSymbolic(const SymbolicValue& v, const TensorType& type);

/// The symbolic values of `node`'s outputs from its input types, the symbolic values of its
/// inputs (nullptr where nothing is known) and its inferred output types: one entry per output,
/// nullopt where nothing is known.
std::vector<std::optional<SymbolicValue>> InferSymbolic(
    const Node& node, absl::Span<const TensorType> inputs,
    absl::Span<const SymbolicValue* const> values, absl::Span<const TensorType> outputs);

/// Symbolic values by value.
using SymbolicValues = absl::flat_hash_map<const Value*, SymbolicValue>;

/// The symbolic values of the graph's constant values (the seeds of the analysis).
SymbolicValues ConstantSymbolicValues(const Graph& graph);

/// Every value of `graph` (types inferred) with a symbolic value in which at least one element
/// is known: constants, Constant node outputs and what InferSymbolic derives from them.
SymbolicValues ComputeSymbolicValues(const Graph& graph);

}  // namespace qcc::ir

#endif  // QCC_IR_SYMBOLIC_VALUES_H_
