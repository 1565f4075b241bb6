// fuse-conv-batchnorm: folds an inference BatchNormalization into the Conv that feeds it.
//
// The algebra (per output channel m, s[m] = gamma[m] / sqrt(var[m] + eps)):
//   conv(x)[m] = b[m] + sum_k w[m, k] * x[k]
//   bn(y)[m]   = s[m] * (y[m] - mean[m]) + beta[m]
//   bn(conv(x))[m] = sum_k (s[m] * w[m, k]) * x[k] + s[m] * (b[m] - mean[m]) + beta[m]
// so w'[m, k] = s[m] * w[m, k] and b'[m] = s[m] * (b[m] - mean[m]) + beta[m] (b = 0 when the
// Conv has no bias). The result differs from the unfused graph only by fp32 rounding.
// A ConvTranspose folds the same way; its weights are [C, M/g, kH, kW], so output channel
// m = (c / (C/g)) * (M/g) + j scales w[c, j] (paddle2onnx's detector head, ppocr-det-v3).
#include <memory>
#include <vector>

#include "passes/fuse_util.h"
#include "passes/passes.h"

namespace qcc::passes {
namespace {

class FuseConvBatchNormPass : public Pass {
 public:
  absl::string_view name() const override { return "fuse-conv-batchnorm"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    const std::vector<ir::Node*> bns = fuse::NodesOfKind(graph, {ir::OpKind::kBatchNormalization});
    bool changed = false;
    for (ir::Node* bn : bns) changed |= TryFuse(graph, bn);
    return changed;
  }

 private:
  static bool TryFuse(ir::Graph& graph, ir::Node* bn) {
    ir::Value* y = bn->input(0);
    ir::Node* conv = y->producer();
    if (conv == nullptr ||
        (conv->kind() != ir::OpKind::kConv && conv->kind() != ir::OpKind::kConvTranspose)) {
      return false;
    }
    const bool transposed = conv->kind() == ir::OpKind::kConvTranspose;
    if (!transposed && conv->attrs<ir::ConvAttrs>().activation != ir::Activation::kNone) {
      return false;
    }
    if (!fuse::HasSingleUse(graph, y)) return false;
    const Tensor* w_orig = fuse::ConstantData(conv->input(1));
    std::optional<Tensor> w = fuse::ConstantF32(conv->input(1));
    if (!w || w->rank() < (transposed ? 2 : 1)) return false;
    const int64_t group = transposed ? conv->attrs<ir::ConvTransposeAttrs>().group : 1;
    if (transposed && (group < 1 || w->dim(0) % group != 0)) return false;
    const int64_t m_all = transposed ? w->dim(1) * group : w->dim(0);
    std::optional<Tensor> b;
    if (conv->input(2) != nullptr) {
      b = fuse::ConstantF32(conv->input(2));
      if (!b || b->numel() != m_all) return false;
    }
    std::optional<fuse::BnAffine> bn_affine = fuse::InferenceBatchNorm(graph, *bn, m_all);
    if (!bn_affine) return false;
    const std::vector<float>& scale = bn_affine->scale;
    const std::vector<float>& shift = bn_affine->shift;

    Tensor w_new(DType::kFloat32, w->dims());
    const float* wp = w->data<float>();
    float* wq = w_new.data<float>();
    if (transposed) {  // [C, M/g, taps]: row (c, j) is output channel (c / (C/g)) * (M/g) + j
      const int64_t c_all = w->dim(0), m_per_group = w->dim(1);
      const int64_t c_per_group = c_all / group;
      const int64_t taps = w->numel() == 0 ? 0 : w->numel() / (c_all * m_per_group);
      for (int64_t c = 0; c < c_all; ++c) {
        for (int64_t j = 0; j < m_per_group; ++j) {
          const float sm = scale[c / c_per_group * m_per_group + j];
          const int64_t row = (c * m_per_group + j) * taps;
          for (int64_t k = 0; k < taps; ++k) wq[row + k] = wp[row + k] * sm;
        }
      }
    } else {
      const int64_t per_m = m_all == 0 ? 0 : w->numel() / m_all;
      for (int64_t m = 0; m < m_all; ++m) {
        for (int64_t k = 0; k < per_m; ++k) wq[m * per_m + k] = wp[m * per_m + k] * scale[m];
      }
    }
    Tensor b_new(DType::kFloat32, {m_all});
    for (int64_t m = 0; m < m_all; ++m) {
      const float bm = b ? b->data<float>()[m] : 0.0f;
      b_new.data<float>()[m] = bm * scale[m] + shift[m];
    }
    // Keep the weights' storage type (fp16 models stay fp16).
    const DType wt = w_orig->dtype();
    if (wt != DType::kFloat32) {
      w_new = CastTensor(w_new, wt);
      b_new = CastTensor(b_new, wt);
    }
    const std::string stem = bn->output(0)->name();
    conv->SetInput(1, graph.NewConstant(fuse::UniqueName(graph, stem + "_fused_w"), w_new));
    conv->SetInput(2, graph.NewConstant(fuse::UniqueName(graph, stem + "_fused_b"), b_new));
    fuse::Forward(graph, bn->output(0), y);
    graph.RemoveNode(bn);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateFuseConvBatchNormPass() {
  return std::make_unique<FuseConvBatchNormPass>();
}

}  // namespace qcc::passes
