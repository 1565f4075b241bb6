// fuse-activation: moves Relu, Clip (constant bounds: ReLU6 and friends) and LeakyRelu into the
// Conv, Gemm or Add that produces their input, as the op's fused-activation fields
// (ir/attrs.h). Only when that output feeds nothing else and is not a graph output, the op has
// no activation yet, and the data is fp32, fp16 or bf16. The activation's output name survives.
#include <limits>
#include <memory>
#include <vector>

#include "passes/fuse_util.h"
#include "passes/passes.h"

namespace qcc::passes {
namespace {

/// The fused-activation fields an activation node stands for, or nullopt (a Clip whose bounds
/// are not scalar constants, or are reversed or NaN).
struct ActivationFields {
  ir::Activation activation = ir::Activation::kNone;
  float alpha = 0.01f;
  float min = -std::numeric_limits<float>::infinity();
  float max = std::numeric_limits<float>::infinity();
};

std::optional<ActivationFields> FieldsOf(const ir::Node& act) {
  ActivationFields f;
  switch (act.kind()) {
    case ir::OpKind::kRelu:
      f.activation = ir::Activation::kRelu;
      return f;
    case ir::OpKind::kLeakyRelu:
      f.activation = ir::Activation::kLeakyRelu;
      f.alpha = act.attrs<ir::LeakyReluAttrs>().alpha;
      return f;
    case ir::OpKind::kClip: {
      f.activation = ir::Activation::kClip;
      for (int i = 1; i <= 2; ++i) {
        if (act.input(i) == nullptr) continue;
        const std::optional<float> v = fuse::ScalarF32(act.input(i));
        if (!v) return std::nullopt;
        (i == 1 ? f.min : f.max) = *v;
      }
      if (!(f.min <= f.max)) return std::nullopt;
      return f;
    }
    default:
      return std::nullopt;
  }
}

/// Sets `f` on attribute struct `a` unless it already carries an activation.
template <typename A>
bool SetFields(A a, const ActivationFields& f, ir::Node& node) {
  if (a.activation != ir::Activation::kNone) return false;
  a.activation = f.activation;
  a.activation_alpha = f.alpha;
  a.activation_min = f.min;
  a.activation_max = f.max;
  node.set_attrs(std::move(a));
  return true;
}

class FuseActivationPass : public Pass {
 public:
  absl::string_view name() const override { return "fuse-activation"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    const std::vector<ir::Node*> acts =
        fuse::NodesOfKind(graph, {ir::OpKind::kRelu, ir::OpKind::kClip, ir::OpKind::kLeakyRelu});
    bool changed = false;
    for (ir::Node* act : acts) changed |= TryFuse(graph, act);
    return changed;
  }

 private:
  static bool TryFuse(ir::Graph& graph, ir::Node* act) {
    ir::Value* y = act->input(0);
    ir::Node* op = y->producer();
    // The CPU kernels apply fused activations on fp32 (fp16 and bf16 compute in fp32).
    const DType t = y->dtype();
    if (t != DType::kFloat32 && !IsReducedFloat(t)) return false;
    if (op == nullptr || !fuse::HasSingleUse(graph, y)) return false;
    const std::optional<ActivationFields> f = FieldsOf(*act);
    if (!f) return false;
    bool set = false;
    switch (op->kind()) {
      case ir::OpKind::kConv:
        set = SetFields(op->attrs<ir::ConvAttrs>(), *f, *op);
        break;
      case ir::OpKind::kGemm:
        set = SetFields(op->attrs<ir::GemmAttrs>(), *f, *op);
        break;
      case ir::OpKind::kAdd:
        set = SetFields(op->attrs<ir::AddAttrs>(), *f, *op);
        break;
      default:
        return false;
    }
    if (!set) return false;
    fuse::Forward(graph, act->output(0), y);
    graph.RemoveNode(act);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateFuseActivationPass() { return std::make_unique<FuseActivationPass>(); }

}  // namespace qcc::passes
