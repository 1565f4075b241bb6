// ONNX ModelProto -> ir::Graph: values, nodes, types, then sort, verify and infer shapes.
#include "frontend/onnx_importer.h"

#include <deque>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontend/internal/file_util.h"
#include "frontend/internal/node_import.h"
#include "frontend/qoperator.h"
#include "frontend/tensor_proto.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "onnx/onnx_pb.h"
#include "support/status.h"

namespace qcc::frontend {

namespace {

using internal::NodeImport;

/// The declared type of a graph input, output or value_info entry. A dim_param names a graph
/// symbol, except "" and "?" (some exporters' spelling of "unknown"); a negative or absent
/// dim_value is unknown.
absl::StatusOr<ir::TensorType> TypeFromProto(const onnx::ValueInfoProto& info, ir::Graph& graph) {
  const onnx::TypeProto& type = info.type();
  if (type.value_case() == onnx::TypeProto::VALUE_NOT_SET) return ir::TensorType();
  if (!type.has_tensor_type()) {
    return absl::UnimplementedError(
        absl::StrCat("value '", info.name(),
                     "' is not a tensor; sequence, map, optional and sparse types are not "
                     "supported"));
  }
  const auto& tt = type.tensor_type();
  ir::TensorType out;
  if (tt.elem_type() != onnx::TensorProto::UNDEFINED) {
    auto dtype = DTypeFromOnnx(tt.elem_type());
    if (!dtype.ok()) {
      return absl::Status(dtype.status().code(),
                          absl::StrCat("value '", info.name(), "': ", dtype.status().message()));
    }
    out.dtype = *dtype;
  }
  if (!tt.has_shape()) return out;
  std::vector<ir::Dim> dims;
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value()) {
      dims.push_back(d.dim_value() >= 0 ? d.dim_value() : ir::kUnknownDim);
    } else if (d.has_dim_param() && !d.dim_param().empty() && d.dim_param() != "?") {
      dims.push_back(ir::SymbolDim(graph.AddSymbol(d.dim_param())));
    } else {
      dims.push_back(ir::kUnknownDim);
    }
  }
  out.dims = std::move(dims);
  return out;
}

/// Casts the importer's fp32 attribute constants to their data input's float type where that
/// type is known (run before and after shape inference).
void ApplyDTypeFixups(const std::vector<internal::DTypeFixup>& fixups) {
  for (const auto& f : fixups) {
    const DType want = f.like == nullptr ? DType::kUndefined : f.like->dtype();
    if (IsFloat(want) && f.constant->dtype() != want) {
      f.constant->set_constant(CastTensor(*f.constant->constant(), want));
    }
  }
}

class GraphImporter {
 public:
  GraphImporter(const onnx::GraphProto& proto, int opset, const std::string& base_dir)
      : proto_(proto), opset_(opset), base_dir_(base_dir), graph_(std::make_unique<ir::Graph>()) {}

  absl::StatusOr<std::unique_ptr<ir::Graph>> Run() {
    graph_->set_opset(opset_);
    graph_->set_name(proto_.name());
    CollectNames();
    QCC_RETURN_IF_ERROR(AddInitializers());
    QCC_RETURN_IF_ERROR(AddInputs());
    for (int i = 0; i < proto_.node_size(); ++i) {
      nodes_.push_back(NodeImport{proto_.node(i), i, opset_, base_dir_, *graph_, names_, fixups_});
      QCC_RETURN_IF_ERROR(CreateNode(nodes_.back()));
    }
    for (NodeImport& n : nodes_) QCC_RETURN_IF_ERROR(WireNode(n));
    QCC_RETURN_IF_ERROR(AddOutputs());
    DeclareValueInfo();
    QCC_RETURN_IF_ERROR(graph_->TopologicalSort());
    QCC_RETURN_IF_ERROR(ir::Verify(*graph_));
    ApplyDTypeFixups(fixups_);
    if (absl::Status s = ir::InferShapes(*graph_); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat(s.message(), " (model opset ", opset_, ")"));
    }
    ApplyDTypeFixups(fixups_);
    return std::move(graph_);
  }

 private:
  void CollectNames() {
    for (const auto& t : proto_.initializer()) names_.Insert(t.name());
    for (const auto& v : proto_.input()) names_.Insert(v.name());
    for (const auto& n : proto_.node()) {
      for (const auto& o : n.output()) names_.Insert(o);
    }
  }

  absl::Status Define(const std::string& name, ir::Value* v, absl::string_view by) {
    if (!values_.emplace(name, v).second) {
      return absl::InvalidArgumentError(absl::StrCat("value '", name,
                                                     "' is defined twice (again by ", by,
                                                     "); an ONNX graph defines each name once"));
    }
    return absl::OkStatus();
  }

  absl::Status AddInitializers() {
    if (proto_.sparse_initializer_size() > 0) {
      return absl::UnimplementedError(absl::StrCat("sparse initializer '",
                                                   proto_.sparse_initializer(0).values().name(),
                                                   "' is not supported; store it dense"));
    }
    for (const auto& t : proto_.initializer()) {
      if (t.name().empty()) return absl::InvalidArgumentError("an initializer has no name");
      QCC_ASSIGN_OR_RETURN(Tensor data, TensorFromProto(t, base_dir_));
      QCC_RETURN_IF_ERROR(
          Define(t.name(), graph_->NewConstant(t.name(), std::move(data)), "an initializer"));
    }
    return absl::OkStatus();
  }

  absl::Status AddInputs() {
    for (const auto& in : proto_.input()) {
      if (in.name().empty()) return absl::InvalidArgumentError("a graph input has no name");
      // Old exporters list initializers as inputs too; they are constants.
      if (values_.contains(in.name()) && values_[in.name()]->constant() != nullptr) continue;
      QCC_ASSIGN_OR_RETURN(ir::TensorType type, TypeFromProto(in, *graph_));
      QCC_RETURN_IF_ERROR(Define(in.name(), graph_->AddInput(in.name(), type), "a graph input"));
    }
    return absl::OkStatus();
  }

  absl::Status CreateNode(NodeImport& n) {
    const std::string& domain = n.proto.domain();
    if (!domain.empty() && domain != "ai.onnx") {
      return absl::UnimplementedError(
          absl::StrCat(n.Label(), ": op '", n.proto.op_type(), "' of domain '", domain,
                       "' is not supported; qcc imports only default-domain (ai.onnx) ops"));
    }
    QCC_ASSIGN_OR_RETURN(ir::OpKind kind, internal::ResolveOpKind(n));
    ir::Attrs attrs = ir::DefaultAttrs(kind);
    QCC_RETURN_IF_ERROR(internal::ReadNodeAttrs(n, kind, attrs));

    int num_outputs = n.proto.output_size();
    while (num_outputs > 0 && n.proto.output(num_outputs - 1).empty()) --num_outputs;
    const int kept = internal::KeptOutputs(n, kind, num_outputs);
    for (int i = kept; i < num_outputs; ++i) dropped_.emplace(n.proto.output(i), n.Label());
    const std::string name =
        n.proto.name().empty() ? absl::StrCat(n.proto.op_type(), "_", n.index) : n.proto.name();
    std::vector<std::string> output_names;
    for (int i = 0; i < kept; ++i) {
      const std::string& o = n.proto.output(i);
      output_names.push_back(o.empty() ? names_.Fresh(absl::StrCat(name, "_unused", i)) : o);
    }
    n.node = graph_->AddNode(kind, name, {}, output_names);
    n.node->set_attrs(std::move(attrs));
    for (int i = 0; i < kept; ++i) {
      if (!n.proto.output(i).empty()) {
        QCC_RETURN_IF_ERROR(Define(n.proto.output(i), n.node->output(i), n.Label()));
      }
    }
    return absl::OkStatus();
  }

  absl::Status WireNode(NodeImport& n) {
    int num_inputs = n.proto.input_size();
    while (num_inputs > 0 && n.proto.input(num_inputs - 1).empty()) --num_inputs;
    for (int i = 0; i < num_inputs; ++i) {
      const std::string& in = n.proto.input(i);
      ir::Value* v = nullptr;
      if (!in.empty()) {
        auto it = values_.find(in);
        if (it == values_.end()) return Undefined(n, in);
        v = it->second;
      }
      n.node->AddInput(v);
    }
    QCC_RETURN_IF_ERROR(internal::CanonicalizeInputs(n));
    const ir::OpInfo& info = ir::GetOpInfo(n.node->kind());
    if (n.node->num_inputs() < info.min_inputs ||
        (info.max_inputs >= 0 && n.node->num_inputs() > info.max_inputs)) {
      return n.Error(
          absl::StatusCode::kInvalidArgument,
          absl::StrCat("has ", n.node->num_inputs(), " inputs; the op takes ", info.min_inputs,
                       " to ", info.max_inputs < 0 ? "any number" : absl::StrCat(info.max_inputs)));
    }
    if (n.node->num_outputs() < info.min_outputs ||
        (info.max_outputs >= 0 && n.node->num_outputs() > info.max_outputs)) {
      return n.Error(
          absl::StatusCode::kInvalidArgument,
          absl::StrCat("has ", n.node->num_outputs(), " outputs; the op gives ", info.min_outputs,
                       " to ",
                       info.max_outputs < 0 ? "any number" : absl::StrCat(info.max_outputs)));
    }
    return absl::OkStatus();
  }

  absl::Status Undefined(const NodeImport& n, const std::string& name) {
    auto it = dropped_.find(name);
    if (it != dropped_.end()) {
      return n.Error(absl::StatusCode::kUnimplemented,
                     absl::StrCat("uses '", name, "', a training-only output of ", it->second,
                                  ", which is not supported"));
    }
    return n.Error(
        absl::StatusCode::kInvalidArgument,
        absl::StrCat("input '", name, "' is produced by no node, initializer or graph input"));
  }

  absl::Status AddOutputs() {
    for (const auto& out : proto_.output()) {
      auto it = values_.find(out.name());
      if (it == values_.end() && dropped_.contains(out.name())) {
        return absl::UnimplementedError(
            absl::StrCat("graph output '", out.name(), "' is a training-only output of ",
                         dropped_[out.name()], ", which is not supported"));
      }
      if (it == values_.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "graph output '", out.name(), "' is produced by no node, initializer or graph input"));
      }
      QCC_ASSIGN_OR_RETURN(ir::TensorType type, TypeFromProto(out, *graph_));
      if (it->second->producer() != nullptr) it->second->set_type(std::move(type));
      graph_->AddOutput(it->second);
    }
    return absl::OkStatus();
  }

  /// value_info types become the declared types of node outputs; entries qcc cannot represent
  /// are hints only and are skipped.
  void DeclareValueInfo() {
    for (const auto& info : proto_.value_info()) {
      auto it = values_.find(info.name());
      if (it == values_.end() || it->second->producer() == nullptr) continue;
      auto type = TypeFromProto(info, *graph_);
      if (type.ok() && it->second->type().dtype == DType::kUndefined &&
          !it->second->type().has_rank()) {
        it->second->set_type(*std::move(type));
      }
    }
  }

  const onnx::GraphProto& proto_;
  const int opset_;
  const std::string& base_dir_;
  std::unique_ptr<ir::Graph> graph_;
  internal::NameTable names_;
  absl::flat_hash_map<std::string, ir::Value*> values_;
  absl::flat_hash_map<std::string, std::string> dropped_;  // output name -> producer label
  std::vector<internal::DTypeFixup> fixups_;
  std::deque<NodeImport> nodes_;  // stable addresses
};

}  // namespace

absl::StatusOr<std::unique_ptr<ir::Graph>> ImportOnnxModel(const onnx::ModelProto& model,
                                                           const std::string& base_dir) {
  int opset = -1;
  for (const auto& imp : model.opset_import()) {
    if (imp.domain().empty() || imp.domain() == "ai.onnx") opset = static_cast<int>(imp.version());
  }
  if (opset < 0) {
    if (model.opset_import_size() > 0) {
      std::vector<std::string> domains;
      for (const auto& imp : model.opset_import()) domains.push_back(imp.domain());
      return absl::UnimplementedError(absl::StrCat(
          "the model imports only the opset domains '", absl::StrJoin(domains, "', '"),
          "'; qcc supports default-domain (ai.onnx) opsets ", kMinOpset, " to ", kMaxOpset));
    }
    opset = 1;  // IR version 1 and 2 models carry no opset_import: opset 1
  }
  if (opset < kMinOpset || opset > kMaxOpset) {
    return absl::UnimplementedError(absl::StrCat(
        "opset ", opset, " is not supported; qcc supports default-domain opsets ", kMinOpset,
        " to ", kMaxOpset, " (convert the model with onnx.version_converter)"));
  }
  if (!model.has_graph()) {
    return absl::InvalidArgumentError("the model has no graph");
  }
  if (internal::HasQOperators(model.graph())) {
    QCC_ASSIGN_OR_RETURN(onnx::GraphProto expanded,
                         internal::ExpandQOperators(model.graph(), base_dir));
    return GraphImporter(expanded, opset, base_dir).Run();
  }
  return GraphImporter(model.graph(), opset, base_dir).Run();
}

absl::StatusOr<std::unique_ptr<ir::Graph>> ImportOnnxFile(const std::string& path) {
  onnx::ModelProto model;
  QCC_RETURN_IF_ERROR(internal::ParseProtoFile(path, "an ONNX model", &model));
  if (!model.has_graph()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is not an ONNX model (it holds no graph); pass a .onnx file"));
  }
  auto graph = ImportOnnxModel(model, internal::DirName(path));
  if (!graph.ok()) {
    return absl::Status(graph.status().code(), absl::StrCat(path, ": ", graph.status().message()));
  }
  return graph;
}

}  // namespace qcc::frontend
