// fold-constants: evaluates nodes whose inputs are all known and replaces their outputs by
// constant values.
//
// Known inputs are constant values (initializers, earlier folds) and Constant nodes, which become
// constant values themselves. A node is evaluated by running it alone, in a one-node graph, on the
// CPU evaluator: the kernels are the reference kernels, never reimplemented here.
//
// Shape arithmetic is known even where a batch is symbolic: Shape(x) of x:[N,C,H,W] is not a
// constant, but Gather(Shape(x), 1) is C. Such values come from the symbolic-value analysis that
// shape inference runs (ir/symbolic_values.h); a node whose outputs it knows to be constants is
// replaced by them.
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
    // Folds make shapes static downstream (a Reshape with a now-constant shape), which the next
    // round's Shape nodes need.
    QCC_RETURN_IF_ERROR(ir::InferShapes(graph_, &symbolic_));
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
    bool all_constant = true;
    for (const ir::Value* v : node.inputs()) all_constant &= v == nullptr || v->constant();
    if (all_constant) return FoldEvaluated(node);
    return FoldSymbolic(node);
  }

  /// A node whose outputs the symbolic-value analysis knows to be constants (Shape of a static
  /// extent, Gather of a known element of a symbolic Shape, ...).
  bool FoldSymbolic(ir::Node& node) {
    std::vector<Tensor> data;
    for (const ir::Value* out : node.outputs()) {
      auto it = symbolic_.find(out);
      if (it == symbolic_.end() || !ir::IsConstant(it->second) || !out->type().IsStatic()) {
        return false;
      }
      data.push_back(ir::ConstantOfSymbolic(it->second, out->type()));
    }
    Replace(node, std::move(data));
    return true;
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

  /// Replaces every output of `node` by a constant holding `data[i]` and removes the node.
  void Replace(ir::Node& node, std::vector<Tensor> data) {
    for (int i = 0; i < node.num_outputs(); ++i) {
      ir::Value* out = node.output(i);
      const bool output = graph_outputs_.contains(out);
      ir::Value* c = graph_.NewConstant(FreshName(out->name() + (output ? "_unfolded" : "_folded")),
                                        std::move(data[i]));
      // A graph output keeps its name (and what a QDQ model gave it); the dead value takes the
      // fresh one.
      if (output) ir::SwapNames(*out, *c);
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
  ir::SymbolicValues symbolic_;
};

absl::StatusOr<bool> FoldConstantsPass::Run(ir::Graph& graph) const {
  Folder folder(graph);
  bool changed = false;
  for (int round = 0; round < kMaxRounds; ++round) {
    QCC_ASSIGN_OR_RETURN(bool folded, folder.Round());
    if (!folded) break;
    changed = true;
  }
  return changed;
}

}  // namespace

std::unique_ptr<Pass> CreateFoldConstantsPass() { return std::make_unique<FoldConstantsPass>(); }

}  // namespace qcc::passes
