// Tiny hostile models and plans (issue 16): each asks for far more memory than any machine has,
// or for a shape no tensor can have. Every one is a one-line error and a non-zero exit, with no
// crash and no output written.
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "runtime/plan_format.h"
#include "support/npy.h"
#include "tests/tools/plan_helpers.h"
#include "tests/tools/qcc_runner.h"

namespace qcc::testing {
namespace {

namespace fs = std::filesystem;

/// A model of one `op` node: inputs `x` (f32 of `x_dims`, none when empty), a constant int64
/// vector `shape` (none when empty) and a constant f32 `weight` of `weight_dims` (none when
/// empty), in that order; output y.
std::string OneOpModel(const std::string& op, const std::vector<int64_t>& x_dims,
                       const std::vector<int64_t>& shape, const std::vector<float>& weight = {},
                       const std::vector<int64_t>& weight_dims = {}) {
  onnx::ModelProto model;
  model.set_ir_version(7);
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(13);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("hostile");
  onnx::NodeProto* node = g->add_node();
  node->set_op_type(op);
  node->set_name("the_" + op);
  if (!x_dims.empty()) {
    onnx::ValueInfoProto* x = g->add_input();
    x->set_name("x");
    onnx::TypeProto_Tensor* tt = x->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : x_dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
    node->add_input("x");
  }
  if (!shape.empty()) {
    onnx::TensorProto* s = g->add_initializer();
    s->set_name("shape");
    s->set_data_type(onnx::TensorProto::INT64);
    s->add_dims(static_cast<int64_t>(shape.size()));
    for (int64_t v : shape) s->add_int64_data(v);
    node->add_input("shape");
  }
  if (!weight.empty()) {
    onnx::TensorProto* w = g->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : weight_dims) w->add_dims(d);
    for (float v : weight) w->add_float_data(v);
    node->add_input("w");
  }
  node->add_output("y");
  onnx::ValueInfoProto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return model.SerializeAsString();
}

class HostileModelsTest : public PlanTest {
 protected:
  /// qcc run of the model `bytes` (written as `name`.onnx) with x from a zero tensor of
  /// `x_dims` (none when empty), expecting a one-line error naming every string of `mentions`
  /// and no output folder.
  void ExpectRunRefused(const std::string& name, const std::string& bytes,
                        const std::vector<int64_t>& x_dims,
                        const std::vector<std::string>& mentions) {
    SCOPED_TRACE(name);
    std::vector<std::string> args = {"run", WriteBytes(name + ".onnx", bytes), "--output-dir",
                                     Path(name + "_out")};
    if (!x_dims.empty()) {
      ASSERT_TRUE(WriteNpy(Path(name + "_x.npy"), Tensor(DType::kFloat32, x_dims)).ok());
      args.insert(args.end(), {"--input", "x=" + Path(name + "_x.npy")});
    }
    ExpectOneLineError(Qcc(args), mentions);
    EXPECT_FALSE(fs::exists(Path(name + "_out")));
  }
};

TEST_F(HostileModelsTest, ConstantOfShapeBombIsARefusedAllocation) {
  // 10^13 floats: 36 TiB.
  ExpectRunRefused("cos", OneOpModel("ConstantOfShape", {}, {100000, 100000, 1000}), {},
                   {"node 'the_ConstantOfShape' (ConstantOfShape)", "f32[100000,100000,1000]",
                    "36.38 TiB", "more than the memory limit", "--max-memory"});
}

TEST_F(HostileModelsTest, ShapesPastTwoToTheSixtySecondAreRefusedByShapeInference) {
  ExpectRunRefused("overflow", OneOpModel("ConstantOfShape", {}, {int64_t{1} << 40, 1 << 30}), {},
                   {"the_ConstantOfShape", "more than 2^62 elements"});
}

TEST_F(HostileModelsTest, ReshapeToTwoToTheFortyElementsIsRefused) {
  ExpectRunRefused("reshape", OneOpModel("Reshape", {1, 4}, {1 << 20, 1 << 20}), {1, 4},
                   {"node 'the_Reshape' (Reshape)", "cannot reshape [1,4] into [1048576,1048576]"});
}

TEST_F(HostileModelsTest, ConvWithANegativeOutputExtentIsRefused) {
  // A 5x5 window over a 3x3 input with no padding: the output extent would be -1.
  ExpectRunRefused("conv",
                   OneOpModel("Conv", {1, 1, 3, 3}, {}, std::vector<float>(25, 1.0f), {1, 1, 5, 5}),
                   {1, 1, 3, 3}, {"node 'the_Conv' (Conv)", "larger than the input 3"});
}

TEST_F(HostileModelsTest, ExpandToAHugeShapeIsARefusedAllocation) {
  ExpectRunRefused(
      "expand", OneOpModel("Expand", {1, 1}, {1 << 30, 1 << 30}), {1, 1},
      {"node 'the_Expand' (Expand)", "f32[1073741824,1073741824]", "more than the memory limit"});
}

TEST_F(HostileModelsTest, MaxMemoryLowersTheLimitAndIsChecked) {
  // 64 floats are fine under the machine's memory and refused under 128 bytes.
  const std::string model = OneOpModel("ConstantOfShape", {}, {8, 8});
  const QccResult ok = Qcc({"run", WriteBytes("small.onnx", model)});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  ExpectOneLineError(Qcc({"run", Path("small.onnx"), "--max-memory", "128"}),
                     {"f32[8,8] needs 256 B", "memory limit of 128 B"});
  ExpectOneLineError(Qcc({"run", Path("small.onnx"), "--max-memory", "lots"}),
                     {"--max-memory 'lots'", "8G"});
}

TEST_F(HostileModelsTest, APlanClaimingATerabyteArenaIsRefusedBeforeAllocating) {
  const std::string model = ReluModelWithPlan();
  absl::StatusOr<runtime::Plan> plan = runtime::ReadPlan(Path("relu.plan"));
  ASSERT_TRUE(plan.ok()) << plan.status();
  plan->arena_bytes = uint64_t{1} << 40;
  ASSERT_TRUE(runtime::WritePlan(*plan, Path("huge.plan")).ok());
  ASSERT_TRUE(WriteNpy(Path("x.npy"), Tensor(DType::kFloat32, {2, 4})).ok());
  for (const std::string command : {"run", "bench"}) {
    SCOPED_TRACE(command);
    std::vector<std::string> args = {command, Path("huge.plan")};
    if (command == "run") {
      args.insert(args.end(), {"--input", "x=" + Path("x.npy"), "--output-dir", Path("out")});
    }
    ExpectOneLineError(Qcc(args), {"huge.plan", "the plan's arena", "needs 1.00 TiB",
                                   "more than the memory limit"});
    EXPECT_FALSE(fs::exists(Path("out")));
  }
}

}  // namespace
}  // namespace qcc::testing
