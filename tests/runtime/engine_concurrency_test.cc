// One Engine shared by several threads, each with its own ExecutionContext: every result equals
// the single-threaded one. EngineOptions::num_threads is 1 so the kernels stay on each calling
// thread (the kernel pool runs one job at a time; see runtime/engine.h); the stress tests also
// run 2 kernel threads per step, so concurrent contexts contend for the pool. The `tsan` ctest
// (label slow) runs these tests under ThreadSanitizer.
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/engine.h"
#include "runtime/plan_format.h"
#include "runtime/qcc_runtime.h"
#include "tests/runtime/engine_test_network.h"
#include "tests/runtime/engine_test_util.h"

namespace qcc::runtime {
namespace {

using engine_testing::MakeEngine;
using engine_testing::MakeInt8Network;
using engine_testing::RandomFloat;

// Runs `threads` threads x `runs` inferences over `inputs` (cycling through them, so batches
// vary within a context) and counts results that differ from `expected`.
int CountMismatches(const std::shared_ptr<const Engine>& engine, const std::vector<Tensor>& inputs,
                    const std::vector<Tensor>& expected, int threads, int runs) {
  std::atomic<int> mismatches{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::unique_ptr<ExecutionContext> ctx = engine->CreateContext();
      for (int i = 0; i < runs; ++i) {
        const size_t k = (t + i) % inputs.size();
        absl::StatusOr<std::vector<Tensor>> out = ctx->Run({inputs[k]});
        if (!out.ok() || out->size() != 1 || !(*out)[0].BitwiseEquals(expected[k])) ++mismatches;
      }
    });
  }
  for (std::thread& th : pool) th.join();
  return mismatches.load();
}

TEST(EngineConcurrencyTest, FourThreadsMatchASingleThreadedRun) {
  std::shared_ptr<const Engine> engine = MakeEngine(MakeInt8Network(), /*num_threads=*/1);
  ASSERT_NE(engine, nullptr);
  std::vector<Tensor> inputs, expected;
  std::unique_ptr<ExecutionContext> single = engine->CreateContext();
  for (int64_t batch : {1, 2, 3, 4, 1}) {
    inputs.push_back(RandomFloat({batch, 3, 8, 8}, 200 + inputs.size(), -1.5f, 1.5f));
    absl::StatusOr<std::vector<Tensor>> out = single->Run({inputs.back()});
    ASSERT_TRUE(out.ok()) << out.status();
    expected.push_back((*out)[0]);
  }
  EXPECT_EQ(CountMismatches(engine, inputs, expected, /*threads=*/4, /*runs=*/100), 0);
}

// With several kernel threads per step, concurrent contexts still agree: a step that finds the
// pool busy runs its pieces inline, and the kernels give the same bits at any thread count.
TEST(EngineConcurrencyTest, MultiThreadedKernelsUnderConcurrentContexts) {
  const Plan plan = MakeInt8Network();
  std::shared_ptr<const Engine> serial = MakeEngine(plan, 1);
  std::shared_ptr<const Engine> parallel = MakeEngine(plan, 4);
  ASSERT_NE(serial, nullptr);
  ASSERT_NE(parallel, nullptr);
  std::vector<Tensor> inputs, expected;
  for (int64_t batch : {4, 3}) {
    inputs.push_back(RandomFloat({batch, 3, 8, 8}, 300 + batch, -1.5f, 1.5f));
    expected.push_back(serial->CreateContext()->Run({inputs.back()}).value()[0]);
  }
  EXPECT_EQ(CountMismatches(parallel, inputs, expected, /*threads=*/3, /*runs=*/30), 0);
}

/// An fp32 network: x [N,3,8,8] -> Conv 3x3 (8 filters, pad 1, ReLU) -> GlobalAveragePool ->
/// Reshape [N,8] -> Gemm [10,8] (transB) -> logits [N,10]. Its Conv and Gemm run on the sgemm
/// that the int8 network never touches.
Plan MakeFloatConvGemmNetwork() {
  engine_testing::PlanBuilder b(1, 4);
  const int32_t x = b.Input("x", DType::kFloat32, {-1, 3, 8, 8});
  const Tensor wc = RandomFloat({8, 3, 3, 3}, 71), bc = RandomFloat({8}, 72);
  const Tensor wf = RandomFloat({10, 8}, 73), bf = RandomFloat({10}, 74);
  auto values = [](const Tensor& t) {
    return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
  };
  const int32_t w1 = b.Weight("conv.w", DType::kFloat32, {8, 3, 3, 3}, values(wc));
  const int32_t b1 = b.Weight("conv.b", DType::kFloat32, {8}, values(bc));
  const int32_t w2 = b.Weight("fc.w", DType::kFloat32, {10, 8}, values(wf));
  const int32_t b2 = b.Weight("fc.b", DType::kFloat32, {10}, values(bf));
  const int32_t c = b.Arena("c", DType::kFloat32, {-1, 8, 8, 8});
  const int32_t g = b.Arena("g", DType::kFloat32, {-1, 8, 1, 1});
  const int32_t r = b.Arena("r", DType::kFloat32, {-1, 8});
  const int32_t y = b.Output("logits", DType::kFloat32, {-1, 10});
  ConvStepParams conv;
  conv.geometry.pad_top = conv.geometry.pad_left = conv.geometry.pad_bottom =
      conv.geometry.pad_right = 1;
  conv.activation.lo = 0.0f;
  b.Step(StepKind::kConv, "conv", {x, w1, b1}, {c}, conv);
  b.Step(StepKind::kGlobalAveragePool, "gap", {c}, {g}, NoStepParams{});
  b.Step(StepKind::kReshape, "flatten", {g}, {r}, NoStepParams{});
  GemmStepParams gemm;
  gemm.trans_b = 1;
  b.Step(StepKind::kGemm, "fc", {r, w2, b2}, {y}, gemm);
  engine_testing::PlanArena(b.plan());
  return b.plan();
}

/// Inputs of batches 1 to 4 and their single-threaded outputs from a fresh engine of `plan`.
void SingleThreadedReference(const Plan& plan, std::vector<Tensor>* inputs,
                             std::vector<Tensor>* expected) {
  std::shared_ptr<const Engine> engine = MakeEngine(plan, 1);
  ASSERT_NE(engine, nullptr);
  std::unique_ptr<ExecutionContext> ctx = engine->CreateContext();
  for (int64_t batch : {1, 4, 2, 3, 4, 1, 3}) {
    inputs->push_back(RandomFloat({batch, 3, 8, 8}, 900 + inputs->size(), -1.5f, 1.5f));
    absl::StatusOr<std::vector<Tensor>> out = ctx->Run({inputs->back()});
    ASSERT_TRUE(out.ok()) << out.status();
    expected->push_back((*out)[0]);
  }
}

// 8 threads x 400 runs, batches 1 to 4 in every context, with 1 and 2 kernel threads per step:
// 6,400 runs of each network, every output bit for bit the single-threaded one.
TEST(EngineConcurrencyTest, EightThreadsStressBothNetworksBitForBit) {
  for (const auto& [name, plan] : {std::make_pair("int8", MakeInt8Network()),
                                   std::make_pair("fp32", MakeFloatConvGemmNetwork())}) {
    SCOPED_TRACE(name);
    std::vector<Tensor> inputs, expected;
    SingleThreadedReference(plan, &inputs, &expected);
    for (int kernel_threads : {1, 2}) {
      std::shared_ptr<const Engine> engine = MakeEngine(plan, kernel_threads);
      ASSERT_NE(engine, nullptr);
      EXPECT_EQ(CountMismatches(engine, inputs, expected, /*threads=*/8, /*runs=*/400), 0)
          << kernel_threads << " kernel threads";
    }
  }
}

// The C API from 8 threads: one engine, a context per thread, every output the C++ result.
TEST(EngineConcurrencyTest, CApiFromEightThreads) {
  std::vector<Tensor> inputs, expected;
  SingleThreadedReference(MakeInt8Network(), &inputs, &expected);
  const std::string path = ::testing::TempDir() + "/c_api_threads.plan";
  ASSERT_TRUE(WritePlan(MakeInt8Network(), path).ok());
  qcc_engine* engine = nullptr;
  ASSERT_EQ(qcc_engine_load(path.c_str(), 1, &engine), QCC_OK) << qcc_last_error();
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < 8; ++t) {
    pool.emplace_back([&, t] {
      qcc_context* ctx = nullptr;
      if (qcc_context_create(engine, &ctx) != QCC_OK) {
        ++failures;
        return;
      }
      for (int i = 0; i < 200; ++i) {
        const size_t k = (t + i) % inputs.size();
        const void* in[] = {inputs[k].raw()};
        const int64_t* dims[] = {inputs[k].dims().data()};
        const int32_t ranks[] = {4};
        const void* data = nullptr;
        const int64_t* out_dims = nullptr;
        int32_t rank = 0;
        if (qcc_context_run(ctx, 1, in, dims, ranks) != QCC_OK ||
            qcc_context_output(ctx, 0, &data, &out_dims, &rank) != QCC_OK) {
          ++failures;
          continue;
        }
        if (rank != 2 || out_dims[0] != expected[k].dim(0) ||
            std::memcmp(data, expected[k].raw(), expected[k].nbytes()) != 0) {
          ++mismatches;
        }
      }
      // A bad call's message belongs to its thread.
      const void* in[] = {inputs[0].raw()};
      const int64_t wrong[] = {1, 3, 8, 20 + t};
      const int64_t* dims[] = {wrong};
      const int32_t ranks[] = {4};
      if (qcc_context_run(ctx, 1, in, dims, ranks) != QCC_INVALID_ARGUMENT ||
          std::string(qcc_last_error()).find("[1,3,8," + std::to_string(20 + t) + "]") ==
              std::string::npos) {
        ++failures;
      }
      qcc_context_free(ctx);
    });
  }
  for (std::thread& th : pool) th.join();
  qcc_engine_free(engine);
  std::remove(path.c_str());
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
}  // namespace qcc::runtime
