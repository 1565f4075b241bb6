// resolve-reshape: gives a Reshape whose target shape is computed from Shape ops a constant
// target, when every element is a constant or an extent the Reshape can express without knowing
// it: 0 to copy the input's extent at the same position, or -1 for the one left.
//
// Exporters write "flatten, keeping the batch" as Reshape(x, Concat(Unsqueeze(Gather(Shape(x),
// 0)), [-1])) (efficientnet-lite0; ppocr-cls-mbv3 with Slice and Casts). With a dynamic batch N
// that target cannot be folded, but the symbolic-value analysis (ir/symbolic_values.h) knows it:
// [N, -1], which is the constant [0, -1] since N is the input's extent 0 ("copy", allowzero 0).
// A channel shuffle's [N, g, C/g, H, W] becomes [0, g, C/g, H, W] the same way; an element known
// only as an expression (N*C) becomes the single -1 when there is none yet.
#include <memory>
#include <optional>
#include <vector>

#include "ir/symbolic_values.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"

namespace qcc::passes {
namespace {

using ir::OpKind;

/// The constant target equivalent to the symbolic `target` of a Reshape of `x`, or nullopt.
std::optional<std::vector<int64_t>> ConstantTarget(const ir::SymbolicValue& target,
                                                   const ir::TensorType& x, bool allowzero) {
  std::vector<int64_t> out;
  bool has_minus_one = false;
  for (const std::optional<ir::SymInt>& e : target) {
    if (e && e->is_constant()) has_minus_one |= e->constant() == -1;
  }
  for (size_t i = 0; i < target.size(); ++i) {
    const std::optional<ir::SymInt>& e = target[i];
    if (!e) return std::nullopt;  // not known at all: it could even be -1 or 0
    if (e->is_constant()) {
      out.push_back(e->constant());
      continue;
    }
    const ir::Dim d = e->AsDim();
    if (!allowzero && ir::IsSymbol(d) && i < x.dims->size() && (*x.dims)[i] == d) {
      out.push_back(0);  // the input's own extent at this position
    } else if (!has_minus_one) {
      out.push_back(-1);  // the element count determines it
      has_minus_one = true;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

class ResolveReshapePass : public Pass {
 public:
  absl::string_view name() const override { return "resolve-reshape"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    const ir::SymbolicValues symbolic = ir::ComputeSymbolicValues(graph);
    bool changed = false;
    for (ir::Node* reshape : fuse::NodesOfKind(graph, {OpKind::kReshape})) {
      if (fuse::ConstantData(reshape->input(1)) != nullptr) continue;
      const ir::Value* x = reshape->input(0);
      auto it = symbolic.find(reshape->input(1));
      if (!x->type().has_rank() || it == symbolic.end()) continue;
      std::optional<std::vector<int64_t>> target =
          ConstantTarget(it->second, x->type(), reshape->attrs<ir::ReshapeAttrs>().allowzero != 0);
      if (!target) continue;
      const int64_t rank = static_cast<int64_t>(target->size());
      ir::Value* shape =
          graph.NewConstant(fuse::UniqueName(graph, reshape->output(0)->name() + "_shape"),
                            Tensor::FromVector<int64_t>(DType::kInt64, {rank}, *target));
      reshape->SetInput(1, shape);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateResolveReshapePass() { return std::make_unique<ResolveReshapePass>(); }

}  // namespace qcc::passes
