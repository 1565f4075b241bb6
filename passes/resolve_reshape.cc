// resolve-reshape: gives a Reshape whose target shape is computed from Shape ops a constant
// target, when every element is a constant or the extent of a tensor that the Reshape keeps.
//
// Exporters write "flatten, keeping the batch" as Reshape(x, Concat(Slice(Shape(x), 0, 1), [-1]))
// (ppocr-cls-mbv3, with Casts in between). With a dynamic batch that chain cannot be folded,
// but its value is known symbolically: [dim 0 of x, -1]. An element equal to the input's own
// extent at the same position becomes 0 ("copy", allowzero 0); a known extent becomes its value.
#include <memory>
#include <optional>
#include <vector>

#include "passes/fuse_util.h"
#include "passes/passes.h"

namespace qcc::passes {
namespace {

using ir::OpKind;

/// One element of a shape vector: a constant, or extent `axis` of `of`.
struct ShapeElement {
  int64_t value = 0;
  const ir::Value* of = nullptr;
  int64_t axis = 0;
};

/// The elements of `v` when it is an integer vector built from constants and Shape ops
/// through Cast, Slice (constant bounds, step 1), Gather (constant indices) and Concat.
std::optional<std::vector<ShapeElement>> Elements(const ir::Value* v, int depth = 0) {
  if (depth > 16 || v == nullptr) return std::nullopt;
  if (const Tensor* c = fuse::ConstantData(v)) {
    if (c->rank() > 1 || IsFloat(c->dtype())) return std::nullopt;
    std::vector<ShapeElement> out;
    for (int64_t i = 0; i < c->numel(); ++i) out.push_back({c->GetAsInt64(i), nullptr, 0});
    return out;
  }
  const ir::Node* n = v->producer();
  if (n == nullptr) return std::nullopt;
  switch (n->kind()) {
    case OpKind::kShape: {
      const ir::Value* x = n->input(0);
      if (!x->type().has_rank()) return std::nullopt;
      const int64_t rank = static_cast<int64_t>(x->type().dims->size());
      const auto& a = n->attrs<ir::ShapeAttrs>();
      int64_t start = a.start < 0 ? a.start + rank : a.start;
      int64_t end = a.end < 0 ? a.end + rank : std::min(a.end, rank);
      std::vector<ShapeElement> out;
      for (int64_t k = std::max<int64_t>(start, 0); k < end; ++k) out.push_back({0, x, k});
      return out;
    }
    case OpKind::kCast:
      if (IsFloat(v->dtype())) return std::nullopt;
      return Elements(n->input(0), depth + 1);
    case OpKind::kConcat: {
      std::vector<ShapeElement> out;
      for (const ir::Value* in : n->inputs()) {
        std::optional<std::vector<ShapeElement>> part = Elements(in, depth + 1);
        if (!part) return std::nullopt;
        out.insert(out.end(), part->begin(), part->end());
      }
      return out;
    }
    case OpKind::kSlice: {
      std::optional<std::vector<ShapeElement>> all = Elements(n->input(0), depth + 1);
      const Tensor* starts = fuse::ConstantData(n->input(1));
      const Tensor* ends = fuse::ConstantData(n->input(2));
      if (!all || starts == nullptr || ends == nullptr || starts->numel() != 1 ||
          ends->numel() != 1) {
        return std::nullopt;
      }
      if (const ir::Value* steps = n->input(4)) {
        const Tensor* s = fuse::ConstantData(steps);
        if (s == nullptr || s->numel() != 1 || s->GetAsInt64(0) != 1) return std::nullopt;
      }
      const int64_t size = static_cast<int64_t>(all->size());
      int64_t b = starts->GetAsInt64(0), e = ends->GetAsInt64(0);
      b = std::clamp<int64_t>(b < 0 ? b + size : b, 0, size);
      e = std::clamp<int64_t>(e < 0 ? e + size : e, 0, size);
      return std::vector<ShapeElement>(all->begin() + b, all->begin() + std::max(b, e));
    }
    case OpKind::kGather: {
      std::optional<std::vector<ShapeElement>> all = Elements(n->input(0), depth + 1);
      const Tensor* idx = fuse::ConstantData(n->input(1));
      if (!all || idx == nullptr || idx->rank() > 1) return std::nullopt;
      std::vector<ShapeElement> out;
      const int64_t size = static_cast<int64_t>(all->size());
      for (int64_t i = 0; i < idx->numel(); ++i) {
        int64_t k = idx->GetAsInt64(i);
        k = k < 0 ? k + size : k;
        if (k < 0 || k >= size) return std::nullopt;
        out.push_back((*all)[k]);
      }
      return out;
    }
    default:
      return std::nullopt;
  }
}

class ResolveReshapePass : public Pass {
 public:
  absl::string_view name() const override { return "resolve-reshape"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    bool changed = false;
    for (ir::Node* reshape : fuse::NodesOfKind(graph, {OpKind::kReshape})) {
      if (fuse::ConstantData(reshape->input(1)) != nullptr) continue;
      if (reshape->attrs<ir::ReshapeAttrs>().allowzero != 0) continue;
      const ir::Value* x = reshape->input(0);
      if (!x->type().has_rank()) continue;
      const auto& xdims = *x->type().dims;
      std::optional<std::vector<ShapeElement>> elements = Elements(reshape->input(1));
      if (!elements) continue;
      std::vector<int64_t> target;
      for (size_t i = 0; i < elements->size(); ++i) {
        const ShapeElement& e = (*elements)[i];
        if (e.of == nullptr) {
          target.push_back(e.value);
          continue;
        }
        const ir::Dim d = (*e.of->type().dims)[e.axis];
        if (ir::IsKnown(d)) {
          target.push_back(d);
        } else if (ir::IsSymbol(d) && i < xdims.size() && xdims[i] == d) {
          target.push_back(0);  // copy the input's extent at this position: the same symbol
        } else {
          break;
        }
      }
      if (target.size() != elements->size()) continue;
      const int64_t rank = static_cast<int64_t>(target.size());
      ir::Value* shape =
          graph.NewConstant(fuse::UniqueName(graph, reshape->output(0)->name() + "_shape"),
                            Tensor::FromVector<int64_t>(DType::kInt64, {rank}, target));
      reshape->SetInput(1, shape);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateResolveReshapePass() { return std::make_unique<ResolveReshapePass>(); }

}  // namespace qcc::passes
