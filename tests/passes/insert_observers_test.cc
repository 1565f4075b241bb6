// insert-observers: an Observe node on exactly the tensors an int8 compile needs a range for,
// right after each tensor's producer, and no change to what the graph computes.
#include <set>
#include <string>
#include <vector>

#include "backend_cpu/evaluator.h"
#include "frontend/tensor_proto.h"
#include "passes/quantizable.h"
#include "tests/passes/fuse_test_util.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

// Observed tensor names, checking each tap's placement: right after its producer (or at the
// front for a graph input), one per tensor, ids 0..n-1.
std::vector<std::string> CheckTaps(const ir::Graph& g) {
  std::vector<std::string> names;
  std::set<int64_t> ids;
  const auto& nodes = g.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i]->kind() != OpKind::kObserve) continue;
    const ir::Value* v = nodes[i]->input(0);
    names.push_back(v->name());
    ids.insert(nodes[i]->attrs<ir::ObserveAttrs>().observer_id);
    // Walk back over other taps: the first non-Observe node before is the producer.
    size_t j = i;
    while (j > 0 && nodes[j - 1]->kind() == OpKind::kObserve) --j;
    if (v->producer() == nullptr) {
      EXPECT_EQ(j, 0u) << v->name();
    } else {
      EXPECT_TRUE(j > 0 && nodes[j - 1].get() == v->producer()) << v->name();
    }
  }
  EXPECT_EQ(ids.size(), names.size());
  if (!ids.empty()) {
    EXPECT_EQ(*ids.begin(), 0);
    EXPECT_EQ(*ids.rbegin(), static_cast<int64_t>(ids.size()) - 1);
  }
  return names;
}

TEST(PassesInsertObserversTest, SmallGraphObservesOnlyQuantizableOpsTensors) {
  // x -> Conv(w, b) -> c -> Softmax -> s -> Add(s, x2) -> a ; Exp(x2) -> e (both outputs)
  auto g = BuildGraph([](ir::Graph& g) {
    ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {1, 2, 4, 4}));
    ir::Value* x2 = g.AddInput("x2", ir::TensorType(DType::kFloat32, {1, 3, 4, 4}));
    ir::Value* w = g.NewConstant("w", SeededUniform({3, 2, 1, 1}, 1, -1, 1));
    ir::Value* b = g.NewConstant("b", SeededUniform({3}, 2, -1, 1));
    ir::Node* conv = g.AddNode(OpKind::kConv, "conv", {x, w, b}, {"c"});
    ir::Node* softmax = g.AddNode(OpKind::kSoftmax, "softmax", {conv->output(0)}, {"s"});
    ir::Node* add = g.AddNode(OpKind::kAdd, "add", {softmax->output(0), x2}, {"a"});
    ir::Node* exp = g.AddNode(OpKind::kExp, "exp", {x2}, {"e"});
    g.AddOutput(add->output(0));
    g.AddOutput(exp->output(0));
  });
  auto rec = RunOnePass(*g, passes::CreateInsertObserversPass());
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_TRUE(rec->changed);
  const std::vector<std::string> names = CheckTaps(*g);
  // Conv's input and output, Add's inputs and output; not the weights, not Exp's output.
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()),
            (std::set<std::string>{"x", "c", "s", "x2", "a"}));
  // A second run finds everything tapped.
  auto again = RunOnePass(*g, passes::CreateInsertObserversPass());
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->changed);
  EXPECT_EQ(CountOps(*g, OpKind::kObserve), 5);
}

TEST(PassesInsertObserversTest, Resnet20AfterThePipeline) {
  auto before = LoadModel("resnet20-cifar10");
  auto g = LoadModel("resnet20-cifar10");
  ASSERT_TRUE(g && before);
  ASSERT_TRUE(passes::RunPipeline(*g, passes::DefaultPipeline()).ok());
  const std::vector<const ir::Value*> wanted = passes::TensorsToObserve(*g);
  auto rec = RunOnePass(*g, passes::CreateInsertObserversPass());
  ASSERT_TRUE(rec.ok()) << rec.status();
  const std::vector<std::string> names = CheckTaps(*g);
  ASSERT_EQ(names.size(), wanted.size());
  for (size_t i = 0; i < wanted.size(); ++i) EXPECT_EQ(names[i], wanted[i]->name());
  // Every tap is on a float, non-constant tensor touching a quantizable op (all of resnet20's
  // ops are quantizable once fused, so that is 36 tensors: merge-slices leaves one Slice, not
  // two, per downsampling shortcut).
  for (const ir::Value* v : wanted) {
    EXPECT_EQ(v->constant(), nullptr) << v->name();
    bool touches = v->producer() && passes::IsQuantizable(v->producer()->kind());
    for (const ir::Use& u : v->uses()) {
      touches =
          touches || (u.node->kind() != OpKind::kObserve && passes::IsQuantizable(u.node->kind()));
    }
    EXPECT_TRUE(touches) << v->name();
  }
  EXPECT_EQ(CountOps(*g, OpKind::kObserve), 36);
  // The outputs are those of the model before any pass.
  auto x =
      frontend::ReadTensorProtoFile(ModelPath("resnet20-cifar10", "test_data_set_0/input_0.pb"));
  ASSERT_TRUE(x.ok());
  auto y0 = RunGraph(*before, {*x});
  auto y1 = RunGraph(*g, {*x});
  ASSERT_TRUE(y0.ok() && y1.ok()) << y1.status();
  EXPECT_EQ(CompareTensors((*y1)[0], (*y0)[0], 1e-3, 1e-4), "");
  // The taps see every observed tensor once per run, as fp32, with the tensor's shape.
  std::vector<int> seen(names.size(), 0);
  cpu::EvalOptions options;
  options.on_observe = [&](int64_t id, const Tensor& t) {
    ASSERT_LT(id, static_cast<int64_t>(seen.size()));
    EXPECT_EQ(t.dtype(), DType::kFloat32);
    ++seen[id];
  };
  auto evaluator = cpu::Evaluator::Create(*g, options);
  ASSERT_TRUE(evaluator.ok());
  ASSERT_TRUE((*evaluator)->Run({*x}).ok());
  EXPECT_EQ(seen, std::vector<int>(names.size(), 1));
}

TEST(PassesInsertObserversTest, Fp16ModelSoftmaxOutputIsNotObserved) {
  auto g = frontend::ImportOnnxFile(ModelPath("squeezenet1.1", "model-fp16.onnx"));
  ASSERT_TRUE(g.ok()) << g.status();
  ir::Graph& graph = **g;
  ASSERT_TRUE(ir::InferShapes(graph).ok());
  ASSERT_TRUE(passes::RunPipeline(graph, passes::DefaultPipeline()).ok());
  ASSERT_TRUE(RunOnePass(graph, passes::CreateInsertObserversPass()).ok());
  const std::vector<std::string> names = CheckTaps(graph);
  EXPECT_GT(names.size(), 20u);
  // The Softmax output is not observed (Softmax stays in float).
  for (const auto& node : graph.nodes()) {
    if (node->kind() != OpKind::kSoftmax) continue;
    for (const std::string& n : names) EXPECT_NE(n, node->output(0)->name());
  }
}

}  // namespace
}  // namespace qcc::testing
