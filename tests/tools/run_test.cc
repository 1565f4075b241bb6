// `qcc run`: a real model against its reference outputs, and every way the inputs can be wrong.
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "frontend/tensor_proto.h"
#include "gtest/gtest.h"
#include "support/npy.h"
#include "tests/tools/onnx_models.h"
#include "tests/tools/qcc_runner.h"

namespace qcc::testing {
namespace {

class ToolsRunTest : public QccTest {
 protected:
  // Expects a one-line error naming every string of `mentions`, and no output file written.
  void ExpectRunFails(const QccResult& r, const std::vector<std::string>& mentions) const {
    ExpectOneLineError(r, mentions);
    EXPECT_FALSE(std::filesystem::exists(Path("out/output_0.pb")));
    EXPECT_EQ(r.out.find("output 0"), std::string::npos) << r.out;
  }
};

std::string Mnist() { return SharedModelDir("mnist-8") + "/model.onnx"; }
std::string MnistSet(int k) {
  return SharedModelDir("mnist-8") + "/test_data_set_" + std::to_string(k);
}

// Every element within |got - want| <= atol + rtol * |want| (rtol 1e-3, atol 1e-4).
void ExpectClose(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.dims(), want.dims());
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.GetAsDouble(i);
    const double w = want.GetAsDouble(i);
    EXPECT_LE(std::fabs(g - w), 1e-4 + 1e-3 * std::fabs(w)) << "element " << i;
  }
}

TEST_F(ToolsRunTest, MnistMatchesTheReferenceOutputs) {
  for (int set : {0, 1}) {
    SCOPED_TRACE(set);
    const std::string out_dir = Path("out" + std::to_string(set) + "/nested");
    const QccResult r = Qcc(
        {"run", Mnist(), "--test-data", MnistSet(set), "--output-dir", out_dir, "--threads", "1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    std::string name;
    absl::StatusOr<Tensor> got = frontend::ReadTensorProtoFile(out_dir + "/output_0.pb", &name);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(name, "Plus214_Output_0");
    absl::StatusOr<Tensor> want = frontend::ReadTensorProtoFile(MnistSet(set) + "/output_0.pb");
    ASSERT_TRUE(want.ok()) << want.status();
    ExpectClose(*got, *want);
    // The reference digits: 7 for set 0, 2 for set 1 (argmax of the reference scores).
    const std::string top1 = set == 0 ? "top-1: class 7 (score " : "top-1: class 2 (score ";
    EXPECT_NE(r.out.find(top1), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("output 0 'Plus214_Output_0': f32[1,10]"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("vs output_0.pb: max abs error"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(", within rtol 0.001/atol 0.0001"), std::string::npos) << r.out;
  }
}

TEST_F(ToolsRunTest, NpyInputGivesTheSameResult) {
  absl::StatusOr<Tensor> input = frontend::ReadTensorProtoFile(MnistSet(0) + "/input_0.pb");
  ASSERT_TRUE(input.ok()) << input.status();
  ASSERT_TRUE(WriteNpy(Path("digit.npy"), *input).ok());
  const QccResult r =
      Qcc({"run", Mnist(), "--input", "Input3=" + Path("digit.npy"), "--output-dir", Path("out")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  absl::StatusOr<Tensor> got = frontend::ReadTensorProtoFile(Path("out/output_0.pb"));
  absl::StatusOr<Tensor> want = frontend::ReadTensorProtoFile(MnistSet(0) + "/output_0.pb");
  ASSERT_TRUE(got.ok() && want.ok());
  ExpectClose(*got, *want);
  // Without --test-data nothing is compared.
  EXPECT_EQ(r.out.find("vs output_0.pb"), std::string::npos);
}

TEST_F(ToolsRunTest, MultiInputTestDataMapsInputKToGraphInputK) {
  // Sub is not commutative: a swapped mapping would give the negated result.
  WriteBytes("sub.onnx", OneNodeModel("Sub", {{"a", {2, 2}}, {"b", {2, 2}}}, {{"d", {2, 2}}}));
  std::filesystem::create_directories(Path("data"));
  const Tensor a = Tensor::FromVector<float>(DType::kFloat32, {2, 2}, {10, 20, 30, 40});
  const Tensor b = Tensor::FromVector<float>(DType::kFloat32, {2, 2}, {1, 2, 3, 4});
  ASSERT_TRUE(frontend::WriteTensorProtoFile(Path("data/input_0.pb"), a, "a").ok());
  ASSERT_TRUE(frontend::WriteTensorProtoFile(Path("data/input_1.pb"), b, "b").ok());
  const QccResult r =
      Qcc({"run", Path("sub.onnx"), "--test-data", Path("data"), "--output-dir", Path("out")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  absl::StatusOr<Tensor> d = frontend::ReadTensorProtoFile(Path("out/output_0.pb"));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->ToFloatVector(), (std::vector<float>{9, 18, 27, 36}));

  // --input overrides input_K.pb for that input only.
  ASSERT_TRUE(
      WriteNpy(Path("b.npy"), Tensor::FromVector<float>(DType::kFloat32, {2, 2}, {0, 0, 0, 1}))
          .ok());
  const QccResult r2 = Qcc({"run", Path("sub.onnx"), "--test-data", Path("data"), "--input",
                            "b=" + Path("b.npy"), "--output-dir", Path("out2")});
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  absl::StatusOr<Tensor> d2 = frontend::ReadTensorProtoFile(Path("out2/output_0.pb"));
  ASSERT_TRUE(d2.ok()) << d2.status();
  EXPECT_EQ(d2->ToFloatVector(), (std::vector<float>{10, 20, 30, 39}));
  // Each row of the [2,2] output gets its argmax.
  EXPECT_NE(r2.out.find("row 1 top-1: class 1 (score 39)"), std::string::npos) << r2.out;
}

TEST_F(ToolsRunTest, UnknownInputNameListsTheModelInputs) {
  ASSERT_TRUE(WriteNpy(Path("x.npy"), Tensor(DType::kFloat32, {1, 1, 28, 28})).ok());
  ExpectRunFails(
      Qcc({"run", Mnist(), "--input", "Digit=" + Path("x.npy"), "--output-dir", Path("out")}),
      {"'Digit'", "'Input3'"});
}

TEST_F(ToolsRunTest, MissingRequiredInputIsNamed) {
  ExpectRunFails(Qcc({"run", Mnist(), "--output-dir", Path("out")}),
                 {"no value for model input 'Input3'", "--input"});
  std::filesystem::create_directories(Path("empty"));
  ExpectRunFails(Qcc({"run", Mnist(), "--test-data", Path("empty"), "--output-dir", Path("out")}),
                 {"'Input3'", "input_0.pb"});
}

TEST_F(ToolsRunTest, WrongShapeNamesTheInputAndTheFile) {
  ASSERT_TRUE(WriteNpy(Path("flat.npy"), Tensor(DType::kFloat32, {1, 28, 28})).ok());
  ExpectRunFails(
      Qcc({"run", Mnist(), "--input", "Input3=" + Path("flat.npy"), "--output-dir", Path("out")}),
      {"'Input3'", "[1,28,28]", "flat.npy"});
}

TEST_F(ToolsRunTest, WrongDtypeNamesTheInputAndTheFile) {
  ASSERT_TRUE(WriteNpy(Path("f64.npy"), Tensor(DType::kFloat64, {1, 1, 28, 28})).ok());
  ExpectRunFails(
      Qcc({"run", Mnist(), "--input", "Input3=" + Path("f64.npy"), "--output-dir", Path("out")}),
      {"'Input3'", "f32", "f64", "f64.npy"});
}

TEST_F(ToolsRunTest, BadInputFilesAreNamed) {
  const std::string garbage = WriteBytes("garbage.npy", "definitely not an array");
  ExpectRunFails(Qcc({"run", Mnist(), "--input", "Input3=" + garbage, "--output-dir", Path("out")}),
                 {garbage, "not a .npy file"});

  absl::StatusOr<std::string> npy = EncodeNpy(Tensor(DType::kFloat32, {1, 1, 28, 28}));
  ASSERT_TRUE(npy.ok());
  const std::string cut = WriteBytes("cut.npy", npy->substr(0, npy->size() - 100));
  ExpectRunFails(Qcc({"run", Mnist(), "--input", "Input3=" + cut, "--output-dir", Path("out")}),
                 {cut, "truncated"});

  const std::string missing = Path("missing.npy");
  ExpectRunFails(Qcc({"run", Mnist(), "--input", "Input3=" + missing, "--output-dir", Path("out")}),
                 {missing, "no such file"});

  const std::string txt = WriteBytes("digit.txt", "1 2 3");
  ExpectRunFails(Qcc({"run", Mnist(), "--input", "Input3=" + txt, "--output-dir", Path("out")}),
                 {txt, "'.txt'", ".npy", ".pb"});

  const std::string bad_pb = WriteBytes("bad.pb", std::string("\xff\xff\xff\xff garbage", 12));
  ExpectRunFails(Qcc({"run", Mnist(), "--input", "Input3=" + bad_pb, "--output-dir", Path("out")}),
                 {bad_pb});
}

TEST_F(ToolsRunTest, BadModelsAreNamed) {
  const std::string missing = Path("nope.onnx");
  ExpectRunFails(Qcc({"run", missing, "--output-dir", Path("out")}), {missing, "no such file"});
  ExpectRunFails(Qcc({"run", dir_.string(), "--output-dir", Path("out")}),
                 {dir_.string(), "directory"});

  const std::string model = ReadWholeFile(Mnist());
  ASSERT_GT(model.size(), 1000u);
  const std::string cut = WriteBytes("cut.onnx", model.substr(0, model.size() / 2));
  ExpectRunFails(Qcc({"run", cut, "--test-data", MnistSet(0), "--output-dir", Path("out")}), {cut});

  const std::string text = WriteBytes("text.onnx", "this is a text file, not a model\n");
  ExpectRunFails(Qcc({"run", text, "--test-data", MnistSet(0), "--output-dir", Path("out")}),
                 {text});
}

TEST_F(ToolsRunTest, UnsupportedOpIsNamed) {
  const std::string model =
      WriteBytes("foo.onnx", OneNodeModel("FrobnicateV9", {{"x", {1, 4}}}, {{"y", {1, 4}}}));
  ASSERT_TRUE(WriteNpy(Path("x.npy"), Tensor(DType::kFloat32, {1, 4})).ok());
  ExpectRunFails(Qcc({"run", model, "--input", "x=" + Path("x.npy"), "--output-dir", Path("out")}),
                 {"FrobnicateV9"});
}

TEST_F(ToolsRunTest, TestDataMustBeAFolder) {
  ExpectRunFails(Qcc({"run", Mnist(), "--test-data", Mnist(), "--output-dir", Path("out")}),
                 {"--test-data", "not a folder"});
}

TEST_F(ToolsRunTest, OutputDirThatIsAFileIsAnError) {
  const std::string file = WriteBytes("out", "x");
  const QccResult r = Qcc({"run", Mnist(), "--test-data", MnistSet(0), "--output-dir", file});
  ExpectOneLineError(r, {"--output-dir", file, "not a folder"});
  EXPECT_EQ(ReadWholeFile(file), "x");
}

}  // namespace
}  // namespace qcc::testing
