// Element types known to qcc, their sizes and names.
#ifndef QCC_SUPPORT_DTYPE_H_
#define QCC_SUPPORT_DTYPE_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace qcc {

/// An element type. kUndefined marks an omitted optional tensor.
enum class DType : uint8_t {
  kUndefined,
  kFloat32,
  kFloat16,
  kBFloat16,
  kFloat8E4M3,
  kFloat64,
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kInt32,
  kUInt32,
  kInt64,
  kUInt64,
  kBool,
};

/// Bytes per element (0 for kUndefined).
size_t DTypeSize(DType t);
/// Lower-case short name, e.g. "f32", "i64".
absl::string_view DTypeName(DType t);
/// True for fp32, fp16, bf16, fp8 and fp64.
bool IsFloat(DType t);
/// True for the 16-bit and 8-bit float storage types that qcc computes in fp32.
bool IsReducedFloat(DType t);
/// True for every integer type (bool excluded).
bool IsInteger(DType t);

}  // namespace qcc

#endif  // QCC_SUPPORT_DTYPE_H_
