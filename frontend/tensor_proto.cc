// TensorProto decoding in every storage form ONNX allows, and `.pb` file reading and writing.
#include "frontend/tensor_proto.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "frontend/internal/file_util.h"
#include "onnx/onnx_pb.h"
#include "support/atomic_file.h"
#include "support/status.h"

namespace qcc::frontend {

namespace {

// ONNX data types past this header's enum (onnx.proto added them after IR version 8).
constexpr int kOnnxFloat8E4M3FN = 17;
constexpr int kOnnxLastKnownType = 23;  // FLOAT4E2M1

std::string TensorLabel(const onnx::TensorProto& proto) {
  return proto.name().empty() ? std::string("tensor (unnamed)")
                              : absl::StrCat("tensor '", proto.name(), "'");
}

/// Which repeated field holds the elements of `dtype` when raw_data is not used.
enum class TypedField { kFloat, kInt32, kInt64, kDouble, kUInt64 };

TypedField FieldFor(DType t) {
  switch (t) {
    case DType::kFloat32:
      return TypedField::kFloat;
    case DType::kInt64:
      return TypedField::kInt64;
    case DType::kFloat64:
      return TypedField::kDouble;
    case DType::kUInt32:
    case DType::kUInt64:
      return TypedField::kUInt64;
    case DType::kUndefined:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat8E4M3:
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kInt32:
    case DType::kBool:
      return TypedField::kInt32;
  }
  return TypedField::kInt32;
}

/// Copies `n` values of a typed field into `t`, narrowing each to the element width
/// (int32_data holds fp16/bf16/fp8 bit patterns and small integers one per entry).
template <typename Src>
void CopyNarrowing(const Src* src, int64_t n, Tensor& t) {
  uint8_t* dst = static_cast<uint8_t*>(t.raw());
  const size_t width = DTypeSize(t.dtype());
  for (int64_t i = 0; i < n; ++i) {
    if (t.dtype() == DType::kBool) {
      dst[i] = src[i] != 0 ? 1 : 0;
    } else if (width == sizeof(Src)) {
      memcpy(dst + i * width, &src[i], width);
    } else if (width == 1) {
      dst[i] = static_cast<uint8_t>(src[i]);
    } else if (width == 2) {
      const uint16_t v = static_cast<uint16_t>(src[i]);
      memcpy(dst + i * 2, &v, 2);
    } else if (width == 4) {
      const uint32_t v = static_cast<uint32_t>(src[i]);
      memcpy(dst + i * 4, &v, 4);
    }
  }
}

absl::Status CountMismatch(const onnx::TensorProto& proto, absl::string_view where, int64_t have,
                           int64_t want) {
  return absl::InvalidArgumentError(
      absl::StrCat(TensorLabel(proto), ": ", where, " holds ", have, " elements but its dims ",
                   DimsToString(std::vector<int64_t>(proto.dims().begin(), proto.dims().end())),
                   " need ", want));
}

/// The number of elements in the typed field that holds `dtype`, and the field's name.
std::pair<int64_t, const char*> TypedFieldCount(const onnx::TensorProto& proto, DType dtype) {
  switch (FieldFor(dtype)) {
    case TypedField::kFloat:
      return {proto.float_data_size(), "float_data"};
    case TypedField::kInt32:
      return {proto.int32_data_size(), "int32_data"};
    case TypedField::kInt64:
      return {proto.int64_data_size(), "int64_data"};
    case TypedField::kDouble:
      return {proto.double_data_size(), "double_data"};
    case TypedField::kUInt64:
      return {proto.uint64_data_size(), "uint64_data"};
  }
  return {proto.int32_data_size(), "int32_data"};
}

/// Copies the typed field into `t`; its count was checked against t.numel().
void FromTypedField(const onnx::TensorProto& proto, Tensor& t) {
  const int64_t n = t.numel();
  switch (FieldFor(t.dtype())) {
    case TypedField::kFloat:
      return CopyNarrowing(proto.float_data().data(), n, t);
    case TypedField::kInt32:
      return CopyNarrowing(proto.int32_data().data(), n, t);
    case TypedField::kInt64:
      return CopyNarrowing(proto.int64_data().data(), n, t);
    case TypedField::kDouble:
      return CopyNarrowing(proto.double_data().data(), n, t);
    case TypedField::kUInt64:
      return CopyNarrowing(proto.uint64_data().data(), n, t);
  }
}

/// Where a tensor's external data lies: checked to exist and to hold its bytes.
struct ExternalSpan {
  std::string path;
  int64_t offset = 0;
};

/// The file and offset the external_data entries give, under `base_dir`, checked to hold `nbytes`
/// there (before anything is allocated for them).
absl::StatusOr<ExternalSpan> FindExternalData(const onnx::TensorProto& proto,
                                              const std::string& base_dir, int64_t nbytes) {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
  for (const auto& kv : proto.external_data()) {
    int64_t* target = kv.key() == "offset" ? &offset : kv.key() == "length" ? &length : nullptr;
    if (kv.key() == "location") {
      location = kv.value();
    } else if (target != nullptr) {
      char* end = nullptr;
      const long long parsed = strtoll(kv.value().c_str(), &end, 10);
      if (kv.value().empty() || *end != '\0' || parsed < 0) {
        return absl::InvalidArgumentError(absl::StrCat(TensorLabel(proto), ": external data ",
                                                       kv.key(), " '", kv.value(),
                                                       "' is not a non-negative integer"));
      }
      *target = parsed;
    }
  }
  if (location.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(TensorLabel(proto),
                     ": data_location is EXTERNAL but no external_data 'location' is given"));
  }
  // ONNX requires the location to stay inside the model's folder.
  const std::vector<absl::string_view> parts = absl::StrSplit(location, '/');
  if (location[0] == '/' || std::find(parts.begin(), parts.end(), "..") != parts.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(TensorLabel(proto), ": external data location '", location,
                     "' must be a relative path inside the model's folder"));
  }
  const std::string path = base_dir.empty() ? location : absl::StrCat(base_dir, "/", location);
  if (length >= 0 && length != nbytes) {
    return absl::InvalidArgumentError(absl::StrCat(TensorLabel(proto), ": external data length ",
                                                   length, " in '", path, "' differs from the ",
                                                   nbytes, " bytes its dims and type need"));
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(TensorLabel(proto),
                                                   ": cannot open external data file '", path,
                                                   "'; keep it next to the model"));
  }
  if (offset > st.st_size || nbytes > st.st_size - offset) {
    return absl::InvalidArgumentError(
        absl::StrCat(TensorLabel(proto), ": external data file '", path, "' has ", st.st_size,
                     " bytes, too few for ", nbytes, " bytes at offset ", offset));
  }
  return ExternalSpan{path, offset};
}

/// Reads t.nbytes() from `span` into `t`.
absl::Status FromExternalData(const onnx::TensorProto& proto, const ExternalSpan& span, Tensor& t) {
  const std::string& path = span.path;
  std::ifstream in(path, std::ios::binary);
  if (in) {
    in.seekg(span.offset);
    in.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  }
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(TensorLabel(proto), ": failed to read external data file '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DType> DTypeFromOnnx(int onnx_type) {
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT:
      return DType::kFloat32;
    case onnx::TensorProto::UINT8:
      return DType::kUInt8;
    case onnx::TensorProto::INT8:
      return DType::kInt8;
    case onnx::TensorProto::UINT16:
      return DType::kUInt16;
    case onnx::TensorProto::INT16:
      return DType::kInt16;
    case onnx::TensorProto::INT32:
      return DType::kInt32;
    case onnx::TensorProto::INT64:
      return DType::kInt64;
    case onnx::TensorProto::BOOL:
      return DType::kBool;
    case onnx::TensorProto::FLOAT16:
      return DType::kFloat16;
    case onnx::TensorProto::DOUBLE:
      return DType::kFloat64;
    case onnx::TensorProto::UINT32:
      return DType::kUInt32;
    case onnx::TensorProto::UINT64:
      return DType::kUInt64;
    case onnx::TensorProto::BFLOAT16:
      return DType::kBFloat16;
    case kOnnxFloat8E4M3FN:
      return DType::kFloat8E4M3;
    case onnx::TensorProto::STRING:
      return absl::UnimplementedError("string tensors are not supported");
    case onnx::TensorProto::COMPLEX64:
    case onnx::TensorProto::COMPLEX128:
      return absl::UnimplementedError("complex tensors are not supported");
    default:
      break;
  }
  if (onnx_type > 0 && onnx_type <= kOnnxLastKnownType) {
    return absl::UnimplementedError(
        absl::StrCat("ONNX data type ", onnx_type, " (a float8 or 4-bit type) is not supported"));
  }
  return absl::InvalidArgumentError(absl::StrCat("invalid ONNX data type ", onnx_type));
}

int DTypeToOnnx(DType t) {
  switch (t) {
    case DType::kUndefined:
      return onnx::TensorProto::UNDEFINED;
    case DType::kFloat32:
      return onnx::TensorProto::FLOAT;
    case DType::kFloat16:
      return onnx::TensorProto::FLOAT16;
    case DType::kBFloat16:
      return onnx::TensorProto::BFLOAT16;
    case DType::kFloat8E4M3:
      return kOnnxFloat8E4M3FN;
    case DType::kFloat64:
      return onnx::TensorProto::DOUBLE;
    case DType::kInt8:
      return onnx::TensorProto::INT8;
    case DType::kUInt8:
      return onnx::TensorProto::UINT8;
    case DType::kInt16:
      return onnx::TensorProto::INT16;
    case DType::kUInt16:
      return onnx::TensorProto::UINT16;
    case DType::kInt32:
      return onnx::TensorProto::INT32;
    case DType::kUInt32:
      return onnx::TensorProto::UINT32;
    case DType::kInt64:
      return onnx::TensorProto::INT64;
    case DType::kUInt64:
      return onnx::TensorProto::UINT64;
    case DType::kBool:
      return onnx::TensorProto::BOOL;
  }
  return onnx::TensorProto::UNDEFINED;
}

absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto,
                                       const std::string& base_dir) {
  auto dtype = DTypeFromOnnx(proto.data_type());
  if (!dtype.ok()) {
    return absl::Status(dtype.status().code(),
                        absl::StrCat(TensorLabel(proto), ": ", dtype.status().message()));
  }
  if (proto.has_segment()) {
    return absl::UnimplementedError(
        absl::StrCat(TensorLabel(proto), ": segmented tensors are not supported"));
  }
  // Check the extents before allocating: a corrupt file must not ask for terabytes.
  Dims dims(proto.dims().begin(), proto.dims().end());
  int64_t numel = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d > 0 && numel > std::numeric_limits<int64_t>::max() / 16 / d)) {
      return absl::InvalidArgumentError(
          absl::StrCat(TensorLabel(proto), ": invalid dims ", DimsToString(dims)));
    }
    numel *= d;
  }
  const int64_t nbytes = numel * static_cast<int64_t>(DTypeSize(*dtype));
  const bool external = proto.data_location() == onnx::TensorProto::EXTERNAL;
  // Every size is checked against what the file holds before the tensor is allocated.
  ExternalSpan span;
  if (external) {
    QCC_ASSIGN_OR_RETURN(span, FindExternalData(proto, base_dir, nbytes));
  } else if (proto.has_raw_data()) {
    if (static_cast<int64_t>(proto.raw_data().size()) != nbytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          TensorLabel(proto), ": raw_data holds ", proto.raw_data().size(), " bytes but its dims ",
          DimsToString(dims), " and type ", DTypeName(*dtype), " need ", nbytes));
    }
  } else if (const auto [count, field] = TypedFieldCount(proto, *dtype); count != numel) {
    return CountMismatch(proto, field, count, numel);
  }
  Tensor t(*dtype, std::move(dims));
  if (external) {
    QCC_RETURN_IF_ERROR(FromExternalData(proto, span, t));
  } else if (proto.has_raw_data()) {
    // ONNX stores raw_data little-endian, which is the host order on every target qcc supports.
    if (nbytes > 0) memcpy(t.raw(), proto.raw_data().data(), nbytes);
  } else {
    FromTypedField(proto, t);
  }
  return t;
}

void TensorToProto(const Tensor& t, const std::string& name, onnx::TensorProto* proto) {
  proto->Clear();
  proto->set_name(name);
  proto->set_data_type(DTypeToOnnx(t.dtype()));
  for (int64_t d : t.dims()) proto->add_dims(d);
  proto->set_raw_data(static_cast<const char*>(t.raw()), t.nbytes());
}

absl::StatusOr<Tensor> ReadTensorProtoFile(const std::string& path, std::string* name) {
  onnx::TensorProto proto;
  QCC_RETURN_IF_ERROR(internal::ParseProtoFile(path, "a serialized ONNX TensorProto", &proto));
  auto t = TensorFromProto(proto, internal::DirName(path));
  if (!t.ok()) {
    return absl::Status(t.status().code(), absl::StrCat(path, ": ", t.status().message()));
  }
  if (name != nullptr) *name = proto.name();
  return t;
}

absl::Status WriteTensorProtoFile(const std::string& path, const Tensor& t,
                                  const std::string& name) {
  onnx::TensorProto proto;
  TensorToProto(t, name, &proto);
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot serialize tensor '", name, "' (", t.nbytes(),
                     " bytes; TensorProto files hold at most 2 GiB)"));
  }
  return WriteFileAtomically(path, bytes);
}

}  // namespace qcc::frontend
