// One Engine shared by several threads, each with its own ExecutionContext: every result equals
// the single-threaded one. EngineOptions::num_threads is 1 so the kernels stay on each calling
// thread (the kernel pool runs one job at a time; see runtime/engine.h).
#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/engine.h"
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

}  // namespace
}  // namespace qcc::runtime
