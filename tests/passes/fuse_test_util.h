// Helpers of the fusion pass tests: build a small graph twice, fuse one copy, and compare the
// two on the CPU evaluator; load a real model with its test inputs.
#ifndef QCC_TESTS_PASSES_FUSE_TEST_UTIL_H_
#define QCC_TESTS_PASSES_FUSE_TEST_UTIL_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "frontend/onnx_importer.h"
#include "gtest/gtest.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "tests/passes/cleanup_test_util.h"
#include "tests/testing/op_test_util.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {

/// Fills a graph (inputs, nodes, outputs); the helpers below infer its shapes.
using GraphBuilder = std::function<void(ir::Graph&)>;

/// Builds a graph with `build`, verifies it and infers its shapes.
inline std::unique_ptr<ir::Graph> BuildGraph(const GraphBuilder& build) {
  auto g = std::make_unique<ir::Graph>();
  g->set_opset(17);
  build(*g);
  EXPECT_TRUE(ir::Verify(*g).ok());
  const absl::Status s = ir::InferShapes(*g);
  EXPECT_TRUE(s.ok()) << s;
  return g;
}

/// The fused graph and what the pass did: the graph `build` makes, after `pass` ran on it
/// through RunPipeline (so it was verified and re-inferred), and the outputs of both graphs on
/// `inputs`, which must agree within rtol/atol.
struct FuseResult {
  std::unique_ptr<ir::Graph> graph;
  bool changed = false;
};

inline FuseResult FuseAndCompare(const GraphBuilder& build, std::unique_ptr<passes::Pass> pass,
                                 const std::vector<Tensor>& inputs, double rtol = 1e-5,
                                 double atol = 1e-5) {
  FuseResult r;
  std::unique_ptr<ir::Graph> before = BuildGraph(build);
  r.graph = BuildGraph(build);
  auto rec = RunOnePass(*r.graph, std::move(pass));
  EXPECT_TRUE(rec.ok()) << rec.status();
  if (!rec.ok()) return r;
  r.changed = rec->changed;
  auto want = RunGraph(*before, inputs);
  auto got = RunGraph(*r.graph, inputs);
  EXPECT_TRUE(want.ok()) << want.status();
  EXPECT_TRUE(got.ok()) << got.status();
  if (!want.ok() || !got.ok()) return r;
  EXPECT_EQ(got->size(), want->size());
  for (size_t i = 0; i < want->size() && i < got->size(); ++i) {
    EXPECT_EQ(CompareTensors((*got)[i], (*want)[i], rtol, atol), "") << "output " << i;
  }
  return r;
}

/// The single node of `kind` in `g` (a test failure when there is not exactly one).
inline const ir::Node* OnlyNode(const ir::Graph& g, ir::OpKind kind) {
  const ir::Node* found = nullptr;
  int count = 0;
  for (const auto& n : g.nodes()) {
    if (n->kind() == kind) found = n.get(), ++count;
  }
  EXPECT_EQ(count, 1) << ir::OpName(kind);
  return found;
}

/// A positive float tensor (for variances), uniform in [0.5, 1.5).
inline Tensor PositiveF32(Dims dims, uint32_t seed) {
  return SeededUniform(std::move(dims), seed, 0.5f, 1.5f);
}

/// Imports a shared model, verifying and inferring its shapes.
inline std::unique_ptr<ir::Graph> LoadModel(const std::string& name) {
  auto g = frontend::ImportOnnxFile(ModelPath(name));
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return nullptr;
  const absl::Status s = ir::InferShapes(**g);
  EXPECT_TRUE(s.ok()) << s;
  return std::move(*g);
}

/// LoadModel after fold-constants alone (the exporters' shape arithmetic folded, as the passes
/// after it see the graph); null when the model is missing or does not fold.
inline std::unique_ptr<ir::Graph> LoadFoldedModel(const std::string& name) {
  std::unique_ptr<ir::Graph> g = LoadModel(name);
  if (!g) return g;
  passes::Pipeline p;
  p.push_back(passes::CreateFoldConstantsPass());
  const auto records = passes::RunPipeline(*g, p);
  EXPECT_TRUE(records.ok()) << records.status();
  if (!records.ok()) return nullptr;
  return g;
}

}  // namespace qcc::testing

#endif  // QCC_TESTS_PASSES_FUSE_TEST_UTIL_H_
