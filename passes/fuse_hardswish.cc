// fuse-hardswish: rewrites the hard-swish patterns exporters emit into one HardSwish node:
//   x * Clip(x + 3, 0, 6) / 6    as (x * clip) / 6, (x * clip) * (1/6), x * (clip / 6) or
//                                x * (clip * (1/6)), in either operand order (paddle2onnx's
//                                ppocr models: Add, Clip, Mul, Div)
//   x * HardSigmoid(x)           with alpha = 1/6 and beta = 0.5
// Every constant must be a scalar constant of the expected value; every intermediate value
// must be used only by the pattern. HardSwish(x) = x * max(0, min(1, x / 6 + 0.5)) is the same
// function: x * clip(x + 3, 0, 6) / 6.
#include <memory>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"

namespace qcc::passes {
namespace {

constexpr float kSixth = 1.0f / 6.0f;

/// A matched pattern: its input and the nodes it replaces (the last one produces its result).
struct HardSwishMatch {
  ir::Value* x = nullptr;
  std::vector<ir::Node*> nodes;
};

/// If `n` is u / 6 or u * (1/6) (either order), returns u.
ir::Value* SixthOf(const ir::Node& n) {
  if (n.kind() == ir::OpKind::kDiv && fuse::InputIsScalar(n, 1, 6.0f)) return n.input(0);
  if (n.kind() == ir::OpKind::kMul) {
    if (fuse::InputIsScalar(n, 1, kSixth)) return n.input(0);
    if (fuse::InputIsScalar(n, 0, kSixth)) return n.input(1);
  }
  return nullptr;
}

/// True when `clip` is Clip(x + 3, 0, 6) (Add in either order), each intermediate used once;
/// appends the Clip and Add nodes to `nodes`.
bool IsRelu6OfXPlus3(const ir::Graph& graph, const ir::Value* clip, const ir::Value* x,
                     std::vector<ir::Node*>& nodes) {
  ir::Node* c = fuse::SoleProducer(graph, clip, ir::OpKind::kClip);
  if (c == nullptr || c->input(1) == nullptr || c->input(2) == nullptr) return false;
  if (!fuse::InputIsScalar(*c, 1, 0.0f) || !fuse::InputIsScalar(*c, 2, 6.0f)) return false;
  ir::Node* add = fuse::SoleProducer(graph, c->input(0), ir::OpKind::kAdd);
  if (add == nullptr || add->attrs<ir::AddAttrs>().activation != ir::Activation::kNone) {
    return false;
  }
  const bool plus3 = (add->input(0) == x && fuse::InputIsScalar(*add, 1, 3.0f)) ||
                     (add->input(1) == x && fuse::InputIsScalar(*add, 0, 3.0f));
  if (!plus3) return false;
  nodes.push_back(c);
  nodes.push_back(add);
  return true;
}

/// Matches a hard-swish pattern whose last node is `top`.
std::optional<HardSwishMatch> MatchHardSwishAt(const ir::Graph& graph, ir::Node* top) {
  // (x * clip) / 6 and (x * clip) * (1/6).
  if (ir::Value* u = SixthOf(*top)) {
    if (ir::Node* mul = fuse::SoleProducer(graph, u, ir::OpKind::kMul)) {
      for (int side = 0; side < 2; ++side) {
        HardSwishMatch m{mul->input(side), {top, mul}};
        if (IsRelu6OfXPlus3(graph, mul->input(1 - side), m.x, m.nodes)) return m;
      }
    }
  }
  if (top->kind() != ir::OpKind::kMul) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    ir::Value* x = top->input(side);
    ir::Value* other = top->input(1 - side);
    // x * (clip / 6) and x * (clip * (1/6)).
    ir::Node* scaled = other->producer();
    if (scaled != nullptr && fuse::HasSingleUse(graph, other)) {
      if (ir::Value* clip = SixthOf(*scaled)) {
        HardSwishMatch m{x, {top, scaled}};
        if (IsRelu6OfXPlus3(graph, clip, x, m.nodes)) return m;
      }
    }
    // x * HardSigmoid(x) with HardSwish's constants.
    if (ir::Node* hs = fuse::SoleProducer(graph, other, ir::OpKind::kHardSigmoid)) {
      const ir::HardSigmoidAttrs& a = hs->attrs<ir::HardSigmoidAttrs>();
      if (hs->input(0) == x && fuse::NearlyEqual(a.alpha, kSixth) &&
          fuse::NearlyEqual(a.beta, 0.5f)) {
        return HardSwishMatch{x, {top, hs}};
      }
    }
  }
  return std::nullopt;
}

class FuseHardSwishPass : public Pass {
 public:
  absl::string_view name() const override { return "fuse-hardswish"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    const std::vector<ir::Node*> tops =
        fuse::NodesOfKind(graph, {ir::OpKind::kMul, ir::OpKind::kDiv});
    absl::flat_hash_set<const ir::Node*> removed;
    bool changed = false;
    for (ir::Node* top : tops) {
      if (removed.contains(top)) continue;
      std::optional<HardSwishMatch> m = MatchHardSwishAt(graph, top);
      if (!m || !IsFloat(m->x->dtype())) continue;
      ir::Value* out = top->output(0);
      ir::Node* hs = graph.AddNode(ir::OpKind::kHardSwish, top->name(), {m->x},
                                   {fuse::UniqueName(graph, out->name() + "_hardswish")});
      fuse::ReplacePattern(graph, out, hs->output(0), m->nodes);
      removed.insert(m->nodes.begin(), m->nodes.end());
      changed = true;
    }
    return fuse::SortIfChanged(graph, changed);
  }
};

}  // namespace

std::unique_ptr<Pass> CreateFuseHardSwishPass() { return std::make_unique<FuseHardSwishPass>(); }

}  // namespace qcc::passes
