#include "support/memory.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace qcc {

std::optional<uint64_t> DenseBytes(DType dtype, absl::Span<const int64_t> dims) {
  uint64_t bytes = DTypeSize(dtype);
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes)) {
      return std::nullopt;
    }
  }
  if (bytes > (uint64_t{1} << 62)) return std::nullopt;
  return bytes;
}

int64_t DefaultMemoryLimit() {
  // Read once: sysconf(_SC_PHYS_PAGES) is a sysinfo system call, and the evaluator checks the
  // limit for every node it runs.
  static const int64_t limit = [] {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return int64_t{1} << 62;  // unknown: no limit of our own
    return static_cast<int64_t>(pages) * page;
  }();
  return limit;
}

int64_t EffectiveMemoryLimit(int64_t limit) { return limit > 0 ? limit : DefaultMemoryLimit(); }

absl::StatusOr<int64_t> ParseByteSize(absl::string_view text, absl::string_view flag) {
  std::string t = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(text));
  if (absl::EndsWith(t, "IB")) {
    t.resize(t.size() - 2);
  } else if (absl::EndsWith(t, "B")) {
    t.resize(t.size() - 1);
  }
  double scale = 1;
  if (!t.empty()) {
    const char unit = t.back();
    const int power = unit == 'K' ? 1 : unit == 'M' ? 2 : unit == 'G' ? 3 : unit == 'T' ? 4 : 0;
    if (power > 0) {
      scale = std::pow(1024.0, power);
      t.pop_back();
    }
  }
  double value = 0;
  if (t.empty() || !absl::SimpleAtod(t, &value) || !(value > 0) || !(value * scale < 9.2e18)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " '", text, "' is not a byte count such as 8G, 512M or 1073741824"));
  }
  return static_cast<int64_t>(value * scale);
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (bytes < (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1f KiB", b / 1024.0);
  } else if (bytes < (uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", b / 1048576.0);
  } else if (bytes < (uint64_t{1} << 40)) {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", b / 1073741824.0);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f TiB", b / 1099511627776.0);
  }
  return buf;
}

absl::Status CheckMemory(uint64_t bytes, uint64_t held, int64_t limit, absl::string_view what) {
  const uint64_t cap = static_cast<uint64_t>(EffectiveMemoryLimit(limit));
  if (bytes <= cap && held <= cap - bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      what, " needs ", FormatBytes(bytes), " (", bytes, " bytes), more than the memory limit of ",
      FormatBytes(cap), held > 0 ? absl::StrCat(" with ", FormatBytes(held), " in use") : "",
      "; raise it with --max-memory if the machine has the memory"));
}

}  // namespace qcc
