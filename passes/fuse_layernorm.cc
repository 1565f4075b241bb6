// fuse-layernorm: rewrites layer normalization written out in elementary ops (torch.onnx.export
// of nn.LayerNorm before opset 17, and hand-written LayerNorm modules) into one
// LayerNormalization node:
//   m = ReduceMean(x, axes)          axes: the trailing axes [k, rank), keepdims
//   d = Sub(x, m)                    used only by the square and the Div
//   p = Pow(d, 2) or Mul(d, d)
//   v = ReduceMean(p, axes)
//   s = Sqrt(Add(v, eps))            Add in either order, eps a scalar constant
//   n = Div(d, s)
//   y = Add(Mul(n, gamma), beta)     each optional and in either order; gamma and beta float
//                                    constants with the normalized extents (leading 1s allowed)
// Every intermediate value must be used only inside the pattern.
#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

#include "passes/fuse_util.h"
#include "passes/passes.h"

namespace qcc::passes {
namespace {

bool IsGraphOutput(const ir::Graph& graph, const ir::Value* v) {
  return std::find(graph.outputs().begin(), graph.outputs().end(), v) != graph.outputs().end();
}

/// The producer of `v` when it is of `kind` and `v` has exactly `uses` uses (none of them a
/// graph output).
ir::Node* ProducerOf(const ir::Graph& graph, const ir::Value* v, ir::OpKind kind, size_t uses = 1) {
  ir::Node* p = v->producer();
  if (p == nullptr || p->kind() != kind || v->uses().size() != uses || IsGraphOutput(graph, v)) {
    return nullptr;
  }
  return p;
}

/// The first reduced axis of a ReduceMean over the trailing axes [k, rank) with keepdims; -1
/// otherwise.
int64_t TrailingAxesStart(const ir::Node& mean) {
  const ir::Value* x = mean.input(0);
  if (!x->type().has_rank() || mean.attrs<ir::ReduceAttrs>().keepdims == 0) return -1;
  const Tensor* axes = mean.input(1) != nullptr ? fuse::ConstantData(mean.input(1)) : nullptr;
  if (axes == nullptr || axes->numel() == 0) return -1;
  const int64_t rank = x->type().rank();
  std::vector<bool> reduced(rank, false);
  for (int64_t i = 0; i < axes->numel(); ++i) {
    int64_t a = axes->GetAsInt64(i);
    if (a < 0) a += rank;
    if (a < 0 || a >= rank || reduced[a]) return -1;
    reduced[a] = true;
  }
  int64_t start = rank;
  while (start > 0 && reduced[start - 1]) --start;
  for (int64_t a = 0; a < start; ++a) {
    if (reduced[a]) return -1;  // not one trailing block
  }
  return start;
}

/// A float constant whose extents are the normalized ones [k, rank) of `x` (after leading 1s).
bool IsNormalizedShaped(const ir::Value* c, const ir::Value* x, int64_t start) {
  const Tensor* t = fuse::ConstantData(c);
  if (t == nullptr || !IsFloat(t->dtype())) return false;
  const std::vector<ir::Dim>& xd = *x->type().dims;
  const int64_t n = static_cast<int64_t>(xd.size()) - start;
  if (t->rank() < n) return false;
  for (int64_t i = 0; i < t->rank(); ++i) {
    const int64_t want = i < t->rank() - n ? 1 : xd[start + i - (t->rank() - n)];
    if (t->dim(i) != want) return false;
  }
  return true;
}

struct LayerNormMatch {
  ir::Value* x = nullptr;
  int64_t axis = -1;
  float epsilon = 0.0f;
  ir::Value* gamma = nullptr;
  ir::Value* beta = nullptr;
  ir::Node* top = nullptr;       // produces the result
  std::vector<ir::Node*> nodes;  // from the result up, so each is unused when removed
};

/// Matches the pattern whose Div is `div`.
std::optional<LayerNormMatch> MatchLayerNormAt(const ir::Graph& graph, ir::Node* div) {
  LayerNormMatch m;
  ir::Value* d = div->input(0);
  ir::Node* sqrt = ProducerOf(graph, div->input(1), ir::OpKind::kSqrt);
  // d's uses: the square (once for Pow, twice for Mul(d, d)) and the Div, checked below.
  ir::Node* sub = ProducerOf(graph, d, ir::OpKind::kSub, d->uses().size());
  if (sqrt == nullptr || sub == nullptr) return std::nullopt;
  ir::Node* add_eps = ProducerOf(graph, sqrt->input(0), ir::OpKind::kAdd);
  if (add_eps == nullptr || add_eps->attrs<ir::AddAttrs>().activation != ir::Activation::kNone) {
    return std::nullopt;
  }
  ir::Node* var = nullptr;
  for (int side = 0; side < 2 && var == nullptr; ++side) {
    const std::optional<float> eps = fuse::ScalarF32(add_eps->input(1 - side));
    if (!eps || !(*eps >= 0.0f)) continue;
    var = ProducerOf(graph, add_eps->input(side), ir::OpKind::kReduceMean);
    m.epsilon = *eps;
  }
  if (var == nullptr) return std::nullopt;
  ir::Node* square = var->input(0)->producer();
  if (square == nullptr || !fuse::HasSingleUse(graph, var->input(0))) return std::nullopt;
  const bool is_square =
      (square->kind() == ir::OpKind::kPow && square->input(0) == d &&
       fuse::ScalarF32(square->input(1)) == 2.0f) ||
      (square->kind() == ir::OpKind::kMul && square->input(0) == d && square->input(1) == d);
  if (!is_square) return std::nullopt;
  m.x = sub->input(0);
  ir::Node* mean = ProducerOf(graph, sub->input(1), ir::OpKind::kReduceMean);
  if (mean == nullptr || mean->input(0) != m.x || !IsFloat(m.x->dtype())) return std::nullopt;
  m.axis = TrailingAxesStart(*mean);
  if (m.axis < 0 || TrailingAxesStart(*var) != m.axis) return std::nullopt;
  // The Sub's uses are the square and the Div only.
  for (const ir::Use& u : d->uses()) {
    if (u.node != square && u.node != div) return std::nullopt;
  }
  m.nodes = {div, sqrt, add_eps, var, square, sub, mean};
  m.top = div;
  // Optional affine tail: * gamma, then + beta.
  auto single_user = [&graph](const ir::Node* n, ir::OpKind kind) -> ir::Node* {
    const ir::Value* y = n->output(0);
    if (!fuse::HasSingleUse(graph, y)) return nullptr;
    ir::Node* u = y->uses()[0].node;
    return u->kind() == kind ? u : nullptr;
  };
  if (ir::Node* mul = single_user(m.top, ir::OpKind::kMul)) {
    const int side = mul->input(0) == m.top->output(0) ? 1 : 0;
    if (IsNormalizedShaped(mul->input(side), m.x, m.axis)) {
      m.gamma = mul->input(side);
      m.nodes.insert(m.nodes.begin(), mul);
      m.top = mul;
    }
  }
  if (ir::Node* add = single_user(m.top, ir::OpKind::kAdd)) {
    const int side = add->input(0) == m.top->output(0) ? 1 : 0;
    if (add->attrs<ir::AddAttrs>().activation == ir::Activation::kNone &&
        IsNormalizedShaped(add->input(side), m.x, m.axis)) {
      m.beta = add->input(side);
      m.nodes.insert(m.nodes.begin(), add);
      m.top = add;
    }
  }
  return m;
}

/// `c` as a float32 constant of the normalized extents (a new value), or ones when null.
ir::Value* NormalizedConstant(ir::Graph& graph, const ir::Value* c, const LayerNormMatch& m,
                              const std::string& stem, float fill) {
  const std::vector<ir::Dim>& xd = *m.x->type().dims;
  std::vector<int64_t> dims(xd.begin() + m.axis, xd.end());
  Tensor t(DType::kFloat32, dims);
  if (c != nullptr) {
    t = CastTensor(*fuse::ConstantData(c), DType::kFloat32).Reshaped(dims);
  } else {
    std::fill(t.data<float>(), t.data<float>() + t.numel(), fill);
  }
  return graph.NewConstant(fuse::UniqueName(graph, stem), std::move(t));
}

class FuseLayerNormPass : public Pass {
 public:
  absl::string_view name() const override { return "fuse-layernorm"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    const std::vector<ir::Node*> divs = fuse::NodesOfKind(graph, {ir::OpKind::kDiv});
    bool changed = false;
    for (ir::Node* div : divs) {
      std::optional<LayerNormMatch> m = MatchLayerNormAt(graph, div);
      // A one-element constant of higher rank (eps as [1, 1, 1, 1]) would broadcast the result
      // to a higher rank: the fused node must give the same type.
      if (!m || !(m->top->output(0)->type() == m->x->type())) continue;
      const std::vector<ir::Dim>& xd = *m->x->type().dims;
      if (!std::all_of(xd.begin() + m->axis, xd.end(), [](ir::Dim d) { return ir::IsKnown(d); })) {
        continue;
      }
      ir::Value* out = m->top->output(0);
      const std::string stem = m->top->name().empty() ? out->name() : m->top->name();
      ir::Value* gamma = NormalizedConstant(graph, m->gamma, *m, stem + "_scale", 1.0f);
      ir::Value* beta = NormalizedConstant(graph, m->beta, *m, stem + "_bias", 0.0f);
      ir::Node* ln = graph.AddNode(ir::OpKind::kLayerNormalization, stem, {m->x, gamma, beta},
                                   {fuse::UniqueName(graph, out->name() + "_layernorm")});
      ir::LayerNormAttrs a;
      a.axis = m->axis - static_cast<int64_t>(xd.size());  // negative: the trailing axes
      a.epsilon = m->epsilon;
      ln->set_attrs(a);
      fuse::ReplacePattern(graph, out, ln->output(0), m->nodes);
      changed = true;
    }
    return fuse::SortIfChanged(graph, changed);
  }
};

}  // namespace

std::unique_ptr<Pass> CreateFuseLayerNormPass() { return std::make_unique<FuseLayerNormPass>(); }

}  // namespace qcc::passes
