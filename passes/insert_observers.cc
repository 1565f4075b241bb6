// insert-observers: adds a calibration tap (Observe) on every tensor the int8 compile needs a
// range for (passes/quantizable.h), and nowhere else.
#include <memory>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "passes/passes.h"
#include "passes/quantizable.h"

namespace qcc::passes {
namespace {

class InsertObserversPass : public Pass {
 public:
  absl::string_view name() const override { return "insert-observers"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    // Tensors that already have a tap (a second run adds nothing).
    absl::flat_hash_set<const ir::Value*> tapped;
    int64_t next_id = 0;
    for (const auto& n : graph.nodes()) {
      if (n->kind() != ir::OpKind::kObserve) continue;
      tapped.insert(n->input(0));
      next_id = std::max(next_id, n->attrs<ir::ObserveAttrs>().observer_id + 1);
    }
    bool changed = false;
    for (const ir::Value* v : TensorsToObserve(graph)) {
      if (tapped.contains(v)) continue;
      ir::Value* value = const_cast<ir::Value*>(v);
      ir::Node* tap =
          graph.AddNode(ir::OpKind::kObserve, absl::StrCat("observe:", v->name()), {value}, {});
      tap->mutable_attrs<ir::ObserveAttrs>().observer_id = next_id++;
      // Right after the producer, so the evaluator can free the tensor as early as before.
      graph.MoveNodeAfter(tap, v->producer());
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateInsertObserversPass() {
  return std::make_unique<InsertObserversPass>();
}

}  // namespace qcc::passes
