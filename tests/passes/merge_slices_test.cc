// merge-slices: a Slice of a Slice with constant parameters becomes one Slice that reads the
// first one's input (torch.onnx.export's x[:, :, ::2, ::2] is two); every other pair stays.
// Outputs before and after agree on the CPU evaluator.
#include <cstdint>
#include <limits>
#include <vector>

#include "tests/passes/fuse_test_util.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

/// One Slice's parameters, ONNX order (axes and steps may be empty: absent).
struct SliceSpec {
  std::vector<int64_t> starts, ends, axes, steps;
};

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

struct PairCase {
  SliceSpec inner, outer;
  bool second_reader = false;    // the inner Slice's output is also a graph output
  bool dynamic_batch = false;    // x's first axis has an unknown extent
  bool starts_as_input = false;  // the inner Slice's starts are a graph input, not a constant
};

ir::Node* AddSlice(ir::Graph& g, const std::string& name, ir::Value* x, const SliceSpec& s,
                   ir::Value* starts = nullptr) {
  auto ints = [&](const char* what, const std::vector<int64_t>& v) {
    return g.NewConstant(
        name + "_" + what,
        Tensor::FromVector<int64_t>(DType::kInt64, {static_cast<int64_t>(v.size())}, v));
  };
  std::vector<ir::Value*> in = {x, starts != nullptr ? starts : ints("starts", s.starts),
                                ints("ends", s.ends)};
  if (!s.axes.empty() || !s.steps.empty()) {
    in.push_back(s.axes.empty() ? nullptr : ints("axes", s.axes));  // nullptr: absent
  }
  if (!s.steps.empty()) in.push_back(ints("steps", s.steps));
  return g.AddNode(OpKind::kSlice, name, in, {name + "_out"});
}

// x [2, 3, 9, 8] -> Slice -> Slice -> y
GraphBuilder SliceThenSlice(const PairCase& c) {
  return [=](ir::Graph& g) {
    const ir::Dim batch = c.dynamic_batch ? ir::kUnknownDim : 2;
    ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {batch, 3, 9, 8}));
    ir::Value* starts = nullptr;
    if (c.starts_as_input) {
      starts = g.AddInput(
          "starts", ir::TensorType(DType::kInt64, {static_cast<int64_t>(c.inner.starts.size())}));
    }
    ir::Node* a = AddSlice(g, "inner", x, c.inner, starts);
    ir::Node* b = AddSlice(g, "outer", a->output(0), c.outer);
    g.AddOutput(b->output(0));
    if (c.second_reader) g.AddOutput(a->output(0));
  };
}

TEST(PassesMergeSlicesTest, TwoSlicesBecomeOne) {
  const Tensor x = SeededUniform({2, 3, 9, 8}, 3);
  const std::vector<PairCase> cases = {
      // The ResNet shortcut: every other row, then every other column.
      {{{0}, {kMax}, {2}, {2}}, {{0}, {kMax}, {3}, {2}}},
      // One axis twice: rows 1, 3, 5, 7, then the middle two of those (a negative end).
      {{{1}, {8}, {2}, {2}}, {{1}, {-1}, {2}, {1}}},
      // Reversed columns, then every other one from the second (6, 4, 2, 0: down to the first,
      // where only an end of INT64_MIN says so).
      {{{-1}, {kMin}, {3}, {-1}}, {{1}, {kMax}, {3}, {2}}},
      // Every other column from the right, reversed back; no axes input on the outer one.
      {{{7}, {kMin}, {3}, {-2}}, {{0, 0, 0, 3}, {2, 3, 9, 1}, {}, {1, 1, 1, -1}}},
      // Negative axes, steps absent on the inner Slice, the channel axis cut on both.
      {{{1, 2}, {3, 9}, {-3, -2}, {}}, {{1, 0}, {2, kMax}, {1, 2}, {1, 3}}},
      // An unknown batch extent that neither Slice touches.
      {{{0}, {kMax}, {2}, {2}}, {{1}, {kMax}, {3}, {3}}, false, true},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const PairCase& c = cases[i];
    FuseResult r = FuseAndCompare(SliceThenSlice(c), passes::CreateMergeSlicesPass(), {x});
    EXPECT_TRUE(r.changed) << "case " << i;
    EXPECT_EQ(CountOps(*r.graph, OpKind::kSlice), 1) << "case " << i;
    const ir::Node* slice = OnlyNode(*r.graph, OpKind::kSlice);
    ASSERT_NE(slice, nullptr);
    EXPECT_EQ(slice->input(0)->name(), "x") << "case " << i;
  }
}

TEST(PassesMergeSlicesTest, OtherPairsStay) {
  const Tensor x = SeededUniform({2, 3, 9, 8}, 3);
  const SliceSpec rows{{0}, {kMax}, {2}, {2}}, cols{{0}, {kMax}, {3}, {2}};
  const std::vector<PairCase> cases = {
      {rows, cols, true},                         // the inner output has a second reader
      {{{0}, {1}, {0}, {1}}, cols, false, true},  // slices the unknown batch axis
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    FuseResult r = FuseAndCompare(SliceThenSlice(cases[i]), passes::CreateMergeSlicesPass(), {x});
    EXPECT_FALSE(r.changed) << "case " << i;
    EXPECT_EQ(CountOps(*r.graph, OpKind::kSlice), 2) << "case " << i;
  }
  // Starts only known when the graph runs.
  PairCase runtime_starts{rows, cols};
  runtime_starts.starts_as_input = true;
  std::unique_ptr<ir::Graph> g = BuildGraph(SliceThenSlice(runtime_starts));
  auto rec = RunOnePass(*g, passes::CreateMergeSlicesPass());
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_FALSE(rec->changed);
  EXPECT_EQ(CountOps(*g, OpKind::kSlice), 2);
}

TEST(PassesMergeSlicesTest, Resnet20ShortcutsSliceOnce) {
  auto g = LoadFoldedModel("resnet20-cifar10");
  ASSERT_TRUE(g);
  const int before = CountOps(*g, OpKind::kSlice);
  auto rec = RunOnePass(*g, passes::CreateMergeSlicesPass());
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_TRUE(rec->changed);
  // Two downsampling shortcuts, each x[:, :, ::2, ::2] as two Slices, now one each.
  EXPECT_EQ(CountOps(*g, OpKind::kSlice), before - 2);
}

}  // namespace
}  // namespace qcc::testing
