// fuse-conv-batchnorm, fuse-gemm-batchnorm and decompose-batchnorm: hand-computed folded weights,
// outputs before and after on small graphs (grouped, no bias, transB, every C shape), the cases
// that must not fuse, and every BatchNormalization of resnet20-cifar10 and ppocr-cls-mbv3.
#include <cmath>
#include <string>
#include <vector>

#include "frontend/tensor_proto.h"
#include "tests/passes/fuse_test_util.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

/// Appends BatchNormalization(y) over `c` channels with random constant parameters.
ir::Value* AddBatchNorm(ir::Graph& g, ir::Value* y, int64_t c, uint32_t seed,
                        const std::string& name = "bn") {
  ir::Node* bn = g.AddNode(OpKind::kBatchNormalization, name,
                           {y, g.NewConstant(name + ".gamma", SeededUniform({c}, seed)),
                            g.NewConstant(name + ".beta", SeededUniform({c}, seed + 1)),
                            g.NewConstant(name + ".mean", SeededUniform({c}, seed + 2)),
                            g.NewConstant(name + ".var", PositiveF32({c}, seed + 3))},
                           {name + "_out"});
  bn->mutable_attrs<ir::BatchNormAttrs>().epsilon = 1e-3f;
  return bn->output(0);
}

// 1x1 conv, one channel: w = 2, b = 1; gamma = 3, beta = 0.5, mean = 1, var = 3, eps = 1, so
// s = 3 / sqrt(4) = 1.5, w' = 3 and b' = 1.5 * (1 - 1) + 0.5 = 0.5.
TEST(PassesFuseConvBatchNormTest, HandComputedWeightsAndBias) {
  auto g = BuildGraph([](ir::Graph& g) {
    ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {1, 1, 2, 2}));
    ir::Value* y = g.AddNode(OpKind::kConv, "conv",
                             {x, g.NewConstant("w", F32({1, 1, 1, 1}, {2})),
                              g.NewConstant("b", F32({1}, {1}))},
                             {"y"})
                       ->output(0);
    ir::Node* bn =
        g.AddNode(OpKind::kBatchNormalization, "bn",
                  {y, g.NewConstant("g", F32({1}, {3})), g.NewConstant("be", F32({1}, {0.5f})),
                   g.NewConstant("m", F32({1}, {1})), g.NewConstant("v", F32({1}, {3}))},
                  {"z"});
    bn->mutable_attrs<ir::BatchNormAttrs>().epsilon = 1.0f;
    g.AddOutput(bn->output(0));
  });
  auto rec = RunOnePass(*g, passes::CreateFuseConvBatchNormPass());
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_TRUE(rec->changed);
  EXPECT_EQ(rec->summary, "-1 BatchNormalization");
  const ir::Node* conv = OnlyNode(*g, OpKind::kConv);
  ASSERT_NE(conv->input(1)->constant(), nullptr);
  EXPECT_FLOAT_EQ(conv->input(1)->constant()->data<float>()[0], 3.0f);
  EXPECT_FLOAT_EQ(conv->input(2)->constant()->data<float>()[0], 0.5f);
  // The graph output keeps the BatchNormalization's name.
  EXPECT_EQ(g->outputs()[0]->name(), "z");
  EXPECT_EQ(g->outputs()[0]->producer(), conv);
  auto out = RunGraph(*g, {F32({1, 1, 2, 2}, {0, 1, -1, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(CompareTensors((*out)[0], F32({1, 1, 2, 2}, {0.5f, 3.5f, -2.5f, 6.5f}), 1e-6, 1e-6),
            "");
}

struct ConvBnCase {
  const char* name;
  int64_t c, m, group;
  bool bias;
};

TEST(PassesFuseConvBatchNormTest, OutputsAgreeForGroupedDepthwiseAndBiasless) {
  for (const ConvBnCase& cc : std::vector<ConvBnCase>{{"dense_bias", 3, 5, 1, true},
                                                      {"no_bias", 4, 6, 1, false},
                                                      {"grouped", 4, 6, 2, true},
                                                      {"depthwise", 6, 6, 6, false}}) {
    SCOPED_TRACE(cc.name);
    auto build = [&](ir::Graph& g) {
      ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {2, cc.c, 7, 6}));
      std::vector<ir::Value*> in = {
          x, g.NewConstant("w", SeededUniform({cc.m, cc.c / cc.group, 3, 3}, 1))};
      if (cc.bias) in.push_back(g.NewConstant("b", SeededUniform({cc.m}, 2)));
      ir::Node* conv = g.AddNode(OpKind::kConv, "conv", in, {"y"});
      conv->mutable_attrs<ir::ConvAttrs>().group = cc.group;
      conv->mutable_attrs<ir::ConvAttrs>().pads = {1, 1, 1, 1};
      g.AddOutput(AddBatchNorm(g, conv->output(0), cc.m, 10));
    };
    FuseResult r = FuseAndCompare(build, passes::CreateFuseConvBatchNormPass(),
                                  {SeededUniform({2, cc.c, 7, 6}, 3, -2, 2)}, 1e-5, 1e-5);
    EXPECT_TRUE(r.changed);
    EXPECT_EQ(CountOps(*r.graph, OpKind::kBatchNormalization), 0);
  }
}

// A ConvTranspose's weights are [C, M/g, kH, kW]: output channel (c / (C/g)) * (M/g) + j scales
// row (c, j). Grouped, with and without a bias, and strided with pads.
TEST(PassesFuseConvBatchNormTest, ConvTransposeFoldsPerOutputChannel) {
  for (const ConvBnCase& cc : std::vector<ConvBnCase>{{"dense_bias", 3, 5, 1, true},
                                                      {"grouped_no_bias", 4, 6, 2, false},
                                                      {"depthwise_bias", 4, 4, 4, true}}) {
    SCOPED_TRACE(cc.name);
    auto build = [&](ir::Graph& g) {
      ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {2, cc.c, 4, 5}));
      std::vector<ir::Value*> in = {
          x, g.NewConstant("w", SeededUniform({cc.c, cc.m / cc.group, 3, 3}, 1))};
      if (cc.bias) in.push_back(g.NewConstant("b", SeededUniform({cc.m}, 2)));
      ir::Node* up = g.AddNode(OpKind::kConvTranspose, "up", in, {"y"});
      auto& a = up->mutable_attrs<ir::ConvTransposeAttrs>();
      a.group = cc.group;
      a.strides = {2, 2};
      a.pads = {1, 1, 1, 1};
      g.AddOutput(AddBatchNorm(g, up->output(0), cc.m, 5));
    };
    FuseResult r = FuseAndCompare(build, passes::CreateFuseConvBatchNormPass(),
                                  {SeededUniform({2, cc.c, 4, 5}, 9)});
    EXPECT_TRUE(r.changed);
    EXPECT_EQ(CountOps(*r.graph, OpKind::kBatchNormalization), 0);
  }
}

TEST(PassesFuseConvBatchNormTest, LeavesSharedOutputsTrainingModeAndRuntimeParameters) {
  // The Conv output is also a graph output; a second BN reads runtime parameters; a third is in
  // training mode.
  auto g = BuildGraph([](ir::Graph& g) {
    ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {1, 2, 4, 4}));
    ir::Value* gamma = g.AddInput("gamma", ir::TensorType(DType::kFloat32, {2}));
    auto conv = [&](const std::string& n) {
      return g
          .AddNode(OpKind::kConv, n, {x, g.NewConstant(n + ".w", SeededUniform({2, 2, 1, 1}, 4))},
                   {n + "_y"})
          ->output(0);
    };
    ir::Value* y1 = conv("c1");
    g.AddOutput(y1);
    g.AddOutput(AddBatchNorm(g, y1, 2, 1, "bn1"));
    ir::Value* bn2 = AddBatchNorm(g, conv("c2"), 2, 2, "bn2");
    bn2->producer()->SetInput(1, gamma);
    g.AddOutput(bn2);
    ir::Value* bn3 = AddBatchNorm(g, conv("c3"), 2, 3, "bn3");
    bn3->producer()->mutable_attrs<ir::BatchNormAttrs>().training_mode = 1;
    g.AddOutput(bn3);
  });
  auto rec = RunOnePass(*g, passes::CreateFuseConvBatchNormPass());
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_FALSE(rec->changed);
  EXPECT_EQ(CountOps(*g, OpKind::kBatchNormalization), 3);
}

// decompose-batchnorm: a BatchNormalization no Conv or Gemm precedes (paddle2onnx's detector
// head: ConvTranspose -> Add -> BatchNormalization) becomes x * scale + shift with [C, 1, 1]
// constants, its output keeping the name; on rank 2 the constants are [C].
TEST(PassesDecomposeBatchNormTest, StandaloneBatchNormBecomesMulAndAddWithTheSameOutputs) {
  for (const Dims& dims : {Dims{2, 3, 4, 5}, Dims{4, 6}}) {
    SCOPED_TRACE(DimsToString(dims));
    const int64_t c = dims[1];
    auto build = [&](ir::Graph& g) {
      ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, dims));
      ir::Value* r = g.AddNode(OpKind::kRelu, "relu", {x}, {"r"})->output(0);
      g.AddOutput(AddBatchNorm(g, r, c, 7, "bn"));
    };
    FuseResult r =
        FuseAndCompare(build, passes::CreateDecomposeBatchNormPass(), {SeededUniform(dims, 9)});
    ASSERT_NE(r.graph, nullptr);
    EXPECT_TRUE(r.changed);
    EXPECT_EQ(CountOps(*r.graph, OpKind::kBatchNormalization), 0);
    const ir::Node* mul = OnlyNode(*r.graph, OpKind::kMul);
    const ir::Node* add = OnlyNode(*r.graph, OpKind::kAdd);
    ASSERT_NE(mul, nullptr);
    ASSERT_NE(add, nullptr);
    ASSERT_NE(mul->input(1)->constant(), nullptr);
    Dims want = dims.size() == 4 ? Dims{c, 1, 1} : Dims{c};
    EXPECT_EQ(mul->input(1)->constant()->dims(), want);
    EXPECT_EQ(r.graph->outputs()[0]->name(), "bn_out");
    EXPECT_EQ(r.graph->outputs()[0]->producer(), add);
  }
}

TEST(PassesDecomposeBatchNormTest, LeavesTrainingModeAndRuntimeParameters) {
  auto g = BuildGraph([](ir::Graph& g) {
    ir::Value* x = g.AddInput("x", ir::TensorType(DType::kFloat32, {1, 2, 4, 4}));
    ir::Value* gamma = g.AddInput("gamma", ir::TensorType(DType::kFloat32, {2}));
    ir::Value* bn1 = AddBatchNorm(g, x, 2, 2, "bn1");
    bn1->producer()->SetInput(1, gamma);
    g.AddOutput(bn1);
    ir::Value* bn2 = AddBatchNorm(g, x, 2, 3, "bn2");
    bn2->producer()->mutable_attrs<ir::BatchNormAttrs>().training_mode = 1;
    g.AddOutput(bn2);
  });
  auto rec = RunOnePass(*g, passes::CreateDecomposeBatchNormPass());
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_FALSE(rec->changed);
  EXPECT_EQ(CountOps(*g, OpKind::kBatchNormalization), 2);
}

struct GemmBnCase {
  const char* name;
  bool trans_b;
  Dims c;  // empty: no C
  float alpha, beta;
};

TEST(PassesFuseGemmBatchNormTest, OutputsAgreeForTransBAndEveryCShape) {
  constexpr int64_t kM = 3, kK = 5, kN = 4;
  for (const GemmBnCase& gc : std::vector<GemmBnCase>{{"plain_c_vector", false, {kN}, 1, 1},
                                                      {"transB_c_matrix", true, {kM, kN}, 0.5f, 2},
                                                      {"no_c", false, {}, 1.5f, 1},
                                                      {"c_column", true, {kM, 1}, 1, -1},
                                                      {"c_scalar", false, {1}, 1, 0.25f}}) {
    SCOPED_TRACE(gc.name);
    auto build = [&](ir::Graph& g) {
      ir::Value* a = g.AddInput("a", ir::TensorType(DType::kFloat32, {kM, kK}));
      std::vector<ir::Value*> in = {
          a, g.NewConstant("b", SeededUniform(gc.trans_b ? Dims{kN, kK} : Dims{kK, kN}, 1))};
      if (!gc.c.empty()) in.push_back(g.NewConstant("c", SeededUniform(gc.c, 2)));
      ir::Node* gemm = g.AddNode(OpKind::kGemm, "gemm", in, {"y"});
      auto& ga = gemm->mutable_attrs<ir::GemmAttrs>();
      ga.transB = gc.trans_b;
      ga.alpha = gc.alpha;
      ga.beta = gc.beta;
      g.AddOutput(AddBatchNorm(g, gemm->output(0), kN, 20));
    };
    FuseResult r = FuseAndCompare(build, passes::CreateFuseGemmBatchNormPass(),
                                  {SeededUniform({kM, kK}, 3, -2, 2)}, 1e-5, 1e-5);
    EXPECT_TRUE(r.changed);
    EXPECT_EQ(CountOps(*r.graph, OpKind::kBatchNormalization), 0);
    EXPECT_EQ(OnlyNode(*r.graph, OpKind::kGemm)->attrs<ir::GemmAttrs>().beta, 1.0f);
  }
}

TEST(PassesFuseBatchNormTest, Resnet20AllNineteenFoldAndOutputsAgree) {
  auto before = LoadModel("resnet20-cifar10");
  auto g = LoadModel("resnet20-cifar10");
  ASSERT_TRUE(g && before);
  ASSERT_EQ(CountOps(*g, OpKind::kBatchNormalization), 19);
  auto rec = RunOnePass(*g, passes::CreateFuseConvBatchNormPass());
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ(rec->summary, "-19 BatchNormalization");
  EXPECT_EQ(CountOps(*g, OpKind::kConv), 19);
  auto x =
      frontend::ReadTensorProtoFile(ModelPath("resnet20-cifar10", "test_data_set_0/input_0.pb"));
  auto want =
      frontend::ReadTensorProtoFile(ModelPath("resnet20-cifar10", "test_data_set_0/output_0.pb"));
  ASSERT_TRUE(x.ok() && want.ok());
  auto y0 = RunGraph(*before, {*x});
  auto y1 = RunGraph(*g, {*x});
  ASSERT_TRUE(y0.ok() && y1.ok());
  EXPECT_EQ(CompareTensors((*y1)[0], (*y0)[0], 1e-3, 1e-4), "");
  EXPECT_EQ(CompareTensors((*y1)[0], *want, 1e-3, 1e-4), "");
}

TEST(PassesFuseBatchNormTest, PpocrClsAllThirtyFiveFoldFromConstantNodeWeights) {
  auto before = LoadModel("ppocr-cls-mbv3");
  auto g = LoadModel("ppocr-cls-mbv3");
  ASSERT_TRUE(g && before);
  ASSERT_EQ(CountOps(*g, OpKind::kBatchNormalization), 35);
  auto rec = RunOnePass(*g, passes::CreateFuseConvBatchNormPass());
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ(rec->summary, "-35 BatchNormalization");
  const Tensor x = SeededUniform({2, 3, 48, 192}, 7, -1, 1);
  auto y0 = RunGraph(*before, {x});
  auto y1 = RunGraph(*g, {x});
  ASSERT_TRUE(y0.ok() && y1.ok()) << y0.status() << y1.status();
  EXPECT_EQ(CompareTensors((*y1)[0], (*y0)[0], 1e-3, 1e-4), "");
}

}  // namespace
}  // namespace qcc::testing
