// decompose-batchnorm: an inference BatchNormalization that no fusion folded into a Conv or Gemm
// becomes a Mul and an Add with per-channel constants, y = x * scale + shift (scale = gamma /
// sqrt(var + eps), shift = beta - scale * mean; fuse_util.h's InferenceBatchNorm).
//
// Exporters leave such a BatchNormalization after ops no fusion looks through: paddle2onnx's
// PP-OCR detector writes ConvTranspose -> Add -> BatchNormalization -> Relu in its head. The Mul
// and the Add are ops every backend runs (a plan has no BatchNormalization step), and the
// activation fusion can then fold a following Relu into the Add.
#include <memory>
#include <vector>

#include "passes/fuse_util.h"
#include "passes/passes.h"

namespace qcc::passes {
namespace {

class DecomposeBatchNormPass : public Pass {
 public:
  absl::string_view name() const override { return "decompose-batchnorm"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    bool changed = false;
    for (ir::Node* bn : fuse::NodesOfKind(graph, {ir::OpKind::kBatchNormalization})) {
      changed |= TryDecompose(graph, bn);
    }
    return fuse::SortIfChanged(graph, changed);
  }

 private:
  static bool TryDecompose(ir::Graph& graph, ir::Node* bn) {
    ir::Value* x = bn->input(0);
    if (!x->type().has_rank() || x->type().dims->size() < 2 || !IsFloat(x->dtype())) return false;
    const int64_t rank = static_cast<int64_t>(x->type().dims->size());
    const int64_t channels = (*x->type().dims)[1];
    if (!ir::IsKnown(channels) || channels < 1) return false;
    std::optional<fuse::BnAffine> affine = fuse::InferenceBatchNorm(graph, *bn, channels);
    if (!affine) return false;
    // [C, 1, ..., 1]: broadcasts against [N, C, ...] along the channel axis.
    std::vector<int64_t> dims(static_cast<size_t>(rank - 1), 1);
    dims[0] = channels;
    Tensor scale = Tensor::FromVector<float>(DType::kFloat32, dims, affine->scale);
    Tensor shift = Tensor::FromVector<float>(DType::kFloat32, dims, affine->shift);
    if (x->dtype() != DType::kFloat32) {  // an fp16 model's arithmetic stays in its type
      scale = CastTensor(scale, x->dtype());
      shift = CastTensor(shift, x->dtype());
    }
    ir::Value* out = bn->output(0);
    const std::string stem = out->name();
    ir::Value* s = graph.NewConstant(fuse::UniqueName(graph, stem + "_bn_scale"), scale);
    ir::Value* b = graph.NewConstant(fuse::UniqueName(graph, stem + "_bn_shift"), shift);
    ir::Node* mul = graph.AddNode(ir::OpKind::kMul, stem + "/bn_scale", {x, s},
                                  {fuse::UniqueName(graph, stem + "_scaled")});
    ir::Node* add = graph.AddNode(ir::OpKind::kAdd, stem + "/bn_shift", {mul->output(0), b},
                                  {fuse::UniqueName(graph, stem + "_bn")});
    fuse::ReplacePattern(graph, out, add->output(0), {bn});
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateDecomposeBatchNormPass() {
  return std::make_unique<DecomposeBatchNormPass>();
}

}  // namespace qcc::passes
