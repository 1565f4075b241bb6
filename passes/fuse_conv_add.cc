// fuse-conv-add: folds an Add of a per-channel constant after a Conv or a ConvTranspose into its
// bias.
//
// Old exporters (mnist-8, opset 7) write a bias as Conv(x, W) followed by Add(y, B) with B of
// shape [C, 1, 1] or [1, C, 1, 1] (or a scalar), and paddle2onnx writes ConvTranspose biases the
// same way (ppocr-det-v3): y[n, c, h, w] + B[c] is the op with bias b'[c] = b[c] + B[c]. Either
// Add operand may be the constant.
#include <memory>
#include <optional>
#include <vector>

#include "passes/fuse_util.h"
#include "passes/passes.h"

namespace qcc::passes {
namespace {

/// B as one value per channel of a rank-4 [N, C, H, W] output, or nullopt when B varies
/// along another axis.
std::optional<std::vector<float>> PerChannel(const Tensor& b, int64_t channels) {
  if (b.numel() == 1) return std::vector<float>(channels, b.data<float>()[0]);
  if (b.numel() != channels || b.rank() > 4) return std::nullopt;
  // The channel axis is the third from the end in numpy broadcasting against rank 4.
  const int64_t rank = b.rank();
  for (int64_t a = 0; a < rank; ++a) {
    const bool channel_axis = a == rank - 3;
    if (!channel_axis && b.dim(a) != 1) return std::nullopt;
  }
  if (rank < 3) return std::nullopt;
  return std::vector<float>(b.data<float>(), b.data<float>() + channels);
}

class FuseConvAddPass : public Pass {
 public:
  absl::string_view name() const override { return "fuse-conv-add"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    bool changed = false;
    for (ir::Node* add : fuse::NodesOfKind(graph, {ir::OpKind::kAdd})) {
      changed |= TryFuse(graph, add);
    }
    return changed;
  }

 private:
  static bool TryFuse(ir::Graph& graph, ir::Node* add) {
    if (add->attrs<ir::AddAttrs>().activation != ir::Activation::kNone) return false;
    for (int side = 0; side < 2; ++side) {
      ir::Value* y = add->input(side);
      ir::Value* constant = add->input(1 - side);
      ir::Node* conv = y->producer();
      if (conv == nullptr ||
          (conv->kind() != ir::OpKind::kConv && conv->kind() != ir::OpKind::kConvTranspose)) {
        continue;
      }
      const bool transposed = conv->kind() == ir::OpKind::kConvTranspose;
      if (!transposed && conv->attrs<ir::ConvAttrs>().activation != ir::Activation::kNone) {
        continue;
      }
      if (!fuse::HasSingleUse(graph, y) || !y->type().has_rank() || y->type().dims->size() != 4 ||
          !(add->output(0)->type() == y->type())) {
        continue;
      }
      const Tensor* w_orig = fuse::ConstantData(conv->input(1));
      std::optional<Tensor> b = fuse::ConstantF32(constant);
      if (w_orig == nullptr || !b) continue;
      if (w_orig->rank() != 4) continue;
      // Output channels: W is [M, C/g, kH, kW] for a Conv, [C, M/g, kH, kW] for a ConvTranspose.
      const int64_t channels = transposed
                                   ? w_orig->dim(1) * conv->attrs<ir::ConvTransposeAttrs>().group
                                   : w_orig->dim(0);
      std::optional<std::vector<float>> per_channel = PerChannel(*b, channels);
      if (!per_channel) continue;
      std::vector<float> bias(channels, 0.0f);
      if (conv->input(2) != nullptr) {
        std::optional<Tensor> old = fuse::ConstantF32(conv->input(2));
        if (!old || old->numel() != channels) continue;
        for (int64_t c = 0; c < channels; ++c) bias[c] = old->data<float>()[c];
      }
      for (int64_t c = 0; c < channels; ++c) bias[c] += (*per_channel)[c];
      Tensor bias_tensor = Tensor::FromVector<float>(DType::kFloat32, {channels}, bias);
      if (w_orig->dtype() != DType::kFloat32)
        bias_tensor = CastTensor(bias_tensor, w_orig->dtype());
      const std::string stem = add->output(0)->name();
      ir::Value* new_bias = graph.NewConstant(fuse::UniqueName(graph, stem + "_bias"), bias_tensor);
      if (conv->num_inputs() > 2) {
        conv->SetInput(2, new_bias);
      } else {
        conv->AddInput(new_bias);
      }
      fuse::Forward(graph, add->output(0), y);
      graph.RemoveNode(add);
      return true;
    }
    return false;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateFuseConvAddPass() { return std::make_unique<FuseConvAddPass>(); }

}  // namespace qcc::passes
