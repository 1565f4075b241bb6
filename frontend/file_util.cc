#include "frontend/internal/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "google/protobuf/message_lite.h"

namespace qcc::frontend::internal {

std::string DirName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return "";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::Status ParseProtoFile(const std::string& path, absl::string_view what,
                            google::protobuf::MessageLite* msg) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot open '", path, "': ", strerror(errno), "; check the path"));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is not a regular file; pass the path of an ONNX file"));
  }
  if (st.st_size == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is empty, not ", what, "; re-export or re-download it"));
  }
  if (st.st_size > INT_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path,
                     "' is larger than 2 GiB, the protobuf limit; save the weights as "
                     "ONNX external data (onnx.save_model(..., save_as_external_data=True))"));
  }
  const int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot open '", path, "': ", strerror(errno), "; check its permissions"));
  }
  bool ok;
  {
    google::protobuf::io::FileInputStream file_stream(fd);
    google::protobuf::io::CodedInputStream coded(&file_stream);
    coded.SetTotalBytesLimit(INT_MAX);
    ok = msg->ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
    if (ok && file_stream.GetErrno() != 0) ok = false;
  }
  close(fd);
  if (!ok) {
    std::string type = msg->GetTypeName();
    if (type.rfind("onnx.", 0) == 0) type = type.substr(5);
    return absl::InvalidArgumentError(absl::StrCat(
        "'", path, "' is not ", what, " (failed to parse ", type,
        "); it may be truncated or another kind of file: re-export or re-download it"));
  }
  return absl::OkStatus();
}

}  // namespace qcc::frontend::internal
