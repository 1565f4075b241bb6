// Test helpers: build a one-node graph and run it on the CPU evaluator.
#ifndef QCC_TESTS_TESTING_OP_TEST_UTIL_H_
#define QCC_TESTS_TESTING_OP_TEST_UTIL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backend_cpu/evaluator.h"
#include "ir/graph.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "support/tensor.h"

namespace qcc::testing {

/// One input of a single-op test: runtime data (a graph input) or a constant (initializer);
/// an undefined tensor stands for an omitted optional input.
struct OpInput {
  Tensor tensor;
  bool constant = false;
};

/// Builds a graph holding one node of `kind` with `attrs`, whose inputs are `inputs` and which
/// has `num_outputs` outputs, infers shapes, verifies it and runs it on the CPU evaluator.
inline absl::StatusOr<std::vector<Tensor>> RunSingleOp(ir::OpKind kind, ir::Attrs attrs,
                                                       const std::vector<OpInput>& inputs,
                                                       int num_outputs = 1) {
  ir::Graph g;
  g.set_opset(21);
  std::vector<ir::Value*> in_values;
  std::vector<Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i].tensor;
    if (!t.defined()) {
      in_values.push_back(nullptr);
    } else if (inputs[i].constant) {
      in_values.push_back(g.NewConstant("c" + std::to_string(i), t));
    } else {
      in_values.push_back(g.AddInput(
          "x" + std::to_string(i),
          ir::TensorType(t.dtype(), std::vector<ir::Dim>(t.dims().begin(), t.dims().end()))));
      feeds.push_back(t);
    }
  }
  std::vector<std::string> out_names;
  for (int i = 0; i < num_outputs; ++i) out_names.push_back("y" + std::to_string(i));
  ir::Node* n = g.AddNode(kind, "op", in_values, out_names);
  n->set_attrs(std::move(attrs));
  for (ir::Value* v : n->outputs()) g.AddOutput(v);
  absl::Status s = ir::Verify(g);
  if (!s.ok()) return s;
  s = ir::InferShapes(g);
  if (!s.ok()) return s;
  auto ev = cpu::Evaluator::Create(g);
  if (!ev.ok()) return ev.status();
  return (*ev)->Run(feeds);
}

/// A float32 tensor of `dims` holding `values`.
inline Tensor F32(Dims dims, const std::vector<float>& values) {
  return Tensor::FromVector(DType::kFloat32, std::move(dims), values);
}
/// An int64 tensor of `dims` holding `values`.
inline Tensor I64(Dims dims, const std::vector<int64_t>& values) {
  return Tensor::FromVector(DType::kInt64, std::move(dims), values);
}

}  // namespace qcc::testing

#endif  // QCC_TESTS_TESTING_OP_TEST_UTIL_H_
