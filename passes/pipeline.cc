#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "passes/passes.h"
#include "support/status.h"

namespace qcc::passes {

namespace {

std::map<ir::OpKind, int> CountOps(const ir::Graph& graph) {
  std::map<ir::OpKind, int> counts;
  for (const auto& n : graph.nodes()) ++counts[n->kind()];
  return counts;
}

std::string DiffCounts(const std::map<ir::OpKind, int>& before,
                       const std::map<ir::OpKind, int>& after) {
  std::map<ir::OpKind, int> diff;
  for (const auto& [k, n] : before) diff[k] -= n;
  for (const auto& [k, n] : after) diff[k] += n;
  std::vector<std::string> parts;
  for (const auto& [k, d] : diff) {
    if (d != 0) parts.push_back(absl::StrCat(d > 0 ? "+" : "", d, " ", ir::OpName(k)));
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace

PassRecord RecordRewrite(absl::string_view name, const ir::Graph& before, const ir::Graph& after) {
  PassRecord r;
  r.name = std::string(name);
  r.changed = true;
  r.nodes_before = static_cast<int>(before.nodes().size());
  r.nodes_after = static_cast<int>(after.nodes().size());
  r.summary = DiffCounts(CountOps(before), CountOps(after));
  return r;
}

absl::StatusOr<std::vector<PassRecord>> RunPipeline(ir::Graph& graph, const Pipeline& pipeline) {
  std::vector<PassRecord> records;
  for (const auto& pass : pipeline) {
    PassRecord r;
    r.name = std::string(pass->name());
    const auto before = CountOps(graph);
    r.nodes_before = static_cast<int>(graph.nodes().size());
    auto changed = pass->Run(graph);
    if (!changed.ok()) {
      return absl::Status(changed.status().code(),
                          absl::StrCat("pass ", r.name, ": ", changed.status().message()));
    }
    r.changed = *changed;
    if (r.changed) {
      graph.RemoveDeadValues();
      absl::Status s = ir::Verify(graph);
      if (s.ok()) s = ir::InferShapes(graph);
      if (!s.ok()) {
        return absl::InternalError(
            absl::StrCat("after pass ", r.name, " the graph is invalid: ", s.message()));
      }
    }
    r.nodes_after = static_cast<int>(graph.nodes().size());
    r.summary = DiffCounts(before, CountOps(graph));
    records.push_back(std::move(r));
  }
  return records;
}

Pipeline DefaultPipeline() {
  Pipeline p;
  p.push_back(CreateRemoveIdentityPass());
  p.push_back(CreateFoldConstantsPass());
  p.push_back(CreateResolveReshapePass());
  p.push_back(CreateEliminateDeadCodePass());
  p.push_back(CreateFuseConvBatchNormPass());
  p.push_back(CreateFuseConvAddPass());
  // Again: a BatchNormalization after a bias Add that fuse-conv-add just folded (paddle2onnx's
  // ConvTranspose -> Add -> BatchNormalization).
  p.push_back(CreateFuseConvBatchNormPass());
  p.push_back(CreateFusePadConvPass());
  p.push_back(CreateMergeSlicesPass());
  p.push_back(CreateFuseGemmBatchNormPass());
  p.push_back(CreateFuseMatMulAddPass());
  p.push_back(CreateDecomposeBatchNormPass());
  p.push_back(CreateFuseHardSwishPass());
  p.push_back(CreateFuseLayerNormPass());
  p.push_back(CreateFuseGeluPass());
  p.push_back(CreateFoldAttentionScalePass());
  p.push_back(CreateFuseAttentionPass());
  p.push_back(CreateFuseActivationPass());
  p.push_back(CreateEliminateDeadCodePass());
  return p;
}

Pipeline OnnxFormPipeline() {
  Pipeline p = DefaultPipeline();
  p.erase(std::remove_if(
              p.begin(), p.end(),
              [](const std::unique_ptr<Pass>& pass) { return pass->name() == "fuse-attention"; }),
          p.end());
  return p;
}

}  // namespace qcc::passes
