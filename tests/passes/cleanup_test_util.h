// Helpers of the clean-up pass tests: run a list of passes, run a graph, count ops.
#ifndef QCC_TESTS_PASSES_CLEANUP_TEST_UTIL_H_
#define QCC_TESTS_PASSES_CLEANUP_TEST_UTIL_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "backend_cpu/evaluator.h"
#include "frontend/onnx_importer.h"
#include "ir/graph.h"
#include "passes/passes.h"
#include "support/status.h"
#include "support/tensor.h"

namespace qcc::testing {

/// The shared model file `name` (a folder under shared/models) and file `file`.
inline std::string ModelPath(const std::string& name, const std::string& file = "model.onnx") {
  return std::string(QCC_SHARED_DIR) + "/models/" + name + "/" + file;
}

/// The clean-up passes as DefaultPipeline runs them, without the fusions.
inline passes::Pipeline CleanupPipeline() {
  passes::Pipeline p;
  p.push_back(passes::CreateRemoveIdentityPass());
  p.push_back(passes::CreateFoldConstantsPass());
  p.push_back(passes::CreateEliminateDeadCodePass());
  return p;
}

/// Runs a pipeline of one pass; returns its record.
inline absl::StatusOr<passes::PassRecord> RunOnePass(ir::Graph& graph,
                                                     std::unique_ptr<passes::Pass> pass) {
  passes::Pipeline p;
  p.push_back(std::move(pass));
  QCC_ASSIGN_OR_RETURN(std::vector<passes::PassRecord> records, passes::RunPipeline(graph, p));
  return records.front();
}

/// Runs `graph` on the CPU evaluator.
inline absl::StatusOr<std::vector<Tensor>> RunGraph(const ir::Graph& graph,
                                                    const std::vector<Tensor>& inputs) {
  QCC_ASSIGN_OR_RETURN(auto evaluator, cpu::Evaluator::Create(graph));
  return evaluator->Run(inputs);
}

/// Nodes of `kind` in `graph`.
inline int CountOps(const ir::Graph& graph, ir::OpKind kind) {
  int n = 0;
  for (const auto& node : graph.nodes()) n += node->kind() == kind;
  return n;
}

/// A tensor of `dims` with values uniform in [lo, hi) from a fixed-seed LCG.
inline Tensor SeededUniform(Dims dims, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  Tensor t(DType::kFloat32, std::move(dims));
  uint32_t s = seed;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.data<float>()[i] = lo + (hi - lo) * static_cast<float>(s >> 8) / 16777216.f;
  }
  return t;
}

}  // namespace qcc::testing

#endif  // QCC_TESTS_PASSES_CLEANUP_TEST_UTIL_H_
