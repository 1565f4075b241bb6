// Test helpers: build small ONNX ModelProtos in C++, save them to a temporary folder, import them.
#ifndef QCC_TESTS_FRONTEND_MODEL_BUILDER_H_
#define QCC_TESTS_FRONTEND_MODEL_BUILDER_H_

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "frontend/onnx_importer.h"
#include "frontend/tensor_proto.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "onnx/onnx_pb.h"
#include "support/tensor.h"
#include "tests/testing/temp_dir.h"

namespace qcc::frontend::testing {

/// One extent of a declared shape: a number (dim_value) or a name (dim_param).
struct DimSpec {
  DimSpec(int64_t v) : value(v) {}      // NOLINT: implicit on purpose
  DimSpec(const char* p) : param(p) {}  // NOLINT
  int64_t value = 0;
  std::string param;
};

/// A fresh, empty folder under the test temporary directory.
inline std::string MakeTempDir() { return qcc::testing::NewTestDir("qcc_frontend"); }

/// Writes `bytes` to `path`.
inline void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Fills `info` with a tensor type.
inline void SetTensorType(onnx::ValueInfoProto* info, const std::string& name, int elem_type,
                          const std::vector<DimSpec>& dims, bool has_shape = true) {
  info->set_name(name);
  auto* tt = info->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  if (!has_shape) return;
  auto* shape = tt->mutable_shape();
  for (const DimSpec& d : dims) {
    auto* dim = shape->add_dim();
    if (d.param.empty()) {
      dim->set_dim_value(d.value);
    } else {
      dim->set_dim_param(d.param);
    }
  }
}

/// Builds a ModelProto with one default-domain opset import.
class ModelBuilder {
 public:
  explicit ModelBuilder(int opset = 13) {
    model_.set_ir_version(7);
    model_.set_producer_name("qcc-test");
    auto* imp = model_.add_opset_import();
    imp->set_domain("");
    imp->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  onnx::ModelProto& model() { return model_; }
  onnx::GraphProto* graph() { return model_.mutable_graph(); }

  /// Adds a graph input of ONNX element type `elem_type` (1 = float).
  ModelBuilder& Input(const std::string& name, const std::vector<DimSpec>& dims,
                      int elem_type = onnx::TensorProto::FLOAT) {
    SetTensorType(graph()->add_input(), name, elem_type, dims);
    return *this;
  }
  /// Adds a graph output; without `dims` its shape is left undeclared.
  ModelBuilder& Output(const std::string& name, int elem_type = onnx::TensorProto::FLOAT) {
    SetTensorType(graph()->add_output(), name, elem_type, {}, false);
    return *this;
  }
  ModelBuilder& Output(const std::string& name, const std::vector<DimSpec>& dims,
                       int elem_type = onnx::TensorProto::FLOAT) {
    SetTensorType(graph()->add_output(), name, elem_type, dims);
    return *this;
  }
  /// Adds an initializer stored as raw_data.
  ModelBuilder& Initializer(const std::string& name, const Tensor& t) {
    TensorToProto(t, name, graph()->add_initializer());
    return *this;
  }
  /// Appends a node; returns it so that attributes can be added.
  onnx::NodeProto* Node(const std::string& op_type, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    auto* n = graph()->add_node();
    n->set_op_type(op_type);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return n;
  }

  /// Imports the model from memory.
  absl::StatusOr<std::unique_ptr<ir::Graph>> Import(const std::string& base_dir = "") const {
    return ImportOnnxModel(model_, base_dir);
  }
  /// Serialises the model to `dir`/model.onnx and imports that file.
  absl::StatusOr<std::unique_ptr<ir::Graph>> SaveAndImport(const std::string& dir) const {
    const std::string path = dir + "/model.onnx";
    WriteBytes(path, model_.SerializeAsString());
    return ImportOnnxFile(path);
  }

 private:
  onnx::ModelProto model_;
};

inline onnx::AttributeProto* AddAttr(onnx::NodeProto* n, const std::string& name,
                                     onnx::AttributeProto::AttributeType type) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}
inline void AttrInt(onnx::NodeProto* n, const std::string& name, int64_t v) {
  AddAttr(n, name, onnx::AttributeProto::INT)->set_i(v);
}
inline void AttrFloat(onnx::NodeProto* n, const std::string& name, float v) {
  AddAttr(n, name, onnx::AttributeProto::FLOAT)->set_f(v);
}
inline void AttrString(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  AddAttr(n, name, onnx::AttributeProto::STRING)->set_s(v);
}
inline void AttrInts(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = AddAttr(n, name, onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void AttrFloats(onnx::NodeProto* n, const std::string& name, const std::vector<float>& v) {
  auto* a = AddAttr(n, name, onnx::AttributeProto::FLOATS);
  for (float x : v) a->add_floats(x);
}
inline void AttrTensor(onnx::NodeProto* n, const std::string& name, const Tensor& t) {
  TensorToProto(t, "", AddAttr(n, name, onnx::AttributeProto::TENSOR)->mutable_t());
}

/// The node of `graph` with `name`, or nullptr.
inline const ir::Node* FindNode(const ir::Graph& graph, const std::string& name) {
  for (const auto& n : graph.nodes()) {
    if (n->name() == name) return n.get();
  }
  return nullptr;
}

/// The data of input `i` of `node` when it is a constant value; fails the test otherwise.
inline Tensor ConstInput(const ir::Node& node, int i) {
  const ir::Value* v = node.input(i);
  EXPECT_NE(v, nullptr) << "input " << i << " of " << node.name() << " is omitted";
  if (v == nullptr || v->constant() == nullptr) {
    ADD_FAILURE() << "input " << i << " of " << node.name() << " is not a constant";
    return Tensor();
  }
  return *v->constant();
}

}  // namespace qcc::frontend::testing

#endif  // QCC_TESTS_FRONTEND_MODEL_BUILDER_H_
