// Engine and ExecutionContext: a multi-step int8 network at several batches against its
// step-by-step recomputation, the plan file path, the zero-copy run, and the errors of bad
// inputs and of corrupt or inconsistent plans.
#include "runtime/engine.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/plan_format.h"
#include "tests/runtime/engine_test_network.h"
#include "tests/runtime/engine_test_util.h"

namespace qcc::runtime {
namespace {

using engine_testing::CreateError;
using engine_testing::ExpectTensorsEqual;
using engine_testing::MakeEngine;
using engine_testing::MakeInt8Network;
using engine_testing::PlanBuilder;
using engine_testing::RandomFloat;
using engine_testing::RandomInt8;
using engine_testing::ReferenceInt8Network;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(EngineTest, Int8NetworkMatchesStepByStepAtEveryBatch) {
  std::shared_ptr<const Engine> engine = MakeEngine(MakeInt8Network(), /*num_threads=*/2);
  ASSERT_NE(engine, nullptr);
  std::unique_ptr<ExecutionContext> ctx = engine->CreateContext();
  for (int64_t batch : {1, 3, 1, 4}) {
    SCOPED_TRACE(batch);
    const Tensor x = RandomFloat({batch, 3, 8, 8}, 40 + batch, -1.5f, 1.5f);
    absl::StatusOr<std::vector<Tensor>> out = ctx->Run({x});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 1u);
    const Tensor want = ReferenceInt8Network(x);
    ExpectTensorsEqual((*out)[0], want);
    // Not a constant output: the logits vary across classes.
    EXPECT_NE(want.data<float>()[0], want.data<float>()[1]);
  }
  // The arena grew to the largest batch run, which never exceeds the plan's.
  EXPECT_EQ(ctx->arena_capacity(), engine->ArenaBytesAt(4));
  EXPECT_LE(engine->ArenaBytesAt(4), engine->arena_bytes());
  EXPECT_LT(engine->ArenaBytesAt(1), engine->ArenaBytesAt(4));
}

TEST(EngineTest, Accessors) {
  const Plan plan = MakeInt8Network();
  std::shared_ptr<const Engine> engine = MakeEngine(plan, 3);
  ASSERT_NE(engine, nullptr);
  ASSERT_EQ(engine->inputs().size(), 1u);
  EXPECT_EQ(engine->inputs()[0].name, "x");
  EXPECT_EQ(engine->inputs()[0].dtype, DType::kFloat32);
  EXPECT_EQ(engine->inputs()[0].dims, (std::vector<int64_t>{-1, 3, 8, 8}));
  ASSERT_EQ(engine->outputs().size(), 1u);
  EXPECT_EQ(engine->outputs()[0].name, "logits");
  EXPECT_EQ(engine->outputs()[0].dims, (std::vector<int64_t>{-1, 10}));
  EXPECT_EQ(engine->batch_min(), 1);
  EXPECT_EQ(engine->batch_max(), 4);
  EXPECT_EQ(engine->arena_bytes(), plan.arena_bytes);
  EXPECT_EQ(engine->num_threads(), 3);
  EXPECT_EQ(engine->plan().steps.size(), 8u);
  EXPECT_GE(Engine::Create(plan).value()->num_threads(), 1);  // 0: every core
}

TEST(EngineTest, LoadsAPlanFileAndRunsIntoCallerTensors) {
  const std::string path = ::testing::TempDir() + "/engine_test_network.plan";
  ASSERT_TRUE(WritePlan(MakeInt8Network(), path).ok());
  absl::StatusOr<std::shared_ptr<const Engine>> engine = Engine::Load(path, {1});
  ASSERT_TRUE(engine.ok()) << engine.status();
  std::unique_ptr<ExecutionContext> ctx = (*engine)->CreateContext();
  const Tensor x = RandomFloat({2, 3, 8, 8}, 7, -1.0f, 1.0f);
  std::vector<Tensor> outputs = {Tensor(DType::kFloat32, {2, 10})};
  ASSERT_TRUE(ctx->RunInto({x}, absl::MakeSpan(outputs)).ok());
  ExpectTensorsEqual(outputs[0], ReferenceInt8Network(x));
  // Outputs of the wrong shape for the batch are refused, naming the output.
  std::vector<Tensor> wrong = {Tensor(DType::kFloat32, {3, 10})};
  const absl::Status s = ctx->RunInto({x}, absl::MakeSpan(wrong));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), AllOf(HasSubstr("'logits'"), HasSubstr("[2,10]"), HasSubstr("[3,10]")));
  std::remove(path.c_str());

  const absl::Status missing = Engine::Load(path + ".missing").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr(".missing"));
}

TEST(EngineTest, BadInputsNameTheInputAndBothShapes) {
  std::shared_ptr<const Engine> engine = MakeEngine(MakeInt8Network());
  ASSERT_NE(engine, nullptr);
  std::unique_ptr<ExecutionContext> ctx = engine->CreateContext();
  const Tensor good = RandomFloat({2, 3, 8, 8}, 1);
  auto error = [&](std::vector<Tensor> inputs) {
    const absl::Status s = ctx->Run(inputs).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    return std::string(s.message());
  };
  EXPECT_THAT(error({}),
              AllOf(HasSubstr("expected 1 inputs"), HasSubstr("'x'"), HasSubstr("got 0")));
  EXPECT_THAT(error({good, good}), HasSubstr("got 2"));
  EXPECT_THAT(
      error({RandomInt8({2, 3, 8, 8}, 1)}),
      AllOf(HasSubstr("input 0 'x'"), HasSubstr("f32 [N,3,8,8]"), HasSubstr("i8 [2,3,8,8]")));
  EXPECT_THAT(error({RandomFloat({2, 3, 8, 9}, 1)}),
              AllOf(HasSubstr("'x'"), HasSubstr("[N,3,8,8]"), HasSubstr("[2,3,8,9]")));
  EXPECT_THAT(error({RandomFloat({3, 8, 8}, 1)}), AllOf(HasSubstr("'x'"), HasSubstr("[3,8,8]")));
  EXPECT_THAT(
      error({RandomFloat({5, 3, 8, 8}, 1)}),
      AllOf(HasSubstr("'x'"), HasSubstr("batch 5"), HasSubstr("[1, 4]"), HasSubstr("[5,3,8,8]")));
  EXPECT_THAT(error({Tensor()}), HasSubstr("'x'"));
  // The context still works after the errors.
  EXPECT_TRUE(ctx->Run({good}).ok());
}

TEST(EngineTest, InputsMustShareTheBatch) {
  PlanBuilder b(1, 4);
  const int32_t x0 = b.Input("a", DType::kInt8, {-1, 4});
  const int32_t x1 = b.Input("b", DType::kInt8, {-1, 4});
  const int32_t y = b.Output("y", DType::kInt8, {-1, 4});
  b.Step(StepKind::kQAdd, "add", {x0, x1}, {y}, QAddStepParams{});
  std::shared_ptr<const Engine> engine = MakeEngine(b.plan());
  ASSERT_NE(engine, nullptr);
  const absl::Status s =
      engine->CreateContext()->Run({RandomInt8({2, 4}, 1), RandomInt8({3, 4}, 2)}).status();
  EXPECT_THAT(s.message(), AllOf(HasSubstr("'b' has batch 3"), HasSubstr("'a' has batch 2")));
}

// Plans that Create must refuse, naming the step: each mutates the valid network.
TEST(EngineTest, CorruptOrInconsistentPlansFailAtCreateNamingTheStep) {
  struct Case {
    const char* what;
    void (*mutate)(Plan&);
    std::vector<std::string> message;
  };
  const Case cases[] = {
      {"truncated params",
       [](Plan& p) { p.steps[1].ints.pop_back(); },
       {"step 1 'conv1' (QConv)", "malformed parameters"}},
      {"extra params",
       [](Plan& p) { p.steps[4].floats.push_back(1.0f); },
       {"step 4 'gap' (QGlobalAveragePool)", "malformed parameters"}},
      {"unknown kind",
       [](Plan& p) { p.steps[3].kind = 999; },
       {"step 3 'add'", "unknown kind 999"}},
      {"weight channels",
       [](Plan& p) {
         p.buffers[p.steps[1].inputs[1]].dims = {8, 1, 3, 9};
       },
       {"step 1 'conv1' (QConv)", "does not fit"}},
      {"bias dtype",
       [](Plan& p) { p.steps[1].inputs[2] = p.steps[1].inputs[3]; },
       {"step 1 'conv1' (QConv)", "bias", "has dtype f32, expected i32"}},
      {"multiplier size",
       [](Plan& p) { p.steps[2].inputs[3] = p.steps[6].inputs[3]; },
       {"step 2 'conv2' (QConv)", "multiplier", "[10]", "expected [8]"}},
      {"weight not a weight",
       [](Plan& p) { p.steps[1].inputs[1] = p.steps[1].inputs[0]; },
       {"step 1 'conv1' (QConv)", "W"}},
      {"operand count",
       [](Plan& p) { p.steps[3].inputs.pop_back(); },
       {"step 3 'add' (QAdd)", "has 1 inputs, expected 2"}},
      {"output shape",
       [](Plan& p) {
         p.buffers[p.steps[6].outputs[0]].dims = {-1, 11};
       },
       {"step 6 'fc' (QGemm)", "does not"}},
      {"reshape size",
       [](Plan& p) {
         p.buffers[p.steps[5].outputs[0]].dims = {-1, 9};
       },
       {"step 5 'flatten' (Reshape)", "cannot reshape"}},
      {"zero point",
       [](Plan& p) { p.steps[0].ints[0] = 300; },
       {"step 0 'quant' (Quantize)", "zero point 300"}},
      {"scale",
       [](Plan& p) { p.steps[7].floats[0] = 0.0f; },
       {"step 7 'dequant' (Dequantize)", "scale"}},
      {"clamp", [](Plan& p) { p.steps[3].ints.back() = -200; }, {"step 3 'add' (QAdd)", "clamp"}},
      {"stride",
       [](Plan& p) { p.steps[1].ints[0] = 0; },
       {"step 1 'conv1' (QConv)", "strides 0x1"}},
      {"dtype of x",
       [](Plan& p) { p.buffers[p.steps[3].outputs[0]].dtype = DType::kUInt8; },
       {"step 3 'add' (QAdd)", "dtype u8"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Plan plan = MakeInt8Network();
    c.mutate(plan);
    const absl::Status s = CreateError(plan);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    for (const std::string& part : c.message) EXPECT_THAT(s.message(), HasSubstr(part));
  }
}

TEST(EngineTest, MovementStepsRefuseOutOfBoundsGeometry) {
  auto slice_error = [](Dims out_dims, SliceStepParams p) {
    PlanBuilder b(1, 4);
    const int32_t x = b.Input("x", DType::kInt8, {-1, 5});
    const int32_t y = b.Output("y", DType::kInt8, out_dims);
    b.Step(StepKind::kSlice, "slice", {x}, {y}, p);
    return CreateError(b.plan());
  };
  EXPECT_TRUE(slice_error({-1, 3}, {{0, 0}, {1, 2}}).ok());
  EXPECT_THAT(slice_error({-1, 3}, {{0, 1}, {1, 3}}).message(), HasSubstr("do not fit"));
  EXPECT_THAT(slice_error({-1, 3}, {{0, 0}, {1, -1}}).message(), HasSubstr("do not fit"));
  EXPECT_THAT(slice_error({-1, 2}, {{0, 1}, {1, 0}}).message(), HasSubstr("step 0"));
  // Slicing the dynamic batch from 1 reads past the input at every batch.
  EXPECT_THAT(slice_error({-1, 5}, {{1, 0}, {1, 1}}).message(), HasSubstr("axis 0"));

  PlanBuilder b(1, 2);
  const int32_t x = b.Input("x", DType::kFloat32, {-1, 2, 3});
  const int32_t y = b.Output("y", DType::kFloat32, {-1, 3, 2});
  b.Step(StepKind::kTranspose, "t", {x}, {y}, TransposeStepParams{{0, 2, 2}});
  EXPECT_THAT(CreateError(b.plan()).message(), HasSubstr("not a permutation"));
  b.plan().steps[0] = PlanStep{};
  b.plan().steps[0].kind = static_cast<uint32_t>(StepKind::kPad);
  b.plan().steps[0].inputs = {x};
  b.plan().steps[0].outputs = {y};
  EncodeParams(PadStepParams{{0, 1, 0, 0, 0, -1}, 0.0f, 0}, &b.plan().steps[0]);
  EXPECT_THAT(CreateError(b.plan()).message(), HasSubstr("non-negative"));
}

// A float and movement plan: Conv -> MaxPool -> Pad -> Slice -> Transpose -> Concat -> Reshape ->
// Gemm -> Softmax, for the mutation test below.
Plan MakeFloatMovementNetwork() {
  PlanBuilder b(1, 3);
  const auto f = DType::kFloat32;
  const int32_t x = b.Input("x", f, {-1, 2, 6, 6});
  const int32_t w = b.Weight("w", f, {4, 2, 3, 3}, RandomFloat({72}, 1).ToFloatVector());
  const int32_t c = b.Arena("c", f, {-1, 4, 6, 6});
  const int32_t m = b.Arena("m", f, {-1, 4, 3, 3});
  const int32_t p = b.Arena("p", f, {-1, 4, 4, 4});
  const int32_t s = b.Arena("s", f, {-1, 4, 2, 4});
  const int32_t t = b.Arena("t", f, {-1, 4, 4, 2});
  const int32_t k = b.Arena("k", f, {-1, 8, 4, 2});
  const int32_t r = b.Arena("r", f, {-1, 64});
  const int32_t g = b.Weight("g", f, {64, 5}, RandomFloat({320}, 2).ToFloatVector());
  const int32_t l = b.Arena("l", f, {-1, 5});
  const int32_t y = b.Output("y", f, {-1, 5});
  ConvStepParams conv;
  conv.geometry.pad_top = conv.geometry.pad_left = conv.geometry.pad_bottom = 1;
  conv.geometry.pad_right = 1;
  b.Step(StepKind::kConv, "conv", {x, w}, {c}, conv);
  PoolStepParams pool;
  pool.kernel_h = pool.kernel_w = pool.stride_h = pool.stride_w = 2;
  b.Step(StepKind::kMaxPool, "pool", {c}, {m}, pool);
  b.Step(StepKind::kPad, "pad", {m}, {p}, PadStepParams{{0, 0, 0, 1, 0, 0, 1, 0}, 0.5f, 0});
  b.Step(StepKind::kSlice, "slice", {p}, {s}, SliceStepParams{{0, 0, 3, 0}, {1, 1, -2, 1}});
  b.Step(StepKind::kTranspose, "transpose", {s}, {t}, TransposeStepParams{{0, 1, 3, 2}});
  b.Step(StepKind::kConcat, "concat", {t, t}, {k}, AxisStepParams{1});
  b.Step(StepKind::kReshape, "flatten", {k}, {r}, NoStepParams{});
  b.Step(StepKind::kGemm, "fc", {r, g}, {l}, GemmStepParams{});
  b.Step(StepKind::kSoftmax, "softmax", {l}, {y}, AxisStepParams{-1});
  return b.plan();
}

// Every parameter of every step set to hostile values: Create refuses the plan, or the plan
// runs (under the sanitizer build, without touching memory it does not own).
TEST(EngineTest, MutatedParametersAreRefusedOrRunSafely) {
  const int64_t ints[] = {-1,        0,        1, 2, 3, 9, 127, 128, -129, int64_t{1} << 40,
                          INT64_MAX, INT64_MIN};
  const float floats[] = {0.0f, -1.0f, 1e30f, NAN, INFINITY};
  int refused = 0, ran = 0;
  for (const Plan& base : {MakeInt8Network(), MakeFloatMovementNetwork()}) {
    auto check = [&](const Plan& plan) {
      absl::StatusOr<std::shared_ptr<const Engine>> engine = Engine::Create(plan, {1});
      if (!engine.ok()) {
        EXPECT_EQ(engine.status().code(), absl::StatusCode::kInvalidArgument);
        ++refused;
        return;
      }
      const TensorInfo& in = (*engine)->inputs()[0];
      for (int64_t batch : {(*engine)->batch_min(), (*engine)->batch_max()}) {
        Dims dims = in.dims;
        dims[0] = batch;
        EXPECT_TRUE((*engine)->CreateContext()->Run({RandomFloat(dims, 3)}).ok());
      }
      ++ran;
    };
    for (size_t s = 0; s < base.steps.size(); ++s) {
      for (size_t i = 0; i < base.steps[s].ints.size(); ++i) {
        for (int64_t v : ints) {
          Plan plan = base;
          plan.steps[s].ints[i] = v;
          check(plan);
        }
      }
      for (size_t i = 0; i < base.steps[s].floats.size(); ++i) {
        for (float v : floats) {
          Plan plan = base;
          plan.steps[s].floats[i] = v;
          check(plan);
        }
      }
    }
  }
  EXPECT_GT(refused, 100);
  EXPECT_GT(ran, 100);
}

TEST(EngineTest, APlanWhoseArenaPassesTheMemoryLimitIsRefusedAtCreate) {
  // A manifest may claim any arena: a 1 TiB one is refused before a context allocates it, with
  // the size and the limit (by default the machine's memory).
  Plan plan = MakeInt8Network();
  plan.arena_bytes = uint64_t{1} << 40;
  absl::StatusOr<std::shared_ptr<const Engine>> engine = Engine::Create(plan, EngineOptions{1});
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(engine.status().message().find("the plan's arena at batch"), std::string::npos)
      << engine.status();
  EXPECT_NE(engine.status().message().find("needs 1.00 TiB"), std::string::npos) << engine.status();
  // The real arena under a limit below it, and above it.
  Plan small = MakeInt8Network();
  EngineOptions tight{1, static_cast<int64_t>(small.arena_bytes) - 1};
  EXPECT_EQ(Engine::Create(small, tight).status().code(), absl::StatusCode::kResourceExhausted);
  EngineOptions enough{1, static_cast<int64_t>(small.arena_bytes) + (1 << 20)};
  EXPECT_TRUE(Engine::Create(small, enough).ok());
}

TEST(EngineTest, AnInvalidPlanIsRefusedBeforePreparing) {
  Plan plan = MakeInt8Network();
  plan.steps[2].outputs = {0};  // writes the input buffer
  const absl::Status s = CreateError(plan);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("invalid plan"));
}

}  // namespace
}  // namespace qcc::runtime
