// The evaluator's batch slices (backend_cpu/eval_slices.h): which graphs keep their images
// apart, and sliced runs giving the whole batch's outputs, with observers seeing every image once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backend_cpu/eval_slices.h"
#include "backend_cpu/evaluator.h"
#include "ir/attrs.h"
#include "ir/shape_inference.h"
#include "tests/backend_cpu/nn_testing.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {
namespace {

Tensor Random(Dims dims, uint32_t seed) { return RandomF32(std::move(dims), seed); }

ir::TensorType Batched(std::vector<ir::Dim> image) {
  image.insert(image.begin(), ir::SymbolDim(0));
  return ir::TensorType(DType::kFloat32, std::move(image));
}

/// x [N,3,8,8] -> Conv 3x3 (16, pads 1, Relu) -> MaxPool 2x2 -> Conv 1x1 (8) -> Add a [1,8,1,1]
/// constant -> Observe -> GlobalAveragePool -> Flatten -> Gemm (10) -> Softmax(`softmax_axis`).
void BuildNet(ir::Graph& g, int64_t softmax_axis = -1) {
  g.set_opset(21);
  ir::Value* x = g.AddInput("x", Batched({3, 8, 8}));
  ir::Node* c1 = g.AddNode(
      ir::OpKind::kConv, "conv1",
      {x, g.NewConstant("w1", Random({16, 3, 3, 3}, 1)), g.NewConstant("b1", Random({16}, 2))},
      {"c1"});
  ir::ConvAttrs a1;
  a1.pads = {1, 1, 1, 1};
  a1.activation = ir::Activation::kRelu;
  c1->set_attrs(a1);
  ir::Node* pool = g.AddNode(ir::OpKind::kMaxPool, "pool", {c1->output(0)}, {"p"});
  ir::PoolAttrs pa;
  pa.kernel_shape = {2, 2};
  pa.strides = {2, 2};
  pool->set_attrs(pa);
  ir::Node* c2 =
      g.AddNode(ir::OpKind::kConv, "conv2",
                {pool->output(0), g.NewConstant("w2", Random({8, 16, 1, 1}, 3))}, {"c2"});
  ir::Node* add =
      g.AddNode(ir::OpKind::kAdd, "add",
                {c2->output(0), g.NewConstant("shift", Random({1, 8, 1, 1}, 4))}, {"s"});
  ir::Node* observe = g.AddNode(ir::OpKind::kObserve, "observe", {add->output(0)}, {});
  ir::ObserveAttrs oa;
  oa.observer_id = 0;
  observe->set_attrs(oa);
  ir::Node* gap = g.AddNode(ir::OpKind::kGlobalAveragePool, "gap", {add->output(0)}, {"g"});
  ir::Node* flat = g.AddNode(ir::OpKind::kFlatten, "flatten", {gap->output(0)}, {"f"});
  ir::Node* fc = g.AddNode(ir::OpKind::kGemm, "fc",
                           {flat->output(0), g.NewConstant("wf", Random({10, 8}, 5)),
                            g.NewConstant("bf", Random({10}, 6))},
                           {"l"});
  ir::GemmAttrs ga;
  ga.transB = 1;
  fc->set_attrs(ga);
  ir::Node* sm = g.AddNode(ir::OpKind::kSoftmax, "softmax", {fc->output(0)}, {"y"});
  ir::SoftmaxAttrs sa;
  sa.axis = softmax_axis;
  sm->set_attrs(sa);
  g.AddOutput(sm->output(0));
  ASSERT_TRUE(ir::InferShapes(g).ok());
}

std::unique_ptr<cpu::Evaluator> Make(const ir::Graph& g, cpu::EvalOptions options) {
  absl::StatusOr<std::unique_ptr<cpu::Evaluator>> ev = cpu::Evaluator::Create(g, options);
  EXPECT_TRUE(ev.ok()) << ev.status();
  return ev.ok() ? *std::move(ev) : nullptr;
}

/// The outputs [N, 10] of `whole` run on each of `slices` slices of x [N, 3, 8, 8] in turn,
/// slice i holding images [i * N / slices, (i + 1) * N / slices).
Tensor RowsOfSlices(const cpu::Evaluator& whole, const Tensor& x, int64_t slices) {
  const int64_t batch = x.dim(0);
  Tensor rows(DType::kFloat32, {batch, 10});
  for (int64_t i = 0; i < slices; ++i) {
    const int64_t first = i * batch / slices, count = (i + 1) * batch / slices - first;
    Tensor part(DType::kFloat32, {count, 3, 8, 8});
    std::memcpy(part.raw(), x.data<float>() + first * 3 * 8 * 8, part.nbytes());
    absl::StatusOr<std::vector<Tensor>> y = whole.Run({part});
    EXPECT_TRUE(y.ok()) << y.status();
    if (y.ok()) std::memcpy(rows.data<float>() + first * 10, (*y)[0].raw(), (*y)[0].nbytes());
  }
  return rows;
}

TEST(EvaluatorSlicesTest, SlicedRunsGiveTheWholeBatchsOutputsAndObserveEveryImageOnce) {
  ir::Graph g;
  BuildNet(g);
  std::string why;
  ASSERT_TRUE(cpu::GraphImagesIndependent(g, &why)) << why;
  for (int threads : {1, 2}) {
    int64_t whole_seen = 0, whole_calls = 0;
    cpu::EvalOptions whole_options;
    whole_options.num_threads = threads;
    whole_options.slice_images = -1;
    whole_options.on_observe = [&](int64_t, const Tensor& t) {
      whole_seen += t.numel();
      ++whole_calls;
    };
    std::unique_ptr<cpu::Evaluator> whole = Make(g, whole_options);
    ASSERT_NE(whole, nullptr);
    EXPECT_EQ(whole->slice_images(), 0);
    for (int64_t slice : {1, 2, 3}) {
      int64_t seen = 0, calls = 0;
      cpu::EvalOptions options = whole_options;
      options.slice_images = slice;
      options.on_observe = [&](int64_t, const Tensor& t) {
        seen += t.numel();
        ++calls;
        EXPECT_LE(t.dim(0), slice);
      };
      std::unique_ptr<cpu::Evaluator> sliced = Make(g, options);
      ASSERT_NE(sliced, nullptr);
      EXPECT_EQ(sliced->slice_images(), slice);
      for (int64_t batch : {1, 5, 6}) {
        const Tensor x = Random({batch, 3, 8, 8}, 10 + static_cast<uint32_t>(batch));
        whole_seen = whole_calls = seen = calls = 0;
        absl::StatusOr<std::vector<Tensor>> want = whole->Run({x});
        absl::StatusOr<std::vector<Tensor>> got = sliced->Run({x});
        const int64_t observed_whole = whole_seen, whole_runs = whole_calls;
        ASSERT_TRUE(want.ok()) << want.status();
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_EQ(got->size(), 1u);
        EXPECT_EQ((*got)[0].dims(), (Dims{batch, 10}));
        // fp32 sums may round differently at another batch (a GEMM of other rows): near the
        // whole batch's, and the bits of the whole evaluator run on each slice in turn.
        EXPECT_EQ(CompareTensors((*got)[0], (*want)[0], 1e-5, 1e-6), "") << "slice " << slice;
        const int64_t slices = batch <= slice ? 1 : (batch + slice - 1) / slice;
        EXPECT_EQ(CompareTensors((*got)[0], RowsOfSlices(*whole, x, slices), 0, 0), "")
            << "slice " << slice;
        EXPECT_EQ(seen, observed_whole);  // every image observed once
        EXPECT_EQ(calls, (batch + slice - 1) / slice) << "one observation a slice";
        EXPECT_EQ(whole_runs, 1);
      }
    }
  }
}

// Without observers, slices run num_threads at a time, one thread each: as many as a multiple
// of the threads (5 images by 2 on 2 threads: 4 slices of 1, 1, 1 and 2 images).
TEST(EvaluatorSlicesTest, UnobservedSlicesRunThreadsAtATime) {
  ir::Graph g;
  BuildNet(g);
  cpu::EvalOptions whole_options;
  whole_options.num_threads = 1;
  whole_options.slice_images = -1;
  std::unique_ptr<cpu::Evaluator> whole = Make(g, whole_options);
  ASSERT_NE(whole, nullptr);
  for (int threads : {1, 2, 3}) {
    for (int64_t slice : {1, 2}) {
      cpu::EvalOptions options;
      options.num_threads = threads;
      options.slice_images = slice;
      std::unique_ptr<cpu::Evaluator> sliced = Make(g, options);
      ASSERT_NE(sliced, nullptr);
      for (int64_t batch : {2, 5, 7}) {
        SCOPED_TRACE(absl::StrCat(threads, " threads, slices of ", slice, ", batch ", batch));
        const Tensor x = Random({batch, 3, 8, 8}, 60 + static_cast<uint32_t>(batch));
        absl::StatusOr<std::vector<Tensor>> got = sliced->Run({x});
        ASSERT_TRUE(got.ok()) << got.status();
        int64_t slices = (batch + slice - 1) / slice;
        if (batch > slice) slices = std::min(batch, (slices + threads - 1) / threads * threads);
        if (batch <= slice) slices = 1;
        EXPECT_EQ(CompareTensors((*got)[0], RowsOfSlices(*whole, x, slices), 0, 0), "");
      }
    }
  }
}

TEST(EvaluatorSlicesTest, PerValueAndPerNodeHooksSeeTheWholeBatch) {
  ir::Graph g;
  BuildNet(g);
  cpu::EvalOptions on_value;
  on_value.slice_images = 2;
  on_value.on_value = [](const ir::Value&, const Tensor&) {};
  cpu::EvalOptions on_node = on_value;
  on_node.on_value = nullptr;
  on_node.on_node_done = [](const ir::Node&) {};
  EXPECT_EQ(Make(g, on_value)->slice_images(), 0);
  EXPECT_EQ(Make(g, on_node)->slice_images(), 0);
}

TEST(EvaluatorSlicesTest, SliceImagesFollowsTheLiveActivations) {
  ir::Graph g;
  BuildNet(g);
  EXPECT_EQ(cpu::EvalSliceImages(g, 1), 1);
  // Largest live set: c1 (4096 B an image) and p (1024 B) while pool runs; x (768 B) is freed
  // after conv1, where x and c1 make 4864 B.
  EXPECT_EQ(cpu::EvalSliceImages(g, 5120 * 4), 4);
  EXPECT_EQ(cpu::EvalSliceImages(g, 5120 * 4 - 1), 3);
}

TEST(EvaluatorSlicesTest, GraphsThatMixImagesRunTheWholeBatch) {
  {
    ir::Graph g;
    BuildNet(g, /*softmax_axis=*/0);
    std::string why;
    EXPECT_FALSE(cpu::GraphImagesIndependent(g, &why));
    EXPECT_NE(why.find("node 'softmax' (Softmax) may mix the images"), std::string::npos) << why;
    EXPECT_EQ(cpu::EvalSliceImages(g), 0);
    cpu::EvalOptions options;
    options.slice_images = 2;
    EXPECT_EQ(Make(g, options)->slice_images(), 0);
  }
  {
    // Shape arithmetic: Shape(x) has no batch axis.
    ir::Graph g;
    g.set_opset(21);
    ir::Value* x = g.AddInput("x", Batched({4}));
    ir::Node* shape = g.AddNode(ir::OpKind::kShape, "shape", {x}, {"s"});
    ir::Node* reshape = g.AddNode(ir::OpKind::kReshape, "reshape", {x, shape->output(0)}, {"y"});
    g.AddOutput(reshape->output(0));
    ASSERT_TRUE(ir::InferShapes(g).ok());
    std::string why;
    EXPECT_FALSE(cpu::GraphImagesIndependent(g, &why));
    EXPECT_NE(why.find("value 's' of node 'shape' has no batch axis"), std::string::npos) << why;
  }
  {
    ir::Graph g;
    g.set_opset(21);
    ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {1, 4}));
    g.AddOutput(g.AddNode(ir::OpKind::kRelu, "relu", {x}, {"y"})->output(0));
    ASSERT_TRUE(ir::InferShapes(g).ok());
    std::string why;
    EXPECT_FALSE(cpu::GraphImagesIndependent(g, &why));
    EXPECT_NE(why.find("no dynamic batch"), std::string::npos) << why;
  }
}

}  // namespace
}  // namespace qcc::testing
