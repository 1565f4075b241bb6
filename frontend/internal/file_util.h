// File helpers of the importer: protobuf file parsing with useful errors.
#ifndef QCC_FRONTEND_INTERNAL_FILE_UTIL_H_
#define QCC_FRONTEND_INTERNAL_FILE_UTIL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace google::protobuf {
class MessageLite;
}  // namespace google::protobuf

namespace qcc::frontend::internal {

/// The folder part of `path`: "" for a bare file name, "/" for a file in the root.
std::string DirName(const std::string& path);

/// Parses the binary protobuf file `path` into `msg`; `what` names the expected content ("an
/// ONNX model"). A missing, unreadable, empty, oversized (over 2 GiB) or unparsable file is an
/// InvalidArgument error that names the file and what to do.
absl::Status ParseProtoFile(const std::string& path, absl::string_view what,
                            google::protobuf::MessageLite* msg);

}  // namespace qcc::frontend::internal

#endif  // QCC_FRONTEND_INTERNAL_FILE_UTIL_H_
