#include "passes/quantizable.h"

#include "absl/container/flat_hash_set.h"
#include "passes/fuse_util.h"

namespace qcc::passes {

bool IsQuantizable(ir::OpKind kind) {
  using K = ir::OpKind;
  switch (kind) {
    case K::kConv:
    case K::kGemm:
    case K::kMatMul:
    case K::kAdd:
    case K::kMaxPool:
    case K::kAveragePool:
    case K::kGlobalAveragePool:
    case K::kConcat:
    case K::kSigmoid:
    case K::kHardSigmoid:
    case K::kHardSwish:
    case K::kTanh:
    case K::kRelu:
    case K::kClip:
    case K::kReshape:
    case K::kFlatten:
    case K::kTranspose:
    case K::kSlice:
    case K::kPad:
    case K::kSqueeze:
    case K::kUnsqueeze:
    case K::kResize:
    case K::kExpand:
      return true;
    default:
      return false;
  }
}

std::vector<const ir::Value*> TensorsToObserve(const ir::Graph& graph) {
  std::vector<const ir::Value*> observed;
  absl::flat_hash_set<const ir::Value*> seen;
  auto consider = [&](const ir::Value* v) {
    if (v == nullptr || !IsFloat(v->dtype()) || fuse::ConstantData(v) != nullptr) return;
    if (seen.insert(v).second) observed.push_back(v);
  };
  for (const auto& node : graph.nodes()) {
    if (!IsQuantizable(node->kind())) continue;
    for (const ir::Value* v : node->inputs()) consider(v);
    for (const ir::Value* v : node->outputs()) consider(v);
  }
  return observed;
}

}  // namespace qcc::passes
