// The C API (runtime/qcc_runtime.h): load a plan file written by WritePlan, query it, run it and
// compare with the C++ API; bad paths, bad inputs and NULL arguments give a status and a message.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/engine.h"
#include "runtime/plan_format.h"
#include "runtime/qcc_runtime.h"
#include "tests/runtime/engine_test_network.h"
#include "tests/runtime/engine_test_util.h"

namespace qcc::runtime {
namespace {

using engine_testing::MakeInt8Network;
using engine_testing::RandomFloat;
using ::testing::AllOf;
using ::testing::HasSubstr;

class CApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/c_api_test.plan";
    ASSERT_TRUE(WritePlan(MakeInt8Network(), path_).ok());
    ASSERT_EQ(qcc_engine_load(path_.c_str(), 2, &engine_), QCC_OK) << qcc_last_error();
    ASSERT_EQ(qcc_context_create(engine_, &ctx_), QCC_OK) << qcc_last_error();
  }
  void TearDown() override {
    qcc_context_free(ctx_);
    qcc_engine_free(engine_);
    std::remove(path_.c_str());
  }

  // Runs one input through the C API.
  qcc_status Run(const Tensor& x) {
    const void* inputs[] = {x.raw()};
    const int64_t* dims[] = {x.dims().data()};
    const int32_t ranks[] = {static_cast<int32_t>(x.rank())};
    return qcc_context_run(ctx_, 1, inputs, dims, ranks);
  }

  std::string path_;
  qcc_engine* engine_ = nullptr;
  qcc_context* ctx_ = nullptr;
};

TEST_F(CApiTest, QueriesDescribeTheBindings) {
  ASSERT_EQ(qcc_engine_num_inputs(engine_), 1);
  ASSERT_EQ(qcc_engine_num_outputs(engine_), 1);
  EXPECT_STREQ(qcc_engine_input_name(engine_, 0), "x");
  EXPECT_EQ(qcc_engine_input_dtype(engine_, 0), QCC_DTYPE_FLOAT32);
  ASSERT_EQ(qcc_engine_input_rank(engine_, 0), 4);
  const int64_t* dims = qcc_engine_input_dims(engine_, 0);
  EXPECT_EQ(std::vector<int64_t>(dims, dims + 4), (std::vector<int64_t>{-1, 3, 8, 8}));
  EXPECT_STREQ(qcc_engine_output_name(engine_, 0), "logits");
  EXPECT_EQ(qcc_engine_output_dtype(engine_, 0), QCC_DTYPE_FLOAT32);
  EXPECT_EQ(qcc_engine_output_rank(engine_, 0), 2);
  EXPECT_EQ(qcc_engine_output_dims(engine_, 0)[1], 10);
  int64_t lo = 0, hi = 0;
  ASSERT_EQ(qcc_engine_batch_range(engine_, &lo, &hi), QCC_OK);
  EXPECT_EQ(lo, 1);
  EXPECT_EQ(hi, 4);
  // Bad indices and handles give sentinels, not crashes.
  EXPECT_EQ(qcc_engine_input_name(engine_, 1), nullptr);
  EXPECT_EQ(qcc_engine_output_dims(engine_, -1), nullptr);
  EXPECT_EQ(qcc_engine_input_rank(engine_, 7), -1);
  EXPECT_EQ(qcc_engine_input_dtype(nullptr, 0), QCC_DTYPE_UNDEFINED);
  EXPECT_EQ(qcc_engine_num_inputs(nullptr), 0);
}

TEST_F(CApiTest, RunMatchesTheCppApi) {
  absl::StatusOr<std::shared_ptr<const Engine>> engine = Engine::Load(path_, {1});
  ASSERT_TRUE(engine.ok()) << engine.status();
  std::unique_ptr<ExecutionContext> cpp = (*engine)->CreateContext();
  for (int64_t batch : {3, 1}) {
    const Tensor x = RandomFloat({batch, 3, 8, 8}, 500 + batch, -1.5f, 1.5f);
    ASSERT_EQ(Run(x), QCC_OK) << qcc_last_error();
    const void* data = nullptr;
    const int64_t* dims = nullptr;
    int32_t rank = 0;
    ASSERT_EQ(qcc_context_output(ctx_, 0, &data, &dims, &rank), QCC_OK);
    ASSERT_EQ(rank, 2);
    EXPECT_EQ(dims[0], batch);
    EXPECT_EQ(dims[1], 10);
    const Tensor want = cpp->Run({x}).value()[0];
    EXPECT_EQ(std::memcmp(data, want.raw(), want.nbytes()), 0);
  }
}

TEST_F(CApiTest, BadInputsGiveAStatusAndAMessage) {
  const Tensor wrong = RandomFloat({2, 3, 8, 7}, 1);
  EXPECT_EQ(Run(wrong), QCC_INVALID_ARGUMENT);
  EXPECT_THAT(qcc_last_error(),
              AllOf(HasSubstr("'x'"), HasSubstr("[N,3,8,8]"), HasSubstr("[2,3,8,7]")));
  // No outputs after a failed run.
  const void* data = nullptr;
  const int64_t* dims = nullptr;
  int32_t rank = 0;
  EXPECT_EQ(qcc_context_output(ctx_, 0, &data, &dims, &rank), QCC_INVALID_ARGUMENT);
  EXPECT_THAT(qcc_last_error(), HasSubstr("no output 0"));

  const Tensor too_big = RandomFloat({9, 3, 8, 8}, 2);
  EXPECT_EQ(Run(too_big), QCC_INVALID_ARGUMENT);
  EXPECT_THAT(qcc_last_error(), HasSubstr("batch 9"));

  const Tensor x = RandomFloat({1, 3, 8, 8}, 3);
  const void* inputs[] = {x.raw()};
  const int64_t* in_dims[] = {x.dims().data()};
  const int32_t ranks[] = {4}, bad_rank[] = {-3};
  EXPECT_EQ(qcc_context_run(ctx_, 2, inputs, in_dims, ranks), QCC_INVALID_ARGUMENT);
  EXPECT_THAT(qcc_last_error(), HasSubstr("expected 1 inputs, got 2"));
  EXPECT_EQ(qcc_context_run(ctx_, 1, inputs, in_dims, bad_rank), QCC_INVALID_ARGUMENT);
  EXPECT_EQ(qcc_context_run(ctx_, 1, nullptr, in_dims, ranks), QCC_INVALID_ARGUMENT);
  const void* misaligned[] = {static_cast<const char*>(x.raw()) + 1};
  EXPECT_EQ(qcc_context_run(ctx_, 1, misaligned, in_dims, ranks), QCC_INVALID_ARGUMENT);
  EXPECT_THAT(qcc_last_error(), HasSubstr("aligned"));
  EXPECT_EQ(qcc_context_run(nullptr, 1, inputs, in_dims, ranks), QCC_INVALID_ARGUMENT);
  // The context still runs afterwards.
  EXPECT_EQ(Run(x), QCC_OK) << qcc_last_error();
}

TEST_F(CApiTest, BadPathsAndFilesGiveAStatusAndAMessage) {
  qcc_engine* engine = reinterpret_cast<qcc_engine*>(1);
  EXPECT_EQ(qcc_engine_load((path_ + ".missing").c_str(), 0, &engine), QCC_NOT_FOUND);
  EXPECT_EQ(engine, nullptr);
  EXPECT_THAT(qcc_last_error(), HasSubstr(".missing"));

  const std::string junk = ::testing::TempDir() + "/c_api_test_junk.plan";
  std::ofstream(junk) << "not a plan at all";
  EXPECT_EQ(qcc_engine_load(junk.c_str(), 0, &engine), QCC_INVALID_ARGUMENT);
  EXPECT_THAT(qcc_last_error(), HasSubstr(junk));
  std::remove(junk.c_str());

  EXPECT_EQ(qcc_engine_load(nullptr, 0, &engine), QCC_INVALID_ARGUMENT);
  EXPECT_EQ(qcc_engine_load(path_.c_str(), -1, &engine), QCC_INVALID_ARGUMENT);
  EXPECT_EQ(qcc_engine_load(path_.c_str(), 0, nullptr), QCC_INVALID_ARGUMENT);
  qcc_context* ctx = nullptr;
  EXPECT_EQ(qcc_context_create(nullptr, &ctx), QCC_INVALID_ARGUMENT);
  EXPECT_EQ(qcc_context_output(nullptr, 0, nullptr, nullptr, nullptr), QCC_INVALID_ARGUMENT);
  qcc_engine_free(nullptr);
  qcc_context_free(nullptr);
}

// An embedder checks, at run time, that the library it loaded is the one it was built against,
// which release it is, and which plan files it reads.
TEST_F(CApiTest, VersionsNameTheApiTheReleaseAndThePlanFormat) {
  const std::string error_before = qcc_last_error();
  EXPECT_EQ(qcc_api_version(), QCC_API_VERSION);
  EXPECT_THAT(qcc_version(), ::testing::MatchesRegex("[0-9]+\\.[0-9]+\\.[0-9]+"));
  EXPECT_EQ(qcc_plan_format_version(), static_cast<int32_t>(kPlanFormatVersion));
  // The queries never fail: the thread's last error stays as it was.
  EXPECT_EQ(qcc_last_error(), error_before);
}

TEST_F(CApiTest, AContextOutlivesItsEngineHandle) {
  qcc_engine_free(engine_);
  engine_ = nullptr;
  EXPECT_EQ(Run(RandomFloat({2, 3, 8, 8}, 4)), QCC_OK) << qcc_last_error();
}

}  // namespace
}  // namespace qcc::runtime
