// fuse-matmul-add: MatMul + constant bias becomes Gemm with C for every bias shape that
// broadcasts along the last axis; batched A and per-row biases stay; a BatchNormalization after
// the new Gemm folds too; ppocr-cls-mbv3's classifier head after the clean-up passes.
#include <string>
#include <vector>

#include "tests/passes/fuse_test_util.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

constexpr int64_t kM = 3, kK = 4, kN = 5;

void BuildMatMulAdd(ir::Graph& g, Dims a_dims, Dims bias_dims, bool bias_first) {
  ir::Value* a = g.AddInput("a", ir::TensorType(DType::kFloat32, {a_dims.begin(), a_dims.end()}));
  ir::Value* mm =
      g.AddNode(OpKind::kMatMul, "mm", {a, g.NewConstant("w", SeededUniform({kK, kN}, 1))}, {"mm"})
          ->output(0);
  ir::Value* bias = g.NewConstant("bias", SeededUniform(bias_dims, 2));
  g.AddOutput(
      g.AddNode(OpKind::kAdd, "add",
                bias_first ? std::vector<ir::Value*>{bias, mm} : std::vector<ir::Value*>{mm, bias},
                {"y"})
          ->output(0));
}

TEST(PassesFuseMatMulAddTest, EveryRowBiasShapeBecomesGemm) {
  const Tensor a = SeededUniform({kM, kK}, 3, -2, 2);
  for (const Dims& bias : std::vector<Dims>{{kN}, {1, kN}, {1}, {}}) {
    for (bool bias_first : {false, true}) {
      SCOPED_TRACE(bias.size() * 2 + bias_first);
      FuseResult r = FuseAndCompare(
          [&](ir::Graph& g) {
            BuildMatMulAdd(g, {kM, kK}, bias, bias_first);
          },
          passes::CreateFuseMatMulAddPass(), {a});
      EXPECT_TRUE(r.changed);
      ASSERT_EQ(r.graph->nodes().size(), 1u);
      const ir::Node* gemm = OnlyNode(*r.graph, OpKind::kGemm);
      EXPECT_EQ(gemm->input(2)->name(), "bias");
      EXPECT_EQ(r.graph->outputs()[0]->name(), "y");
    }
  }
}

TEST(PassesFuseMatMulAddTest, BatchedAAndPerRowBiasStay) {
  FuseResult r1 = FuseAndCompare(
      [](ir::Graph& g) {
        BuildMatMulAdd(g, {2, kM, kK}, {kN}, false);
      },
      passes::CreateFuseMatMulAddPass(), {SeededUniform({2, kM, kK}, 3)});
  EXPECT_FALSE(r1.changed);
  FuseResult r2 = FuseAndCompare(
      [](ir::Graph& g) {
        BuildMatMulAdd(g, {kM, kK}, {kM, 1}, false);
      },
      passes::CreateFuseMatMulAddPass(), {SeededUniform({kM, kK}, 3)});
  EXPECT_FALSE(r2.changed);
  EXPECT_EQ(CountOps(*r2.graph, OpKind::kMatMul), 1);
}

TEST(PassesFuseMatMulAddTest, BatchNormAfterTheNewGemmFoldsToo) {
  auto build = [](ir::Graph& g) {
    BuildMatMulAdd(g, {kM, kK}, {kN}, false);
    ir::Value* y = g.outputs()[0];
    ir::Node* bn = g.AddNode(
        OpKind::kBatchNormalization, "bn",
        {y, g.NewConstant("gamma", SeededUniform({kN}, 4)),
         g.NewConstant("beta", SeededUniform({kN}, 5)),
         g.NewConstant("mean", SeededUniform({kN}, 6)), g.NewConstant("var", PositiveF32({kN}, 7))},
        {"z"});
    g.SetOutput(0, bn->output(0));
  };
  FuseResult r =
      FuseAndCompare(build, passes::CreateFuseMatMulAddPass(), {SeededUniform({kM, kK}, 3, -2, 2)});
  EXPECT_TRUE(r.changed);
  ASSERT_EQ(r.graph->nodes().size(), 1u);
  EXPECT_EQ(r.graph->nodes()[0]->kind(), OpKind::kGemm);
  EXPECT_EQ(r.graph->outputs()[0]->name(), "z");
}

// The classifier head: Reshape to [N, 200], MatMul by [200, 2], Add [2]. A is 2-D once the
// clean-up passes have folded the Reshape's shape.
TEST(PassesFuseMatMulAddTest, PpocrClsHeadBecomesGemm) {
  auto before = LoadModel("ppocr-cls-mbv3");
  auto g = LoadModel("ppocr-cls-mbv3");
  ASSERT_TRUE(g && before);
  auto cleaned = passes::RunPipeline(*g, CleanupPipeline());
  ASSERT_TRUE(cleaned.ok()) << cleaned.status();
  auto rec = RunOnePass(*g, passes::CreateFuseMatMulAddPass());
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ(CountOps(*g, OpKind::kMatMul), 0);
  EXPECT_EQ(CountOps(*g, OpKind::kGemm), 1);
  const Tensor x = SeededUniform({2, 3, 48, 192}, 7, -1, 1);
  auto y0 = RunGraph(*before, {x});
  auto y1 = RunGraph(*g, {x});
  ASSERT_TRUE(y0.ok() && y1.ok());
  EXPECT_EQ(CompareTensors((*y1)[0], (*y0)[0], 1e-4, 1e-5), "");
}

}  // namespace
}  // namespace qcc::testing
