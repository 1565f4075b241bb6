// `qcc inspect TABLE.json`: a calibration table's settings, each tensor's range and the int8
// scale every calibration method would pick from its histogram.

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "calib/calib_table.h"
#include "calib/preprocess.h"
#include "calib/scale_solvers.h"
#include "support/status.h"
#include "tools/commands.h"

namespace qcc::tools {

absl::Status InspectTableCommand(const std::string& path) {
  QCC_ASSIGN_OR_RETURN(calib::CalibTable table, calib::ReadCalibTable(path));
  std::printf("calibration table %s\n", path.c_str());
  std::printf("  model fingerprint %s, written by qcc %s\n", table.fingerprint.c_str(),
              table.qcc_version.c_str());
  std::printf("  %lld samples (shards %s, batch %lld, max samples %lld), default method %s\n",
              static_cast<long long>(table.samples), calib::ShardToString(table.settings).c_str(),
              static_cast<long long>(table.settings.batch),
              static_cast<long long>(table.settings.max_samples), table.settings.method.c_str());
  absl::StatusOr<calib::PreprocessSpec> spec = calib::PreprocessSpecFromJson(table.preprocessing);
  std::printf("  preprocessing: %s\n",
              spec.ok() ? spec->Describe().c_str() : table.preprocessing.c_str());

  // The methods compile offers, each as the symmetric int8 scale amax / 127.
  std::vector<calib::CalibMethodSpec> methods;
  for (const char* name : {"minmax", "percentile", "entropy", "mse"}) {
    methods.push_back(*calib::ParseCalibMethod(name));
  }
  std::printf(
      "\n%zu tensors; columns: finite range, NaN/inf count, then the symmetric int8 scale "
      "(amax/127) each method picks\n",
      table.tensors.size());
  std::printf("%-44s %12s %12s %7s", "tensor", "min", "max", "nan/inf");
  for (const auto& m : methods) std::printf(" %16s", calib::CalibMethodName(m).c_str());
  std::printf("\n");
  std::vector<std::string> warnings;
  for (const auto& [name, stats] : table.tensors) {
    const long long bad = stats.nan_count() + stats.posinf_count() + stats.neginf_count();
    std::printf("%-44s %12.6g %12.6g %7lld", name.c_str(), stats.has_finite() ? stats.min() : 0.0f,
                stats.has_finite() ? stats.max() : 0.0f, bad);
    std::string warning;
    for (const auto& m : methods) {
      const calib::SymmetricRange r = calib::SolveSymmetric(stats, m);
      std::printf(" %16.6g", r.amax / 127.0f);
      if (warning.empty()) warning = r.warning;
    }
    std::printf("\n");
    if (!warning.empty()) warnings.push_back(absl::StrFormat("  %s: %s", name, warning));
  }
  if (!warnings.empty()) {
    std::printf("\nwarnings:\n");
    for (const std::string& w : warnings) std::printf("%s\n", w.c_str());
  }
  std::fflush(stdout);
  return absl::OkStatus();
}

}  // namespace qcc::tools
