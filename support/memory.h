// Sizes of what a model asks qcc to allocate, and the limit they are checked against before any
// allocation: a hostile or broken model (ConstantOfShape of [100000, 100000, 1000]) gets an error
// naming what it asked for, never a crash.
#ifndef QCC_SUPPORT_MEMORY_H_
#define QCC_SUPPORT_MEMORY_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "support/dtype.h"

namespace qcc {

/// Bytes of a dense tensor of `dims` and `dtype`; nullopt on a negative extent or when the size
/// passes 2^62 bytes (no product of extents can overflow past that).
std::optional<uint64_t> DenseBytes(DType dtype, absl::Span<const int64_t> dims);

/// The memory limit when none is given: the machine's physical memory.
int64_t DefaultMemoryLimit();

/// `limit` when positive, else DefaultMemoryLimit().
int64_t EffectiveMemoryLimit(int64_t limit);

/// Parses a byte count: "1073741824", "512M", "8G", "1.5T" (K, M, G, T: powers of 1024; a
/// trailing "B" or "iB" is allowed). InvalidArgument naming `flag` otherwise.
absl::StatusOr<int64_t> ParseByteSize(absl::string_view text, absl::string_view flag);

/// "512 B", "1.5 KiB", "12.0 MiB", "3.00 GiB", "1.00 TiB".
std::string FormatBytes(uint64_t bytes);

/// OK when `bytes` more fit under `limit` with `held` already in use; otherwise
/// ResourceExhausted "<what> needs <bytes>, more than the memory limit of <limit> (<held> in use);
/// raise it with --max-memory if the machine has it".
absl::Status CheckMemory(uint64_t bytes, uint64_t held, int64_t limit, absl::string_view what);

}  // namespace qcc

#endif  // QCC_SUPPORT_MEMORY_H_
