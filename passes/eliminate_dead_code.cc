// eliminate-dead-code: removes nodes whose outputs nothing uses and constants nothing uses.
#include <memory>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "passes/passes.h"

namespace qcc::passes {
namespace {

class EliminateDeadCodePass : public Pass {
 public:
  absl::string_view name() const override { return "eliminate-dead-code"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    const absl::flat_hash_set<const ir::Value*> outputs(graph.outputs().begin(),
                                                        graph.outputs().end());
    auto is_dead = [&](const ir::Node& node) {
      // A node without outputs (Observe) is there for its effect.
      if (node.num_outputs() == 0) return false;
      for (const ir::Value* v : node.outputs()) {
        if (!v->uses().empty() || outputs.contains(v)) return false;
      }
      return true;
    };
    // Consumers come after producers: one backward sweep frees whole dead chains.
    std::vector<ir::Node*> nodes;
    for (const auto& n : graph.nodes()) nodes.push_back(n.get());
    bool changed = false;
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      if (!is_dead(**it)) continue;
      graph.RemoveNode(*it);
      changed = true;
    }
    for (const auto& v : graph.values()) {
      if (v->constant() != nullptr && v->uses().empty() && !outputs.contains(v.get())) {
        changed = true;
        break;
      }
    }
    if (changed) graph.RemoveDeadValues();
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateEliminateDeadCodePass() {
  return std::make_unique<EliminateDeadCodePass>();
}

}  // namespace qcc::passes
