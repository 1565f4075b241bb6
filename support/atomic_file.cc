#include "support/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace qcc {

absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot write '", path, "': ", strerror(errno)));
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const int write_errno = errno;
  const bool closed = close(fd) == 0;
  if (done != bytes.size() || !closed) {
    unlink(tmp.c_str());
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot write '", path, "': ", strerror(done != bytes.size() ? write_errno : errno)));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    unlink(tmp.c_str());
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write '", path, "': ", strerror(rename_errno)));
  }
  return absl::OkStatus();
}

}  // namespace qcc
