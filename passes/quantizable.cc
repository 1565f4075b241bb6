#include "passes/quantizable.h"

#include "absl/container/flat_hash_set.h"
#include "passes/fuse_util.h"

namespace qcc::passes {

bool IsQuantizable(ir::OpKind kind) { return ir::Int8FormOf(kind) != ir::Int8Form::kNone; }

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
