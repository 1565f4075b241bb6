// `qcc inspect --passes`: the graph after the default pipeline and one line per pass.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/tools/qcc_runner.h"

namespace qcc::testing {
namespace {

using ToolsInspectPassesTest = QccTest;

TEST_F(ToolsInspectPassesTest, Resnet20ReportsEveryPass) {
  const std::string model = SharedModelDir("resnet20-cifar10") + "/model.onnx";
  const QccResult r = Qcc({"inspect", model, "--passes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  std::vector<std::string> passes;
  std::string fold;
  for (const std::string& line : Lines(r.out)) {
    if (line.rfind("pass ", 0) != 0) continue;
    passes.push_back(line.substr(5, line.find(':') - 5));
    if (passes.back() == "fold-constants") fold = line;
  }
  EXPECT_EQ(passes,
            std::vector<std::string>(
                {"remove-identity", "fold-constants", "resolve-reshape", "eliminate-dead-code",
                 "fuse-conv-batchnorm", "fuse-conv-add", "fuse-conv-batchnorm", "fuse-pad-conv",
                 "merge-slices", "fuse-gemm-batchnorm", "fuse-matmul-add", "decompose-batchnorm",
                 "fuse-hardswish", "fuse-layernorm", "fuse-gelu", "fold-attention-scale",
                 "fuse-attention", "fuse-activation", "eliminate-dead-code"}));
  // 121 imported nodes; the 32 Constant nodes and the pads chains of the two shortcuts fold.
  EXPECT_EQ(fold.rfind("pass fold-constants: changed, nodes 121 -> 75 (", 0), 0u) << fold;
  for (const char* part : {"-32 Constant", "-2 ConstantOfShape", "-2 Cast", "-2 Concat"}) {
    EXPECT_NE(fold.find(part), std::string::npos) << part << " in " << fold;
  }
  // The printed graph is the folded one.
  EXPECT_EQ(r.out.find("ConstantOfShape("), std::string::npos);
  EXPECT_NE(r.out.find("Pad("), std::string::npos);
  const std::string summary = Lines(r.out).back();
  EXPECT_EQ(summary.find("Constant x"), std::string::npos) << summary;

  // Without the flag nothing runs and no pass line appears.
  const QccResult plain = Qcc({"inspect", model});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out.find("\npass "), std::string::npos);
  EXPECT_NE(plain.out.find("ConstantOfShape("), std::string::npos);
}

}  // namespace
}  // namespace qcc::testing
