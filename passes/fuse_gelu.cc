// fuse-gelu: rewrites the exact GELU exporters write out with Erf into one Gelu node:
//   e = Erf(x / sqrt(2))      Div by sqrt(2) or Mul by 1/sqrt(2) (either order)
//   a = e + 1                 Add in either order
//   y = x * a * 0.5           as (x * a) * 0.5, (x * 0.5) * a or x * (a * 0.5), each Mul in
//                             either order (torch's F.gelu export, BERT's hand-written gelu)
// Every constant must be a scalar of the expected value; every intermediate value must be used
// only by the pattern.
#include <memory>
#include <optional>
#include <vector>

#include "passes/fuse_util.h"
#include "passes/passes.h"

namespace qcc::passes {
namespace {

/// The input of a binary `n` that is not `v` when one of them is `v`; nullptr otherwise.
ir::Value* OtherInput(const ir::Node& n, const ir::Value* v) {
  if (n.input(0) == v) return n.input(1);
  if (n.input(1) == v) return n.input(0);
  return nullptr;
}

/// The only user of `v` when it is of `kind` (and `v` is no graph output).
ir::Node* SoleUser(const ir::Graph& graph, const ir::Value* v, ir::OpKind kind) {
  if (!fuse::HasSingleUse(graph, v)) return nullptr;
  ir::Node* u = v->uses()[0].node;
  return u->kind() == kind ? u : nullptr;
}

bool PlainAdd(const ir::Node* n) {
  return n != nullptr && n->attrs<ir::AddAttrs>().activation == ir::Activation::kNone;
}

struct GeluMatch {
  ir::Value* x = nullptr;
  ir::Node* top = nullptr;
  std::vector<ir::Node*> nodes;  // from the result up
};

std::optional<GeluMatch> MatchGeluAt(const ir::Graph& graph, ir::Node* erf) {
  constexpr float kSqrt2 = 1.41421356f, kInvSqrt2 = 0.70710678f;
  ir::Node* scale = erf->input(0)->producer();
  if (scale == nullptr || !fuse::HasSingleUse(graph, erf->input(0))) return std::nullopt;
  ir::Value* x = nullptr;
  if (scale->kind() == ir::OpKind::kDiv && fuse::InputIsScalar(*scale, 1, kSqrt2)) {
    x = scale->input(0);
  } else if (scale->kind() == ir::OpKind::kMul) {
    if (fuse::InputIsScalar(*scale, 1, kInvSqrt2)) x = scale->input(0);
    if (fuse::InputIsScalar(*scale, 0, kInvSqrt2)) x = scale->input(1);
  }
  if (x == nullptr || !IsFloat(x->dtype())) return std::nullopt;
  ir::Node* add = SoleUser(graph, erf->output(0), ir::OpKind::kAdd);
  if (!PlainAdd(add)) return std::nullopt;
  ir::Value* one = OtherInput(*add, erf->output(0));
  if (one == nullptr || !fuse::InputIsScalar(*add, add->input(0) == one ? 0 : 1, 1.0f)) {
    return std::nullopt;
  }
  ir::Node* m1 = SoleUser(graph, add->output(0), ir::OpKind::kMul);
  if (m1 == nullptr) return std::nullopt;
  ir::Value* other = OtherInput(*m1, add->output(0));
  GeluMatch m;
  m.x = x;
  const std::vector<ir::Node*> core = {m1, add, erf, scale};
  auto half = [&](const ir::Node& n, const ir::Value* v) {
    ir::Value* o = OtherInput(n, v);
    return o != nullptr && fuse::InputIsScalar(n, n.input(0) == o ? 0 : 1, 0.5f);
  };
  if (other == x) {  // (x * a) * 0.5
    ir::Node* m2 = SoleUser(graph, m1->output(0), ir::OpKind::kMul);
    if (m2 == nullptr || !half(*m2, m1->output(0))) return std::nullopt;
    m.top = m2;
    m.nodes = {m2};
  } else if (ir::Node* xh = other->producer();
             xh != nullptr && xh->kind() == ir::OpKind::kMul && fuse::HasSingleUse(graph, other) &&
             OtherInput(*xh, x) != nullptr && half(*xh, x)) {  // (x * 0.5) * a
    m.top = m1;
    m.nodes = {m1, xh, add, erf, scale};
    return m;
  } else if (half(*m1, add->output(0))) {  // x * (a * 0.5)
    ir::Node* m2 = SoleUser(graph, m1->output(0), ir::OpKind::kMul);
    if (m2 == nullptr || OtherInput(*m2, m1->output(0)) != x) return std::nullopt;
    m.top = m2;
    m.nodes = {m2};
  } else {
    return std::nullopt;
  }
  m.nodes.insert(m.nodes.end(), core.begin(), core.end());
  return m;
}

class FuseGeluPass : public Pass {
 public:
  absl::string_view name() const override { return "fuse-gelu"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    const std::vector<ir::Node*> erfs = fuse::NodesOfKind(graph, {ir::OpKind::kErf});
    bool changed = false;
    for (ir::Node* erf : erfs) {
      std::optional<GeluMatch> m = MatchGeluAt(graph, erf);
      // One-element constants of higher rank would broadcast x: the Gelu must give its type.
      if (!m || !(m->top->output(0)->type() == m->x->type())) continue;
      ir::Value* out = m->top->output(0);
      ir::Node* gelu = graph.AddNode(ir::OpKind::kGelu, m->top->name(), {m->x},
                                     {fuse::UniqueName(graph, out->name() + "_gelu")});
      fuse::ReplacePattern(graph, out, gelu->output(0), m->nodes);
      changed = true;
    }
    return fuse::SortIfChanged(graph, changed);
  }
};

}  // namespace

std::unique_ptr<Pass> CreateFuseGeluPass() { return std::make_unique<FuseGeluPass>(); }

}  // namespace qcc::passes
