// The fuzz bodies (fuzz/fuzz_bodies.h) in the ordinary suite: every input a fuzzer ever found to
// crash or hang a target, kept under tests/fuzz/regressions/<target>/, runs through its body
// (and must return), and real files of each kind are accepted all the way through, so a body
// cannot pass by rejecting everything.
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz/fuzz_bodies.h"
#include "gtest/gtest.h"
#include "runtime/plan_format.h"
#include "tests/calib/table_test_util.h"
#include "tests/runtime/engine_test_network.h"

namespace qcc::testing {
namespace {

namespace fs = std::filesystem;

bool Feed(fuzz::Body body, const std::string& bytes) {
  return body(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

fuzz::Body BodyNamed(const std::string& name) {
  for (const fuzz::Target& t : fuzz::Targets()) {
    if (name == t.name) return t.body;
  }
  return nullptr;
}

std::string Shared(const std::string& rel) { return std::string(QCC_SHARED_DIR) + "/" + rel; }

TEST(FuzzRegressionsTest, EveryKeptInputReturns) {
  const fs::path root = fs::path(QCC_SOURCE_DIR) / "tests/fuzz/regressions";
  int inputs = 0;
  for (const auto& dir : fs::directory_iterator(root)) {
    if (!dir.is_directory()) continue;
    const fuzz::Body body = BodyNamed(dir.path().filename().string());
    ASSERT_NE(body, nullptr) << dir.path() << " is no fuzz target's folder";
    for (const auto& file : fs::directory_iterator(dir.path())) {
      SCOPED_TRACE(file.path().string());
      Feed(body, ReadFile(file.path().string()));  // returns: no crash, no hang (ctest's timeout)
      ++inputs;
    }
  }
  std::printf("%d regression inputs\n", inputs);
}

TEST(FuzzRegressionsTest, RealFilesAreAcceptedAllTheWayThrough) {
  EXPECT_TRUE(Feed(fuzz::OnnxImport, ReadFile(Shared("models/mnist-8/model.onnx"))));
  EXPECT_TRUE(Feed(fuzz::OnnxImport, ReadFile(Shared("models/resnet20-cifar10/model.onnx"))));
  EXPECT_TRUE(
      Feed(fuzz::TensorFile, ReadFile(Shared("models/mnist-8/test_data_set_0/input_0.pb"))));
  EXPECT_TRUE(Feed(fuzz::ImageFile, ReadFile(Shared("data/mnist-test/7/00000.png"))));
  EXPECT_TRUE(Feed(fuzz::ImageFile, ReadFile(Shared("data/cifar10-test/cat/0000.jpg"))));
  // A plan (the runtime tests' int8 network) runs, and a table (the calibration tests' one)
  // parses and solves.
  absl::StatusOr<std::string> plan =
      runtime::SerializePlan(runtime::engine_testing::MakeInt8Network());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(Feed(fuzz::PlanLoad, *plan));
  absl::StatusOr<std::string> table = calib::CalibTableToJson(MakeTable(0, 6));
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_TRUE(Feed(fuzz::CalibTable, *table));
  EXPECT_FALSE(Feed(fuzz::PlanLoad, "not a plan"));
  EXPECT_FALSE(Feed(fuzz::CalibTable, "{}"));
  EXPECT_FALSE(Feed(fuzz::OnnxImport, std::string("\x08\x07", 2) + "junk"));
}

}  // namespace
}  // namespace qcc::testing
