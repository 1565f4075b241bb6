// fuse-pad-conv: folds a zero constant Pad of the spatial axes into the Conv that reads it.
//
// TensorFlow-style "same" padding is exported as an explicit Pad before a Conv with pads 0
// (efficientnet-lite0: 17 of them, often asymmetric, e.g. [0, 0, 1, 1] before a stride-2 conv).
// Conv(Pad(x, p), pads = q) with a pad value of 0 is Conv(x, pads = p + q): the convolution pads
// with zeros itself (in int8 with the input's zero point, which stands for real 0). A Pad of the
// batch or channel axes, with negative amounts (cropping), another value or mode, or with other
// readers stays.
#include <memory>
#include <optional>
#include <vector>

#include "ir/shape_fns/movement_params.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"

namespace qcc::passes {
namespace {

using ir::OpKind;

/// The [top, left, bottom, right] amounts of a zero constant Pad of a rank-4 tensor that pads
/// only the spatial axes, or nullopt.
std::optional<std::vector<int64_t>> SpatialZeroPads(const ir::Node& pad) {
  if (pad.attrs<ir::PadAttrs>().mode != ir::PadMode::kConstant) return std::nullopt;
  const ir::Value* x = pad.input(0);
  if (!x->type().has_rank() || x->type().rank() != 4) return std::nullopt;
  const Tensor* pads = fuse::ConstantData(pad.input(1));
  const Tensor* axes = pad.input(3) ? fuse::ConstantData(pad.input(3)) : nullptr;
  if (pads == nullptr || (pad.input(3) != nullptr && axes == nullptr)) return std::nullopt;
  if (pad.input(2) != nullptr) {
    std::optional<float> value = fuse::ScalarF32(pad.input(2));
    if (!value || *value != 0.0f) return std::nullopt;
  }
  absl::StatusOr<std::vector<int64_t>> amounts = ir::ResolvePads(4, *pads, axes);
  if (!amounts.ok()) return std::nullopt;
  const std::vector<int64_t>& a = *amounts;  // [n, c, h, w] begins, then ends
  if (a[0] != 0 || a[1] != 0 || a[4] != 0 || a[5] != 0) return std::nullopt;
  for (int64_t v : a) {
    if (v < 0) return std::nullopt;
  }
  return std::vector<int64_t>{a[2], a[3], a[6], a[7]};
}

class FusePadConvPass : public Pass {
 public:
  absl::string_view name() const override { return "fuse-pad-conv"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    bool changed = false;
    for (ir::Node* pad : fuse::NodesOfKind(graph, {OpKind::kPad})) {
      ir::Value* padded = pad->output(0);
      if (!fuse::HasSingleUse(graph, padded)) continue;
      ir::Node* conv = padded->uses()[0].node;
      if (conv->kind() != OpKind::kConv || padded->uses()[0].index != 0) continue;
      const auto& attrs = conv->attrs<ir::ConvAttrs>();
      if (attrs.auto_pad != ir::AutoPad::kNotSet && attrs.auto_pad != ir::AutoPad::kValid) {
        continue;  // SAME_* pads depend on the input extent, which the Pad changes
      }
      std::optional<std::vector<int64_t>> extra = SpatialZeroPads(*pad);
      if (!extra) continue;
      std::vector<int64_t> pads = attrs.auto_pad == ir::AutoPad::kValid || attrs.pads.empty()
                                      ? std::vector<int64_t>(4, 0)
                                      : std::vector<int64_t>(attrs.pads.begin(), attrs.pads.end());
      if (pads.size() != 4) continue;
      for (size_t i = 0; i < 4; ++i) pads[i] += (*extra)[i];
      auto& mutable_attrs = conv->mutable_attrs<ir::ConvAttrs>();
      mutable_attrs.auto_pad = ir::AutoPad::kNotSet;
      mutable_attrs.pads = ir::Ints(pads.begin(), pads.end());
      conv->SetInput(0, pad->input(0));
      graph.RemoveNode(pad);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateFusePadConvPass() { return std::make_unique<FusePadConvPass>(); }

}  // namespace qcc::passes
