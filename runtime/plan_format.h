// The plan file: one self-checking file holding a Plan (runtime/plan.h).
//
// Layout (every integer little-endian):
//   [0, 64)      header: magic "QCCPLAN\0", u32 format version, u32 reserved (0),
//                u64 manifest size, u64 weights offset, u64 weights size, u64 file size, 16 zero
//                bytes
//   [64, ...)    manifest: the Plan without its weight bytes (runtime/internal/manifest.h)
//   zero padding to the next multiple of 64: the weights offset
//   weights      the weights section; each weight starts at a multiple of 64 within it
//   u32          CRC-32 (zlib's) of every byte before it; file size = weights offset + size + 4
// A reader mmaps the file, so weights are used in place, 64-byte aligned.
#ifndef QCC_RUNTIME_PLAN_FORMAT_H_
#define QCC_RUNTIME_PLAN_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/plan.h"

namespace qcc::runtime {

/// The format version this build writes and the only one it reads.
inline constexpr uint32_t kPlanFormatVersion = 1;
/// The first 8 bytes of every plan file.
inline constexpr char kPlanMagic[8] = {'Q', 'C', 'C', 'P', 'L', 'A', 'N', '\0'};
/// Header size, and the byte offset of the u32 format version in it.
inline constexpr size_t kPlanHeaderBytes = 64;
inline constexpr size_t kPlanVersionOffset = 8;

/// The checksum a plan file's trailer stores: CRC-32 of `size` bytes at `data`.
uint32_t PlanChecksum(const uint8_t* data, size_t size);

/// The plan file's bytes. Fails (InvalidArgument) when the plan does not pass ValidatePlan.
absl::StatusOr<std::string> SerializePlan(const Plan& plan);

/// Writes the plan file atomically: to a temporary file in the same folder, then renamed over
/// `path`; on any error nothing is left behind and an existing file at `path` is untouched.
absl::Status WritePlan(const Plan& plan, const std::string& path);

/// Reads a plan file (mmapped read-only; the plan's weights point into the mapping, which lives
/// as long as the plan or a copy of it). NotFound for a missing file, InvalidArgument naming the
/// path and the way out for an empty, non-plan, wrong-version, truncated or corrupt file. The
/// file must not be rewritten in place while a plan read from it is alive (WritePlan renames).
absl::StatusOr<Plan> ReadPlan(const std::string& path);

/// Parses plan bytes kept alive by `bytes` (copied first when not 64-byte aligned); `source`
/// names them in errors. Checks everything ReadPlan checks.
absl::StatusOr<Plan> ParsePlan(std::shared_ptr<const uint8_t> bytes, size_t size,
                               absl::string_view source);

/// Parses a copy of `bytes` (for plans held in memory, e.g. from SerializePlan).
absl::StatusOr<Plan> ParsePlanBytes(absl::string_view bytes, absl::string_view source);

}  // namespace qcc::runtime

#endif  // QCC_RUNTIME_PLAN_FORMAT_H_
