// ONNX export: ir::Graph -> ModelProto. The inverse of the importer for the ops qcc holds, used to
// hand qcc's quantization to other runtimes as a QDQ model (tools/cmd_export.cc).
#ifndef QCC_FRONTEND_ONNX_EXPORTER_H_
#define QCC_FRONTEND_ONNX_EXPORTER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace onnx {
class ModelProto;
}  // namespace onnx

namespace qcc::frontend {

/// The default-domain opset of exported models: 19 (the newest forms ops.def holds: Reduce axes,
/// Pad axes and Resize antialias inputs/attributes are opset 18), 20 when the graph has a Gelu.
int ExportOpset(const ir::Graph& graph);

/// Writes `graph` as an ONNX model: constants become initializers, fused activations
/// (qcc_activation on Conv, Gemm and Add) become their own Relu, Clip or LeakyRelu node after the
/// op, attributes equal to the ONNX default are left out. Graph inputs and outputs carry their
/// types (symbolic extents as dim_param). Unimplemented for what ONNX cannot say: qcc's own ops
/// (Observe) and the opset-1 Softmax form (coerce_2d).
absl::StatusOr<onnx::ModelProto> ExportOnnxModel(const ir::Graph& graph);

/// Serializes `model` to `path` atomically (no partial file on failure); a model over protobuf's
/// 2 GiB limit is an error.
absl::Status WriteOnnxFile(const onnx::ModelProto& model, const std::string& path);

}  // namespace qcc::frontend

#endif  // QCC_FRONTEND_ONNX_EXPORTER_H_
