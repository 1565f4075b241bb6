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

/// A small residual image net's first layers, which the quantized-graph tests continue: on the
/// empty graph `g` (opset 17), input x:[N,3,8,8] -> Conv 3x3 "conv1" (8 channels, pad 1) -> Relu
/// -> MaxPool 2x2 = `pooled` -> Conv 1x1 "conv2" -> Add "residual" of the pool = `sum`. Returns
/// {pooled, sum}.
struct ResidualStemValues {
  ir::Value* pooled;
  ir::Value* sum;
};
inline ResidualStemValues ResidualStem(ir::Graph& g) {
  g.set_opset(17);
  const ir::Dim n = ir::SymbolDim(g.AddSymbol("N"));
  ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {n, 3, 8, 8}));
  ir::Node* c1 = g.AddNode(ir::OpKind::kConv, "conv1",
                           {x, g.NewConstant("w1", SeededUniform({8, 3, 3, 3}, 1, -0.4f, 0.4f)),
                            g.NewConstant("b1", SeededUniform({8}, 2, -0.1f, 0.1f))},
                           {"c1"});
  c1->mutable_attrs<ir::ConvAttrs>().pads = {1, 1, 1, 1};
  ir::Value* r = g.AddNode(ir::OpKind::kRelu, "relu", {c1->output(0)}, {"r"})->output(0);
  ir::Node* pool = g.AddNode(ir::OpKind::kMaxPool, "pool", {r}, {"pooled"});
  pool->mutable_attrs<ir::PoolAttrs>().kernel_shape = {2, 2};
  pool->mutable_attrs<ir::PoolAttrs>().strides = {2, 2};
  ir::Value* p = pool->output(0);
  ir::Value* c2 = g.AddNode(ir::OpKind::kConv, "conv2",
                            {p, g.NewConstant("w2", SeededUniform({8, 8, 1, 1}, 3, -0.4f, 0.4f)),
                             g.NewConstant("b2", SeededUniform({8}, 4, -0.1f, 0.1f))},
                            {"c2"})
                      ->output(0);
  return {p, g.AddNode(ir::OpKind::kAdd, "residual", {c2, p}, {"sum"})->output(0)};
}

/// The classifier head the quantized-graph tests end with: x:[N,C,H,W] -> GlobalAveragePool
/// "gap" -> Flatten "flatten" -> Gemm "fc" (4 x `channels` weights "w3", bias "b3", transB) ->
/// y. Returns y.
inline ir::Value* ClassifierHead(ir::Graph& g, ir::Value* x, int64_t channels) {
  ir::Value* gap = g.AddNode(ir::OpKind::kGlobalAveragePool, "gap", {x}, {"gap"})->output(0);
  ir::Value* flat = g.AddNode(ir::OpKind::kFlatten, "flatten", {gap}, {"flat"})->output(0);
  ir::Node* fc = g.AddNode(ir::OpKind::kGemm, "fc",
                           {flat, g.NewConstant("w3", SeededUniform({4, channels}, 5, -0.5f, 0.5f)),
                            g.NewConstant("b3", SeededUniform({4}, 6, -0.1f, 0.1f))},
                           {"y"});
  fc->mutable_attrs<ir::GemmAttrs>().transB = 1;
  return fc->output(0);
}

}  // namespace qcc::testing

#endif  // QCC_TESTS_PASSES_CLEANUP_TEST_UTIL_H_
