// fold-constants: evaluates nodes whose inputs are all known and replaces their outputs by
// constant values.
//
// Known inputs are constant values (initializers, earlier folds) and Constant nodes, which become
// constant values themselves. A node is evaluated by running it alone, in a one-node graph, on the
// CPU evaluator: the kernels are the reference kernels, never reimplemented here.
//
// Shapes are known partially when a batch is symbolic: Shape(x) of x:[N,C,H,W] is not a constant,
// but Shape(x)[1] is. Such "partial shapes" are tracked as integer tensors whose entries are
// the dims (>= 0 known, < 0 unknown or symbolic) and pushed, with the same kernels, through the
// data-movement ops exporters put between Shape and Reshape (Gather, Slice, Concat, Squeeze,
// Unsqueeze, Reshape, Identity, Cast to int32/int64); a result whose entries are all known folds
// to a constant. Unknown entries stay negative through pure data movement, so a known entry is
// always a true extent.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "backend_cpu/evaluator.h"
#include "ir/shape_inference.h"
#include "passes/passes.h"
#include "support/status.h"

namespace qcc::passes {
namespace {

/// Outputs larger than this are left to run time (Expand, Tile, ConstantOfShape can blow up).
constexpr int64_t kMaxFoldedElements = int64_t{1} << 20;
/// Rounds of fold + re-infer; each round exposes shapes that the previous folds made static.
constexpr int kMaxRounds = 16;

/// Runs `node` alone on `inputs` (undefined tensors for omitted ones) on the CPU evaluator.
absl::StatusOr<std::vector<Tensor>> EvaluateNode(const ir::Node& node,
                                                 const std::vector<Tensor>& inputs, int opset) {
  ir::Graph g;
  g.set_opset(opset);
  std::vector<ir::Value*> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    in.push_back(inputs[i].defined() ? g.NewConstant(absl::StrCat("in", i), inputs[i]) : nullptr);
  }
  std::vector<std::string> out_names;
  for (int i = 0; i < node.num_outputs(); ++i) out_names.push_back(absl::StrCat("out", i));
  ir::Node* n = g.AddNode(node.kind(), node.name(), in, out_names);
  n->set_attrs(node.attrs_variant());
  for (ir::Value* v : n->outputs()) g.AddOutput(v);
  cpu::EvalOptions options;
  options.num_threads = 1;
  QCC_ASSIGN_OR_RETURN(auto evaluator, cpu::Evaluator::Create(g, options));
  return evaluator->Run({});
}

bool IsShapeDType(DType t) { return t == DType::kInt64 || t == DType::kInt32; }

/// How many leading inputs of `node` may be partial shapes that it only moves around (0: not a
/// data-movement op over shapes; -1: all inputs, as for Concat).
int PartialDataInputs(const ir::Node& node) {
  switch (node.kind()) {
    case ir::OpKind::kConcat:
      return -1;
    case ir::OpKind::kGather:
    case ir::OpKind::kSlice:
    case ir::OpKind::kSqueeze:
    case ir::OpKind::kUnsqueeze:
    case ir::OpKind::kReshape:
    case ir::OpKind::kIdentity:
      return 1;
    case ir::OpKind::kCast:
      return IsShapeDType(node.attrs<ir::CastAttrs>().to) ? 1 : 0;
    default:
      return 0;
  }
}

class FoldConstantsPass : public Pass {
 public:
  absl::string_view name() const override { return "fold-constants"; }
  absl::StatusOr<bool> Run(ir::Graph& graph) const override;
};

/// The state of one run over one graph.
class Folder {
 public:
  explicit Folder(ir::Graph& graph) : graph_(graph) {
    for (const auto& v : graph.values()) names_.insert(v->name());
    for (const ir::Value* v : graph.outputs()) graph_outputs_.insert(v);
  }

  /// One pass over the nodes in order; returns whether anything folded.
  absl::StatusOr<bool> Round() {
    std::vector<ir::Node*> nodes;
    for (const auto& n : graph_.nodes()) nodes.push_back(n.get());
    bool changed = false;
    for (ir::Node* node : nodes) {
      QCC_ASSIGN_OR_RETURN(bool folded, TryFold(*node));
      changed |= folded;
    }
    return changed;
  }

 private:
  absl::StatusOr<bool> TryFold(ir::Node& node) {
    if (node.num_outputs() == 0) return false;  // Observe: kept for its effect
    if (node.kind() == ir::OpKind::kConstant) {
      Replace(node, {node.attrs<ir::ConstantAttrs>().value});
      return true;
    }
    if (node.kind() == ir::OpKind::kShape || node.kind() == ir::OpKind::kSize) {
      return FoldShapeQuery(node);
    }
    bool all_constant = true;
    bool any_partial = false;
    for (const ir::Value* v : node.inputs()) {
      if (v == nullptr || v->constant() != nullptr) continue;
      all_constant = false;
      any_partial |= partial_.contains(v);
    }
    if (all_constant) return FoldEvaluated(node);
    if (any_partial) return FoldPartial(node);
    return false;
  }

  /// Shape of a ranked input and Size of a static one.
  absl::StatusOr<bool> FoldShapeQuery(ir::Node& node) {
    const ir::TensorType& x = node.input(0)->type();
    if (node.kind() == ir::OpKind::kSize) {
      if (!x.IsStatic()) return false;
      Tensor t(DType::kInt64, {});
      t.data<int64_t>()[0] = NumElements(x.StaticDims());
      Replace(node, {t});
      return true;
    }
    if (!x.has_rank()) return false;
    const auto& attrs = node.attrs<ir::ShapeAttrs>();
    const int64_t rank = x.rank();
    auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
    const int64_t start = clamp(attrs.start), end = std::max(start, clamp(attrs.end));
    Tensor t(DType::kInt64, {end - start});
    for (int64_t i = start; i < end; ++i) t.data<int64_t>()[i - start] = (*x.dims)[i];
    return Resolve(node, t);
  }

  /// A node whose inputs are all constant: run it unless its outputs are too large.
  absl::StatusOr<bool> FoldEvaluated(ir::Node& node) {
    if (cpu::DefaultOpRegistry().Find(node.kind()) == nullptr) return false;
    std::vector<ir::TensorType> types;
    std::vector<const Tensor*> values;
    std::vector<Tensor> inputs;
    for (const ir::Value* v : node.inputs()) {
      types.push_back(v ? v->type() : ir::TensorType());
      values.push_back(v ? v->constant() : nullptr);
      inputs.push_back(v ? *v->constant() : Tensor());
    }
    QCC_ASSIGN_OR_RETURN(std::vector<ir::TensorType> out_types,
                         ir::InferNode(node, std::move(types), std::move(values)));
    for (const ir::TensorType& t : out_types) {
      if (!t.IsStatic() || NumElements(t.StaticDims()) > kMaxFoldedElements) return false;
    }
    absl::StatusOr<std::vector<Tensor>> outputs = EvaluateNode(node, inputs, graph_.opset());
    // No kernel for this dtype or mode: the node stays and run time reports it if it runs.
    if (absl::IsUnimplemented(outputs.status())) return false;
    if (!outputs.ok()) return outputs.status();
    Replace(node, *std::move(outputs));
    return true;
  }

  /// A data-movement op over partial shapes (and constants): run it on the dim codes.
  absl::StatusOr<bool> FoldPartial(ir::Node& node) {
    const int data_inputs = PartialDataInputs(node);
    if (data_inputs == 0) return false;
    std::vector<Tensor> inputs;
    for (int i = 0; i < node.num_inputs(); ++i) {
      const ir::Value* v = node.input(i);
      if (v == nullptr) {
        inputs.emplace_back();
      } else if (v->constant() != nullptr) {
        inputs.push_back(*v->constant());
      } else if (auto it = partial_.find(v);
                 it != partial_.end() && (data_inputs < 0 || i < data_inputs)) {
        inputs.push_back(it->second);
      } else {
        return false;
      }
    }
    // Any failure here only means the shape stays unknown; run time checks the real values.
    absl::StatusOr<std::vector<Tensor>> outputs = EvaluateNode(node, inputs, graph_.opset());
    if (!outputs.ok() || outputs->size() != 1 || !IsShapeDType((*outputs)[0].dtype())) {
      return false;
    }
    return Resolve(node, (*outputs)[0]);
  }

  /// `codes` is the single output of `node` as dim codes: folds it when all are known, else
  /// records it as a partial shape. Returns whether the graph changed.
  bool Resolve(ir::Node& node, const Tensor& codes) {
    bool known = true;
    for (int64_t i = 0; i < codes.numel(); ++i) known &= codes.GetAsInt64(i) >= 0;
    if (known) {
      Replace(node, {codes});
      return true;
    }
    partial_[node.output(0)] = codes;
    return false;
  }

  /// Replaces every output of `node` by a constant holding `data[i]` and removes the node.
  void Replace(ir::Node& node, std::vector<Tensor> data) {
    for (int i = 0; i < node.num_outputs(); ++i) {
      ir::Value* out = node.output(i);
      std::string name;
      if (graph_outputs_.contains(out)) {
        // The graph output keeps its name; the dead value gives it up.
        name = out->name();
        out->set_name(FreshName(name + "_unfolded"));
      } else {
        name = FreshName(out->name() + "_folded");
      }
      ir::Value* c = graph_.NewConstant(std::move(name), std::move(data[i]));
      if (graph_outputs_.erase(out) > 0) graph_outputs_.insert(c);
      graph_.ReplaceAllUsesWith(out, c);
    }
    graph_.RemoveNode(&node);
  }

  std::string FreshName(const std::string& stem) {
    std::string name = stem;
    for (int k = 1; names_.contains(name); ++k) name = absl::StrCat(stem, "_", k);
    names_.insert(name);
    return name;
  }

  ir::Graph& graph_;
  absl::flat_hash_set<std::string> names_;
  absl::flat_hash_set<const ir::Value*> graph_outputs_;
  absl::flat_hash_map<const ir::Value*, Tensor> partial_;
};

absl::StatusOr<bool> FoldConstantsPass::Run(ir::Graph& graph) const {
  Folder folder(graph);
  bool changed = false;
  for (int round = 0; round < kMaxRounds; ++round) {
    QCC_ASSIGN_OR_RETURN(bool folded, folder.Round());
    if (!folded) break;
    changed = true;
    // Folds make shapes static downstream (a Reshape with a now-constant shape), which the next
    // round's Shape nodes need.
    QCC_RETURN_IF_ERROR(ir::InferShapes(graph));
  }
  return changed;
}

}  // namespace

std::unique_ptr<Pass> CreateFoldConstantsPass() { return std::make_unique<FoldConstantsPass>(); }

}  // namespace qcc::passes
