// The preprocessing of image data for the commands that read a data folder (calibrate, compare).
#ifndef QCC_TOOLS_PREPROCESS_OPTIONS_H_
#define QCC_TOOLS_PREPROCESS_OPTIONS_H_

#include <string>

#include "absl/status/statusor.h"
#include "calib/preprocess.h"
#include "ir/graph.h"
#include "tools/commands.h"

namespace qcc::tools {

/// The preprocessing for image files in `data`: the JSON file and flags when given, else
/// inferred from the first input's type of `graph` (printed, so the user sees what was
/// assumed). When inference fails and the folder holds images, that is the error; for tensor
/// files the default spec is returned (they are not preprocessed).
absl::StatusOr<calib::PreprocessSpec> ChoosePreprocessing(const PreprocessOptions& options,
                                                          const std::string& data,
                                                          const ir::Graph& graph);

}  // namespace qcc::tools

#endif  // QCC_TOOLS_PREPROCESS_OPTIONS_H_
