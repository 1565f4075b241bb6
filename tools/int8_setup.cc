#include "tools/int8_setup.h"

#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "support/status.h"
#include "tools/tool_io.h"

namespace qcc::tools {

std::string BesideModel(const std::string& model, absl::string_view suffix) {
  std::filesystem::path p(model);
  if (absl::AsciiStrToLower(p.extension().string()) == ".onnx") p.replace_extension();
  return absl::StrCat(p.string(), suffix);
}

absl::StatusOr<Int8Table> LoadInt8Table(const std::string& model, const std::string& calib_path,
                                        const std::string& method, const ir::Graph& graph) {
  const std::string path = calib_path.empty() ? BesideModel(model, ".calib.json") : calib_path;
  if (!PathExists(path)) {
    return absl::FailedPreconditionError(
        absl::StrCat("--int8 needs a calibration table and '", path, "' does not exist: run 'qcc ",
                     "calibrate ", model, " DATA' first, or pass --calib TABLE.json"));
  }
  Int8Table t;
  QCC_ASSIGN_OR_RETURN(t.table, calib::ReadCalibTable(path));
  QCC_RETURN_IF_ERROR(calib::CheckFingerprint(t.table, graph));
  QCC_ASSIGN_OR_RETURN(t.method,
                       calib::ParseCalibMethod(method.empty() ? t.table.settings.method : method));
  t.method_given = !method.empty();
  return t;
}

std::map<std::string, passes::TensorRange> SolveRanges(const Int8Table& t, bool asymmetric) {
  std::map<std::string, passes::TensorRange> ranges;
  for (const auto& [name, stats] : t.table.tensors) {
    if (asymmetric) {
      const calib::AsymmetricRange r = calib::SolveAsymmetric(stats, t.method);
      ranges[name] = {r.lo, r.hi};
    } else {
      const calib::SymmetricRange r = calib::SolveSymmetric(stats, t.method);
      ranges[name] = {-r.amax, r.amax};
    }
  }
  return ranges;
}

std::map<std::string, passes::TensorRange> GemmInputRanges(const Int8Table& t) {
  if (t.method_given) return SolveRanges(t, /*asymmetric=*/true);
  Int8Table full = t;
  full.method = calib::CalibMethodSpec{};
  full.method.method = calib::CalibMethod::kMinMax;
  return SolveRanges(full, /*asymmetric=*/true);
}

passes::PrecisionSetup StaticSetup(const Int8Table& t, bool per_tensor, bool asymmetric,
                                   const std::vector<std::string>& exclude) {
  passes::PrecisionSetup setup;
  setup.options.per_channel = !per_tensor;
  setup.options.asymmetric = asymmetric;
  setup.options.exclude = exclude;
  setup.options.asymmetric_ranges = GemmInputRanges(t);
  setup.ranges = SolveRanges(t, asymmetric);
  return setup;
}

}  // namespace qcc::tools
