#include "runtime/plan_format.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "runtime/internal/manifest.h"
#include "support/status.h"

namespace qcc::runtime {
namespace {

constexpr size_t kChecksumBytes = 4;
constexpr uint64_t kMaxManifestBytes = uint64_t{1} << 40;
constexpr uint64_t kMaxWeightsBytes = uint64_t{1} << 60;
constexpr absl::string_view kRecompile = "copy the file again or recompile the model";

uint64_t Load(const uint8_t* p, int n) {
  uint64_t x = 0;
  for (int i = 0; i < n; ++i) x |= static_cast<uint64_t>(p[i]) << (8 * i);
  return x;
}

void Store(uint8_t* p, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

absl::Status Invalid(absl::string_view source, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", what));
}

absl::Status Truncated(absl::string_view source, uint64_t expected, uint64_t size, bool at_least) {
  return Invalid(source, absl::StrCat("truncated plan file: expected ", at_least ? "at least " : "",
                                      expected, " bytes, file has ", size, "; ", kRecompile));
}

using Sink = absl::FunctionRef<absl::Status(const uint8_t*, size_t)>;

// Validates `plan` and hands its file bytes to `sink` in order.
absl::Status EmitPlan(const Plan& plan, absl::string_view destination, Sink sink) {
  if (absl::Status s = ValidatePlan(plan, destination); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot write ", s.message()));
  }
  const std::string manifest = internal::EncodeManifest(plan);
  const uint64_t weights_offset = AlignToPlan(kPlanHeaderBytes + manifest.size());
  const uint64_t weights_size = plan.weight_data.size();
  uint8_t header[kPlanHeaderBytes] = {};
  std::memcpy(header, kPlanMagic, sizeof(kPlanMagic));
  Store(header + kPlanVersionOffset, kPlanFormatVersion, 4);
  Store(header + 16, manifest.size(), 8);
  Store(header + 24, weights_offset, 8);
  Store(header + 32, weights_size, 8);
  Store(header + 40, weights_offset + weights_size + kChecksumBytes, 8);
  static const uint8_t kZeros[kPlanAlignment] = {};

  uint32_t crc = PlanChecksum(nullptr, 0);
  auto put = [&](const uint8_t* p, size_t n) {
    if (n == 0) return absl::OkStatus();  // zlib resets the CRC for a null buffer
    crc = static_cast<uint32_t>(crc32_z(crc, p, n));
    return sink(p, n);
  };
  QCC_RETURN_IF_ERROR(put(header, sizeof(header)));
  QCC_RETURN_IF_ERROR(put(reinterpret_cast<const uint8_t*>(manifest.data()), manifest.size()));
  QCC_RETURN_IF_ERROR(put(kZeros, weights_offset - kPlanHeaderBytes - manifest.size()));
  QCC_RETURN_IF_ERROR(put(plan.weight_data.data(), weights_size));
  uint8_t trailer[kChecksumBytes];
  Store(trailer, crc, kChecksumBytes);
  return sink(trailer, kChecksumBytes);
}

absl::Status WriteAll(int fd, const uint8_t* p, size_t n, const std::string& tmp) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, std::min<size_t>(n, size_t{1} << 30));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return absl::ErrnoToStatus(errno, absl::StrCat("cannot write ", tmp));
    p += w;
    n -= static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

// Checks the header and the checksum; on success sets the manifest and weights extents.
absl::Status CheckFrame(const uint8_t* b, uint64_t size, absl::string_view source,
                        uint64_t* manifest_size, uint64_t* weights_offset, uint64_t* weights_size) {
  const absl::string_view compile = "compile one with `qcc compile model.onnx`";
  if (size == 0) return Invalid(source, absl::StrCat("empty file, not a qcc plan; ", compile));
  if (std::memcmp(b, kPlanMagic, std::min<uint64_t>(size, sizeof(kPlanMagic))) != 0) {
    return Invalid(source,
                   absl::StrCat("not a qcc plan (it does not start with QCCPLAN); ", compile));
  }
  if (size < kPlanVersionOffset + 4) return Truncated(source, kPlanHeaderBytes, size, true);
  const uint32_t version = static_cast<uint32_t>(Load(b + kPlanVersionOffset, 4));
  if (version != kPlanFormatVersion) {
    return Invalid(source, absl::StrCat("plan format version ", version, ", this qcc reads ",
                                        kPlanFormatVersion, ": recompile the model with this qcc"));
  }
  if (size < kPlanHeaderBytes) return Truncated(source, kPlanHeaderBytes, size, true);
  *manifest_size = Load(b + 16, 8);
  *weights_offset = Load(b + 24, 8);
  *weights_size = Load(b + 32, 8);
  const uint64_t file_size = Load(b + 40, 8);
  bool reserved_zero = Load(b + 12, 4) == 0;
  for (size_t i = 48; i < kPlanHeaderBytes; ++i) reserved_zero = reserved_zero && b[i] == 0;
  if (!reserved_zero || *manifest_size > kMaxManifestBytes || *weights_size > kMaxWeightsBytes ||
      *weights_offset != AlignToPlan(kPlanHeaderBytes + *manifest_size) ||
      file_size != *weights_offset + *weights_size + kChecksumBytes) {
    return Invalid(source,
                   absl::StrCat("corrupt plan header (inconsistent section sizes); ", kRecompile));
  }
  if (size < file_size) return Truncated(source, file_size, size, false);
  if (size > file_size) {
    return Invalid(source,
                   absl::StrCat("corrupt plan file: ", size, " bytes where its header says ",
                                file_size, "; ", kRecompile));
  }
  const uint32_t stored = static_cast<uint32_t>(Load(b + file_size - kChecksumBytes, 4));
  const uint32_t computed = PlanChecksum(b, file_size - kChecksumBytes);
  if (stored != computed) {
    return Invalid(source, absl::StrCat("corrupt plan file (checksum ", absl::Hex(computed),
                                        ", stored ", absl::Hex(stored), "); ", kRecompile));
  }
  return absl::OkStatus();
}

}  // namespace

uint32_t PlanChecksum(const uint8_t* data, size_t size) {
  return static_cast<uint32_t>(crc32_z(crc32_z(0, nullptr, 0), data, size));
}

absl::StatusOr<std::string> SerializePlan(const Plan& plan) {
  std::string out;
  QCC_RETURN_IF_ERROR(EmitPlan(plan, "plan", [&](const uint8_t* p, size_t n) {
    out.append(reinterpret_cast<const char*>(p), n);
    return absl::OkStatus();
  }));
  return out;
}

absl::Status WritePlan(const Plan& plan, const std::string& path) {
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) {
    return absl::ErrnoToStatus(
        errno, absl::StrCat("cannot write plan file ", path, " (creating a temporary beside it)"));
  }
  absl::Status status =
      EmitPlan(plan, path, [&](const uint8_t* p, size_t n) { return WriteAll(fd, p, n, tmp); });
  if (status.ok() && ::fchmod(fd, 0644) != 0) {
    status = absl::ErrnoToStatus(errno, absl::StrCat("cannot chmod ", tmp));
  }
  if (status.ok() && ::fsync(fd) != 0) {
    status = absl::ErrnoToStatus(errno, absl::StrCat("cannot sync ", tmp));
  }
  if (::close(fd) != 0 && status.ok()) {
    status = absl::ErrnoToStatus(errno, absl::StrCat("cannot close ", tmp));
  }
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = absl::ErrnoToStatus(errno, absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  if (!status.ok()) ::unlink(tmp.c_str());
  return status;
}

absl::StatusOr<Plan> ReadPlan(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat("plan file ", path,
                                              " not found; compile one with "
                                              "`qcc compile model.onnx` or check the path"));
    }
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot open plan file ", path));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return absl::ErrnoToStatus(err, absl::StrCat("cannot stat plan file ", path));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Invalid(path, "not a regular file; give the path of a .plan file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return ParsePlan(nullptr, 0, path);
  }
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) return absl::ErrnoToStatus(err, absl::StrCat("cannot map ", path));
  std::shared_ptr<const uint8_t> bytes(static_cast<const uint8_t*>(p), [size](const uint8_t* q) {
    ::munmap(const_cast<uint8_t*>(q), size);
  });
  return ParsePlan(std::move(bytes), size, path);
}

absl::StatusOr<Plan> ParsePlan(std::shared_ptr<const uint8_t> bytes, size_t size,
                               absl::string_view source) {
  if (size != 0 && reinterpret_cast<uintptr_t>(bytes.get()) % kPlanAlignment != 0) {
    return ParsePlanBytes(absl::string_view(reinterpret_cast<const char*>(bytes.get()), size),
                          source);
  }
  uint64_t manifest_size = 0;
  uint64_t weights_offset = 0;
  uint64_t weights_size = 0;
  QCC_RETURN_IF_ERROR(
      CheckFrame(bytes.get(), size, source, &manifest_size, &weights_offset, &weights_size));
  Plan plan;
  QCC_RETURN_IF_ERROR(
      internal::DecodeManifest(bytes.get() + kPlanHeaderBytes, manifest_size, source, &plan));
  const uint8_t* weights = bytes.get() + weights_offset;
  plan.weight_data = WeightSection::View(std::move(bytes), weights, weights_size);
  if (absl::Status s = ValidatePlan(plan, source); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        s.message(),
        "; the file is damaged or was written by a different qcc: recompile the model"));
  }
  return plan;
}

absl::StatusOr<Plan> ParsePlanBytes(absl::string_view bytes, absl::string_view source) {
  std::shared_ptr<uint8_t> copy = AllocatePlanAligned(bytes.size());
  if (copy == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat(source, ": cannot allocate ", bytes.size(), " bytes for the plan"));
  }
  if (!bytes.empty()) std::memcpy(copy.get(), bytes.data(), bytes.size());
  return ParsePlan(std::move(copy), bytes.size(), source);
}

}  // namespace qcc::runtime
