#include "tools/preprocess_options.h"

#include <cstdio>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "ir/printer.h"
#include "support/status.h"

namespace qcc::tools {
namespace {

namespace fs = std::filesystem;

bool HasImageFile(const std::string& folder) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string ext = absl::AsciiStrToLower(it->path().extension().string());
    if (ext == ".jpg" || ext == ".jpeg" || ext == ".png") return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<calib::PreprocessSpec> ChoosePreprocessing(const PreprocessOptions& options,
                                                          const std::string& data,
                                                          const ir::Graph& graph) {
  calib::PreprocessSpec spec;
  if (!options.file.empty()) {
    QCC_ASSIGN_OR_RETURN(spec, calib::PreprocessSpecFromJsonFile(options.file));
  }
  for (const auto& [key, value] : options.flags) {
    QCC_RETURN_IF_ERROR(calib::ApplyPreprocessFlag(key, value, &spec));
  }
  if (!options.file.empty() || !options.flags.empty()) {
    QCC_RETURN_IF_ERROR(spec.Validate());
    std::printf("preprocessing: %s\n", spec.Describe().c_str());
    return spec;
  }
  const ir::Value& input = *graph.inputs().front();
  absl::StatusOr<calib::PreprocessSpec> inferred = calib::InferPreprocessSpec(input.type());
  if (inferred.ok()) {
    std::printf("preprocessing (inferred from input '%s' %s; pass flags to change it): %s\n",
                input.name().c_str(), ir::TypeToString(graph, input.type()).c_str(),
                inferred->Describe().c_str());
    return *inferred;
  }
  if (HasImageFile(data)) return inferred.status();
  return spec;
}

}  // namespace qcc::tools
