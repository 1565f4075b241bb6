// fold-scales: the requantization of an int8 Conv/GEMM folded into integer form (passes.h).
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "passes/passes.h"
#include "passes/quantize.h"
#include "support/quantize.h"
#include "support/status.h"

namespace qcc::passes {
namespace {

using ir::OpKind;

class FoldScalesPass : public Pass {
 public:
  absl::string_view name() const override { return "fold-scales"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    bool changed = false;
    for (const auto& owned : graph.nodes()) {
      ir::Node& node = *owned;
      // Folded nodes have their int32 bias and multipliers (4 inputs or more).
      if ((node.kind() != OpKind::kQConv && node.kind() != OpKind::kQGemm) ||
          node.num_inputs() > 3) {
        continue;
      }
      QCC_RETURN_IF_ERROR(Fold(graph, node));
      changed = true;
    }
    return changed;
  }

 private:
  static absl::Status Error(const ir::Node& node, absl::string_view what) {
    return absl::InternalError(absl::StrCat("node '", node.name(), "': ", what));
  }

  /// (x, w, [b]) -> (x, w, bias, multiplier) for an int8 result, or (x, w, bias, scale, [b]) for
  /// an fp32 one, where b stays a float bias added after scaling.
  static absl::Status Fold(ir::Graph& graph, ir::Node& node) {
    const ir::Value* x = node.input(0);
    ir::Value* w = node.input(1);
    ir::Value* b = node.num_inputs() > 2 ? node.input(2) : nullptr;
    const bool float_result =
        node.kind() == OpKind::kQGemm && node.attrs<ir::QGemmAttrs>().float_result;
    const ir::Value* y = node.output(0);
    if (x->quant() == nullptr || (!float_result && y->quant() == nullptr)) {
      return Error(node, "its int8 input or output has no quantization parameters");
    }
    const ir::ChannelScales* scales = w->channel_scales();
    if (w->constant() == nullptr || w->dtype() != DType::kInt8 || scales == nullptr ||
        w->constant()->rank() < 1) {
      return Error(node, absl::StrCat("weights '", w->name(),
                                      "' are not an int8 constant with per-channel scales"));
    }
    const Tensor& q = *w->constant();
    const int64_t k = q.dim(0);
    const int64_t per_row = q.numel() / std::max<int64_t>(k, 1);
    if (static_cast<int64_t>(scales->scales.size()) != k ||
        (b != nullptr && (b->constant() == nullptr || b->dtype() != DType::kFloat32 ||
                          b->constant()->numel() != k))) {
      return Error(node,
                   absl::StrCat("weights '", w->name(), "' have ", scales->scales.size(),
                                " scales for ", k, " channels, or the bias is not fp32 [", k, "]"));
    }
    const QuantParams& in = *x->quant();
    Tensor bias(DType::kInt32, {k});
    Tensor multiplier(DType::kFloat32, {k});
    for (int64_t r = 0; r < k; ++r) {
      int64_t sum = 0;
      for (int64_t c = 0; c < per_row; ++c) sum += q.data<int8_t>()[r * per_row + c];
      const float s_w = scales->scales[r];
      // An fp32 result adds its float bias after scaling; the integer bias only corrects zp_in.
      const float real = b != nullptr && !float_result ? b->constant()->data<float>()[r] : 0.0f;
      bias.data<int32_t>()[r] = FoldedBias(real, in, s_w, sum);
      multiplier.data<float>()[r] =
          float_result ? in.scale * s_w : RequantMultiplier(in.scale, s_w, y->quant()->scale);
    }
    ir::Value* folded_bias = graph.NewConstant(absl::StrCat(node.name(), ":bias"), bias);
    if (node.num_inputs() > 2) {
      node.SetInput(2, folded_bias);
    } else {
      node.AddInput(folded_bias);
    }
    node.AddInput(graph.NewConstant(
        absl::StrCat(node.name(), float_result ? ":scale" : ":multiplier"), multiplier));
    if (b != nullptr && float_result) node.AddInput(b);
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> CreateFoldScalesPass() { return std::make_unique<FoldScalesPass>(); }

}  // namespace qcc::passes
