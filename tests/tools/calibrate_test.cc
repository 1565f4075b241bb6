// `qcc calibrate` and `qcc inspect TABLE.json` end to end: the real ResNet-20 on the shared
// CIFAR images, reproducibility, shards and merge, and every bad input the issue lists (each
// a one-line error or a warning, and never a partial table).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "support/npy.h"
#include "support/tensor.h"
#include "tests/tools/onnx_models.h"
#include "tests/tools/plan_helpers.h"
#include "tests/tools/qcc_runner.h"

namespace qcc::testing {
namespace {

namespace fs = std::filesystem;

std::string Resnet20() { return SharedModelDir("resnet20-cifar10") + "/model.onnx"; }
std::string Cifar() { return std::string(QCC_SHARED_DIR) + "/data/cifar10-test"; }

const std::vector<std::string> kCifarPreprocessing = {"--resize", "32",
                                                      "--crop",   "32",
                                                      "--scale",  "0.00392156862745098",
                                                      "--mean",   "0.485,0.456,0.406",
                                                      "--std",    "0.229,0.224,0.225"};

class CalibrateTest : public QccTest {
 protected:
  // qcc calibrate on the shared CIFAR images with the DATA.md preprocessing.
  QccResult CalibrateCifar(const std::string& table, std::vector<std::string> extra) const {
    std::vector<std::string> args = {"calibrate", Resnet20(), Cifar(), "-o", table};
    args.insert(args.end(), kCifarPreprocessing.begin(), kCifarPreprocessing.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return Qcc(args);
  }

  // qcc calibrate of ResNet-20 on `folder` into t.json.
  QccResult CalibrateCifarFolder(const std::string& folder) const {
    std::vector<std::string> args = {"calibrate", Resnet20(), folder, "-o", Path("t.json")};
    args.insert(args.end(), kCifarPreprocessing.begin(), kCifarPreprocessing.end());
    return Qcc(args);
  }

  // A one-node Relu model with input x [N,4], and `samples` .npy files [1,4] in `data`.
  std::string ReluModelWithData(const std::string& data, const std::vector<float>& values) const {
    const std::string model =
        WriteBytes("relu.onnx", OneNodeModel("Relu", {{"x", {-1, 4}}}, {{"y", {-1, 4}}}));
    fs::create_directories(Path(data));
    for (size_t i = 0; i * 4 < values.size(); ++i) {
      Tensor t = Tensor::FromVector<float>(DType::kFloat32, {1, 4},
                                           {values.begin() + 4 * i, values.begin() + 4 * i + 4});
      EXPECT_TRUE(WriteNpy(absl::StrFormat("%s/%03d.npy", Path(data), i), t).ok());
    }
    return model;
  }
};

TEST_F(CalibrateTest, Resnet20TableIsCompleteAndReproducible) {
  const QccResult a = CalibrateCifar(Path("a.json"), {"--max-samples", "64"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("calibrated 64 samples"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("observed 36 tensors"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("NaN/inf: none"), std::string::npos) << a.out;
  EXPECT_EQ(a.err.find("\r"), std::string::npos) << "progress bar drawn when piped";
  // Same data and settings, or another thread count: the same file byte for byte.
  const QccResult b = CalibrateCifar(Path("b.json"), {"--max-samples", "64"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(ReadWholeFile(Path("a.json")), ReadWholeFile(Path("b.json")));
  const QccResult c = CalibrateCifar(Path("c.json"), {"--max-samples", "64", "--threads", "1"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(ReadWholeFile(Path("a.json")), ReadWholeFile(Path("c.json")));
  // Another batch size: the same statistics up to fp32 rounding. (Byte for byte only where every
  // fp32 kernel is batch-invariant: a sgemm (GemmF32: MatMul, Gemm, and the convolution on CPUs
  // without AVX2) rounds a row of a product differently depending on how many rows the call has.)
  // Every tensor, its range and the scale each method picks agree to 1e-5 relative.
  const QccResult d = CalibrateCifar(Path("d.json"), {"--max-samples", "64", "--batch", "5"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  const QccResult inspect_a = Qcc({"inspect", Path("a.json")});
  const QccResult inspect_d = Qcc({"inspect", Path("d.json")});
  ASSERT_EQ(inspect_a.exit_code, 0) << inspect_a.err;
  ASSERT_EQ(inspect_d.exit_code, 0) << inspect_d.err;
  auto rows = [](const std::string& out) {
    std::vector<std::vector<std::string>> r;
    bool in_table = false;
    for (const std::string& line : Lines(out)) {
      const std::vector<std::string> w = Words(line);
      if (!in_table) {
        in_table = !w.empty() && w[0] == "tensor";
        continue;
      }
      if (w.size() == 8) r.push_back(w);
    }
    return r;
  };
  const auto ra = rows(inspect_a.out), rd = rows(inspect_d.out);
  ASSERT_EQ(ra.size(), 36u) << inspect_a.out;
  ASSERT_EQ(rd.size(), ra.size()) << inspect_d.out;
  for (size_t i = 0; i < ra.size(); ++i) {
    ASSERT_EQ(rd[i][0], ra[i][0]);
    for (size_t j = 1; j < ra[i].size(); ++j) {
      const double x = std::stod(ra[i][j]), y = std::stod(rd[i][j]);
      EXPECT_NEAR(y, x, 1e-5 * std::max(1.0, std::fabs(x))) << ra[i][0] << " column " << j;
    }
  }

  // qcc inspect TABLE.json: every tensor with a scale per method.
  const QccResult inspect = Qcc({"inspect", Path("a.json")});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("64 samples"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("36 tensors"), std::string::npos);
  for (const char* m : {"minmax", "percentile=99.99", "entropy", "mse", "logits", "input"}) {
    EXPECT_NE(inspect.out.find(m), std::string::npos) << m;
  }
}

TEST_F(CalibrateTest, ShardsMergeIntoTheWholeRunExactly) {
  // Batch 1 everywhere, so every sample runs through the same fp32 kernels in the whole run and
  // in its shard (a sgemm, under MatMul, Gemm and the convolution without AVX2, is not
  // batch-invariant to the last bit); what is tested is that merging statistics is exact.
  ASSERT_EQ(CalibrateCifar(Path("all.json"), {"--max-samples", "30", "--batch", "1"}).exit_code, 0);
  for (int i = 0; i < 3; ++i) {
    const QccResult r = CalibrateCifar(
        Path(absl::StrFormat("s%d.json", i)),
        {"--max-samples", "30", "--batch", "1", "--shard", absl::StrFormat("%d/3", i)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("calibrated 10 samples"), std::string::npos) << r.out;
  }
  const QccResult merged = Qcc({"calibrate", "--merge", Path("s0.json"), Path("s1.json"),
                                Path("s2.json"), "-o", Path("merged.json"), Resnet20()});
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  EXPECT_EQ(ReadWholeFile(Path("merged.json")), ReadWholeFile(Path("all.json")));
  // A shard twice is refused, and nothing is written.
  const QccResult twice =
      Qcc({"calibrate", "--merge", Path("s0.json"), Path("s0.json"), "-o", Path("twice.json")});
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_FALSE(fs::exists(Path("twice.json")));
}

TEST_F(CalibrateTest, DefaultTablePathIsBesideTheModel) {
  const std::string model = ReluModelWithData("data", {1, 2, 3, 4});
  const QccResult r = Qcc({"calibrate", model, Path("data")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(Path("relu.calib.json"))) << r.out;
}

TEST_F(CalibrateTest, TableForAnotherModelIsRefused) {
  const std::string model = ReluModelWithData("data", {1, 2, 3, 4, 5, 6, 7, 8});
  ASSERT_EQ(
      Qcc({"calibrate", model, Path("data"), "-o", Path("t0.json"), "--shard", "0/2"}).exit_code,
      0);
  ASSERT_EQ(
      Qcc({"calibrate", model, Path("data"), "-o", Path("t1.json"), "--shard", "1/2"}).exit_code,
      0);
  ExpectOneLineError(Qcc({"calibrate", "--merge", Path("t0.json"), Path("t1.json"), "-o",
                          Path("m.json"), Resnet20()}),
                     {"another model"}, 1);
  EXPECT_FALSE(fs::exists(Path("m.json")));
}

TEST_F(CalibrateTest, EmptyDataFolderIsAnErrorAndWritesNothing) {
  fs::create_directories(Path("empty"));
  ExpectOneLineError(CalibrateCifarFolder(Path("empty")), {"empty", ".jpg"}, 1);
  EXPECT_FALSE(fs::exists(Path("t.json")));
}

TEST_F(CalibrateTest, UndecodableImagesAreSkippedNamedAndCounted) {
  fs::create_directories(Path("imgs"));
  for (const char* f : {"airplane/0000.jpg", "airplane/0001.jpg", "cat/0000.jpg"}) {
    fs::create_directories(fs::path(Path("imgs")) / fs::path(f).parent_path());
    fs::copy_file(Cifar() + "/" + f, Path(std::string("imgs/") + f));
  }
  WriteBytes("imgs/cat/broken.jpg", "not a jpeg at all");
  const QccResult r = CalibrateCifarFolder(Path("imgs"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("broken.jpg"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("skipped 1 images"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("calibrated 3 samples"), std::string::npos) << r.out;

  // Every image bad: an error, and no table.
  fs::create_directories(Path("bad"));
  WriteBytes("bad/a.jpg", "junk");
  WriteBytes("bad/b.png", "junk");
  const QccResult all_bad = Qcc({"calibrate", Resnet20(), Path("bad"), "-o", Path("bad.json")});
  EXPECT_EQ(all_bad.exit_code, 1);
  EXPECT_NE(all_bad.err.find("a.jpg"), std::string::npos) << all_bad.err;
  EXPECT_FALSE(fs::exists(Path("bad.json")));
}

TEST_F(CalibrateTest, AFolderOfFaultsCalibratesOnWhatIsGoodOrFailsWritingNothing) {
  // Issue 16: a corrupt image, a zero-byte one, a directory named like an image and an image of
  // another size among good photos. With the DATA.md resize and crop the odd size is a fine
  // sample; the other two files are skipped with a warning naming each.
  fs::create_directories(Path("mixed/cat/dir.jpg"));
  for (const char* f : {"0000.jpg", "0001.jpg", "0002.jpg"}) {
    fs::copy_file(Cifar() + "/cat/" + f, Path(std::string("mixed/cat/") + f));
  }
  const std::string good = ReadWholeFile(Cifar() + "/cat/0000.jpg");
  WriteBytes("mixed/cat/corrupt.jpg", good.substr(0, good.size() / 3));
  WriteBytes("mixed/cat/zero.jpg", "");
  fs::copy_file(
      std::string(QCC_SHARED_DIR) + "/data/imagenet-val-sample/" +
          fs::directory_iterator(std::string(QCC_SHARED_DIR) + "/data/imagenet-val-sample")
              ->path()
              .filename()
              .string(),
      Path("mixed/cat/large.jpg"));
  const QccResult r = CalibrateCifarFolder(Path("mixed"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("corrupt.jpg"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("zero.jpg"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("dir.jpg"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("calibrated 4 samples"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped 2 images"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(Path("t.json")));

  // Without a resize the odd size is a one-line error naming the file, and nothing is written.
  const QccResult raw =
      Qcc({"calibrate", Resnet20(), Path("mixed"), "-o", Path("raw.json"), "--scale", "0.0039"});
  EXPECT_EQ(raw.exit_code, 1);
  EXPECT_NE(raw.err.find("large.jpg"), std::string::npos) << raw.err;
  EXPECT_FALSE(fs::exists(Path("raw.json")));
  for (const std::string& f : FilesIn("")) EXPECT_EQ(f.find(".tmp"), std::string::npos) << f;
}

TEST_F(CalibrateTest, WrongChannelCountIsAnErrorBeforeInference) {
  // MNIST digits decoded as grey images into the 3-channel ResNet-20.
  fs::create_directories(Path("digits"));
  fs::copy_file(std::string(QCC_SHARED_DIR) + "/data/mnist-test/7/00000.png", Path("digits/7.png"));
  const QccResult r =
      Qcc({"calibrate", Resnet20(), Path("digits"), "-o", Path("t.json"), "--grayscale"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("7.png"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("calibrated"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(Path("t.json")));
}

TEST_F(CalibrateTest, NanInTheDataIsCountedAndReported) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::string model = ReluModelWithData("data", {1, nan, 3, 4, -2, 5, nan, 1});
  const QccResult r = Qcc({"calibrate", model, Path("data"), "-o", Path("t.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("x: 2 NaN, 0 +inf, 0 -inf of 8 values"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("y: 2 NaN"), std::string::npos) << r.out;
}

TEST_F(CalibrateTest, ConstantTensorGetsAValidScaleAndAWarning) {
  // All inputs negative: the Relu output is all zero.
  const std::string model = ReluModelWithData("data", {-1, -2, -3, -4, -5, -6, -7, -8});
  const QccResult r = Qcc({"calibrate", model, Path("data"), "-o", Path("t.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("y: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("scale 0.00787402"), std::string::npos) << r.out;  // 1/127
  EXPECT_NE(r.err.find("warning"), std::string::npos) << r.err;
  const QccResult inspect = Qcc({"inspect", Path("t.json")});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("warnings:"), std::string::npos) << inspect.out;
}

TEST_F(CalibrateTest, TruncatedOrEditedTablesAreClearErrors) {
  const std::string model = ReluModelWithData("data", {1, 2, 3, 4});
  ASSERT_EQ(Qcc({"calibrate", model, Path("data"), "-o", Path("t.json")}).exit_code, 0);
  const std::string text = ReadWholeFile(Path("t.json"));
  WriteBytes("cut.json", text.substr(0, text.size() / 2));
  ExpectOneLineError(Qcc({"inspect", Path("cut.json")}), {"cut.json"}, 1);
  std::string edited = text;
  const std::string count = "\"count\":4";
  ASSERT_NE(edited.find(count), std::string::npos) << edited;
  edited.replace(edited.find(count), count.size(), "\"count\":5");
  WriteBytes("edited.json", edited);
  ExpectOneLineError(Qcc({"inspect", Path("edited.json")}), {"edited.json"}, 1);
  ExpectOneLineError(
      Qcc({"calibrate", "--merge", Path("t.json"), Path("cut.json"), "-o", Path("m.json")}),
      {"cut.json"}, 1);
  EXPECT_FALSE(fs::exists(Path("m.json")));
}

// --shape fixes an input's other dynamic extents, as for qcc compile: the GPU runs plans, which
// need them (ppocr-cls-mbv3's x [N,3,H,W]). The table still belongs to the model file.
TEST_F(CalibrateTest, ShapeFixesOtherDynamicExtentsAndTheTableFitsTheModelFile) {
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(OneNodeModel("Relu", {{"x", {-1, -1}}}, {{"y", {-1, -1}}})));
  m.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->set_dim_param("W");
  m.mutable_graph()
      ->mutable_output(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->set_dim_param("W");
  const std::string model = WriteBytes("relu_w.onnx", m.SerializeAsString());
  ReluModelWithData("data", {1, -2, 3, 4, -5, 6, 7, 8});
  const QccResult calibrated =
      Qcc({"calibrate", model, Path("data"), "--shape", "x=N,4", "-o", Path("t.json")});
  ASSERT_EQ(calibrated.exit_code, 0) << calibrated.err;
  EXPECT_NE(calibrated.out.find("calibrated 2 samples"), std::string::npos) << calibrated.out;
  const QccResult compiled = Qcc({"compile", model, "--int8", "--calib", Path("t.json"), "--shape",
                                  "x=N,4", "-o", Path("t.plan")});
  EXPECT_EQ(compiled.exit_code, 0) << compiled.err;
  // Errors name the flag and write no table.
  ExpectOneLineError(
      Qcc({"calibrate", model, Path("data"), "--shape", "y=N,4", "-o", Path("bad.json")}),
      {"--shape 'y=N,4'", "no input 'y'", "'x'"}, 1);
  ExpectOneLineError(
      Qcc({"calibrate", model, Path("data"), "--shape", "x=N", "-o", Path("bad.json")}),
      {"--shape 'x=N'", "rank 2"}, 1);
  EXPECT_FALSE(fs::exists(Path("bad.json")));
}

TEST_F(CalibrateTest, BadFlagsAndPathsAreOneLineErrors) {
  const std::string model = ReluModelWithData("data", {1, 2, 3, 4});
  ExpectOneLineError(Qcc({"calibrate", model, Path("data"), "--shard", "3/3"}), {"--shard"}, 1);
  ExpectOneLineError(Qcc({"calibrate", model, Path("data"), "--calib-method", "kl"}), {"kl"}, 1);
  ExpectOneLineError(Qcc({"calibrate", model, Path("data"), "--device", "tpu"}), {"tpu"}, 1);
  ExpectOneLineError(Qcc({"calibrate", model, Path("data"), "--device", "cuda"}), {"--device cpu"},
                     1);
  ExpectOneLineError(Qcc({"calibrate", model, Path("nowhere")}), {"nowhere"}, 1);
  ExpectOneLineError(Qcc({"calibrate", model}), {"MODEL and DATA"}, 1);
  ExpectOneLineError(Qcc({"calibrate", "--merge", Path("x.json")}), {"at least two"}, 1);
  ExpectOneLineError(Qcc({"calibrate", model, Path("data"), "-o", Path("no/such/dir/t.json")}),
                     {"t.json"}, 1);
  ExpectOneLineError(Qcc({"calibrate", model, Path("data"), "--resize", "-3"}), {"resize"}, 1);
  EXPECT_FALSE(fs::exists(Path("relu.calib.json")));
  EXPECT_FALSE(fs::exists(Path("no")));
}

}  // namespace
}  // namespace qcc::testing
