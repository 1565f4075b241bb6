// fuse-gemm-batchnorm: folds an inference BatchNormalization after a Gemm into the Gemm.
//
// Gemm gives y[i, n] = alpha * sum_k A[i, k] * op(B)[k, n] + beta * C[i, n] (C broadcast), and
// the BatchNormalization of that [M, N] matrix normalises per column n (its channel axis 1):
// bn(y)[i, n] = s[n] * y[i, n] + t[n] with s = gamma / sqrt(var + eps), t = beta_bn - s * mean.
// Scaling column n of op(B) by s[n] scales the product's column n, so
//   op(B')[k, n] = s[n] * op(B)[k, n]   (row n of B when transB, else column n)
//   C'[i, n]     = s[n] * beta * C[i, n] + t[n],   beta' = 1
// C' keeps C's rows (1 or M; [N] when C is a vector, scalar or absent).
#include <memory>
#include <vector>

#include "passes/fuse_util.h"
#include "passes/passes.h"

namespace qcc::passes {
namespace {

class FuseGemmBatchNormPass : public Pass {
 public:
  absl::string_view name() const override { return "fuse-gemm-batchnorm"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    const std::vector<ir::Node*> bns = fuse::NodesOfKind(graph, {ir::OpKind::kBatchNormalization});
    bool changed = false;
    for (ir::Node* bn : bns) changed |= TryFuse(graph, bn);
    return changed;
  }

 private:
  static bool TryFuse(ir::Graph& graph, ir::Node* bn) {
    ir::Value* y = bn->input(0);
    ir::Node* gemm = y->producer();
    if (gemm == nullptr || gemm->kind() != ir::OpKind::kGemm) return false;
    ir::GemmAttrs attrs = gemm->attrs<ir::GemmAttrs>();
    if (attrs.activation != ir::Activation::kNone) return false;
    if (!fuse::HasSingleUse(graph, y)) return false;
    const Tensor* b_orig = fuse::ConstantData(gemm->input(1));
    std::optional<Tensor> b = fuse::ConstantF32(gemm->input(1));
    if (!b || b->rank() != 2) return false;
    const bool trans_b = attrs.transB != 0;
    const int64_t n_all = trans_b ? b->dim(0) : b->dim(1);
    // C as [rows, cols] with cols 1 or N; absent C is a zero row.
    std::optional<Tensor> c;
    int64_t c_rows = 1, c_cols = 1;
    if (gemm->input(2) != nullptr) {
      c = fuse::ConstantF32(gemm->input(2));
      if (!c || c->rank() > 2) return false;
      if (c->rank() == 2) c_rows = c->dim(0);
      if (c->rank() >= 1) c_cols = c->dim(c->rank() - 1);
      if (c_cols != 1 && c_cols != n_all) return false;
    }
    std::optional<fuse::BnAffine> bn_affine = fuse::InferenceBatchNorm(graph, *bn, n_all);
    if (!bn_affine) return false;
    const std::vector<float>& s = bn_affine->scale;
    const std::vector<float>& t = bn_affine->shift;

    Tensor b_new(DType::kFloat32, b->dims());
    const int64_t rows = b->dim(0), cols = b->dim(1);
    const float* bp = b->data<float>();
    float* bq = b_new.data<float>();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < cols; ++j) bq[r * cols + j] = bp[r * cols + j] * s[trans_b ? r : j];
    }
    const bool c_matrix = c && c->rank() == 2;
    Tensor c_new(DType::kFloat32, c_matrix ? Dims{c_rows, n_all} : Dims{n_all});
    float* cq = c_new.data<float>();
    for (int64_t r = 0; r < c_rows; ++r) {
      for (int64_t j = 0; j < n_all; ++j) {
        const float cv = c ? attrs.beta * c->data<float>()[r * c_cols + (c_cols == 1 ? 0 : j)] : 0;
        cq[r * n_all + j] = s[j] * cv + t[j];
      }
    }
    const DType bt = b_orig->dtype();
    if (bt != DType::kFloat32) {
      b_new = CastTensor(b_new, bt);
      c_new = CastTensor(c_new, bt);
    }
    const std::string stem = bn->output(0)->name();
    gemm->SetInput(1, graph.NewConstant(fuse::UniqueName(graph, stem + "_fused_b"), b_new));
    gemm->SetInput(2, graph.NewConstant(fuse::UniqueName(graph, stem + "_fused_c"), c_new));
    attrs.beta = 1.0f;
    gemm->set_attrs(attrs);
    fuse::Forward(graph, bn->output(0), y);
    graph.RemoveNode(bn);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateFuseGemmBatchNormPass() {
  return std::make_unique<FuseGemmBatchNormPass>();
}

}  // namespace qcc::passes
