// The readers on the shared real data with each model's preprocessing from shared/DATA.md.
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "calib/dataset.h"
#include "frontend/onnx_importer.h"
#include "gtest/gtest.h"

namespace qcc::calib {
namespace {

const std::string kShared = QCC_SHARED_DIR;

// The model's inputs; skips the test when the shared folder is absent.
std::vector<DataInput> ModelInputs(const std::string& model) {
  absl::StatusOr<std::unique_ptr<ir::Graph>> g =
      frontend::ImportOnnxFile(kShared + "/models/" + model);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? GraphDataInputs(**g) : std::vector<DataInput>{};
}

#define SKIP_WITHOUT_SHARED(sub)                                          \
  if (!std::filesystem::exists(kShared + "/" + (sub))) {                  \
    GTEST_SKIP() << "no " << kShared << "/" << (sub) << " (shared data)"; \
  }

TEST(CalibDataReal, Cifar10WithResnet20Preprocessing) {
  SKIP_WITHOUT_SHARED("data/cifar10-test");
  const std::vector<DataInput> inputs = ModelInputs("resnet20-cifar10/model.onnx");
  ASSERT_EQ(inputs.size(), 1u);
  DatasetOptions o;
  ASSERT_TRUE(ApplyPreprocessFlag("scale", "1/255", &o.preprocess).ok());
  ASSERT_TRUE(ApplyPreprocessFlag("mean", "0.485,0.456,0.406", &o.preprocess).ok());
  ASSERT_TRUE(ApplyPreprocessFlag("std", "0.229,0.224,0.225", &o.preprocess).ok());
  o.shard_count = 17;  // every 17th of the 5,000 images: all ten classes
  absl::StatusOr<std::unique_ptr<Dataset>> ds =
      Dataset::Open(kShared + "/data/cifar10-test", inputs, o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  ASSERT_EQ((*ds)->size(), 295);
  EXPECT_EQ((*ds)->files(0)[0], kShared + "/data/cifar10-test/airplane/0000.jpg");
  double sum[3] = {0, 0, 0}, sum_sq[3] = {0, 0, 0};
  int64_t count = 0;
  Sample s;
  while (true) {
    absl::StatusOr<bool> more = (*ds)->Next(&s);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    ASSERT_EQ(s.tensors[0].dtype(), DType::kFloat32);
    ASSERT_EQ(s.tensors[0].dims(), (Dims{1, 3, 32, 32}));
    const float* d = s.tensors[0].data<float>();
    for (int c = 0; c < 3; ++c) {
      for (int i = 0; i < 32 * 32; ++i) {
        sum[c] += d[c * 1024 + i];
        sum_sq[c] += static_cast<double>(d[c * 1024 + i]) * d[c * 1024 + i];
      }
    }
    ++count;
  }
  EXPECT_EQ(count, 295);
  EXPECT_EQ((*ds)->skipped(), 0);
  // The same images decoded by PIL (libjpeg) and normalised with NumPy.
  const double pil_mean[3] = {0.0863, 0.1756, 0.2208}, pil_std[3] = {1.0610, 1.0836, 1.1754};
  for (int c = 0; c < 3; ++c) {
    const double n = count * 1024.0, mean = sum[c] / n;
    const double stddev = std::sqrt(sum_sq[c] / n - mean * mean);
    EXPECT_NEAR(mean, pil_mean[c], 0.01) << c;
    EXPECT_NEAR(stddev, pil_std[c], 0.01) << c;
  }
}

TEST(CalibDataReal, ImagenetWithSqueezenetPreprocessingIsFloat16) {
  SKIP_WITHOUT_SHARED("data/imagenet-val-sample");
  const std::vector<DataInput> inputs = ModelInputs("squeezenet1.1/model-fp16.onnx");
  ASSERT_EQ(inputs.size(), 1u);
  DatasetOptions o;
  absl::StatusOr<PreprocessSpec> spec = PreprocessSpecFromJson(
      R"({"resize": 256, "crop": 224, "channel_order": "bgr", "mean": [104, 117, 123]})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  o.preprocess = *spec;
  o.max_samples = 3;
  absl::StatusOr<std::unique_ptr<Dataset>> ds =
      Dataset::Open(kShared + "/data/imagenet-val-sample", inputs, o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ((*ds)->size(), 3);
  Sample s;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(*(*ds)->Next(&s));
    ASSERT_EQ(s.tensors[0].dtype(), DType::kFloat16);
    ASSERT_EQ(s.tensors[0].dims(), (Dims{1, 3, 224, 224}));
    const std::vector<float> v = s.tensors[0].ToFloatVector();
    for (int c = 0; c < 3; ++c) {
      const float lo = -o.preprocess.mean[c], hi = 255 - o.preprocess.mean[c];
      for (int p = 0; p < 224 * 224; p += 97) {
        ASSERT_GE(v[c * 224 * 224 + p], lo);
        ASSERT_LE(v[c * 224 * 224 + p], hi);
      }
    }
  }
}

TEST(CalibDataReal, MnistWithTheInferredSpecIsRawGrey) {
  SKIP_WITHOUT_SHARED("data/mnist-test");
  const std::vector<DataInput> inputs = ModelInputs("mnist-8/model.onnx");
  ASSERT_EQ(inputs.size(), 1u);
  absl::StatusOr<PreprocessSpec> spec = InferPreprocessSpec(inputs[0].type);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->grayscale);
  DatasetOptions o;
  o.preprocess = *spec;
  o.max_samples = 10;
  absl::StatusOr<std::unique_ptr<Dataset>> ds =
      Dataset::Open(kShared + "/data/mnist-test", inputs, o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  Sample s;
  ASSERT_TRUE(*(*ds)->Next(&s));
  ASSERT_EQ(s.tensors[0].dims(), (Dims{1, 1, 28, 28}));
  const std::vector<float> v = s.tensors[0].ToFloatVector();
  float max = 0, sum = 0;
  for (float x : v) {
    EXPECT_EQ(x, std::round(x));  // raw 8-bit values
    max = std::max(max, x);
    sum += x;
  }
  EXPECT_GT(max, 200);               // a white digit
  EXPECT_LT(sum / v.size(), 80.0f);  // on black
}

TEST(CalibDataReal, PpocrClsNonSquareResize) {
  SKIP_WITHOUT_SHARED("data/imagenet-val-sample");
  const std::vector<DataInput> inputs = ModelInputs("ppocr-cls-mbv3/model.onnx");
  ASSERT_EQ(inputs.size(), 1u);
  DatasetOptions o;
  ASSERT_TRUE(ApplyPreprocessFlag("resize", "48x192", &o.preprocess).ok());
  ASSERT_TRUE(ApplyPreprocessFlag("scale", "1/255", &o.preprocess).ok());
  ASSERT_TRUE(ApplyPreprocessFlag("mean", "0.5", &o.preprocess).ok());
  ASSERT_TRUE(ApplyPreprocessFlag("std", "0.5", &o.preprocess).ok());
  o.max_samples = 1;
  absl::StatusOr<std::unique_ptr<Dataset>> ds =
      Dataset::Open(kShared + "/data/imagenet-val-sample", inputs, o);
  ASSERT_TRUE(ds.ok()) << ds.status();
  Sample s;
  ASSERT_TRUE(*(*ds)->Next(&s));
  EXPECT_EQ(s.tensors[0].dims(), (Dims{1, 3, 48, 192}));
  for (float x : s.tensors[0].ToFloatVector()) {
    ASSERT_GE(x, -1.0f);
    ASSERT_LE(x, 1.0f);
  }
}

}  // namespace
}  // namespace qcc::calib
