// cancel-qdq: a Quantize of a Dequantize back onto the same grid removed (passes.h).
#include <memory>
#include <utility>
#include <vector>

#include "passes/passes.h"

namespace qcc::passes {
namespace {

using ir::OpKind;

/// cancel-qdq: Quantize(Dequantize(x)) onto the grid x is already on is x.
class CancelQdqPass : public Pass {
 public:
  absl::string_view name() const override { return "cancel-qdq"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    std::vector<ir::Node*> cancelled;
    for (const auto& owned : graph.nodes()) {
      ir::Node& q = *owned;
      if (q.kind() != OpKind::kQuantize) continue;
      const ir::Node* dq = q.input(0)->producer();
      if (dq == nullptr || dq->kind() != OpKind::kDequantize) continue;
      ir::Value* x = dq->input(0);
      ir::Value* y = q.output(0);
      // (q - zp) * s / s rounds back to q - zp exactly for |q - zp| <= 255, so the pair is the
      // identity when the grids are the same. (Dequantize(Quantize(v)) is not: it rounds v.)
      if (x->quant() == nullptr || y->quant() == nullptr ||
          x->quant()->scale != y->quant()->scale ||
          x->quant()->zero_point != y->quant()->zero_point || !(x->type() == y->type()) ||
          !SameSaturation(*x, *y)) {
        continue;
      }
      graph.ReplaceAllUsesWith(y, x);
      cancelled.push_back(&q);
    }
    for (ir::Node* q : cancelled) graph.RemoveNode(q);
    return !cancelled.empty();
  }

 private:
  static bool SameSaturation(const ir::Value& a, const ir::Value& b) {
    const std::pair<float, float>* sa = a.saturation();
    const std::pair<float, float>* sb = b.saturation();
    return sa == nullptr ? sb == nullptr : sb != nullptr && *sa == *sb;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateCancelQdqPass() { return std::make_unique<CancelQdqPass>(); }

}  // namespace qcc::passes
