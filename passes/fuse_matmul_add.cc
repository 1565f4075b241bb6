// fuse-matmul-add: MatMul(A, W) + bias -> Gemm(A, W, bias), for a 2-D A, a constant 2-D W and a
// constant float bias that broadcasts along the last axis ([N], [1, N], [1] or a scalar: all are
// valid Gemm C inputs, and the Add's result has the MatMul's shape). A MatMul with a batched or
// unknown-rank A stays. A BatchNormalization after the new Gemm is then folded as well
// (fuse-gemm-batchnorm runs before this pass in the pipeline).
#include <memory>
#include <vector>

#include "passes/fuse_util.h"
#include "passes/passes.h"

namespace qcc::passes {
namespace {

/// True when `bias` is a float constant of rank <= 2 whose leading dims are 1 and whose last is
/// 1 or `n`.
bool IsRowBias(const ir::Value* bias, int64_t n) {
  const Tensor* t = fuse::ConstantData(bias);
  if (t == nullptr || !IsFloat(t->dtype()) || t->rank() > 2) return false;
  if (t->rank() == 0) return true;
  if (t->rank() == 2 && t->dim(0) != 1) return false;
  const int64_t last = t->dim(t->rank() - 1);
  return last == 1 || last == n;
}

class FuseMatMulAddPass : public Pass {
 public:
  absl::string_view name() const override { return "fuse-matmul-add"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    const std::vector<ir::Node*> adds = fuse::NodesOfKind(graph, {ir::OpKind::kAdd});
    bool changed = false;
    for (ir::Node* add : adds) changed |= TryFuse(graph, add);
    if (!changed) return false;
    absl::Status s = graph.TopologicalSort();
    if (!s.ok()) return s;
    absl::StatusOr<bool> bn = CreateFuseGemmBatchNormPass()->Run(graph);
    if (!bn.ok()) return bn.status();
    return true;
  }

 private:
  static bool TryFuse(ir::Graph& graph, ir::Node* add) {
    for (int side = 0; side < 2; ++side) {
      ir::Value* prod = add->input(side);
      ir::Value* bias = add->input(1 - side);
      ir::Node* mm = prod->producer();
      if (mm == nullptr || mm->kind() != ir::OpKind::kMatMul) continue;
      if (!fuse::HasSingleUse(graph, prod)) continue;
      ir::Value* a = mm->input(0);
      ir::Value* w = mm->input(1);
      const Tensor* wt = fuse::ConstantData(w);
      if (wt == nullptr || !IsFloat(wt->dtype()) || wt->rank() != 2) continue;
      if (a->type().rank() != 2 || !IsFloat(a->dtype())) continue;
      if (!IsRowBias(bias, wt->dim(1))) continue;
      ir::Node* gemm = graph.AddNode(ir::OpKind::kGemm, mm->name(), {a, w, bias},
                                     {fuse::UniqueName(graph, add->output(0)->name() + "_gemm")});
      // An activation already fused into the Add moves with it.
      const ir::AddAttrs& aa = add->attrs<ir::AddAttrs>();
      ir::GemmAttrs g;
      g.activation = aa.activation;
      g.activation_alpha = aa.activation_alpha;
      g.activation_min = aa.activation_min;
      g.activation_max = aa.activation_max;
      gemm->set_attrs(g);
      fuse::Forward(graph, add->output(0), gemm->output(0));
      fuse::RemoveNodes(graph, {add, mm});
      return true;
    }
    return false;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateFuseMatMulAddPass() { return std::make_unique<FuseMatMulAddPass>(); }

}  // namespace qcc::passes
