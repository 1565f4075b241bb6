// `qcc calibrate MODEL DATA [-o TABLE.json]`: streams real inputs through the fused fp32 model
// with observers and writes the calibration table; `qcc calibrate --merge A B ... -o C`
// combines shard tables.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "calib/calib_table.h"
#include "calib/dataset.h"
#include "calib/preprocess.h"
#include "calib/runner.h"
#include "calib/scale_solvers.h"
#include "ir/fingerprint.h"
#include "ir/printer.h"
#include "support/status.h"
#include "tools/commands.h"
#include "tools/preprocess_options.h"
#include "tools/progress.h"
#include "tools/tool_io.h"

namespace qcc::tools {
namespace {

namespace fs = std::filesystem;

/// "i/N" with 0 <= i < N, into the settings the table records.
absl::Status ParseShard(absl::string_view text, calib::CalibSettings* settings) {
  int index = 0, count = 0;
  QCC_RETURN_IF_ERROR(tools::ParseShard(text, &index, &count));
  settings->shard_count = count;
  settings->shards = {index};
  return absl::OkStatus();
}

std::string DefaultTablePath(const std::string& model) {
  fs::path p(model);
  if (absl::AsciiStrToLower(p.extension().string()) == ".onnx") p.replace_extension();
  return p.string() + ".calib.json";
}

absl::Status MergeTables(const CalibrateOptions& options) {
  if (options.merge.size() < 2) {
    return absl::InvalidArgumentError("--merge needs at least two tables (--merge A.json B.json)");
  }
  if (options.output.empty()) {
    return absl::InvalidArgumentError("--merge needs -o OUTPUT.json for the combined table");
  }
  QCC_ASSIGN_OR_RETURN(calib::CalibTable merged, calib::ReadCalibTable(options.merge[0]));
  for (size_t i = 1; i < options.merge.size(); ++i) {
    QCC_ASSIGN_OR_RETURN(calib::CalibTable next, calib::ReadCalibTable(options.merge[i]));
    QCC_ASSIGN_OR_RETURN(merged, calib::MergeCalibTables(merged, next));
  }
  if (!options.model.empty()) {
    QCC_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, LoadModel(options.model));
    QCC_RETURN_IF_ERROR(calib::CheckFingerprint(merged, *graph));
  }
  QCC_RETURN_IF_ERROR(calib::WriteCalibTable(options.output, merged));
  std::printf("merged %zu tables (%lld samples, shards %s, %zu tensors) -> %s\n",
              options.merge.size(), static_cast<long long>(merged.samples),
              calib::ShardToString(merged.settings).c_str(), merged.tensors.size(),
              options.output.c_str());
  return absl::OkStatus();
}

/// The one-screen summary after a run.
void PrintSummary(const calib::CalibTable& table, const calib::CalibrationRun& run,
                  const calib::CalibMethodSpec& method, double seconds, int threads,
                  const std::string& path) {
  const std::string where = run.device == calib::Device::kCuda
                                ? std::string("cuda")
                                : absl::StrCat("cpu, ", threads, " threads");
  std::printf("calibrated %lld samples in %.2f s (%.1f samples/s; batch %lld, %s)\n",
              static_cast<long long>(run.samples), seconds,
              seconds > 0 ? static_cast<double>(run.samples) / seconds : 0.0,
              static_cast<long long>(run.batch), where.c_str());
  if (!run.skipped_files.empty()) {
    std::printf("skipped %zu images that could not be decoded (first: %s)\n",
                run.skipped_files.size(), run.skipped_files.front().c_str());
  }
  std::printf("observed %zu tensors -> %s\n", table.tensors.size(), path.c_str());

  std::vector<std::pair<float, std::string>> widest;
  std::vector<std::string> non_finite, degenerate;
  for (const auto& [name, stats] : table.tensors) {
    widest.emplace_back(stats.abs_max(), name);
    if (stats.nan_count() + stats.posinf_count() + stats.neginf_count() > 0) {
      non_finite.push_back(absl::StrFormat("  %s: %d NaN, %d +inf, %d -inf of %d values", name,
                                           stats.nan_count(), stats.posinf_count(),
                                           stats.neginf_count(), stats.count()));
    }
    calib::SymmetricRange range = calib::SolveSymmetric(stats, method);
    if (range.degenerate) {
      degenerate.push_back(
          absl::StrFormat("  %s: %s (scale %g)", name, range.warning, range.amax / 127.0f));
    }
  }
  std::stable_sort(widest.begin(), widest.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::printf("widest ranges:\n");
  for (size_t i = 0; i < std::min<size_t>(5, widest.size()); ++i) {
    const calib::TensorStats& s = table.tensors.at(widest[i].second);
    std::printf("  %-40s [%g, %g]  %s amax %g\n", widest[i].second.c_str(), s.min(), s.max(),
                calib::CalibMethodName(method).c_str(), calib::SolveSymmetric(s, method).amax);
  }
  std::printf("NaN/inf: %s\n", non_finite.empty() ? "none" : "");
  for (const std::string& line : non_finite) std::printf("%s\n", line.c_str());
  std::printf("constant or empty tensors: %s\n", degenerate.empty() ? "none" : "");
  for (const std::string& line : degenerate) std::printf("%s\n", line.c_str());
  if (!degenerate.empty()) {
    std::fprintf(stderr,
                 "qcc: warning: %zu tensors had no usable range; they got a valid "
                 "placeholder scale (listed above)\n",
                 degenerate.size());
  }
}

}  // namespace

absl::Status CalibrateCommand(const CalibrateOptions& options) {
  if (!options.merge.empty()) return MergeTables(options);
  if (options.model.empty() || options.data.empty()) {
    return absl::InvalidArgumentError(
        "calibrate needs MODEL and DATA (qcc calibrate model.onnx data/), or --merge");
  }
  calib::CalibSettings settings;
  QCC_RETURN_IF_ERROR(ParseShard(options.shard, &settings));
  QCC_ASSIGN_OR_RETURN(calib::CalibMethodSpec method, calib::ParseCalibMethod(options.method));
  settings.method = calib::CalibMethodName(method);
  settings.batch = options.batch;
  settings.max_samples = options.max_samples;
  QCC_ASSIGN_OR_RETURN(calib::Device device, calib::ParseDevice(options.device));
  QCC_RETURN_IF_ERROR(CheckDirectory(options.data, "data folder"));
  const std::string output =
      options.output.empty() ? DefaultTablePath(options.model) : options.output;

  QCC_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, LoadModel(options.model));
  // The table belongs to the model file: its fingerprint is taken before --shape.
  const std::string fingerprint = ir::Fingerprint(*graph);
  QCC_RETURN_IF_ERROR(ApplyShapes(options.shapes, *graph));
  QCC_ASSIGN_OR_RETURN(calib::PreprocessSpec spec,
                       ChoosePreprocessing(options.preprocess, options.data, *graph));
  QCC_RETURN_IF_ERROR(calib::InstrumentForCalibration(*graph).status());

  calib::DatasetOptions data_options;
  data_options.preprocess = spec;
  data_options.max_samples = options.max_samples;
  data_options.shard_index = settings.shards.front();
  data_options.shard_count = settings.shard_count;
  QCC_ASSIGN_OR_RETURN(
      std::unique_ptr<calib::Dataset> data,
      calib::Dataset::Open(options.data, calib::GraphDataInputs(*graph), data_options));

  const int threads = options.threads > 0
                          ? options.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ProgressBar progress("samples");
  calib::RunnerOptions run_options;
  run_options.batch = options.batch;
  run_options.num_threads = threads;
  QCC_ASSIGN_OR_RETURN(run_options.max_memory, ParseMaxMemory(options.max_memory));
  run_options.device = device;
  run_options.on_progress = [&](int64_t done, int64_t total) { progress.Update(done, total); };
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<calib::CalibrationRun> run = calib::RunCalibration(*graph, *data, run_options);
  progress.Finish();
  QCC_RETURN_IF_ERROR(run.status());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  calib::CalibTable table;
  table.fingerprint = fingerprint;
  table.qcc_version = QCC_VERSION;
  table.preprocessing = spec.ToJson();
  table.settings = settings;
  table.samples = run->samples;
  table.tensors = run->tensors;
  QCC_RETURN_IF_ERROR(calib::WriteCalibTable(output, table));
  PrintSummary(table, *run, method, seconds, threads, output);
  return absl::OkStatus();
}

}  // namespace qcc::tools
