// ONNX export: see frontend/onnx_exporter.h.
#include "frontend/onnx_exporter.h"

#include <climits>
#include <cmath>
#include <iterator>
#include <type_traits>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "frontend/internal/file_util.h"
#include "frontend/tensor_proto.h"
#include "ir/op_kind.h"
#include "onnx/onnx_pb.h"
#include "support/atomic_file.h"
#include "support/status.h"

namespace qcc::frontend {
namespace {

using onnx::AttributeProto;

/// Names of attribute fields ONNX requires even at their default value.
bool AlwaysWritten(ir::OpKind kind, absl::string_view field) {
  return field == "to" || field == "value" || field == "blocksize" ||
         (field == "axis" && kind == ir::OpKind::kConcat);
}

/// The visitor handed to an attribute struct's Visit (next to the struct's defaults): writes each
/// field that differs from its default as an ONNX attribute of the same name.
class AttrWriter {
 public:
  AttrWriter(ir::OpKind kind, onnx::NodeProto* node) : kind_(kind), node_(node) {}

  template <typename T>
  void Write(absl::string_view name, const T& field, const T& default_value) {
    if (name == "coerce_2d" || absl::StartsWith(name, "qcc_")) return;
    if (Equal(field, default_value) && !AlwaysWritten(kind_, name)) return;
    AttributeProto* a = node_->add_attribute();
    a->set_name(std::string(name));
    Set(a, field);
  }

 private:
  static bool Equal(const Tensor& a, const Tensor& b) { return !a.defined() && !b.defined(); }
  template <typename T>
  static bool Equal(const T& a, const T& b) {
    return a == b;
  }
  void Set(AttributeProto* a, int64_t v) {
    a->set_type(AttributeProto::INT);
    a->set_i(v);
  }
  void Set(AttributeProto* a, float v) {
    a->set_type(AttributeProto::FLOAT);
    a->set_f(v);
  }
  void Set(AttributeProto* a, const ir::Ints& v) {
    a->set_type(AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  void Set(AttributeProto* a, const ir::Floats& v) {
    a->set_type(AttributeProto::FLOATS);
    for (float x : v) a->add_floats(x);
  }
  void Set(AttributeProto* a, DType v) {
    a->set_type(AttributeProto::INT);
    a->set_i(DTypeToOnnx(v));
  }
  void Set(AttributeProto* a, const Tensor& v) {
    a->set_type(AttributeProto::TENSOR);
    TensorToProto(v, "", a->mutable_t());
  }
  template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
  void Set(AttributeProto* a, E v) {
    a->set_type(AttributeProto::STRING);
    a->set_s(std::string(ir::EnumNames<E>::kNames[static_cast<size_t>(v)]));
  }

  ir::OpKind kind_;
  onnx::NodeProto* node_;
};

/// Writes the attributes of `attrs` that differ from the struct's defaults (or that ONNX requires).
template <typename A>
void WriteAttrs(const A& attrs, ir::OpKind kind, onnx::NodeProto* node) {
  const A defaults{};
  AttrWriter writer(kind, node);
  // Visit both structs in step: the n-th field of `attrs` pairs with the n-th of `defaults`.
  int index = 0;
  attrs.Visit([&](absl::string_view name, const auto& field) {
    const int mine = index++;
    int seen = 0;
    defaults.Visit([&](absl::string_view, const auto& d) {
      if (seen++ != mine) return;
      if constexpr (std::is_same_v<std::decay_t<decltype(d)>, std::decay_t<decltype(field)>>) {
        writer.Write(name, field, d);
      }
    });
  });
}

void SetType(const ir::Graph& graph, const ir::Value& v, onnx::ValueInfoProto* info) {
  info->set_name(v.name());
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(DTypeToOnnx(v.dtype()));
  if (!v.type().has_rank()) return;
  auto* shape = tensor->mutable_shape();
  for (ir::Dim d : *v.type().dims) {
    auto* dim = shape->add_dim();
    if (ir::IsKnown(d)) {
      dim->set_dim_value(d);
    } else if (ir::IsSymbol(d) && ir::SymbolIndex(d) < static_cast<int>(graph.symbols().size())) {
      dim->set_dim_param(graph.symbols()[ir::SymbolIndex(d)]);
    }
  }
}

class Exporter {
 public:
  explicit Exporter(const ir::Graph& graph) : graph_(graph) {
    for (const auto& v : graph.values()) names_.insert(v->name());
  }

  absl::StatusOr<onnx::ModelProto> Run() {
    onnx::ModelProto model;
    model.set_ir_version(9);  // what opsets 19 and 20 need; ONNX Runtime 1.15+ reads it
    model.set_producer_name("qcc");
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(ExportOpset(graph_));
    onnx::GraphProto* g = model.mutable_graph();
    g->set_name(graph_.name().empty() ? "qcc" : graph_.name());
    for (const ir::Value* in : graph_.inputs()) SetType(graph_, *in, g->add_input());
    for (const ir::Value* out : graph_.outputs()) SetType(graph_, *out, g->add_output());
    for (const auto& v : graph_.values()) {
      if (v->constant() != nullptr && !v->uses().empty()) {
        TensorToProto(*v->constant(), v->name(), g->add_initializer());
      }
    }
    // A graph output that is a constant or a graph input needs a node producing it.
    for (const ir::Value* out : graph_.outputs()) {
      if (out->producer() != nullptr) continue;
      if (out->constant() != nullptr && out->uses().empty()) {
        TensorToProto(*out->constant(), out->name(), g->add_initializer());
      }
    }
    for (const auto& node : graph_.nodes()) QCC_RETURN_IF_ERROR(AddNode(*node, g));
    return model;
  }

 private:
  std::string Fresh(absl::string_view stem) {
    std::string name(stem);
    for (int k = 1; names_.contains(name); ++k) name = absl::StrCat(stem, "_", k);
    names_.insert(name);
    return name;
  }

  absl::Status AddNode(const ir::Node& node, onnx::GraphProto* g) {
    if (node.kind() == ir::OpKind::kObserve) {
      return absl::UnimplementedError(absl::StrCat("node '", node.name(),
                                                   "' is a qcc.Observe; export the model before "
                                                   "observers are inserted"));
    }
    if (node.kind() == ir::OpKind::kAttention) {
      return absl::UnimplementedError(
          absl::StrCat("node '", node.name(),
                       "' is a qcc.Attention, which has no ONNX form here; export the graph before "
                       "fuse-attention runs (passes::OnnxFormPipeline)"));
    }
    if (absl::StartsWith(ir::OpName(node.kind()), "qcc.")) {
      // The quantized graph's ops (passes/realize_int8.h): passes::QdqForm writes them in ONNX.
      return absl::UnimplementedError(absl::StrCat(
          "node '", node.name(), "' is a ", ir::OpName(node.kind()),
          ", which has no ONNX form; write the quantized graph with passes::QdqForm first"));
    }
    if ((node.kind() == ir::OpKind::kSoftmax || node.kind() == ir::OpKind::kLogSoftmax ||
         node.kind() == ir::OpKind::kHardmax) &&
        node.attrs<ir::SoftmaxAttrs>().coerce_2d != 0) {
      return AddCoerced2d(node, g);
    }
    onnx::NodeProto* n = g->add_node();
    n->set_name(node.name());
    n->set_op_type(std::string(ir::OpName(node.kind())));
    int last = node.num_inputs();
    while (last > 0 && node.input(last - 1) == nullptr) --last;
    for (int i = 0; i < last; ++i) n->add_input(node.input(i) ? node.input(i)->name() : "");
    for (const ir::Value* out : node.outputs()) n->add_output(out->name());
    std::visit([&](const auto& a) { WriteAttrs(a, node.kind(), n); }, node.attrs_variant());

    // A fused activation runs after the op: the op writes a fresh tensor the activation reads.
    ir::Activation act = ir::Activation::kNone;
    float alpha = 0, lo = 0, hi = 0;
    std::visit(
        [&](const auto& a) {
          if constexpr (std::is_same_v<std::decay_t<decltype(a)>, ir::ConvAttrs> ||
                        std::is_same_v<std::decay_t<decltype(a)>, ir::GemmAttrs> ||
                        std::is_same_v<std::decay_t<decltype(a)>, ir::AddAttrs>) {
            act = a.activation;
            alpha = a.activation_alpha;
            lo = a.activation_min;
            hi = a.activation_max;
          }
        },
        node.attrs_variant());
    if (act == ir::Activation::kNone) return absl::OkStatus();
    const std::string y = node.output(0)->name();
    const std::string pre = Fresh(absl::StrCat(y, "_preact"));
    n->set_output(0, pre);
    onnx::NodeProto* a = g->add_node();
    a->set_name(Fresh(absl::StrCat(node.name(), "_act")));
    a->add_input(pre);
    a->add_output(y);
    switch (act) {
      case ir::Activation::kRelu:
        a->set_op_type("Relu");
        break;
      case ir::Activation::kLeakyRelu: {
        a->set_op_type("LeakyRelu");
        AttributeProto* at = a->add_attribute();
        at->set_name("alpha");
        at->set_type(AttributeProto::FLOAT);
        at->set_f(alpha);
        break;
      }
      case ir::Activation::kClip: {
        a->set_op_type("Clip");
        const DType t = node.output(0)->dtype();
        for (float bound : {lo, hi}) {
          if (std::isinf(bound)) {
            a->add_input("");
            continue;
          }
          const std::string name = Fresh(absl::StrCat(a->name(), bound == lo ? "_min" : "_max"));
          Tensor s(DType::kFloat32, {});
          s.data<float>()[0] = bound;
          TensorToProto(t == DType::kFloat32 ? s : CastTensor(s, t), name, g->add_initializer());
          a->add_input(name);
        }
        while (a->input_size() > 1 && a->input(a->input_size() - 1).empty()) {
          a->mutable_input()->RemoveLast();
        }
        break;
      }
      case ir::Activation::kNone:
        break;
    }
    return absl::OkStatus();
  }

  /// The opset-1..12 Softmax family: the input seen as 2-D [prod(d < axis), prod(d >= axis)]. On
  /// the last axis that is the opset-13 op; otherwise Flatten, the op on axis 1, and a Reshape
  /// back to the input's shape.
  absl::Status AddCoerced2d(const ir::Node& node, onnx::GraphProto* g) {
    const ir::Value* x = node.input(0);
    int64_t axis = node.attrs<ir::SoftmaxAttrs>().axis;
    const int64_t rank = x->type().rank();
    if (rank < 0) {
      return absl::UnimplementedError(absl::StrCat(
          "node '", node.name(), "' (", ir::OpName(node.kind()),
          ") uses the opset-1 2-D form on an input of unknown rank: it cannot be exported"));
    }
    if (axis < 0) axis += rank;
    auto add = [&](absl::string_view op, absl::string_view suffix) {
      onnx::NodeProto* n = g->add_node();
      n->set_name(Fresh(absl::StrCat(node.name(), suffix)));
      n->set_op_type(std::string(op));
      return n;
    };
    auto set_axis = [](onnx::NodeProto* n, int64_t value) {
      AttributeProto* a = n->add_attribute();
      a->set_name("axis");
      a->set_type(AttributeProto::INT);
      a->set_i(value);
    };
    const std::string op(ir::OpName(node.kind()));
    if (axis == rank - 1) {
      onnx::NodeProto* n = add(op, "");
      n->set_name(node.name());
      n->add_input(x->name());
      n->add_output(node.output(0)->name());
      set_axis(n, axis);
      return absl::OkStatus();
    }
    onnx::NodeProto* flatten = add("Flatten", "_flatten");
    flatten->add_input(x->name());
    flatten->add_output(Fresh(absl::StrCat(x->name(), "_2d")));
    set_axis(flatten, axis);
    onnx::NodeProto* op_2d = add(op, "");
    op_2d->add_input(flatten->output(0));
    op_2d->add_output(Fresh(absl::StrCat(node.output(0)->name(), "_2d")));
    set_axis(op_2d, 1);
    onnx::NodeProto* shape = add("Shape", "_shape");
    shape->add_input(x->name());
    shape->add_output(Fresh(absl::StrCat(x->name(), "_shape")));
    onnx::NodeProto* reshape = add("Reshape", "_reshape");
    reshape->add_input(op_2d->output(0));
    reshape->add_input(shape->output(0));
    reshape->add_output(node.output(0)->name());
    return absl::OkStatus();
  }

  const ir::Graph& graph_;
  absl::flat_hash_set<std::string> names_;
};

}  // namespace

int ExportOpset(const ir::Graph& graph) {
  for (const auto& n : graph.nodes()) {
    if (n->kind() == ir::OpKind::kGelu) return 20;
  }
  return 19;
}

absl::StatusOr<onnx::ModelProto> ExportOnnxModel(const ir::Graph& graph) {
  return Exporter(graph).Run();
}

absl::Status WriteOnnxFile(const onnx::ModelProto& model, const std::string& path) {
  const size_t bytes = model.ByteSizeLong();
  if (bytes > static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model for '", path, "' is ", bytes, " bytes, over protobuf's 2 GiB"));
  }
  std::string data;
  if (!model.SerializeToString(&data)) {
    return absl::InternalError(absl::StrCat("could not serialize the model for '", path, "'"));
  }
  return WriteFileAtomically(path, data);
}

}  // namespace qcc::frontend
