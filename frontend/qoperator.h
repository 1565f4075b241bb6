// The QOperator form of quantized ONNX models (QLinearConv, QLinearMatMul and ONNX Runtime's
// com.microsoft QLinearAdd, QLinearMul, QLinearGlobalAveragePool, QLinearAveragePool,
// QLinearConcat, QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax, QGemm), rewritten into the QDQ
// form the IR holds: DequantizeLinear of each quantized input, the float op, QuantizeLinear of its
// output. The rewrite is exact (the ops are defined that way); passes/absorb_qdq.h then reads the
// pairs.
#ifndef QCC_FRONTEND_QOPERATOR_H_
#define QCC_FRONTEND_QOPERATOR_H_

#include <string>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"

namespace qcc::frontend::internal {

/// True when `graph` has a node in the QOperator form.
bool HasQOperators(const onnx::GraphProto& graph);

/// `graph` with every QOperator node replaced by its QDQ form. New tensor names are unique; the
/// nodes keep their names (the float op's) so errors and reports name them. An int32 bias takes
/// the scale input_scale * weight_scale (computed here, so both must be initializers). Errors name
/// the node: MatMulInteger/ConvInteger (dynamic quantization, no scales), a channels_last pool.
absl::StatusOr<onnx::GraphProto> ExpandQOperators(const onnx::GraphProto& graph,
                                                  const std::string& base_dir);

}  // namespace qcc::frontend::internal

#endif  // QCC_FRONTEND_QOPERATOR_H_
