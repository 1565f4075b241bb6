// The accuracy bars of the int8 compile on the shared real data (issue 4), run end to end through
// the qcc command line exactly as a user would: calibrate on 500 images (every 10th of the
// folder, all 500 photos, or every other text line made from them), compile --int8
// --per-channel (and --per-tensor for ppocr-cls), compare against fp32 with labels.
// ctest label "slow" (about a minute and a half on 2 cores).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/tensor_proto.h"
#include "gtest/gtest.h"
#include "support/npy.h"
#include "tests/tools/qcc_runner.h"

namespace qcc::testing {
namespace {

namespace fs = std::filesystem;

std::string Shared(const std::string& rel) { return std::string(QCC_SHARED_DIR) + "/" + rel; }

/// The key=value fields of the `compare:` line.
std::map<std::string, double> CompareFields(const std::string& out) {
  std::map<std::string, double> fields;
  for (const std::string& line : Lines(out)) {
    if (line.rfind("compare: ", 0) != 0) continue;
    std::istringstream words(line.substr(9));
    for (std::string w; words >> w;) {
      const size_t eq = w.find('=');
      if (eq != std::string::npos) fields[w.substr(0, eq)] = std::stod(w.substr(eq + 1));
    }
  }
  return fields;
}

/// The "NAME LABEL" file of the ImageNet sample: the first three digits of each photo's name are
/// its class index.
std::string ImagenetLabels() {
  std::string labels;
  for (const auto& e : fs::directory_iterator(Shared("data/imagenet-val-sample"))) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".jpg") continue;
    labels += name + " " + std::to_string(std::stoi(name.substr(0, 3))) + "\n";
  }
  return labels;
}

/// The number after `key` in the line of `text` that contains it (NaN when absent).
double NumberAfter(const std::string& text, const std::string& key) {
  const size_t at = text.find(key);
  return at == std::string::npos ? std::nan("") : std::stod(text.substr(at + key.size()));
}

class Int8AccuracyBars : public QccTest {
 protected:
  /// qcc calibrate -> t.json.
  void Calibrate(const std::string& model, const std::string& data,
                 const std::vector<std::string>& preprocess,
                 const std::vector<std::string>& calib_extra) {
    std::vector<std::string> calibrate = {"calibrate", model, data, "-o", Path("t.json")};
    calibrate.insert(calibrate.end(), preprocess.begin(), preprocess.end());
    calibrate.insert(calibrate.end(), calib_extra.begin(), calib_extra.end());
    const QccResult c = Qcc(calibrate);
    EXPECT_EQ(c.exit_code, 0) << c.err;
  }

  /// compile --int8 `weights` with t.json -> compare; returns the compare fields.
  std::map<std::string, double> CompileAndCompare(const std::string& model, const std::string& data,
                                                  const std::vector<std::string>& preprocess,
                                                  const std::vector<std::string>& labels,
                                                  const std::vector<std::string>& compile_extra,
                                                  const std::string& weights = "--per-channel") {
    std::vector<std::string> compile = {"compile", model,          "--int8", weights,
                                        "--calib", Path("t.json"), "-o",     Path("m.plan")};
    compile.insert(compile.end(), compile_extra.begin(), compile_extra.end());
    const QccResult p = Qcc(compile);
    EXPECT_EQ(p.exit_code, 0) << p.err;
    std::vector<std::string> compare = {"compare", model, Path("m.plan"), data};
    compare.insert(compare.end(), preprocess.begin(), preprocess.end());
    compare.insert(compare.end(), labels.begin(), labels.end());
    const QccResult r = Qcc(compare);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::printf("%s", r.out.c_str());
    return CompareFields(r.out);
  }

  /// calibrate -> compile --int8 --per-channel -> compare; returns the compare fields.
  std::map<std::string, double> MainJob(const std::string& model, const std::string& data,
                                        const std::vector<std::string>& preprocess,
                                        const std::vector<std::string>& calib_extra,
                                        const std::vector<std::string>& labels,
                                        const std::vector<std::string>& compile_extra = {}) {
    Calibrate(model, data, preprocess, calib_extra);
    return CompileAndCompare(model, data, preprocess, labels, compile_extra);
  }
};

TEST_F(Int8AccuracyBars, Resnet20WithinOnePointOnTheFiveThousandCifarImages) {
  auto f = MainJob(Shared("models/resnet20-cifar10/model.onnx"), Shared("data/cifar10-test"),
                   {"--resize", "32", "--crop", "32", "--scale", "0.00392156862745098", "--mean",
                    "0.485,0.456,0.406", "--std", "0.229,0.224,0.225"},
                   {"--shard", "0/10"}, {"--labels-from-folders"});
  ASSERT_EQ(f["samples"], 5000);
  EXPECT_NEAR(f["fp32_top1"], 0.8102, 0.005);  // DATA.md's independent baseline
  EXPECT_LE(std::abs(f["plan_top1"] - f["fp32_top1"]), 0.010);
}

TEST_F(Int8AccuracyBars, Mnist8WithinPointThreeOfFp32) {
  auto f = MainJob(Shared("models/mnist-8/model.onnx"), Shared("data/mnist-test"), {},
                   {"--shard", "0/10"}, {"--labels-from-folders"});
  ASSERT_EQ(f["samples"], 5000);
  EXPECT_NEAR(f["fp32_top1"], 0.9830, 0.001);
  EXPECT_LE(std::abs(f["plan_top1"] - f["fp32_top1"]), 0.003);
}

TEST_F(Int8AccuracyBars, SqueezenetWithinTwoPointsAndNinetyPercentAgreement) {
  const std::string labels_file = WriteBytes("labels.txt", ImagenetLabels());
  // Asymmetric activations with MSE ranges. Every activation SqueezeNet quantizes follows a
  // ReLU, and symmetric int8 leaves those tensors 128 levels (0..127): symmetric per-channel
  // plans reach 88.8% to 90.2% agreement (depending on the CPU the table was calibrated on), too
  // close to the bar to test. Asymmetric: entropy ranges 93.4% agreement but top-1 +1.8 points
  // (the bar is 2.0 either way), MSE ranges 92.2% and +1.0, the larger margin on both counts.
  auto f = MainJob(
      Shared("models/squeezenet1.1/model-fp16.onnx"), Shared("data/imagenet-val-sample"),
      {"--resize", "256", "--crop", "224", "--channel-order", "bgr", "--mean", "104,117,123"}, {},
      {"--labels", labels_file}, {"--asymmetric", "--calib-method", "mse"});
  ASSERT_EQ(f["samples"], 500);
  EXPECT_NEAR(f["fp32_top1"], 0.592, 0.005);
  EXPECT_LE(std::abs(f["plan_top1"] - f["fp32_top1"]), 0.020);
  EXPECT_GE(f["agreement"], 0.90);
}

TEST_F(Int8AccuracyBars, PpocrClsPerChannelNinetyFivePercentAgreementAndBetterThanPerTensor) {
  // 1,000 text lines made from the 500 photos (scripts/make_text_lines.py: a band of each photo
  // with words written on it, upright in 0/ and turned 180 degrees in 180/), every other one for
  // calibration. On bare photo strips the classifier has nothing to read (a quarter of them get
  // class probabilities within 0.1 of each other), so agreement there measures coin flips.
  const std::string lines = std::string(QCC_BINARY_DIR) + "/data/ppocr-text-lines";
  const std::string make = std::string(QCC_SOURCE_DIR) + "/.venv/bin/python " + QCC_SOURCE_DIR +
                           "/scripts/make_text_lines.py --photos " +
                           Shared("data/imagenet-val-sample") + " --out " + lines + " >/dev/null";
  ASSERT_EQ(std::system(make.c_str()), 0) << make << " failed (run scripts/setup for the venv)";
  const std::string model = Shared("models/ppocr-cls-mbv3/model.onnx");
  const std::vector<std::string> preprocess = {
      "--scale", "0.00392156862745098", "--mean", "0.5,0.5,0.5", "--std", "0.5,0.5,0.5"};
  // Asymmetric MSE ranges, as for SqueezeNet: the hard-swish outputs span [-0.375, 20].
  const std::vector<std::string> compile = {"--shape", "x=N,3,48,192", "--asymmetric",
                                            "--calib-method", "mse"};
  Calibrate(model, lines, preprocess, {"--shard", "0/2"});
  auto channel = CompileAndCompare(model, lines, preprocess, {"--labels-from-folders"}, compile,
                                   "--per-channel");
  auto tensor = CompileAndCompare(model, lines, preprocess, {"--labels-from-folders"}, compile,
                                  "--per-tensor");
  ASSERT_EQ(channel["samples"], 1000);
  EXPECT_FALSE(channel.count("fp32_top5"));  // 2 classes: top-5 would always be 100%
  ASSERT_EQ(tensor["samples"], 1000);
  // fp32 reads 90.1% of the lines the right way up here: the lines are text it can read.
  EXPECT_GE(channel["fp32_top1"], 0.85);
  EXPECT_GE(channel["agreement"], 0.95);
  // Per-tensor weights visibly worse: 16.4 against 21.5 dB here, agreement 96.4% against 98.2%.
  EXPECT_GE(channel["sqnr_db"] - tensor["sqnr_db"], 3.0);
  EXPECT_LT(tensor["agreement"], channel["agreement"]);
}

TEST_F(Int8AccuracyBars, EfficientNetLite0AsExportedEveryConvInt8AndWithinHalfAPoint) {
  // A plain torch.onnx.export (issue 12): dynamic batch, TF-style pads computed by shape
  // arithmetic, a Shape-based flatten. Default flags, no --shape: calibrated on every other
  // photo, evaluated on all 500 (the bar) and on the 250 the calibration did not see.
  const std::string model = Shared("models/efficientnet-lite0/model.onnx");
  const std::string photos = Shared("data/imagenet-val-sample");
  const std::vector<std::string> preprocess = {
      "--resize", "256",         "--crop", "224",        "--scale", "0.00392156862745098",
      "--mean",   "0.5,0.5,0.5", "--std",  "0.5,0.5,0.5"};
  const std::vector<std::string> labels = {"--labels", WriteBytes("labels.txt", ImagenetLabels())};
  Calibrate(model, photos, preprocess, {"--shard", "0/2"});
  auto all = CompileAndCompare(model, photos, preprocess, labels, {});

  // Every Conv (49) and the Gemm in int8; weights within 1.15x the parameter count in bytes.
  const QccResult inspect = Qcc({"inspect", Path("m.plan")});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("QConv x49, QGemm x1,"), std::string::npos) << inspect.out;
  for (const std::string& line : Lines(inspect.out)) {
    if (line.rfind("step", 0) == 0 || line.size() < 6) continue;
    EXPECT_EQ(line.find(" Conv "), std::string::npos) << line;
    EXPECT_EQ(line.find(" Gemm "), std::string::npos) << line;
  }
  const double parameters = NumberAfter(inspect.out, "parameters: ");
  const double weight_bytes = NumberAfter(inspect.out, "  weights: ");
  EXPECT_GT(parameters, 4.6e6);
  EXPECT_LE(weight_bytes, 1.15 * parameters) << inspect.out;
  std::printf("efficientnet-lite0: weights %.0f B for %.0f parameters (%.3fx)\n", weight_bytes,
              parameters, weight_bytes / parameters);

  // On the 500 photos: fp32 as DATA.md's PyTorch baseline, int8 within half a point of it (each
  // photo is 0.2 points), at least 97% of the predictions the same.
  ASSERT_EQ(all["samples"], 500);
  EXPECT_NEAR(all["fp32_top1"], 0.876, 0.005);
  EXPECT_LE(std::abs(all["plan_top1"] - all["fp32_top1"]), 0.005);
  EXPECT_GE(all["agreement"], 0.97);
  // On the held-out 250 (1 point is 2.5 photos).
  std::vector<std::string> held_out = labels;
  held_out.insert(held_out.end(), {"--shard", "1/2"});
  const QccResult r = Qcc([&] {
    std::vector<std::string> args = {"compare", model, Path("m.plan"), photos};
    args.insert(args.end(), preprocess.begin(), preprocess.end());
    args.insert(args.end(), held_out.begin(), held_out.end());
    return args;
  }());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::printf("held out: %s", r.out.c_str());
  auto unseen = CompareFields(r.out);
  ASSERT_EQ(unseen["samples"], 250);
  EXPECT_GE(unseen["plan_top1"], unseen["fp32_top1"] - 0.01);
  EXPECT_GE(unseen["agreement"], 0.96);

  // The plan at batch 32, 7 and 1 gives every sample the same logits, bit for bit: 32 inputs
  // made from the model's three test images (each dimmed by a different factor).
  std::vector<Tensor> images;
  for (int k = 0; k < 3; ++k) {
    absl::StatusOr<Tensor> t = frontend::ReadTensorProtoFile(
        Shared("models/efficientnet-lite0/test_data_set_" + std::to_string(k) + "/input_0.pb"));
    ASSERT_TRUE(t.ok()) << t.status();
    images.push_back(*t);
  }
  const int64_t sample = images[0].numel();
  Tensor batch32(DType::kFloat32, {32, 3, 224, 224});
  for (int64_t i = 0; i < 32; ++i) {
    const float factor = 1.0f - 0.02f * static_cast<float>(i / 3);
    const float* src = images[i % 3].data<float>();
    float* dst = batch32.data<float>() + i * sample;
    for (int64_t j = 0; j < sample; ++j) dst[j] = src[j] * factor;
  }
  auto run = [&](int64_t first, int64_t count) -> Tensor {
    Tensor in(DType::kFloat32, {count, 3, 224, 224});
    std::memcpy(in.raw(), batch32.data<float>() + first * sample, in.nbytes());
    const std::string name = "b" + std::to_string(first) + "_" + std::to_string(count);
    EXPECT_TRUE(WriteNpy(Path(name + ".npy"), in).ok());
    const QccResult out = Qcc({"run", Path("m.plan"), "--input", "input=" + Path(name + ".npy"),
                               "--output-dir", Path(name)});
    EXPECT_EQ(out.exit_code, 0) << out.err;
    absl::StatusOr<Tensor> logits = frontend::ReadTensorProtoFile(Path(name + "/output_0.pb"));
    EXPECT_TRUE(logits.ok()) << logits.status();
    return logits.ok() ? *logits : Tensor();
  };
  const Tensor at32 = run(0, 32), at7 = run(0, 7);
  ASSERT_EQ(at32.dims(), Dims({32, 1000}));
  ASSERT_EQ(at7.dims(), Dims({7, 1000}));
  EXPECT_EQ(std::memcmp(at7.raw(), at32.raw(), at7.nbytes()), 0);
  for (int64_t i = 0; i < 32; ++i) {
    const Tensor one = run(i, 1);
    ASSERT_EQ(one.dims(), Dims({1, 1000}));
    EXPECT_EQ(std::memcmp(one.raw(), at32.data<float>() + i * 1000, one.nbytes()), 0)
        << "sample " << i;
  }
}

}  // namespace
}  // namespace qcc::testing
