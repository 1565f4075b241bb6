// fuse-attention: multi-head attention as exporters write it (torch.onnx.export of BERT-class
// self-attention, nn.MultiheadAttention-style modules) becomes one qcc.Attention node:
//   q = Transpose(Reshape(Q, [B, Sq, H, D]), [0, 2, 1, 3])     Q [B, Sq, H*D]
//   k = Transpose(Reshape(K, [B, Skv, Hk, D]), [0, 2, 3, 1])   (or [0, 2, 1, 3] then [0, 1, 3, 2])
//   v = Transpose(Reshape(V, [B, Skv, Hk, Dv]), [0, 2, 1, 3])
//   s = MatMul(q, k)  [* c | / c]  [+ mask]                    mask float, broadcast to s
//   o = MatMul(Softmax(s, axis -1), v)
//   Y = Reshape(Transpose(o, [0, 2, 1, 3]), [B, Sq, H*Dv])
// -> Y = qcc.Attention(Q, K, V[, mask]) with scale c (1/c), the heads H and Hk (Hk = H, or 1 for
// one shared K/V head). Scalar Mul/Div on q or k (the sqrt(scale) on each side that
// scaled_dot_product_attention exports) also go into the scale. Every value from s to Y is
// used only inside the pattern; the Q, K and V reshapes may have other uses (they then stay).
// Why: the fused step keeps one head's scores in cache, adds the mask inside the softmax and
// reads Q, K, V and writes Y in place, with none of the four transposes.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "passes/fuse_util.h"
#include "passes/passes.h"

namespace qcc::passes {
namespace {

using ir::Dim;

/// Q, K or V in its [B, S, H*D] form, found behind the movement that splits it into heads.
struct Heads {
  ir::Value* x = nullptr;  // [B, S, H*D]
  Dim heads = 0, size = 0;
};

/// For a Mul or Div of an activation by a scalar float constant (Mul in either order): the
/// activation, and the factor it is multiplied by in `factor`; null otherwise, and when the
/// constant's shape would change the result's type.
const ir::Value* ScaledInput(const ir::Node& n, float& factor) {
  if (n.kind() != ir::OpKind::kMul && n.kind() != ir::OpKind::kDiv) return nullptr;
  for (int side = 0; side < 2; ++side) {
    if (n.kind() == ir::OpKind::kDiv && side == 0) continue;  // Div(x, c) only
    std::optional<float> c = fuse::ScalarF32(n.input(side));
    const ir::Value* x = n.input(1 - side);
    if (!c || fuse::ScalarF32(x) || !(x->type() == n.output(0)->type())) continue;
    if (n.kind() == ir::OpKind::kDiv) {
      if (*c == 0.0f) return nullptr;
      c = 1.0f / *c;
    }
    factor = *c;
    return x;
  }
  return nullptr;
}

/// Walks from `v` (a [B, H, .., ..] operand of an attention MatMul) up through Transposes and
/// scalar scales (their factors multiply `scale`) to the Reshape that split [B, S, H*D] into
/// [B, S, H, D]; the transposes must compose to `perm` (v's axis i is the reshaped tensor's axis
/// perm[i]). Nothing on the way is changed: values with other uses keep them.
std::optional<Heads> HeadsOf(const ir::Value* v, const std::vector<int64_t>& perm, float& scale) {
  std::vector<int64_t> c = {0, 1, 2, 3};
  float f = 1.0f;
  while (const ir::Node* p = v->producer()) {
    if (p->kind() == ir::OpKind::kTranspose) {
      std::vector<int64_t> tp = p->attrs<ir::TransposeAttrs>().perm;
      if (tp.empty()) tp = {3, 2, 1, 0};
      if (tp.size() != 4) return std::nullopt;
      for (int64_t& a : c) a = tp[a];
      v = p->input(0);
      continue;
    }
    float factor = 1.0f;
    if (const ir::Value* x = ScaledInput(*p, factor)) {
      f *= factor;
      v = x;
      continue;
    }
    if (p->kind() != ir::OpKind::kReshape || c != perm) return std::nullopt;
    const ir::Value* x = p->input(0);
    if (!x->type().has_rank() || !v->type().has_rank() || x->type().rank() != 3 ||
        v->type().rank() != 4 || !IsFloat(x->dtype())) {
      return std::nullopt;
    }
    const std::vector<Dim>& xd = *x->type().dims;
    const std::vector<Dim>& rd = *v->type().dims;
    if (xd[0] == ir::kUnknownDim || xd[1] == ir::kUnknownDim) return std::nullopt;
    if (xd[0] != rd[0] || xd[1] != rd[1] || !ir::IsKnown(rd[2]) || !ir::IsKnown(rd[3]) ||
        !ir::IsKnown(xd[2]) || rd[2] <= 0 || rd[2] * rd[3] != xd[2]) {
      return std::nullopt;
    }
    scale *= f;
    return Heads{const_cast<ir::Value*>(x), rd[2], rd[3]};
  }
  return std::nullopt;
}

/// True when the one-use chain of Transposes from `o` ([B, H, Sq, Dv]) composes to
/// [0, 2, 1, 3] and ends in a Reshape to [B, Sq, H*Dv]; that Reshape in `reshape`, the nodes
/// from it back to `o` (exclusive) appended to `nodes`.
bool MergesHeads(const ir::Graph& graph, const ir::Value* o, ir::Node** reshape,
                 std::vector<ir::Node*>& nodes) {
  std::vector<int64_t> c = {0, 1, 2, 3};
  std::vector<ir::Node*> chain;
  const std::vector<Dim>& od = *o->type().dims;
  while (true) {
    if (!fuse::HasSingleUse(graph, o)) return false;
    ir::Node* u = o->uses()[0].node;
    if (u->kind() == ir::OpKind::kTranspose) {
      std::vector<int64_t> tp = u->attrs<ir::TransposeAttrs>().perm;
      if (tp.empty()) tp = {3, 2, 1, 0};
      if (tp.size() != 4) return false;
      std::vector<int64_t> next(4);
      for (int i = 0; i < 4; ++i) next[i] = c[tp[i]];
      c = next;
      chain.push_back(u);
      o = u->output(0);
      continue;
    }
    if (u->kind() != ir::OpKind::kReshape || u->input(0) != o) return false;
    if (c != std::vector<int64_t>{0, 2, 1, 3}) return false;
    const ir::TensorType& t = u->output(0)->type();
    if (!t.has_rank() || t.rank() != 3) return false;
    const std::vector<Dim>& yd = *t.dims;
    if (yd[0] != od[0] || yd[1] != od[2] || !ir::IsKnown(od[1]) || !ir::IsKnown(od[3]) ||
        yd[2] != od[1] * od[3]) {
      return false;
    }
    *reshape = u;
    nodes.push_back(u);
    nodes.insert(nodes.end(), chain.rbegin(), chain.rend());
    return true;
  }
}

/// True when `v` is MatMul(a, b) of two activations, or a scalar scale of one.
bool IsScores(const ir::Value* v) {
  const ir::Node* p = v->producer();
  float factor = 1.0f;
  if (p != nullptr && ScaledInput(*p, factor) != nullptr) p = ScaledInput(*p, factor)->producer();
  return p != nullptr && p->kind() == ir::OpKind::kMatMul && !fuse::ConstantData(p->input(0)) &&
         !fuse::ConstantData(p->input(1));
}

struct Match {
  Heads q, k, v;
  ir::Value* mask = nullptr;
  float scale = 1.0f;
  ir::Value* v_heads = nullptr;  // the second operand of the MatMul with V
  ir::Node* reshape = nullptr;   // makes the result
  std::vector<ir::Node*> nodes;  // from the result up
};

std::optional<Match> MatchAt(const ir::Graph& graph, ir::Node* softmax) {
  const ir::Value* s = softmax->input(0);
  if (!s->type().has_rank() || s->type().rank() != 4 || !IsFloat(s->dtype())) return std::nullopt;
  const int64_t axis = softmax->attrs<ir::SoftmaxAttrs>().axis;
  if (axis != -1 && axis != 3) return std::nullopt;
  Match m;
  // Forward: Softmax -> MatMul(P, v) -> merge heads.
  const ir::Value* probs = softmax->output(0);
  if (!fuse::HasSingleUse(graph, probs)) return std::nullopt;
  ir::Node* pv = probs->uses()[0].node;
  if (pv->kind() != ir::OpKind::kMatMul || pv->input(0) != probs) return std::nullopt;
  const ir::Value* o = pv->output(0);
  if (!o->type().has_rank() || o->type().rank() != 4) return std::nullopt;
  if (!MergesHeads(graph, o, &m.reshape, m.nodes)) return std::nullopt;
  m.nodes.push_back(pv);
  m.nodes.push_back(softmax);
  // Backward: [Add(., mask)] <- [scale] <- MatMul(q, k).
  ir::Node* p = s->producer();
  if (p == nullptr || !fuse::HasSingleUse(graph, s)) return std::nullopt;
  if (p->kind() == ir::OpKind::kAdd) {
    if (p->attrs<ir::AddAttrs>().activation != ir::Activation::kNone) return std::nullopt;
    int side = -1;  // the scores' side
    for (int i = 0; i < 2; ++i) {
      if (IsScores(p->input(i))) side = side < 0 ? i : -2;
    }
    if (side < 0) return std::nullopt;
    m.mask = p->input(1 - side);
    const ir::TensorType& mt = m.mask->type();
    if (mt.dtype != s->dtype() || !mt.has_rank() || mt.rank() > 4 ||
        !(p->input(side)->type() == s->type())) {
      return std::nullopt;
    }
    // Each mask extent is 1 or the scores' own, and a named (dynamic) one only on the batch axis.
    const std::vector<Dim>& md = *mt.dims;
    const std::vector<Dim>& sd = *s->type().dims;
    for (size_t i = 0; i < md.size(); ++i) {
      const size_t axis = 4 - md.size() + i;
      if (md[i] == 1) continue;
      if (md[i] == ir::kUnknownDim || md[i] != sd[axis] || (!ir::IsKnown(md[i]) && axis != 0)) {
        return std::nullopt;
      }
    }
    m.nodes.push_back(p);
    s = p->input(side);
    p = s->producer();
    if (p == nullptr || !fuse::HasSingleUse(graph, s)) return std::nullopt;
  }
  float factor = 1.0f;
  if (const ir::Value* product = ScaledInput(*p, factor)) {
    m.scale = factor;
    m.nodes.push_back(p);
    s = product;
    p = s->producer();
    if (p == nullptr || !fuse::HasSingleUse(graph, s)) return std::nullopt;
  }
  if (p->kind() != ir::OpKind::kMatMul) return std::nullopt;
  m.nodes.push_back(p);
  std::optional<Heads> q = HeadsOf(p->input(0), {0, 2, 1, 3}, m.scale);
  std::optional<Heads> k = HeadsOf(p->input(1), {0, 2, 3, 1}, m.scale);
  float v_scale = 1.0f;  // a factor on V scales the result, not the scores
  std::optional<Heads> v = HeadsOf(pv->input(1), {0, 2, 1, 3}, v_scale);
  if (!q || !k || !v || v_scale != 1.0f || k->heads != v->heads || k->size != q->size ||
      (k->heads != q->heads && k->heads != 1)) {
    return std::nullopt;
  }
  // One batch for Q, K and V and one length for K and V, as extents that are known or named
  // (the MatMuls would broadcast a K or V of batch 1; the fused step does not).
  const std::vector<Dim>& qd = *q->x->type().dims;
  const std::vector<Dim>& kd = *k->x->type().dims;
  const std::vector<Dim>& vd = *v->x->type().dims;
  if (qd[0] == ir::kUnknownDim || kd[1] == ir::kUnknownDim || qd[1] == ir::kUnknownDim ||
      kd[0] != qd[0] || vd[0] != qd[0] || vd[1] != kd[1]) {
    return std::nullopt;
  }
  m.q = *q;
  m.k = *k;
  m.v = *v;
  m.v_heads = pv->input(1);
  return m;
}

/// Removes the producer of `v` when nothing reads its outputs any more, then the same for its
/// inputs: the head splits (Reshape, Transpose, scale) the fused node no longer reads.
void RemoveUnusedProducers(ir::Graph& graph, ir::Value* v) {
  std::vector<ir::Value*> work = {v};
  while (!work.empty()) {
    ir::Value* x = work.back();
    work.pop_back();
    ir::Node* p = x->producer();
    if (p == nullptr) continue;
    bool used = false;
    for (int i = 0; i < p->num_outputs(); ++i) {
      const ir::Value* out = p->output(i);
      used =
          used || !out->uses().empty() ||
          std::find(graph.outputs().begin(), graph.outputs().end(), out) != graph.outputs().end();
    }
    if (used) continue;
    std::vector<ir::Value*> inputs;
    for (int i = 0; i < p->num_inputs(); ++i) {
      if (p->input(i) != nullptr) inputs.push_back(p->input(i));
    }
    graph.RemoveNode(p);
    work.insert(work.end(), inputs.begin(), inputs.end());
  }
}

class FuseAttentionPass : public Pass {
 public:
  absl::string_view name() const override { return "fuse-attention"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    bool changed = false;
    for (ir::Node* softmax : fuse::NodesOfKind(graph, {ir::OpKind::kSoftmax})) {
      std::optional<Match> m = MatchAt(graph, softmax);
      if (!m) continue;
      ir::Value* out = m->reshape->output(0);
      std::vector<ir::Value*> ins = {m->q.x, m->k.x, m->v.x};
      if (m->mask != nullptr) ins.push_back(m->mask);
      const std::string stem = softmax->name().empty() ? out->name() : softmax->name();
      ir::Node* attention = graph.AddNode(ir::OpKind::kAttention, stem + "/attention", ins,
                                          {fuse::UniqueName(graph, out->name() + "_attention")});
      ir::AttentionAttrs a;
      a.q_num_heads = m->q.heads;
      a.kv_num_heads = m->k.heads;
      a.scale = m->scale;
      attention->set_attrs(a);
      ir::Node* qk = m->nodes.back();  // the scores' MatMul, removed last
      std::vector<ir::Value*> heads = {qk->input(0), qk->input(1), m->v_heads};
      fuse::ReplacePattern(graph, out, attention->output(0), m->nodes);
      for (ir::Value* h : heads) RemoveUnusedProducers(graph, h);
      changed = true;
    }
    if (changed) graph.RemoveDeadValues();
    return fuse::SortIfChanged(graph, changed);
  }
};

}  // namespace

std::unique_ptr<Pass> CreateFuseAttentionPass() { return std::make_unique<FuseAttentionPass>(); }

}  // namespace qcc::passes
