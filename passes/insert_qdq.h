// Writes an int8 compile's quantization into the graph as QuantizeLinear/DequantizeLinear nodes
// (the QDQ form TensorRT's explicit quantization and ONNX Runtime read; tools/cmd_export.cc).
#ifndef QCC_PASSES_INSERT_QDQ_H_
#define QCC_PASSES_INSERT_QDQ_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "passes/quantize.h"

namespace qcc::passes {

struct QdqOptions {
  /// Activations as uint8 with zero point + 128 (ONNX Runtime's default form); int8 otherwise.
  bool uint8_activations = false;
};

/// Rewrites the fused graph `decision` was made for:
/// - every non-constant tensor that exists in int8 in the plan (decision.params) is followed by
///   Q -> DQ with its scale and zero point, and its consumers read the DQ output (a graph output
///   keeps its name on the DQ output, and the float tensor before the Q is NAME_float);
/// - the weights of every int8 Conv/Gemm/MatMul become DQ(int8 constant, per-channel scales,
///   zero points 0) on the output-channel axis (0 for Conv and transB Gemm, 1 for MatMul and
///   Gemm without transB), exactly the plan's int8 weights; a Gemm's alpha and beta are folded
///   into them (and set to 1);
/// - their bias becomes the plan's int32 bias times its scale (s_in * s_w), in float.
/// The graph is then sorted; values keep their names, new ones are unique.
absl::Status InsertQdq(ir::Graph& graph, const QuantDecision& decision, const QdqOptions& options);

/// Makes every fp16/bf16 tensor of `graph` fp32: constants, graph inputs and outputs, Cast and
/// Constant/ConstantOfShape targets. For the QDQ export of an fp16 model: opset-19 Q/DQ take
/// their scale in the tensor's own type, and ONNX Runtime's int8 kernels refuse fp16 scales.
/// Returns how many tensors changed type.
absl::StatusOr<int> WidenReducedFloats(ir::Graph& graph);

}  // namespace qcc::passes

#endif  // QCC_PASSES_INSERT_QDQ_H_
