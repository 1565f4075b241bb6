// fold-attention-scale: attention's Q·Kᵀ / sqrt(d) (or * (1/sqrt(d))) with the scale folded into
// the weights and bias of the Linear layer that makes Q (or K):
//   s = MatMul(A, B) / c          A (or B) = movement ops (Transpose, Reshape, Squeeze,
//                                 Unsqueeze) of Add(bias, MatMul(x, W)) or Gemm(x, W, bias)
//   ->  s = MatMul(A', B)         with W / c and bias / c
// Data movement commutes with a scalar factor, and the Linear layer's result is then the scaled
// one, so the Div (a pass over every attention score) goes. Every value on the way must be used
// only there, and W and the bias float constants. In a QDQ model the values on the way hold the
// scaled data now, so the parameters the model gave them (and W's scales) are scaled alike;
// with a factor <= 0 such a model's Linear is left as it is.
#include <memory>
#include <optional>
#include <vector>

#include "passes/fuse_util.h"
#include "passes/passes.h"

namespace qcc::passes {
namespace {

bool IsMovement(ir::OpKind k) {
  return k == ir::OpKind::kTranspose || k == ir::OpKind::kReshape || k == ir::OpKind::kSqueeze ||
         k == ir::OpKind::kUnsqueeze;
}

/// The factor `top` multiplies MatMul's result by: 1/c for Div(., c), c for Mul(., c) (either
/// order); nullopt when it is neither with a scalar float constant.
std::optional<float> Factor(const ir::Node& top, const ir::Value* product) {
  if (top.kind() == ir::OpKind::kDiv && top.input(0) == product) {
    const std::optional<float> c = fuse::ScalarF32(top.input(1));
    if (c && *c != 0.0f) return 1.0f / *c;
  }
  if (top.kind() == ir::OpKind::kMul) {
    const ir::Value* other = top.input(0) == product ? top.input(1) : top.input(0);
    return fuse::ScalarF32(other);
  }
  return std::nullopt;
}

/// The Linear layer (MatMul + bias Add, or Gemm) that `v` is moved data of, with every value
/// from it to `v` used once: the node reading the weight `w` (returned), and the node reading
/// `bias` (the Add, or the Gemm; null without a bias). `values` gets every value from `v` back to
/// the Linear layer's result (and, for MatMul + Add, the MatMul's), which will hold scaled data.
ir::Node* LinearOf(const ir::Graph& graph, ir::Value* v, ir::Value** w, ir::Value** bias,
                   ir::Node** bias_owner, std::vector<ir::Value*>* values) {
  values->clear();
  while (v->producer() != nullptr && IsMovement(v->producer()->kind())) {
    if (!fuse::HasSingleUse(graph, v)) return nullptr;
    values->push_back(v);
    v = v->producer()->input(0);
  }
  values->push_back(v);
  ir::Node* p = v->producer();
  if (p == nullptr || !fuse::HasSingleUse(graph, v)) return nullptr;
  if (p->kind() == ir::OpKind::kGemm) {
    const auto& a = p->attrs<ir::GemmAttrs>();
    if (a.activation != ir::Activation::kNone) return nullptr;
    *w = p->input(1);
    *bias = p->input(2);
    *bias_owner = p;
  } else if (p->kind() == ir::OpKind::kAdd &&
             p->attrs<ir::AddAttrs>().activation == ir::Activation::kNone) {
    for (int side = 0; side < 2; ++side) {
      ir::Node* mm = p->input(side)->producer();
      if (mm == nullptr || mm->kind() != ir::OpKind::kMatMul ||
          !fuse::HasSingleUse(graph, p->input(side))) {
        continue;
      }
      *w = mm->input(1);
      *bias = p->input(1 - side);
      *bias_owner = p;
      values->push_back(p->input(side));
      p = mm;
      break;
    }
    if (p->kind() != ir::OpKind::kMatMul) return nullptr;
  } else {
    return nullptr;
  }
  const Tensor* wt = fuse::ConstantData(*w);
  if (wt == nullptr || !IsFloat(wt->dtype())) return nullptr;
  if (*bias != nullptr) {
    const Tensor* bt = fuse::ConstantData(*bias);
    if (bt == nullptr || !IsFloat(bt->dtype())) return nullptr;
  }
  return p;
}

/// A new float32 constant: `c` times `f`.
ir::Value* Scaled(ir::Graph& graph, const ir::Value* c, float f) {
  Tensor t = CastTensor(*fuse::ConstantData(c), DType::kFloat32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= f;
  return graph.NewConstant(fuse::UniqueName(graph, c->name() + "_scaled"), std::move(t));
}

class FoldAttentionScalePass : public Pass {
 public:
  absl::string_view name() const override { return "fold-attention-scale"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    bool changed = false;
    for (ir::Node* mm : fuse::NodesOfKind(graph, {ir::OpKind::kMatMul})) {
      // Both operands activations (attention's scores), its result used once by the scale.
      if (fuse::ConstantData(mm->input(0)) || fuse::ConstantData(mm->input(1))) continue;
      ir::Value* product = mm->output(0);
      if (!fuse::HasSingleUse(graph, product) || !IsFloat(product->dtype())) continue;
      ir::Node* top = product->uses()[0].node;
      const std::optional<float> factor = Factor(*top, product);
      // A one-element factor of higher rank would broadcast the product to a higher rank.
      if (!factor || !(top->output(0)->type() == product->type())) continue;
      for (int side = 0; side < 2; ++side) {
        ir::Value* w = nullptr;
        ir::Value* bias = nullptr;
        ir::Node* owner = nullptr;
        std::vector<ir::Value*> moved;
        ir::Node* linear = LinearOf(graph, mm->input(side), &w, &bias, &owner, &moved);
        if (linear == nullptr) continue;
        bool given = w->given_weight_scales() != nullptr;
        for (const ir::Value* v : moved) given |= v->given_quant() != nullptr;
        if (given && !(*factor > 0.0f)) continue;
        ir::Value* scaled_w = Scaled(graph, w, *factor);
        if (const std::vector<float>* s = w->given_weight_scales()) {
          std::vector<float> scales = *s;
          for (float& x : scales) x *= *factor;
          scaled_w->set_given_weight_scales(std::move(scales));
        }
        for (ir::Value* v : moved) {
          if (const ir::QuantParams* q = v->given_quant()) {
            ir::QuantParams p = *q;
            p.scale *= *factor;
            v->set_given_quant(p);
          }
        }
        linear->SetInput(1, scaled_w);
        if (bias != nullptr) {
          ir::Value* scaled = Scaled(graph, bias, *factor);
          for (int i = 0; i < owner->num_inputs(); ++i) {
            if (owner->input(i) == bias) owner->SetInput(i, scaled);
          }
        }
        // The scale goes: its users read the product.
        fuse::Forward(graph, top->output(0), product);
        graph.RemoveNode(top);
        changed = true;
        break;
      }
    }
    if (changed) graph.RemoveDeadValues();
    return fuse::SortIfChanged(graph, changed);
  }
};

}  // namespace

std::unique_ptr<Pass> CreateFoldAttentionScalePass() {
  return std::make_unique<FoldAttentionScalePass>();
}

}  // namespace qcc::passes
