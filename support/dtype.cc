#include "support/dtype.h"

namespace qcc {

size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kUndefined:
      return 0;
    case DType::kFloat32:
      return 4;
    case DType::kFloat16:
      return 2;
    case DType::kBFloat16:
      return 2;
    case DType::kFloat8E4M3:
      return 1;
    case DType::kFloat64:
      return 8;
    case DType::kInt8:
      return 1;
    case DType::kUInt8:
      return 1;
    case DType::kInt16:
      return 2;
    case DType::kUInt16:
      return 2;
    case DType::kInt32:
      return 4;
    case DType::kUInt32:
      return 4;
    case DType::kInt64:
      return 8;
    case DType::kUInt64:
      return 8;
    case DType::kBool:
      return 1;
  }
  return 0;
}

absl::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kUndefined:
      return "undef";
    case DType::kFloat32:
      return "f32";
    case DType::kFloat16:
      return "f16";
    case DType::kBFloat16:
      return "bf16";
    case DType::kFloat8E4M3:
      return "f8e4m3";
    case DType::kFloat64:
      return "f64";
    case DType::kInt8:
      return "i8";
    case DType::kUInt8:
      return "u8";
    case DType::kInt16:
      return "i16";
    case DType::kUInt16:
      return "u16";
    case DType::kInt32:
      return "i32";
    case DType::kUInt32:
      return "u32";
    case DType::kInt64:
      return "i64";
    case DType::kUInt64:
      return "u64";
    case DType::kBool:
      return "bool";
  }
  return "?";
}

bool IsFloat(DType t) { return t == DType::kFloat32 || t == DType::kFloat64 || IsReducedFloat(t); }

bool IsReducedFloat(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat8E4M3;
}

bool IsInteger(DType t) {
  switch (t) {
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kInt32:
    case DType::kUInt32:
    case DType::kInt64:
    case DType::kUInt64:
      return true;
    default:
      return false;
  }
}

}  // namespace qcc
