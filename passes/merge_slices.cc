// merge-slices: a Slice of a Slice becomes one Slice.
//
// torch.onnx.export writes x[:, :, ::2, ::2] as one Slice per sliced axis (the CIFAR ResNets'
// downsampling shortcut: a Slice of H, then a Slice of W of its output), so the data is copied
// twice. With constant starts, ends, axes and steps on both, element i of the outer Slice on an
// axis is element s2 + i * t2 of the inner one, which is element s1 + (s2 + i * t2) * t1 of x:
// one Slice with start s1 + s2 * t1, step t1 * t2 and the outer count. An axis either Slice
// changes must have a known extent (both are resolved against their inputs' types, with ONNX's
// clamping); an inner Slice with other readers, or one that leaves nothing, stays.
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "ir/shape_fns/movement_params.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"

namespace qcc::passes {
namespace {

using ir::OpKind;

/// The Slice's axes resolved against its input's type, or nullopt when an input other than the
/// data is not constant or the input has no rank.
std::optional<std::vector<ir::SliceAxis>> ConstantSlice(const ir::Node& slice) {
  const ir::Value* x = slice.input(0);
  if (!x->type().has_rank()) return std::nullopt;
  const Tensor* starts = fuse::ConstantData(slice.input(1));
  const Tensor* ends = fuse::ConstantData(slice.input(2));
  const Tensor* axes = slice.input(3) != nullptr ? fuse::ConstantData(slice.input(3)) : nullptr;
  const Tensor* steps = slice.input(4) != nullptr ? fuse::ConstantData(slice.input(4)) : nullptr;
  if (starts == nullptr || ends == nullptr || (slice.input(3) != nullptr && axes == nullptr) ||
      (slice.input(4) != nullptr && steps == nullptr)) {
    return std::nullopt;
  }
  absl::StatusOr<std::vector<ir::SliceAxis>> s =
      ir::ResolveSlice(*x->type().dims, *starts, *ends, axes, steps);
  if (!s.ok()) return std::nullopt;
  return *std::move(s);
}

/// The ONNX starts, ends, axes and steps of the composed slice, or nullopt when it cannot be
/// written (an unknown extent where either slice changes the axis, or nothing left).
struct SliceInputs {
  std::vector<int64_t> starts, ends, axes, steps;
};

std::optional<SliceInputs> Compose(const std::vector<ir::Dim>& dims,
                                   const std::vector<ir::SliceAxis>& inner,
                                   const std::vector<ir::SliceAxis>& outer) {
  SliceInputs r;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (inner[d].whole && outer[d].whole) continue;
    if (!ir::IsKnown(dims[d]) || !ir::IsKnown(inner[d].count) || !ir::IsKnown(outer[d].count) ||
        outer[d].count <= 0) {
      return std::nullopt;
    }
    const int64_t start = inner[d].start + outer[d].start * inner[d].step;
    const int64_t step = inner[d].step * outer[d].step;
    const int64_t last = start + (outer[d].count - 1) * step;
    // One past the last element; for a negative step below 0 only INT64_MIN says "to the
    // edge" (a negative end would count from the end).
    const int64_t end = step > 0        ? last + 1
                        : last - 1 >= 0 ? last - 1
                                        : std::numeric_limits<int64_t>::min();
    r.starts.push_back(start);
    r.ends.push_back(end);
    r.axes.push_back(static_cast<int64_t>(d));
    r.steps.push_back(step);
  }
  if (r.axes.empty()) return std::nullopt;  // both copy everything: nothing to gain here
  return r;
}

class MergeSlicesPass : public Pass {
 public:
  absl::string_view name() const override { return "merge-slices"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    bool changed = false;
    for (ir::Node* outer : fuse::NodesOfKind(graph, {OpKind::kSlice})) {
      ir::Node* inner = fuse::SoleProducer(graph, outer->input(0), OpKind::kSlice);
      if (inner == nullptr) continue;
      const ir::Value* x = inner->input(0);
      const ir::Value* mid = inner->output(0);
      if (!x->type().has_rank() || !mid->type().has_rank() ||
          x->type().rank() != mid->type().rank()) {
        continue;
      }
      std::optional<std::vector<ir::SliceAxis>> a = ConstantSlice(*inner);
      std::optional<std::vector<ir::SliceAxis>> b = ConstantSlice(*outer);
      if (!a || !b) continue;
      std::optional<SliceInputs> c = Compose(*x->type().dims, *a, *b);
      if (!c) continue;
      const auto constant = [&](const char* what, const std::vector<int64_t>& v) {
        return graph.NewConstant(
            fuse::UniqueName(graph, outer->name() + "_merged_" + what),
            Tensor::FromVector<int64_t>(DType::kInt64, {static_cast<int64_t>(v.size())}, v));
      };
      std::vector<ir::Value*> inputs = {inner->input(0), constant("starts", c->starts),
                                        constant("ends", c->ends), constant("axes", c->axes),
                                        constant("steps", c->steps)};
      for (int i = 0; i < 5; ++i) {
        if (i < outer->num_inputs()) {
          outer->SetInput(i, inputs[i]);
        } else {
          outer->AddInput(inputs[i]);
        }
      }
      graph.RemoveNode(inner);
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> CreateMergeSlicesPass() { return std::make_unique<MergeSlicesPass>(); }

}  // namespace qcc::passes
