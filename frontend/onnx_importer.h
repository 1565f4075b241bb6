// ONNX import: ModelProto -> ir::Graph. The only place that reads ONNX attributes by name.
#ifndef QCC_FRONTEND_ONNX_IMPORTER_H_
#define QCC_FRONTEND_ONNX_IMPORTER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace onnx {
class ModelProto;
}  // namespace onnx

namespace qcc::frontend {

/// Oldest and newest default-domain opsets the importer accepts.
inline constexpr int kMinOpset = 7;
inline constexpr int kMaxOpset = 21;

/// Reads and imports an ONNX file. External tensor data is resolved relative to the file's
/// folder. Errors name the file, and for graph problems the node, its op and the opset.
absl::StatusOr<std::unique_ptr<ir::Graph>> ImportOnnxFile(const std::string& path);

/// Imports a parsed model; `base_dir` resolves external data. The result is verified,
/// topologically sorted and has inferred shapes.
absl::StatusOr<std::unique_ptr<ir::Graph>> ImportOnnxModel(const onnx::ModelProto& model,
                                                           const std::string& base_dir);

}  // namespace qcc::frontend

#endif  // QCC_FRONTEND_ONNX_IMPORTER_H_
