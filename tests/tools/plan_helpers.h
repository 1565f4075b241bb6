// Helpers for the `qcc compile` / `qcc compare` command-line tests: ResNet-20 with a small
// class-balanced CIFAR subset, a tiny Relu model, and parsers for what `qcc inspect MODEL.plan`
// and `qcc compare` print.
#ifndef QCC_TESTS_TOOLS_PLAN_HELPERS_H_
#define QCC_TESTS_TOOLS_PLAN_HELPERS_H_

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "support/npy.h"
#include "support/tensor.h"
#include "tests/tools/onnx_models.h"
#include "tests/tools/qcc_runner.h"

namespace qcc::testing {

inline std::string Resnet20Model() { return SharedModelDir("resnet20-cifar10") + "/model.onnx"; }
inline std::string Resnet20TestSet(int k) {
  return SharedModelDir("resnet20-cifar10") + "/test_data_set_" + std::to_string(k);
}
inline std::string CifarTestDir() { return std::string(QCC_SHARED_DIR) + "/data/cifar10-test"; }

/// The DATA.md preprocessing of resnet20-cifar10 as qcc flags.
inline std::vector<std::string> Resnet20Preprocessing() {
  return {"--resize", "32",
          "--crop",   "32",
          "--scale",  "0.00392156862745098",
          "--mean",   "0.485,0.456,0.406",
          "--std",    "0.229,0.224,0.225"};
}

/// The whitespace-separated words of `line`.
inline std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> words;
  std::stringstream ss(line);
  for (std::string w; ss >> w;) words.push_back(w);
  return words;
}

/// The first line of `text` that starts with `prefix` ("" when none).
inline std::string LineStartingWith(const std::string& text, const std::string& prefix) {
  for (const std::string& line : Lines(text)) {
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return "";
}

/// The number right after the first `label` in `text` (NaN when the label is missing).
inline double NumberAfter(const std::string& text, const std::string& label) {
  const size_t at = text.find(label);
  if (at == std::string::npos) return std::numeric_limits<double>::quiet_NaN();
  return std::strtod(text.c_str() + at + label.size(), nullptr);
}

/// The key=value fields of the machine-readable line starting with `prefix` ("compare:").
inline std::map<std::string, double> MachineFields(const std::string& text,
                                                   const std::string& prefix) {
  std::map<std::string, double> fields;
  for (const std::string& w : Words(LineStartingWith(text, prefix))) {
    const size_t eq = w.find('=');
    if (eq != std::string::npos) fields[w.substr(0, eq)] = std::strtod(w.c_str() + eq + 1, nullptr);
  }
  return fields;
}

/// One step line of `qcc inspect MODEL.plan`.
struct InspectStep {
  std::string kernel, precision, node, output;
};

/// The step table of `qcc inspect MODEL.plan` (the lines after the "step  kernel" header).
inline std::vector<InspectStep> InspectSteps(const std::string& out) {
  std::vector<InspectStep> steps;
  bool in_table = false;
  for (const std::string& line : Lines(out)) {
    const std::vector<std::string> w = Words(line);
    if (!in_table) {
      in_table = w.size() >= 2 && w[0] == "step" && w[1] == "kernel";
      continue;
    }
    if (!w.empty() && w[0] == "cuda:") continue;  // a cuda plan's recorded kernel, under its step
    if (w.size() < 6) break;
    EXPECT_EQ(w[0], std::to_string(steps.size())) << line;
    steps.push_back({w[1], w[2], w[3], w[4]});
  }
  return steps;
}

/// Steps of `steps` whose kernel is `kernel`.
inline int CountKernel(const std::vector<InspectStep>& steps, const std::string& kernel) {
  int n = 0;
  for (const InspectStep& s : steps) n += s.kernel == kernel;
  return n;
}

/// The int8 convolution steps of `steps`: QConv, and QConvAdd (a QConv with the shortcut Add
/// after it fused).
inline int CountQConvs(const std::vector<InspectStep>& steps) {
  return CountKernel(steps, "QConv") + CountKernel(steps, "QConvAdd");
}

/// Weight bytes of one dtype in the "weights:" line of `qcc inspect` ("i8" -> 268336; 0 if
/// the dtype is not listed).
inline double WeightBytes(const std::string& inspect_out, const std::string& dtype) {
  const std::string line = LineStartingWith(inspect_out, "  weights: ");
  for (const char* sep : {"(", ", "}) {
    const double v = NumberAfter(line, sep + dtype + " ");
    if (!std::isnan(v)) return v;
  }
  return 0;
}

/// One row of `qcc compare --per-layer`.
struct PerLayerRow {
  int rank = 0;
  double sqnr_db = 0;
  std::string kernel, node, tensor;
};

/// The ranked table of `qcc compare --per-layer` (rows between its header and "compare:").
inline std::vector<PerLayerRow> PerLayerRows(const std::string& out) {
  std::vector<PerLayerRow> rows;
  bool in_table = false;
  for (const std::string& line : Lines(out)) {
    const std::vector<std::string> w = Words(line);
    if (!in_table) {
      in_table = w.size() >= 2 && w[0] == "rank" && w[1] == "SQNR";
      continue;
    }
    if (w.size() != 5 || line.rfind("compare:", 0) == 0) break;
    rows.push_back({std::atoi(w[0].c_str()), std::strtod(w[1].c_str(), nullptr), w[2], w[3], w[4]});
  }
  return rows;
}

/// A scratch-folder fixture for compile/compare tests on ResNet-20 and a tiny Relu model.
class PlanTest : public QccTest {
 protected:
  /// Copies CIFAR images first..first+per_class-1 of every class into scratch folder `sub`
  /// (DATA/<class>/NNNN.jpg, so --labels-from-folders works) and returns its path.
  std::string CifarSubset(const std::string& sub, int first, int per_class) const {
    namespace fs = std::filesystem;
    for (const auto& e : fs::directory_iterator(CifarTestDir())) {
      if (!e.is_directory()) continue;
      const fs::path to = fs::path(Path(sub)) / e.path().filename();
      fs::create_directories(to);
      for (int i = first; i < first + per_class; ++i) {
        const std::string name = absl::StrFormat("%04d.jpg", i);
        fs::copy_file(e.path() / name, to / name);
      }
    }
    return Path(sub);
  }

  /// qcc calibrate of `model` (default ResNet-20) on 64 class-balanced CIFAR images.
  QccResult CalibrateResnet20(const std::string& table, const std::string& model = "") const {
    const std::string data = CifarSubset("calib_images", 0, 7);
    std::vector<std::string> args = {"calibrate", model.empty() ? Resnet20Model() : model, data,
                                     "--max-samples", "64"};
    if (!table.empty()) args.insert(args.end(), {"-o", table});
    const std::vector<std::string> pre = Resnet20Preprocessing();
    args.insert(args.end(), pre.begin(), pre.end());
    return Qcc(args);
  }

  /// qcc compile --int8 of ResNet-20 with `table` into `plan`, plus `extra` flags.
  QccResult CompileResnet20(const std::string& table, const std::string& plan,
                            const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args = {"compile", Resnet20Model(), "--int8", "--calib", table, "-o",
                                     plan};
    args.insert(args.end(), extra.begin(), extra.end());
    return Qcc(args);
  }

  /// qcc compare of ResNet-20 against `plan` on `data` with the DATA.md preprocessing.
  QccResult CompareResnet20(const std::string& plan, const std::string& data,
                            const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args = {"compare", Resnet20Model(), plan, data};
    const std::vector<std::string> pre = Resnet20Preprocessing();
    args.insert(args.end(), pre.begin(), pre.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return Qcc(args);
  }

  /// Calibrates ResNet-20 into scratch t.json and compiles it to `plan` with `extra` flags;
  /// returns the compile result (a failed calibration fails the test).
  QccResult CalibratedResnet20Plan(const std::string& plan,
                                   const std::vector<std::string>& extra = {}) const {
    if (!std::filesystem::exists(Path("t.json"))) {
      const QccResult c = CalibrateResnet20(Path("t.json"));
      EXPECT_EQ(c.exit_code, 0) << c.err;
    }
    return CompileResnet20(Path("t.json"), plan, extra);
  }

  /// Writes a float32 .npy file into the scratch folder.
  std::string WriteFloatNpy(const std::string& name, const Dims& dims,
                            const std::vector<float>& values) const {
    const std::string p = Path(name);
    EXPECT_TRUE(WriteNpy(p, Tensor::FromVector<float>(DType::kFloat32, dims, values)).ok());
    return p;
  }

  /// A one-node Relu model x[N,4] -> y with its calibration table (relu.json) and plan
  /// (relu.plan) in the scratch folder; returns the model path.
  std::string ReluModelWithPlan() const {
    const std::string model =
        WriteBytes("relu.onnx", OneNodeModel("Relu", {{"x", {-1, 4}}}, {{"y", {-1, 4}}}));
    std::filesystem::create_directories(Path("relu_data"));
    WriteFloatNpy("relu_data/0.npy", {1, 4}, {-1, 0.5f, 2, -3});
    WriteFloatNpy("relu_data/1.npy", {1, 4}, {4, -0.25f, 1, 0});
    const QccResult c = Qcc({"calibrate", model, Path("relu_data"), "-o", Path("relu.json")});
    EXPECT_EQ(c.exit_code, 0) << c.err;
    const QccResult p =
        Qcc({"compile", model, "--int8", "--calib", Path("relu.json"), "-o", Path("relu.plan")});
    EXPECT_EQ(p.exit_code, 0) << p.err;
    return model;
  }

  /// True when the scratch folder holds a file whose name ends with `suffix` or holds ".tmp".
  bool HasPlanOrTemp(const std::string& suffix = ".plan") const {
    for (const std::string& f : FilesIn("")) {
      if (f.find(".tmp") != std::string::npos) return true;
      if (f.size() >= suffix.size() &&
          f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0)
        return true;
    }
    return false;
  }
};

}  // namespace qcc::testing

#endif  // QCC_TESTS_TOOLS_PLAN_HELPERS_H_
