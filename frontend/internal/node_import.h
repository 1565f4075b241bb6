// Shared state of the ONNX importer while it turns one NodeProto into an ir::Node, and the
// steps that need it: attribute reading (attributes.cc) and opset canonicalisation
// (op_versions.cc).
#ifndef QCC_FRONTEND_INTERNAL_NODE_IMPORT_H_
#define QCC_FRONTEND_INTERNAL_NODE_IMPORT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "onnx/onnx_pb.h"

namespace qcc::frontend::internal {

/// Every value name of the model, so that names the importer invents never collide.
class NameTable {
 public:
  /// Records `name` as taken.
  void Insert(const std::string& name) { names_.insert(name); }
  /// `stem` when free, else the first free `stem_1`, `stem_2`...; the result is recorded.
  std::string Fresh(absl::string_view stem);

 private:
  absl::flat_hash_set<std::string> names_;
};

/// A constant the importer made from an fp32 attribute (Clip min/max, Pad value before opset 11)
/// that must take the element type of `like` (the op's data input) once that type is known.
struct DTypeFixup {
  ir::Value* constant;
  ir::Value* like;
};

/// One ONNX node being imported, with what its import steps need.
struct NodeImport {
  const onnx::NodeProto& proto;
  int index;  // position in the ONNX graph's node list
  int opset;  // the model's default-domain opset
  const std::string& base_dir;
  ir::Graph& graph;
  NameTable& names;
  std::vector<DTypeFixup>& fixups;
  ir::Node* node = nullptr;  // set once the node is created

  /// "node 'name'", or "node #index" for an unnamed node.
  std::string Label() const;
  /// A `code` error "node 'X' (Op, opset N): message".
  absl::Status Error(absl::StatusCode code, absl::string_view message) const;
  /// A new constant value named after the node and `suffix`.
  ir::Value* AddConstant(absl::string_view suffix, Tensor t);
};

/// The attribute `name` of `node`, or nullptr.
const onnx::AttributeProto* FindAttr(const onnx::NodeProto& node, absl::string_view name);

/// Fills `attrs`, the typed struct of the node's op kind, from the ONNX attributes named like its
/// fields. Absent attributes keep the struct's values; one of the wrong ONNX type, an enum
/// string outside the allowed values or an unreadable tensor is an error naming the attribute.
absl::Status ReadAttrs(const NodeImport& n, ir::Attrs& attrs);

/// Single-attribute readers for the forms older opsets use: nullopt when absent, an
/// InvalidArgument error when the attribute has another type.
absl::StatusOr<std::optional<int64_t>> GetIntAttr(const NodeImport& n, absl::string_view name);
absl::StatusOr<std::optional<float>> GetFloatAttr(const NodeImport& n, absl::string_view name);
absl::StatusOr<std::optional<std::string>> GetStringAttr(const NodeImport& n,
                                                         absl::string_view name);
absl::StatusOr<std::optional<std::vector<int64_t>>> GetIntsAttr(const NodeImport& n,
                                                                absl::string_view name);
absl::StatusOr<std::optional<std::vector<float>>> GetFloatsAttr(const NodeImport& n,
                                                                absl::string_view name);

/// The op kind of the node's (default-domain) op type; Upsample maps to Resize. Unimplemented
/// "node 'X': op 'Foo' (opset N) is not supported" for op types qcc does not know.
absl::StatusOr<ir::OpKind> ResolveOpKind(const NodeImport& n);

/// Reads the node's attributes into `attrs` (DefaultAttrs of `kind`), applying the defaults and
/// attribute forms of the model's opset: Softmax axis before 13, Constant value_* forms,
/// Upsample and Resize-10 modes, BatchNormalization spatial.
absl::Status ReadNodeAttrs(const NodeImport& n, ir::OpKind kind, ir::Attrs& attrs);

/// How many of the node's ONNX outputs the IR node keeps: BatchNormalization before opset 14
/// keeps only Y (its other outputs exist only in training).
int KeptOutputs(const NodeImport& n, ir::OpKind kind, int num_onnx_outputs);

/// Rewrites the inputs of `n.node` (already wired) to the newest-opset form ops.def uses:
/// attribute forms of Clip, Pad, Slice, Squeeze, Unsqueeze, Split, the reductions and Upsample
/// become constant inputs; Resize-10 inputs move to their opset-11 slots; empty or ignored Resize
/// roi/scales become omitted inputs.
absl::Status CanonicalizeInputs(NodeImport& n);

}  // namespace qcc::frontend::internal

#endif  // QCC_FRONTEND_INTERNAL_NODE_IMPORT_H_
