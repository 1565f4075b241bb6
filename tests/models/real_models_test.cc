// Runs the real trained models of shared/models through the importer and the CPU evaluator and
// compares with outputs computed by independent implementations: the test_data_set_* folders that
// ship with mnist-8, resnet20-cifar10 and squeezenet1.1 (PyTorch / OpenCV DNN), and, for the
// PP-OCR models that ship none, ONNX Runtime references written by scripts/make_model_refs.py
// (the CTest fixture `make_model_refs`) under <build>/model_refs/.
#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backend_cpu/evaluator.h"
#include "frontend/onnx_importer.h"
#include "frontend/tensor_proto.h"
#include "gtest/gtest.h"
#include "support/tensor.h"
#include "tests/testing/tensor_compare.h"

namespace qcc {
namespace {

namespace fs = std::filesystem;

/// Tolerances from shared/DATA.md: fp32 models, and fp16 models compared in fp32.
constexpr double kRtolF32 = 1e-3, kAtolF32 = 1e-4;
constexpr double kRtolF16 = 1e-2, kAtolF16 = 1e-3;

/// shared/models/<name>/<file>.
std::string ModelPath(const std::string& name, const std::string& file = "model.onnx") {
  return absl::StrCat(QCC_SHARED_DIR, "/models/", name, "/", file);
}

/// Where make_model_refs.py writes the ONNX Runtime references of `name`.
std::string RefsDir(const std::string& name) {
  return absl::StrCat(QCC_BINARY_DIR, "/model_refs/", name);
}

/// The top-1 class of each row of `scores` viewed as [rows, numel / rows].
std::vector<int64_t> Top1PerRow(const Tensor& scores, int64_t rows) {
  std::vector<float> v = CastTensor(scores, DType::kFloat32).ToFloatVector();
  const int64_t row = rows > 0 ? static_cast<int64_t>(v.size()) / rows : 0;
  std::vector<int64_t> top;
  for (int64_t r = 0; r < rows; ++r) {
    auto begin = v.begin() + r * row;
    top.push_back(std::max_element(begin, begin + row) - begin);
  }
  return top;
}

/// Imports `model_path`, runs it on every `data_dir`/test_data_set_*/input_K.pb and checks each
/// output against output_K.pb within rtol/atol (fp16 outputs compared in fp32). For a classifier
/// (`check_top1`) the top-1 class of each batch row must match too.
void CheckModel(const std::string& model_path, const std::string& data_dir, double rtol,
                double atol, bool check_top1) {
  ASSERT_TRUE(fs::exists(model_path)) << model_path << " not found: set QCC_SHARED_DIR";
  auto graph = frontend::ImportOnnxFile(model_path);
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto evaluator = cpu::Evaluator::Create(**graph);
  ASSERT_TRUE(evaluator.ok()) << evaluator.status();

  std::vector<fs::path> sets;
  if (fs::is_directory(data_dir)) {
    for (const auto& e : fs::directory_iterator(data_dir)) {
      if (e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
    }
  }
  std::sort(sets.begin(), sets.end());
  ASSERT_FALSE(sets.empty()) << "no test_data_set_* in " << data_dir;
  for (const fs::path& set : sets) {
    SCOPED_TRACE(set.string());
    std::vector<Tensor> inputs, expected;
    for (int k = 0; fs::exists(set / absl::StrCat("input_", k, ".pb")); ++k) {
      auto t = frontend::ReadTensorProtoFile((set / absl::StrCat("input_", k, ".pb")).string());
      ASSERT_TRUE(t.ok()) << t.status();
      inputs.push_back(*t);
    }
    for (int k = 0; fs::exists(set / absl::StrCat("output_", k, ".pb")); ++k) {
      auto t = frontend::ReadTensorProtoFile((set / absl::StrCat("output_", k, ".pb")).string());
      ASSERT_TRUE(t.ok()) << t.status();
      expected.push_back(*t);
    }
    ASSERT_FALSE(expected.empty());
    auto outputs = (*evaluator)->Run(inputs);
    ASSERT_TRUE(outputs.ok()) << outputs.status();
    ASSERT_EQ(outputs->size(), expected.size());
    for (size_t k = 0; k < expected.size(); ++k) {
      Tensor got = (*outputs)[k], want = expected[k];
      ASSERT_EQ(got.dtype(), want.dtype()) << "output " << k;
      if (IsReducedFloat(want.dtype())) {
        got = CastTensor(got, DType::kFloat32);
        want = CastTensor(want, DType::kFloat32);
      }
      EXPECT_EQ(testing::CompareTensors(got, want, rtol, atol), "") << "output " << k;
      if (check_top1 && got.dims() == want.dims() && got.rank() >= 1) {
        // One row per batch element: its top-1 class must be the reference's.
        EXPECT_EQ(Top1PerRow(got, got.dim(0)), Top1PerRow(want, want.dim(0))) << "output " << k;
      }
    }
  }
}

/// The ONNX Runtime references must exist: they are made by the CTest fixture, never skipped.
void CheckRefsPresent(const std::string& name) {
  ASSERT_TRUE(fs::exists(RefsDir(name) + "/test_data_set_0/output_0.pb"))
      << "no ONNX Runtime reference for " << name << " in " << RefsDir(name)
      << ": run scripts/test (CTest runs scripts/make_model_refs.py as the make_model_refs "
         "fixture first)";
}

TEST(RealModels, Mnist8) {
  CheckModel(ModelPath("mnist-8"), ModelPath("mnist-8", ""), kRtolF32, kAtolF32, true);
}

TEST(RealModels, ResNet20Cifar10) {
  CheckModel(ModelPath("resnet20-cifar10"), ModelPath("resnet20-cifar10", ""), kRtolF32, kAtolF32,
             true);
}

TEST(RealModels, SqueezeNet11Fp16) {
  CheckModel(ModelPath("squeezenet1.1", "model-fp16.onnx"), ModelPath("squeezenet1.1", ""),
             kRtolF16, kAtolF16, true);
}

TEST(RealModels, PpocrClsMbv3AgainstOnnxRuntime) {
  CheckRefsPresent("ppocr-cls-mbv3");
  if (HasFatalFailure()) return;
  CheckModel(ModelPath("ppocr-cls-mbv3"), RefsDir("ppocr-cls-mbv3"), kRtolF32, kAtolF32, true);
}

TEST(RealModels, PpocrDetV3AgainstOnnxRuntime) {
  CheckRefsPresent("ppocr-det-v3");
  if (HasFatalFailure()) return;
  CheckModel(ModelPath("ppocr-det-v3"), RefsDir("ppocr-det-v3"), kRtolF32, kAtolF32, false);
}

}  // namespace
}  // namespace qcc
