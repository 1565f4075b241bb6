// Batches run in slices (runtime/batch_slices.h): which plans keep their images apart, the slice
// size the arena gives, and sliced runs giving the whole batch's bytes.
#include "runtime/batch_slices.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/engine.h"
#include "tests/runtime/engine_test_network.h"
#include "tests/runtime/engine_test_util.h"

namespace qcc::runtime {
namespace {

using engine_testing::kF32;
using engine_testing::PlanBuilder;

std::shared_ptr<const Engine> EngineWith(const Plan& plan, int64_t slice_images, int threads = 1) {
  EngineOptions options;
  options.num_threads = threads;
  options.slice_images = slice_images;
  absl::StatusOr<std::shared_ptr<const Engine>> engine =
      Engine::Create(engine_testing::RoundTrip(plan), options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? *engine : nullptr;
}

std::vector<Tensor> RunOnce(const Engine& engine, const Tensor& x) {
  absl::StatusOr<std::vector<Tensor>> out = engine.CreateContext()->Run({x});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *std::move(out) : std::vector<Tensor>{};
}

TEST(BatchSlicesTest, SlicedRunsGiveTheWholeBatchsBytes) {
  const Plan plan = engine_testing::MakeInt8Network();  // batch 1..4
  std::string why;
  ASSERT_TRUE(ImagesIndependent(plan, &why)) << why;
  std::shared_ptr<const Engine> whole = EngineWith(plan, -1);
  ASSERT_NE(whole, nullptr);
  EXPECT_EQ(whole->slice_images(), 0);
  for (int64_t slice : {1, 2, 3}) {
    for (int threads : {1, 2}) {
      std::shared_ptr<const Engine> sliced = EngineWith(plan, slice, threads);
      ASSERT_NE(sliced, nullptr);
      EXPECT_EQ(sliced->slice_images(), slice);
      for (int64_t batch : {1, 3, 4}) {  // 4 by 3: slices of 2 and 2
        const Tensor x = engine_testing::RandomFloat({batch, 3, 8, 8}, 40 + batch);
        const std::vector<Tensor> got = RunOnce(*sliced, x);
        const std::vector<Tensor> want = RunOnce(*whole, x);
        ASSERT_EQ(got.size(), 1u);
        ASSERT_EQ(want.size(), 1u);
        engine_testing::ExpectTensorsEqual(got[0], want[0]);
        engine_testing::ExpectTensorsEqual(got[0], engine_testing::ReferenceInt8Network(x));
        // A sliced run holds the arena of its largest slice, not the batch's.
        std::unique_ptr<ExecutionContext> ctx = sliced->CreateContext();
        ASSERT_TRUE(ctx->Run({x}).ok());
        const int64_t slices = (batch + slice - 1) / slice;
        EXPECT_EQ(ctx->arena_capacity(), sliced->ArenaBytesAt((batch + slices - 1) / slices))
            << "batch " << batch << " by " << slice;
      }
    }
  }
}

TEST(BatchSlicesTest, AnObservedRunSeesTheWholeBatch) {
  std::shared_ptr<const Engine> sliced = EngineWith(engine_testing::MakeInt8Network(), 1);
  ASSERT_NE(sliced, nullptr);
  std::unique_ptr<ExecutionContext> ctx = sliced->CreateContext();
  int64_t calls = 0;
  ctx->set_step_observer([&](size_t, int32_t, const Tensor& value) {
    ++calls;
    EXPECT_EQ(value.dim(0), 4);
  });
  ASSERT_TRUE(ctx->Run({engine_testing::RandomFloat({4, 3, 8, 8}, 7)}).ok());
  EXPECT_EQ(calls, static_cast<int64_t>(sliced->plan().steps.size()));
}

TEST(BatchSlicesTest, SliceImagesFollowsTheArenaItTouches) {
  Plan plan = engine_testing::MakeInt8Network();
  const uint64_t per_image = plan.arena_bytes / plan.batch_max;
  EXPECT_EQ(SliceImages(plan, 2 * per_image), 2);
  EXPECT_EQ(SliceImages(plan, 1), 1);  // at least one image
  EXPECT_EQ(SliceImages(plan, uint64_t{1} << 40), plan.batch_max);
  plan.batch_max = 1;
  EXPECT_EQ(SliceImages(plan), 0);  // nothing to slice
}

// x f32 [-1, 4, 10] -> `kind` -> y f32 [-1, 4, 10].
template <typename P>
Plan OneStep(StepKind kind, const P& params) {
  PlanBuilder b(1, 8);
  const int32_t x = b.Input("x", kF32, {-1, 4, 10});
  const int32_t y = b.Output("y", kF32, {-1, 4, 10});
  b.Step(kind, "the_step", {x}, {y}, params);
  return b.plan();
}

TEST(BatchSlicesTest, StepsAcrossTheBatchAxisKeepTheWholeBatch) {
  for (const Plan& plan : {OneStep(StepKind::kSoftmax, AxisStepParams{0}),
                           OneStep(StepKind::kSoftmax, AxisStepParams{-3}),
                           OneStep(StepKind::kLayerNorm, LayerNormStepParams{0, 1e-5f}),
                           OneStep(StepKind::kTranspose, TransposeStepParams{{1, 0, 2}})}) {
    std::string why;
    EXPECT_FALSE(ImagesIndependent(plan, &why));
    EXPECT_NE(why.find("step 'the_step'"), std::string::npos) << why;
    EXPECT_NE(why.find("mixes the images of a batch"), std::string::npos) << why;
    EXPECT_EQ(SliceImages(plan), 0);
  }
  // The same steps along other axes keep the images apart.
  for (const Plan& plan : {OneStep(StepKind::kSoftmax, AxisStepParams{-1}),
                           OneStep(StepKind::kLayerNorm, LayerNormStepParams{1, 1e-5f}),
                           OneStep(StepKind::kTranspose, TransposeStepParams{{0, 1, 2}})}) {
    std::string why;
    EXPECT_TRUE(ImagesIndependent(plan, &why)) << why;
  }
}

TEST(BatchSlicesTest, ABufferWithoutTheBatchOrAFixedBatchKeepsTheWholeBatch) {
  {
    // Shape arithmetic read as data: BatchAffine's values are the batch itself.
    PlanBuilder b(1, 8);
    const int32_t x = b.Input("x", kF32, {-1, 4});
    const int32_t n = b.Arena("n", DType::kInt64, {1});
    const int32_t y = b.Output("y", kF32, {-1, 4});
    b.Step(StepKind::kBatchAffine, "batch", {}, {n}, BatchAffineStepParams{{0}, {1}});
    b.Step(StepKind::kUnary, "relu", {x}, {y}, UnaryStepParams{});
    std::string why;
    EXPECT_FALSE(ImagesIndependent(b.plan(), &why));
    EXPECT_NE(why.find("buffer 'n' has no batch axis"), std::string::npos) << why;
  }
  {
    PlanBuilder b(1, 1);
    const int32_t x = b.Input("x", kF32, {1, 4});
    const int32_t y = b.Output("y", kF32, {1, 4});
    b.Step(StepKind::kUnary, "relu", {x}, {y}, UnaryStepParams{});
    std::string why;
    EXPECT_FALSE(ImagesIndependent(b.plan(), &why));
    EXPECT_NE(why.find("no input has a dynamic batch"), std::string::npos) << why;
    EXPECT_EQ(SliceImages(b.plan()), 0);
    // Asked for slices anyway, the engine runs it whole.
    std::shared_ptr<const Engine> engine = EngineWith(b.plan(), 2);
    ASSERT_NE(engine, nullptr);
    EXPECT_EQ(engine->slice_images(), 0);
  }
}

}  // namespace
}  // namespace qcc::runtime
