// The ONNX QDQ form of an int8 compile: the quantized graph (passes/realize_int8.h) written with
// QuantizeLinear/DequantizeLinear around float ONNX ops, the explicit quantization TensorRT and
// ONNX Runtime read (`qcc export --qdq`, `qcc inspect --passes --int8 --qdq`).
#ifndef QCC_PASSES_QDQ_FORM_H_
#define QCC_PASSES_QDQ_FORM_H_

#include <memory>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace qcc::passes {

struct QdqOptions {
  /// Activations as uint8 with zero point + 128 (ONNX Runtime's default form); int8 otherwise.
  bool uint8_activations = false;
};

struct QdqModel {
  std::unique_ptr<ir::Graph> graph;
  /// How many fp16/bf16 tensors became fp32 (WidenReducedFloats).
  int widened = 0;
};

/// Writes `quantized`, RealizeInt8's graph in scale form (QuantizedForm::kScale), op for op:
/// - qcc.Quantize -> QuantizeLinear and qcc.Dequantize -> DequantizeLinear, with the int8
///   value's scale and zero point (uint8 and zero point + 128 for `uint8_activations`);
/// - qcc.QConv -> DequantizeLinear of x, of the int8 weights (per-channel scales on axis 0, zero
///   points 0) and of the int32 bias round(b / (s_x * s_w[k])) at scale s_x * s_w[k] (the plan's
///   integer bias before its zero-point correction), Conv with the same attributes, then
///   QuantizeLinear onto y's grid;
/// - qcc.QGemm -> the same around Gemm (transB 1) for a 2-D x, else MatMul with the weights
///   transposed to [K, N] (scales on axis 1) and an Add of the bias; an fp32-result QGemm keeps
///   its float bias and has no QuantizeLinear after it;
/// - qcc.QLut -> the ONNX op of its function and constants (Relu, Clip, Sigmoid, HardSigmoid,
///   HardSwish, Tanh) between DequantizeLinear and QuantizeLinear;
/// - any other op that reads or writes int8 values (Add, Concat, pools, data movement): a
///   DequantizeLinear of each int8 input, the op in float, a QuantizeLinear of each int8 output
///   (Shape and Size read the int8 tensor itself); float ops are copied.
/// Names: the float result of an op keeps the tensor's name (a graph output's is NAME_float, the
/// output being the DequantizeLinear's); its int8 form is NAME_quantized, other
/// DequantizeLinear results NAME_dequantized, weights NODE_weight_*, bias NODE_bias_*. Then
/// every fp16/bf16 tensor is made fp32 but at the graph's inputs and outputs (opset-19 Q/DQ take
/// their scale in the tensor's type, and ONNX Runtime's int8 kernels need fp32 scales;
/// WidenReducedFloats) and the graph is sorted and shape-inferred.
/// Unimplemented, naming the node, for a dynamically quantized GEMM or an int8 qcc.Attention;
/// InvalidArgument for the integer form (run RealizeInt8 with QuantizedForm::kScale).
absl::StatusOr<QdqModel> QdqForm(const ir::Graph& quantized, const QdqOptions& options);

/// Makes every fp16/bf16 tensor of `graph` fp32: constants, values, Cast and
/// Constant/ConstantOfShape targets, then re-infers shapes; but the model's fp16 interface
/// stays: an fp16 graph input keeps its type and feeds a Cast to fp32 that its consumers read,
/// and each output whose type in `output_types` (the model's, one per graph output; empty: the
/// graph's own) is fp16 becomes a Cast to fp16 of the fp32 value, which is renamed NAME_float
/// (or a free name from it). bf16 is widened at the edges too (plans take fp32 or fp16). Returns
/// how many tensors are fp32 that were not.
absl::StatusOr<int> WidenReducedFloats(ir::Graph& graph, std::vector<DType> output_types = {});

}  // namespace qcc::passes

#endif  // QCC_PASSES_QDQ_FORM_H_
