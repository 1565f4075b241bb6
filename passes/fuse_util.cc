#include "passes/fuse_util.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace qcc::passes::fuse {

const Tensor* ConstantData(const ir::Value* v) {
  if (v == nullptr) return nullptr;
  if (const Tensor* t = v->constant()) return t;
  const ir::Node* p = v->producer();
  if (p != nullptr && p->kind() == ir::OpKind::kConstant) {
    const Tensor& t = p->attrs<ir::ConstantAttrs>().value;
    return t.defined() ? &t : nullptr;
  }
  return nullptr;
}

std::optional<Tensor> ConstantF32(const ir::Value* v) {
  const Tensor* t = ConstantData(v);
  if (t == nullptr || !IsFloat(t->dtype())) return std::nullopt;
  return t->dtype() == DType::kFloat32 ? *t : CastTensor(*t, DType::kFloat32);
}

std::optional<float> ScalarF32(const ir::Value* v) {
  std::optional<Tensor> t = ConstantF32(v);
  if (!t || t->numel() != 1) return std::nullopt;
  return t->data<float>()[0];
}

bool HasSingleUse(const ir::Graph& graph, const ir::Value* v) {
  if (v->uses().size() != 1) return false;
  const auto& outs = graph.outputs();
  return std::find(outs.begin(), outs.end(), v) == outs.end();
}

ir::Node* SoleProducer(const ir::Graph& graph, const ir::Value* v, ir::OpKind kind) {
  ir::Node* p = v->producer();
  if (p == nullptr || p->kind() != kind || !HasSingleUse(graph, v)) return nullptr;
  return p;
}

bool InputIsScalar(const ir::Node& n, int i, float c) {
  const std::optional<float> v = ScalarF32(n.input(i));
  return v && NearlyEqual(*v, c);
}

std::string UniqueName(const ir::Graph& graph, absl::string_view stem) {
  std::string name(stem);
  for (int k = 1; graph.FindValue(name) != nullptr; ++k) name = absl::StrCat(stem, "_", k);
  return name;
}

void Forward(ir::Graph& graph, ir::Value* replaced, ir::Value* kept) {
  graph.ReplaceAllUsesWith(replaced, kept);
  ir::SwapNames(*replaced, *kept);
}

void RemoveNodes(ir::Graph& graph, const std::vector<ir::Node*>& nodes) {
  for (ir::Node* n : nodes) graph.RemoveNode(n);
}

void ReplacePattern(ir::Graph& graph, ir::Value* result, ir::Value* fused,
                    const std::vector<ir::Node*>& nodes) {
  Forward(graph, result, fused);
  RemoveNodes(graph, nodes);
}

absl::StatusOr<bool> SortIfChanged(ir::Graph& graph, bool changed) {
  if (changed) {
    absl::Status s = graph.TopologicalSort();
    if (!s.ok()) return s;
  }
  return changed;
}

std::optional<BnAffine> InferenceBatchNorm(const ir::Graph& graph, const ir::Node& bn,
                                           int64_t channels) {
  if (bn.kind() != ir::OpKind::kBatchNormalization) return std::nullopt;
  const ir::BatchNormAttrs& a = bn.attrs<ir::BatchNormAttrs>();
  if (a.training_mode != 0) return std::nullopt;
  for (int i = 1; i < bn.num_outputs(); ++i) {
    const ir::Value* v = bn.output(i);
    const auto& outs = graph.outputs();
    if (!v->uses().empty() || std::find(outs.begin(), outs.end(), v) != outs.end()) {
      return std::nullopt;
    }
  }
  std::optional<Tensor> p[4];
  for (int i = 0; i < 4; ++i) {
    p[i] = ConstantF32(bn.input(i + 1));
    if (!p[i] || p[i]->numel() != channels) return std::nullopt;
  }
  const float *gamma = p[0]->data<float>(), *beta = p[1]->data<float>();
  const float *mean = p[2]->data<float>(), *var = p[3]->data<float>();
  BnAffine r;
  for (int64_t c = 0; c < channels; ++c) {
    // In double: eps is small next to var, and s * mean cancels against beta.
    const double s = double{gamma[c]} / std::sqrt(double{var[c]} + double{a.epsilon});
    r.scale.push_back(static_cast<float>(s));
    r.shift.push_back(static_cast<float>(double{beta[c]} - s * mean[c]));
  }
  return r;
}

bool NearlyEqual(float a, float b) { return std::fabs(a - b) <= 1e-6f * std::fabs(b); }

std::vector<ir::Node*> NodesOfKind(const ir::Graph& graph,
                                   std::initializer_list<ir::OpKind> kinds) {
  std::vector<ir::Node*> out;
  for (const auto& n : graph.nodes()) {
    for (ir::OpKind k : kinds) {
      if (n->kind() == k) {
        out.push_back(n.get());
        break;
      }
    }
  }
  return out;
}

}  // namespace qcc::passes::fuse
