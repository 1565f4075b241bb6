// The accuracy bars of the int8 compile on the shared real data (issues 4, 12 and 18), run end
// to end through the qcc command line exactly as a user would: calibrate on one part of the data,
// compile --int8 --per-channel (and --per-tensor for ppocr-cls), compare against fp32 with labels
// on the part the calibration did not see (the bar), and on all of it (printed beside it).
//
// The parts are shards of the sorted file list: calibrate --shard 0/10 or 0/2 (even indices),
// measure on compare --shard 1/2 (odd indices). Flags other than the defaults are chosen by
// ChooseOnCalibrationPart: every candidate is compiled and measured on the calibration part only,
// and the highest top-1 agreement wins (ties: the higher SQNR).
// ctest label "slow" (about three minutes on 2 cores).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
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

/// `line` of `text` that starts with `prefix` (empty when none).
std::string LineWith(const std::string& text, const std::string& prefix) {
  for (const std::string& line : Lines(text)) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

/// Where a bar measures: the calibration part, the held-out part, everything.
constexpr char kCalibrationPart[] = "0/2";
constexpr char kHeldOut[] = "1/2";
constexpr char kAll[] = "";

/// The candidates ChooseOnCalibrationPart weighs for a model whose bar needs more than the
/// defaults: symmetric and asymmetric activations, each with every range method.
std::vector<std::vector<std::string>> RangeCandidates() {
  std::vector<std::vector<std::string>> out;
  for (const char* activations : {"", "--asymmetric"}) {
    for (const char* method : {"mse", "entropy", "percentile", "minmax"}) {
      std::vector<std::string> flags = {"--calib-method", method};
      if (*activations != '\0') flags.push_back(activations);
      out.push_back(flags);
    }
  }
  return out;
}

class Int8AccuracyBars : public QccTest {
 protected:
  /// One model, its data and how to read it.
  struct Setup {
    std::string model;
    std::string data;
    std::vector<std::string> preprocess;
    std::vector<std::string> labels;
    std::vector<std::string> compile;  // flags every compile of this model takes (e.g. --shape)
  };

  /// qcc calibrate on `shard` -> t.json.
  void Calibrate(const Setup& s, const std::string& shard) {
    std::vector<std::string> calibrate = {"calibrate", s.model, s.data, "-o", Path("t.json")};
    calibrate.insert(calibrate.end(), s.preprocess.begin(), s.preprocess.end());
    if (!shard.empty()) calibrate.insert(calibrate.end(), {"--shard", shard});
    const QccResult c = Qcc(calibrate);
    EXPECT_EQ(c.exit_code, 0) << c.err;
  }

  /// compile --int8 `weights` with t.json and `flags` -> m.plan.
  void Compile(const Setup& s, const std::vector<std::string>& flags,
               const std::string& weights = "--per-channel") {
    std::vector<std::string> compile = {"compile", s.model,        "--int8", weights,
                                        "--calib", Path("t.json"), "-o",     Path("m.plan")};
    compile.insert(compile.end(), s.compile.begin(), s.compile.end());
    compile.insert(compile.end(), flags.begin(), flags.end());
    const QccResult p = Qcc(compile);
    EXPECT_EQ(p.exit_code, 0) << p.err;
  }

  /// compare m.plan against the model on `shard` (all samples when empty); the compare fields.
  std::map<std::string, double> Compare(const Setup& s, const std::string& shard,
                                        const std::string& what) {
    std::vector<std::string> compare = {"compare", s.model, Path("m.plan"), s.data};
    compare.insert(compare.end(), s.preprocess.begin(), s.preprocess.end());
    compare.insert(compare.end(), s.labels.begin(), s.labels.end());
    if (!shard.empty()) compare.insert(compare.end(), {"--shard", shard});
    const QccResult r = Qcc(compare);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::printf("%s: %s\n", what.c_str(), LineWith(r.out, "compare:").c_str());
    return CompareFields(r.out);
  }

  /// The 1,000 text lines of scripts/make_text_lines.py (0/ upright, 180/ turned), made from the
  /// shared photos once per build folder; empty (and a test failure) when that fails.
  static std::string TextLines() {
    const std::string lines = std::string(QCC_BINARY_DIR) + "/data/ppocr-text-lines";
    const std::string make = std::string(QCC_SOURCE_DIR) + "/.venv/bin/python " + QCC_SOURCE_DIR +
                             "/scripts/make_text_lines.py --photos " +
                             Shared("data/imagenet-val-sample") + " --out " + lines + " >/dev/null";
    if (std::system(make.c_str()) != 0) {
      ADD_FAILURE() << make << " failed (run scripts/setup for the venv)";
      return "";
    }
    return lines;
  }

  /// The candidate flags with the highest top-1 agreement on the calibration part (ties: the
  /// higher SQNR), measured on that part only; prints every candidate.
  std::vector<std::string> ChooseOnCalibrationPart(
      const Setup& s, const std::vector<std::vector<std::string>>& candidates) {
    std::vector<std::string> best;
    double best_agreement = -1, best_sqnr = -1e9;
    for (const std::vector<std::string>& flags : candidates) {
      Compile(s, flags);
      auto f = Compare(s, kCalibrationPart, "candidate " + absl::StrJoin(flags, " "));
      if (f["agreement"] > best_agreement ||
          (f["agreement"] == best_agreement && f["sqnr_db"] > best_sqnr)) {
        best = flags, best_agreement = f["agreement"], best_sqnr = f["sqnr_db"];
      }
    }
    std::printf("chosen on the calibration part: %s\n", absl::StrJoin(best, " ").c_str());
    return best;
  }
};

TEST_F(Int8AccuracyBars, Resnet20WithinOnePointOnHeldOutCifarImages) {
  const Setup s = {Shared("models/resnet20-cifar10/model.onnx"),
                   Shared("data/cifar10-test"),
                   {"--resize", "32", "--crop", "32", "--scale", "0.00392156862745098", "--mean",
                    "0.485,0.456,0.406", "--std", "0.229,0.224,0.225"},
                   {"--labels-from-folders"},
                   {}};
  Calibrate(s, "0/10");  // 500 images, all of even index
  Compile(s, {});
  auto held = Compare(s, kHeldOut, "held out (2,500 odd-index images)");
  auto all = Compare(s, kAll, "all 5,000 (the 500 calibration images among them)");
  ASSERT_EQ(held["samples"], 2500);
  ASSERT_EQ(all["samples"], 5000);
  EXPECT_NEAR(all["fp32_top1"], 0.8102, 0.005);  // DATA.md's independent baseline
  EXPECT_LE(std::abs(held["plan_top1"] - held["fp32_top1"]), 0.010);
}

TEST_F(Int8AccuracyBars, Mnist8WithinPointThreeOfFp32OnHeldOutDigits) {
  const Setup s = {Shared("models/mnist-8/model.onnx"),
                   Shared("data/mnist-test"),
                   {},
                   {"--labels-from-folders"},
                   {}};
  Calibrate(s, "0/10");
  Compile(s, {});
  auto held = Compare(s, kHeldOut, "held out (2,500 odd-index digits)");
  auto all = Compare(s, kAll, "all 5,000");
  ASSERT_EQ(held["samples"], 2500);
  EXPECT_NEAR(all["fp32_top1"], 0.9830, 0.001);
  EXPECT_LE(std::abs(held["plan_top1"] - held["fp32_top1"]), 0.003);
}

TEST_F(Int8AccuracyBars, SqueezenetWithinTwoPointsAndNinetyPercentAgreementOnHeldOutPhotos) {
  // Every activation SqueezeNet quantizes follows a ReLU: symmetric int8 leaves those tensors
  // 128 levels, so the defaults are not enough here; the flags are chosen on the calibration
  // half (250 photos) and measured on the other 250.
  const Setup s = {
      Shared("models/squeezenet1.1/model-fp16.onnx"),
      Shared("data/imagenet-val-sample"),
      {"--resize", "256", "--crop", "224", "--channel-order", "bgr", "--mean", "104,117,123"},
      {"--labels", WriteBytes("labels.txt", ImagenetLabels())},
      {}};
  Calibrate(s, kCalibrationPart);
  Compile(s, ChooseOnCalibrationPart(s, RangeCandidates()));
  auto held = Compare(s, kHeldOut, "held out (250 photos)");
  auto all = Compare(s, kAll, "all 500");
  ASSERT_EQ(held["samples"], 250);
  EXPECT_NEAR(all["fp32_top1"], 0.592, 0.005);
  EXPECT_LE(std::abs(held["plan_top1"] - held["fp32_top1"]), 0.020);
  EXPECT_GE(held["agreement"], 0.90);
}

TEST_F(Int8AccuracyBars, PpocrClsPerChannelNinetyFivePercentAgreementOnHeldOutLines) {
  // 1,000 text lines made from the 500 photos (scripts/make_text_lines.py: a band of each photo
  // with words written on it, upright in 0/ and turned 180 degrees in 180/); every other line
  // calibrates, the others measure. On bare photo strips the classifier has nothing to read (a
  // quarter of them get class probabilities within 0.1 of each other), so agreement there
  // measures coin flips.
  const std::string lines = TextLines();
  ASSERT_FALSE(lines.empty());
  const Setup s = {
      Shared("models/ppocr-cls-mbv3/model.onnx"),
      lines,
      {"--scale", "0.00392156862745098", "--mean", "0.5,0.5,0.5", "--std", "0.5,0.5,0.5"},
      {"--labels-from-folders"},
      {"--shape", "x=N,3,48,192"}};
  Calibrate(s, kCalibrationPart);
  const std::vector<std::string> chosen = ChooseOnCalibrationPart(s, RangeCandidates());
  Compile(s, chosen, "--per-channel");
  auto channel = Compare(s, kHeldOut, "per-channel, held out (500 lines)");
  auto channel_all = Compare(s, kAll, "per-channel, all 1,000 lines");
  Compile(s, chosen, "--per-tensor");
  auto tensor = Compare(s, kHeldOut, "per-tensor, held out (500 lines)");
  ASSERT_EQ(channel["samples"], 500);
  EXPECT_FALSE(channel.count("fp32_top5"));  // 2 classes: top-5 would always be 100%
  ASSERT_EQ(tensor["samples"], 500);
  // fp32 reads about 90% of the lines the right way up: the lines are text it can read.
  EXPECT_GE(channel_all["fp32_top1"], 0.85);
  EXPECT_GE(channel["agreement"], 0.95);
  // Per-tensor weights visibly worse.
  EXPECT_GE(channel["sqnr_db"] - tensor["sqnr_db"], 3.0);
  EXPECT_LT(tensor["agreement"], channel["agreement"]);
}

TEST_F(Int8AccuracyBars, PpocrDetOnHeldOutTextLinesWithinElevenDbOfFp32) {
  // paddle2onnx's PP-OCRv3 text detector (DBNet: ConvTranspose in its head, a BatchNormalization
  // after an Add) on the upright text lines, scaled to 64x256 (H and W multiples of 32): every
  // other line calibrates, the other 250 measure the probability map's SQNR against fp32. The
  // default flags gave 12.1 dB there (ONNX Runtime's quantize_static, MinMax, per channel, on
  // the same lines: 12.2 dB). On photos without text the map is all but zero and its SQNR
  // measures nothing, which is why the bar is on text.
  const std::string lines = TextLines();
  ASSERT_FALSE(lines.empty());
  const Setup s = {Shared("models/ppocr-det-v3/model.onnx"),
                   lines + "/0",
                   {"--resize", "64x256", "--scale", "0.00392156862745098", "--mean", "0.5,0.5,0.5",
                    "--std", "0.5,0.5,0.5"},
                   {},
                   {"--shape", "x=N,3,64,256"}};
  Calibrate(s, kCalibrationPart);
  Compile(s, {});
  auto held = Compare(s, kHeldOut, "held out (250 upright lines)");
  ASSERT_EQ(held["samples"], 250);
  EXPECT_GE(held["sqnr_db"], 11.0);
  EXPECT_GE(held["cosine"], 0.95);
}

TEST_F(Int8AccuracyBars, EfficientNetLite0AsExportedEveryConvInt8AndWithinHalfAPoint) {
  // A plain torch.onnx.export (issue 12): dynamic batch, TF-style pads computed by shape
  // arithmetic, a Shape-based flatten. Default flags, no --shape: calibrated on every other
  // photo, evaluated on all 500 (the bar) and on the 250 the calibration did not see.
  const Setup s = {Shared("models/efficientnet-lite0/model.onnx"),
                   Shared("data/imagenet-val-sample"),
                   {"--resize", "256", "--crop", "224", "--scale", "0.00392156862745098", "--mean",
                    "0.5,0.5,0.5", "--std", "0.5,0.5,0.5"},
                   {"--labels", WriteBytes("labels.txt", ImagenetLabels())},
                   {}};
  Calibrate(s, kCalibrationPart);
  Compile(s, {});
  auto all = Compare(s, kAll, "all 500 (the 250 calibration photos among them)");
  auto unseen = Compare(s, kHeldOut, "held out (250 photos)");

  // Every Conv (49: 40 alone, 9 with the shortcut Add after them fused) and the Gemm in int8;
  // weights within 1.15x the parameter count in bytes.
  const QccResult inspect = Qcc({"inspect", Path("m.plan")});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("QConv x40, QConvAdd x9, QGemm x1,"), std::string::npos)
      << inspect.out;
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
