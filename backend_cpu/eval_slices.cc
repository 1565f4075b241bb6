#include "backend_cpu/eval_slices.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ir/op_kind.h"
#include "support/dtype.h"

namespace qcc::cpu {
namespace {

/// The checks of one node's operands.
class NodeCheck {
 public:
  explicit NodeCheck(const ir::Node& node) : node_(node) {}

  int64_t out_rank() const { return node_.output(0)->type().rank(); }
  int64_t in_rank() const { return node_.input(0)->type().rank(); }
  /// Input i is absent or a constant.
  bool Constant(int i) const {
    return node_.input(i) == nullptr || node_.input(i)->constant() != nullptr;
  }
  bool ConstantFrom(int first) const {
    for (int i = first; i < node_.num_inputs(); ++i) {
      if (!Constant(i)) return false;
    }
    return true;
  }
  /// Numpy broadcasting to rank `rank` keeps images apart: a batched input has that rank, a
  /// constant of that rank a leading extent of 1.
  bool BroadcastsPerImage(int64_t rank) const {
    for (int i = 0; i < node_.num_inputs(); ++i) {
      const ir::Value* v = node_.input(i);
      if (v == nullptr) continue;
      const int64_t r = v->type().rank();
      if (v->constant() == nullptr ? r != rank : r == rank && v->type().dims->front() != 1) {
        return false;
      }
    }
    return true;
  }
  /// `axis` made non-negative for rank `rank`.
  static int64_t Normalized(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }
  /// The values of constant input i (empty when absent or not constant).
  std::vector<int64_t> Ints(int i) const {
    const ir::Value* v = node_.input(i);
    return v != nullptr && v->constant() != nullptr ? v->constant()->ToInt64Vector()
                                                    : std::vector<int64_t>{};
  }

 private:
  const ir::Node& node_;
};

/// Whether `node` computes image i of its outputs from image i of its batched inputs alone (the
/// leading extents of every value are checked by the caller).
bool NodeKeepsImagesApart(const ir::Node& node) {
  if (node.num_outputs() == 0) return node.kind() == ir::OpKind::kObserve;  // statistics merge
  if (node.num_inputs() == 0 || node.input(0) == nullptr) return false;
  const NodeCheck c(node);
  if (ir::UnaryFnOf(node.kind())) return c.ConstantFrom(1);  // Clip's bounds
  // Kinds not listed here (shape arithmetic, Resize, Range, ...) are not known to keep the
  // images apart: the graph then runs the whole batch at once, as before.
  switch (node.kind()) {
    case ir::OpKind::kNot:
    case ir::OpKind::kIsNaN:
    case ir::OpKind::kIsInf:
    case ir::OpKind::kIdentity:
    case ir::OpKind::kDropout:
    case ir::OpKind::kCast:
    case ir::OpKind::kQuantize:
    case ir::OpKind::kDequantize:
    case ir::OpKind::kQuantizeLinear:
    case ir::OpKind::kDequantizeLinear:
    case ir::OpKind::kQLut:
    case ir::OpKind::kMaxPool:
    case ir::OpKind::kAveragePool:
    case ir::OpKind::kGlobalAveragePool:
    case ir::OpKind::kGlobalMaxPool:
    case ir::OpKind::kConv:
    case ir::OpKind::kConvTranspose:
    case ir::OpKind::kQConv:
    case ir::OpKind::kInstanceNormalization:
    case ir::OpKind::kDepthToSpace:
    case ir::OpKind::kSpaceToDepth:
    case ir::OpKind::kSqueeze:
    case ir::OpKind::kUnsqueeze:
    case ir::OpKind::kPad:
    case ir::OpKind::kFlatten:
    case ir::OpKind::kArgMax:
    case ir::OpKind::kArgMin:
    case ir::OpKind::kReduceMean:
    case ir::OpKind::kReduceSum:
    case ir::OpKind::kReduceMax:
    case ir::OpKind::kReduceMin:
    case ir::OpKind::kReduceProd:
    case ir::OpKind::kReduceL1:
    case ir::OpKind::kReduceL2:
    case ir::OpKind::kReduceLogSum:
    case ir::OpKind::kReduceLogSumExp:
    case ir::OpKind::kReduceSumSquare:
      // Per element or per image (the batch axis of their output is checked: a pad, flatten or
      // reduction across it changes or drops that extent), with constant parameters.
      return c.ConstantFrom(1);
    case ir::OpKind::kBatchNormalization:
      return node.attrs<ir::BatchNormAttrs>().training_mode == 0 && c.ConstantFrom(1);
    case ir::OpKind::kGemm:
      return node.attrs<ir::GemmAttrs>().transA == 0 && c.ConstantFrom(1);
    case ir::OpKind::kQGemm:
    case ir::OpKind::kDynamicQGemm:
      return c.ConstantFrom(1);  // rows of A against weights
    case ir::OpKind::kMatMul:
      // Batch axes broadcast; a batched rank-2 A is rows against a constant B.
      return c.BroadcastsPerImage(c.out_rank()) && (c.out_rank() >= 3 || c.Constant(1));
    case ir::OpKind::kAdd:
    case ir::OpKind::kSub:
    case ir::OpKind::kMul:
    case ir::OpKind::kDiv:
    case ir::OpKind::kPow:
    case ir::OpKind::kMod:
    case ir::OpKind::kMin:
    case ir::OpKind::kMax:
    case ir::OpKind::kSum:
    case ir::OpKind::kMean:
    case ir::OpKind::kPRelu:
    case ir::OpKind::kEqual:
    case ir::OpKind::kLess:
    case ir::OpKind::kLessOrEqual:
    case ir::OpKind::kGreater:
    case ir::OpKind::kGreaterOrEqual:
    case ir::OpKind::kAnd:
    case ir::OpKind::kOr:
    case ir::OpKind::kXor:
    case ir::OpKind::kWhere:
      return c.BroadcastsPerImage(c.out_rank());
    case ir::OpKind::kExpand:
      return c.Constant(1) && c.BroadcastsPerImage(c.out_rank());
    case ir::OpKind::kTile: {
      const std::vector<int64_t> repeats = c.Ints(1);
      return !repeats.empty() && repeats[0] == 1;
    }
    case ir::OpKind::kConcat:
      return NodeCheck::Normalized(node.attrs<ir::AxisAttrs>().axis, c.in_rank()) > 0 &&
             c.BroadcastsPerImage(c.in_rank());
    case ir::OpKind::kSplit:
      return NodeCheck::Normalized(node.attrs<ir::SplitAttrs>().axis, c.in_rank()) > 0 &&
             c.ConstantFrom(1);
    case ir::OpKind::kSoftmax:
    case ir::OpKind::kLogSoftmax:
    case ir::OpKind::kHardmax:
      // Also with opset < 13's flattening at `axis`: rows are then whole images or parts.
      return NodeCheck::Normalized(node.attrs<ir::SoftmaxAttrs>().axis, c.in_rank()) > 0;
    case ir::OpKind::kLayerNormalization:
      return NodeCheck::Normalized(node.attrs<ir::LayerNormAttrs>().axis, c.in_rank()) > 0 &&
             c.ConstantFrom(1);
    case ir::OpKind::kTranspose: {
      const ir::Ints& perm = node.attrs<ir::TransposeAttrs>().perm;
      return perm.empty() ? c.in_rank() == 1 : perm[0] == 0;
    }
    case ir::OpKind::kReshape: {
      if (!c.Constant(1)) return false;
      const auto per_image = [](const ir::Value* v) {
        int64_t n = 1;
        for (size_t a = 1; a < v->type().dims->size(); ++a) n *= (*v->type().dims)[a];
        return n;
      };
      return per_image(node.input(0)) == per_image(node.output(0));
    }
    case ir::OpKind::kSlice: {
      // Along the batch axis only a whole, forward slice keeps the extent and the order.
      if (!c.ConstantFrom(1)) return false;
      std::vector<int64_t> axes = c.Ints(3);
      const std::vector<int64_t> steps = c.Ints(4);
      if (node.input(3) == nullptr) {
        for (int64_t a = 0; a < static_cast<int64_t>(c.Ints(1).size()); ++a) axes.push_back(a);
      }
      for (size_t i = 0; i < axes.size(); ++i) {
        if (NodeCheck::Normalized(axes[i], c.in_rank()) == 0 && i < steps.size() && steps[i] != 1) {
          return false;
        }
      }
      return true;
    }
    case ir::OpKind::kGather: {
      // Rows of a constant table for batched indices, or other axes of batched data.
      const int64_t axis = NodeCheck::Normalized(node.attrs<ir::AxisAttrs>().axis, c.in_rank());
      return (axis == 0 && c.Constant(0) && !c.Constant(1)) ||
             (axis > 0 && !c.Constant(0) && c.Constant(1));
    }
    case ir::OpKind::kAttention: {
      // Q, K, V [B, S, H*D]; the mask broadcasts to [B, Hq, Sq, Skv].
      if (c.Constant(0) || c.Constant(1) || c.Constant(2)) return false;
      const ir::Value* mask = node.input(3);
      if (mask == nullptr) return true;
      const int64_t r = mask->type().rank();
      return mask->constant() == nullptr ? r == 4 : r < 4 || mask->type().dims->front() == 1;
    }
    default:
      return false;
  }
}

}  // namespace

bool GraphImagesIndependent(const ir::Graph& graph, std::string* why) {
  const auto fail = [why](std::string reason) {
    if (why != nullptr) *why = std::move(reason);
    return false;
  };
  if (graph.inputs().empty()) return fail("the graph has no inputs");
  const ir::TensorType& first = graph.inputs().front()->type();
  if (!first.has_rank() || first.dims->empty() || !ir::IsSymbol(first.dims->front())) {
    return fail("its first input has no dynamic batch");
  }
  const ir::Dim batch = first.dims->front();
  const auto batched = [batch](const ir::Value& v) {
    if (!v.type().has_rank() || v.type().dims->empty() || v.type().dims->front() != batch) {
      return false;
    }
    for (size_t a = 1; a < v.type().dims->size(); ++a) {
      if (!ir::IsKnown((*v.type().dims)[a])) return false;
    }
    return true;
  };
  for (const ir::Value* v : graph.inputs()) {
    if (!batched(*v)) return fail(absl::StrCat("input '", v->name(), "' has no batch axis"));
  }
  for (const ir::Value* v : graph.outputs()) {
    if (v->constant() != nullptr || !batched(*v)) {
      return fail(absl::StrCat("output '", v->name(), "' has no batch axis"));
    }
  }
  for (const auto& node : graph.nodes()) {
    for (const ir::Value* v : node->outputs()) {
      if (v != nullptr && v->constant() == nullptr && !batched(*v)) {
        return fail(absl::StrCat("value '", v->name(), "' of node '", node->name(),
                                 "' has no batch axis of static images"));
      }
    }
    if (!NodeKeepsImagesApart(*node)) {
      return fail(absl::StrCat("node '", node->name(), "' (", ir::OpName(node->kind()),
                               ") may mix the images of a batch"));
    }
  }
  return true;
}

int64_t EvalSliceImages(const ir::Graph& graph, uint64_t budget) {
  if (!GraphImagesIndependent(graph)) return 0;
  // Bytes of one image of each value; the live ones in node order, each freed after its last
  // reader (graph outputs are never freed).
  const auto image_bytes = [](const ir::Value& v) {
    uint64_t n = DTypeSize(v.dtype());
    for (size_t a = 1; a < v.type().dims->size(); ++a) n *= (*v.type().dims)[a];
    return n;
  };
  absl::flat_hash_map<const ir::Value*, int> readers;
  for (const auto& node : graph.nodes()) {
    for (const ir::Value* v : node->inputs()) {
      if (v != nullptr && v->constant() == nullptr) ++readers[v];
    }
  }
  for (const ir::Value* v : graph.outputs()) ++readers[v];
  uint64_t live = 0, peak = 0;
  for (const ir::Value* v : graph.inputs()) live += image_bytes(*v);
  for (const auto& node : graph.nodes()) {
    for (const ir::Value* v : node->outputs()) {
      if (v != nullptr) live += image_bytes(*v);
    }
    peak = std::max(peak, live);
    for (const ir::Value* v : node->inputs()) {
      if (v != nullptr && v->constant() == nullptr && --readers[v] == 0) live -= image_bytes(*v);
    }
  }
  return static_cast<int64_t>(std::max<uint64_t>(1, budget / std::max<uint64_t>(1, peak)));
}

}  // namespace qcc::cpu
