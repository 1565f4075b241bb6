// The plan manifest's binary encoding: a compact little-endian byte stream written and read with
// bounds-checked cursors (no protobuf, no JSON in the runtime). Internal to runtime/plan_format.
#ifndef QCC_RUNTIME_INTERNAL_MANIFEST_H_
#define QCC_RUNTIME_INTERNAL_MANIFEST_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "runtime/plan.h"

namespace qcc::runtime::internal {

/// Appends little-endian fixed-width values and length-prefixed strings to a byte string.
class ByteWriter {
 public:
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U32(uint32_t v) { Fixed(v, 4); }
  void U64(uint64_t v) { Fixed(v, 8); }
  void I32(int32_t v) { U32(static_cast<uint32_t>(v)); }
  void I64(int64_t v) { U64(static_cast<uint64_t>(v)); }
  /// Stores the float's bit pattern (NaN payloads and -0 survive).
  void F32(float v);
  /// A u32 length, then the bytes.
  void String(absl::string_view s);

  const std::string& bytes() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void Fixed(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string out_;
};

/// Reads what ByteWriter writes. Every read checks the remaining bytes; the first failure makes
/// every later read fail too and is kept as error(), with the byte offset where it happened.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool U8(uint8_t* v);
  bool U32(uint32_t* v);
  bool U64(uint64_t* v);
  bool I32(int32_t* v);
  bool I64(int64_t* v);
  bool F32(float* v);
  /// A string of at most `max_bytes` bytes.
  bool String(std::string* s, size_t max_bytes);
  /// A u32 element count whose elements take at least `min_element_bytes` each: fails, before
  /// anything is allocated, when the remaining bytes cannot hold them.
  bool Count(uint32_t* n, size_t min_element_bytes);
  /// Records `what` as the error (when none is recorded yet) and returns false.
  bool Fail(absl::string_view what);

  size_t offset() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  bool Fixed(uint64_t* v, int n);

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  std::string error_;
};

/// Encodes everything in `plan` except the weight bytes.
std::string EncodeManifest(const Plan& plan);

/// Decodes a manifest into `plan` (weight bytes untouched). Checks the encoding only (counts,
/// lengths, enum values, trailing bytes); ValidatePlan checks the meaning. Errors are
/// InvalidArgument starting with `source`.
absl::Status DecodeManifest(const uint8_t* data, size_t size, absl::string_view source, Plan* plan);

}  // namespace qcc::runtime::internal

#endif  // QCC_RUNTIME_INTERNAL_MANIFEST_H_
