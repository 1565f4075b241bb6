// Writing a whole file so that readers never see a partial one.
#ifndef QCC_SUPPORT_ATOMIC_FILE_H_
#define QCC_SUPPORT_ATOMIC_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace qcc {

/// Writes `bytes` to `path` through a temporary file in the same folder and a rename, so that a
/// failure never leaves a partial file at `path`. Errors name the file.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes);

}  // namespace qcc

#endif  // QCC_SUPPORT_ATOMIC_FILE_H_
