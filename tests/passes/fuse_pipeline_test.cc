// The fusions inside DefaultPipeline on the real models: what is left of each pattern, and
// outputs before and after on real (resnet20-cifar10 test_data_set_0) or seeded inputs.
#include <string>
#include <vector>

#include "frontend/tensor_proto.h"
#include "tests/passes/fuse_test_util.h"

namespace qcc::testing {
namespace {

using ir::OpKind;

TEST(PassesFusePipelineTest, Resnet20) {
  auto before = LoadModel("resnet20-cifar10");
  auto g = LoadModel("resnet20-cifar10");
  ASSERT_TRUE(g && before);
  auto recs = passes::RunPipeline(*g, passes::DefaultPipeline());
  ASSERT_TRUE(recs.ok()) << recs.status();
  EXPECT_EQ(CountOps(*g, OpKind::kBatchNormalization), 0);
  EXPECT_EQ(CountOps(*g, OpKind::kRelu), 0);
  EXPECT_EQ(CountOps(*g, OpKind::kConv), 19);
  EXPECT_EQ(CountOps(*g, OpKind::kAdd), 9);
  auto x =
      frontend::ReadTensorProtoFile(ModelPath("resnet20-cifar10", "test_data_set_0/input_0.pb"));
  auto want =
      frontend::ReadTensorProtoFile(ModelPath("resnet20-cifar10", "test_data_set_0/output_0.pb"));
  ASSERT_TRUE(x.ok() && want.ok());
  auto y0 = RunGraph(*before, {*x});
  auto y1 = RunGraph(*g, {*x});
  ASSERT_TRUE(y0.ok() && y1.ok()) << y1.status();
  EXPECT_EQ(CompareTensors((*y1)[0], (*y0)[0], 1e-3, 1e-4), "");
  EXPECT_EQ(CompareTensors((*y1)[0], *want, 1e-3, 1e-4), "");
}

TEST(PassesFusePipelineTest, PpocrCls) {
  auto before = LoadModel("ppocr-cls-mbv3");
  auto g = LoadModel("ppocr-cls-mbv3");
  ASSERT_TRUE(g && before);
  auto recs = passes::RunPipeline(*g, passes::DefaultPipeline());
  ASSERT_TRUE(recs.ok()) << recs.status();
  EXPECT_EQ(CountOps(*g, OpKind::kBatchNormalization), 0);
  EXPECT_EQ(CountOps(*g, OpKind::kHardSwish), 18);
  EXPECT_EQ(CountOps(*g, OpKind::kRelu), 0);  // 15, all after a Conv
  EXPECT_EQ(CountOps(*g, OpKind::kClip), 0);
  EXPECT_EQ(CountOps(*g, OpKind::kDiv), 0);
  EXPECT_EQ(CountOps(*g, OpKind::kMatMul), 0);
  EXPECT_EQ(CountOps(*g, OpKind::kGemm), 1);
  const Tensor x = SeededUniform({2, 3, 48, 192}, 7, -1, 1);
  auto y0 = RunGraph(*before, {x});
  auto y1 = RunGraph(*g, {x});
  ASSERT_TRUE(y0.ok() && y1.ok()) << y1.status();
  EXPECT_EQ(CompareTensors((*y1)[0], (*y0)[0], 1e-3, 1e-4), "");
}

}  // namespace
}  // namespace qcc::testing
