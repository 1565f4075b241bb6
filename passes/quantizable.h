// Which ops the int8 compile can run in int8, and so which tensors calibration must observe.
// One list, shared by the insert-observers pass and the quantize pass.
#ifndef QCC_PASSES_QUANTIZABLE_H_
#define QCC_PASSES_QUANTIZABLE_H_

#include <vector>

#include "ir/graph.h"

namespace qcc::passes {

/// True for ops with an int8 form (DESIGN.md s.2; ops.def's Int8 column): their own kernel
/// (Conv, Gemm, MatMul, Add, the pools, Concat), a lookup table (Sigmoid, HardSigmoid,
/// HardSwish, Tanh, standalone Relu/Clip), or moving int8 elements (Reshape, Flatten,
/// Transpose, Slice, Pad, Squeeze, Unsqueeze, nearest Resize, Expand).
bool IsQuantizable(ir::OpKind kind);

/// The tensors whose range an int8 compile needs: every float (fp32/fp16/bf16) input and output
/// of a quantizable node that is not a constant (weights are quantized from their values), each
/// once, in order of first appearance (graph order, inputs before outputs).
std::vector<const ir::Value*> TensorsToObserve(const ir::Graph& graph);

}  // namespace qcc::passes

#endif  // QCC_PASSES_QUANTIZABLE_H_
