// The qcc command line itself: --version, help, and usage errors reported by the parser.
#include <string>

#include "gtest/gtest.h"
#include "tests/tools/qcc_runner.h"

namespace qcc::testing {
namespace {

using ToolsCliTest = QccTest;

TEST_F(ToolsCliTest, VersionPrintsTheVersionAndTheCudaBuild) {
  const QccResult r = Qcc({"--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::vector<std::string> lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(lines[0], "qcc 0.1.0");
  const std::string& cuda = lines[1];
  const bool not_built = cuda == "CUDA: not built";
  const bool built = cuda.rfind("CUDA: built for sm_", 0) == 0 &&
                     cuda.find("; devices found: ") != std::string::npos;
  EXPECT_TRUE(not_built || built) << cuda;
}

TEST_F(ToolsCliTest, HelpListsTheCommands) {
  const QccResult r = Qcc({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* cmd : {"run", "inspect", "bench", "--version"}) {
    EXPECT_NE(r.out.find(cmd), std::string::npos) << cmd;
  }
  const QccResult run_help = Qcc({"run", "--help"});
  EXPECT_EQ(run_help.exit_code, 0);
  for (const char* flag : {"--input", "--test-data", "--output-dir", "--threads"}) {
    EXPECT_NE(run_help.out.find(flag), std::string::npos) << flag;
  }
}

TEST_F(ToolsCliTest, NoCommandIsAUsageError) {
  ExpectOneLineError(Qcc({}), {"a command is required"}, 2);
}

TEST_F(ToolsCliTest, UnknownFlagIsAUsageErrorNamingTheFlag) {
  ExpectOneLineError(Qcc({"run", "model.onnx", "--frobnicate"}), {"--frobnicate"}, 2);
  ExpectOneLineError(Qcc({"--frobnicate"}), {"--frobnicate"}, 2);
}

TEST_F(ToolsCliTest, UnknownCommandIsAUsageError) {
  ExpectOneLineError(Qcc({"compile-everything"}), {"compile-everything"}, 2);
}

TEST_F(ToolsCliTest, MissingModelArgumentIsAUsageError) {
  ExpectOneLineError(Qcc({"inspect"}), {"model"}, 2);
}

TEST_F(ToolsCliTest, InputWithoutEqualsIsAUsageErrorNamingTheFlag) {
  ExpectOneLineError(Qcc({"run", "model.onnx", "--input", "digit.npy"}),
                     {"--input", "digit.npy", "NAME=VALUE"}, 2);
  ExpectOneLineError(Qcc({"run", "model.onnx", "--input", "=digit.npy"}), {"--input"}, 2);
}

TEST_F(ToolsCliTest, BadNumbersAreUsageErrorsNamingTheFlag) {
  ExpectOneLineError(Qcc({"bench", "model.onnx", "--batch", "zero"}), {"--batch"}, 2);
  ExpectOneLineError(Qcc({"bench", "model.onnx", "--iters", "0"}), {"--iters"}, 2);
  ExpectOneLineError(Qcc({"run", "model.onnx", "--threads", "-3"}), {"--threads"}, 2);
}

}  // namespace
}  // namespace qcc::testing
