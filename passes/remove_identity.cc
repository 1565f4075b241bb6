// remove-identity: removes Identity and inference-mode Dropout by forwarding their input.
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "passes/passes.h"

namespace qcc::passes {
namespace {

/// Whether `node` passes input 0 through unchanged: Identity, or a Dropout that is not in
/// training mode (training_mode absent or a constant false) and whose mask nothing reads.
bool IsForwarding(const ir::Node& node, const absl::flat_hash_set<const ir::Value*>& outputs) {
  if (node.kind() == ir::OpKind::kIdentity) return true;
  if (node.kind() != ir::OpKind::kDropout) return false;
  if (const ir::Value* training = node.input(2)) {
    const Tensor* t = training->constant();
    if (t == nullptr || t->numel() != 1 || t->GetAsInt64(0) != 0) return false;
  }
  if (node.num_outputs() > 1) {
    const ir::Value* mask = node.output(1);
    if (!mask->uses().empty() || outputs.contains(mask)) return false;
  }
  return true;
}

class RemoveIdentityPass : public Pass {
 public:
  absl::string_view name() const override { return "remove-identity"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    absl::flat_hash_set<const ir::Value*> outputs(graph.outputs().begin(), graph.outputs().end());
    absl::flat_hash_set<std::string> names;
    for (const auto& v : graph.values()) names.insert(v->name());
    std::vector<ir::Node*> nodes;
    for (const auto& n : graph.nodes()) nodes.push_back(n.get());
    bool changed = false;
    for (ir::Node* node : nodes) {
      if (!IsForwarding(*node, outputs)) continue;
      ir::Value* in = node->input(0);
      ir::Value* out = node->output(0);
      if (outputs.contains(out)) {
        // The graph output keeps its name, so `in` takes it over; a graph input or another
        // graph output cannot be renamed, and then the node stays.
        if (in->is_graph_input() || outputs.contains(in)) continue;
        std::string stem = in->name() + "_forwarded";
        std::string fresh = stem;
        for (int k = 1; names.contains(fresh); ++k) fresh = absl::StrCat(stem, "_", k);
        names.insert(fresh);
        // `in` takes the output's name (and what a QDQ model gave it), `out` the fresh one.
        in->set_name(fresh);
        ir::SwapNames(*in, *out);
        outputs.erase(out);
        outputs.insert(in);
      }
      graph.ReplaceAllUsesWith(out, in);
      graph.RemoveNode(node);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateRemoveIdentityPass() { return std::make_unique<RemoveIdentityPass>(); }

}  // namespace qcc::passes
