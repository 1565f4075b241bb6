#include "support/npy.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <system_error>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/status.h"

namespace qcc {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

struct NpyType {
  const char* code;  // the dtype string without its byte-order character
  DType dtype;
};

constexpr NpyType kTypes[] = {
    {"f4", DType::kFloat32}, {"f2", DType::kFloat16}, {"f8", DType::kFloat64},
    {"i1", DType::kInt8},    {"u1", DType::kUInt8},   {"i2", DType::kInt16},
    {"u2", DType::kUInt16},  {"i4", DType::kInt32},   {"u4", DType::kUInt32},
    {"i8", DType::kInt64},   {"u8", DType::kUInt64},  {"b1", DType::kBool},
};

std::optional<absl::string_view> NpyCode(DType t) {
  for (const NpyType& nt : kTypes) {
    if (nt.dtype == t) return absl::string_view(nt.code);
  }
  return std::nullopt;
}

// The parsed header dictionary.
struct Header {
  std::string descr;
  std::optional<bool> fortran_order;
  std::optional<Dims> shape;
};

// A small parser for the Python dict literal of a .npy header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(absl::string_view text, absl::string_view source) : s_(text), source_(source) {}

  absl::StatusOr<Header> Parse() {
    Header h;
    bool has_descr = false;
    QCC_RETURN_IF_ERROR(Expect('{'));
    while (true) {
      SkipSpace();
      if (Consume('}')) break;
      QCC_ASSIGN_OR_RETURN(std::string key, ParseString());
      QCC_RETURN_IF_ERROR(Expect(':'));
      SkipSpace();
      if (key == "descr") {
        if (Peek() != '\'' && Peek() != '"') {
          return Error(
              "'descr' is not a simple dtype string (structured dtypes are not supported)");
        }
        QCC_ASSIGN_OR_RETURN(h.descr, ParseString());
        has_descr = true;
      } else if (key == "fortran_order") {
        QCC_ASSIGN_OR_RETURN(h.fortran_order, ParseBool());
      } else if (key == "shape") {
        QCC_ASSIGN_OR_RETURN(h.shape, ParseTuple());
      } else {
        return Error(absl::StrCat("unexpected key '", key, "'"));
      }
      SkipSpace();
      if (Consume('}')) break;
      QCC_RETURN_IF_ERROR(Expect(','));
    }
    SkipSpace();
    if (pos_ != s_.size()) return Error("unexpected text after the header dictionary");
    if (!has_descr || !h.fortran_order || !h.shape) {
      return Error("the header lacks one of 'descr', 'fortran_order', 'shape'");
    }
    return h;
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(source_, ": invalid .npy header (", what, ")"));
  }
  void SkipSpace() {
    while (pos_ < s_.size() && absl::ascii_isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  char Peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool Consume(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }
  absl::Status Expect(char c) {
    SkipSpace();
    if (!Consume(c)) return Error(absl::StrCat("expected '", std::string(1, c), "'"));
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> ParseString() {
    SkipSpace();
    const char quote = Peek();
    if (quote != '\'' && quote != '"') return Error("expected a quoted string");
    const size_t end = s_.find(quote, pos_ + 1);
    if (end == absl::string_view::npos) return Error("unterminated string");
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }
  absl::StatusOr<bool> ParseBool() {
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    return Error("'fortran_order' must be True or False");
  }
  absl::StatusOr<Dims> ParseTuple() {
    if (!Consume('(')) return Error("'shape' must be a tuple");
    Dims dims;
    while (true) {
      SkipSpace();
      if (Consume(')')) break;
      if (!absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
        return Error("'shape' must hold non-negative integers");
      }
      int64_t v = 0;
      while (absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
        if (v > (int64_t{1} << 50)) return Error("a 'shape' extent is too large");
        v = v * 10 + (s_[pos_++] - '0');
      }
      Consume('L');  // Python 2 long literals
      dims.push_back(v);
      SkipSpace();
      if (Consume(')')) break;
      if (!Consume(',')) return Error("expected ',' or ')' in 'shape'");
    }
    return dims;
  }

  absl::string_view s_;
  absl::string_view source_;
  size_t pos_ = 0;
};

absl::StatusOr<DType> DTypeFromDescr(absl::string_view descr, absl::string_view source) {
  if (descr.size() >= 2) {
    const char order = descr[0];
    const absl::string_view code = descr.substr(1);
    for (const NpyType& nt : kTypes) {
      if (code != nt.code) continue;
      const bool one_byte = DTypeSize(nt.dtype) == 1;
      if (order == '<' || (order == '|' && one_byte) || (order == '>' && one_byte)) {
        return nt.dtype;
      }
      if (order == '>') {
        return absl::UnimplementedError(absl::StrCat(source, ": big-endian .npy data ('", descr,
                                                     "') is not supported; save it little-endian "
                                                     "(arr.astype(arr.dtype.newbyteorder('<')))"));
      }
    }
  }
  return absl::UnimplementedError(absl::StrCat(
      source, ": .npy dtype '", descr,
      "' is not supported (use one of <f4 <f2 <f8 <i1 |u1 <i2 <u2 <i4 <u4 <i8 <u8 |b1)"));
}

uint32_t ReadLittleEndian(absl::string_view bytes, size_t offset, size_t size) {
  uint32_t v = 0;
  for (size_t i = 0; i < size; ++i) {
    v |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[offset + i])) << (8 * i);
  }
  return v;
}

std::string ShapeLiteral(const Dims& dims) {
  if (dims.size() == 1) return absl::StrCat("(", dims[0], ",)");
  return absl::StrCat("(", absl::StrJoin(dims, ", "), ")");
}

std::atomic<int> temp_counter{0};

}  // namespace

absl::StatusOr<Tensor> ParseNpy(absl::string_view bytes, absl::string_view source) {
  if (bytes.size() < kMagicSize + 4 || bytes.substr(0, kMagicSize) != kMagic) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": not a .npy file (missing the \\x93NUMPY magic)"));
  }
  const int major = static_cast<uint8_t>(bytes[kMagicSize]);
  if (major < 1 || major > 3) {
    return absl::UnimplementedError(
        absl::StrCat(source, ": unsupported .npy format version ", major, ".x"));
  }
  const size_t len_size = major == 1 ? 2 : 4;
  const size_t header_start = kMagicSize + 2 + len_size;
  if (bytes.size() < header_start) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": truncated .npy header"));
  }
  const size_t header_len = ReadLittleEndian(bytes, kMagicSize + 2, len_size);
  if (bytes.size() - header_start < header_len) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": truncated .npy header (needs ",
                                                   header_len, " bytes, file has ",
                                                   bytes.size() - header_start, ")"));
  }
  QCC_ASSIGN_OR_RETURN(Header h,
                       HeaderParser(bytes.substr(header_start, header_len), source).Parse());
  QCC_ASSIGN_OR_RETURN(DType dtype, DTypeFromDescr(h.descr, source));
  if (*h.fortran_order) {
    return absl::UnimplementedError(
        absl::StrCat(source,
                     ": Fortran-order .npy data is not supported; save a C-order array "
                     "(np.save(path, np.ascontiguousarray(arr)))"));
  }
  const absl::string_view data = bytes.substr(header_start + header_len);
  const size_t item = DTypeSize(dtype);
  uint64_t expected = item;
  for (int64_t d : *h.shape) {
    if (__builtin_mul_overflow(expected, static_cast<uint64_t>(d), &expected)) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": .npy shape ", DimsToString(*h.shape), " is too large"));
    }
  }
  if (data.size() < expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": truncated .npy data: shape ", DimsToString(*h.shape), " of ",
                     h.descr, " needs ", expected, " bytes, file has ", data.size()));
  }
  if (data.size() > expected) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", data.size() - expected,
                                                   " unexpected bytes after the .npy data"));
  }
  Tensor t(dtype, *h.shape);
  if (expected > 0) std::memcpy(t.raw(), data.data(), expected);
  if (dtype == DType::kBool) {
    uint8_t* p = t.data<uint8_t>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = p[i] != 0;
  }
  return t;
}

absl::StatusOr<Tensor> ReadNpy(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) {
    return absl::NotFoundError(absl::StrCat("'", path, "': no such file"));
  }
  if (std::filesystem::is_directory(status)) {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' is a directory, not a .npy file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::PermissionDeniedError(
        absl::StrCat("'", path, "': cannot open (", std::strerror(errno), ")"));
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::DataLossError(absl::StrCat("'", path, "': read error"));
  return ParseNpy(bytes, absl::StrCat("'", path, "'"));
}

absl::StatusOr<std::string> EncodeNpy(const Tensor& t) {
  const std::optional<absl::string_view> code = NpyCode(t.dtype());
  if (!code) {
    return absl::UnimplementedError(
        absl::StrCat("dtype ", DTypeName(t.dtype()), " has no NumPy equivalent for .npy"));
  }
  const char order = DTypeSize(t.dtype()) == 1 ? '|' : '<';
  std::string dict =
      absl::StrCat("{'descr': '", std::string(1, order), *code,
                   "', 'fortran_order': False, 'shape': ", ShapeLiteral(t.dims()), ", }");
  // Pad with spaces and a final newline so that the data starts 64-byte aligned (as NumPy does).
  int major = 1;
  size_t prefix = kMagicSize + 2 + 2;
  if (prefix + dict.size() + 1 > 65535) {
    major = 2;
    prefix = kMagicSize + 2 + 4;
  }
  const size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict.push_back('\n');
  const uint32_t header_len = static_cast<uint32_t>(dict.size());
  std::string out(kMagic, kMagicSize);
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  for (size_t i = 0; i < prefix - kMagicSize - 2; ++i) {
    out.push_back(static_cast<char>((header_len >> (8 * i)) & 0xff));
  }
  out += dict;
  out.append(static_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

absl::Status WriteNpy(const std::string& path, const Tensor& t) {
  QCC_ASSIGN_OR_RETURN(std::string bytes, EncodeNpy(t));
  const std::string tmp =
      absl::StrCat(path, ".tmp.", static_cast<int64_t>(getpid()), ".", temp_counter++);
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat("'", path, "': cannot create (", std::strerror(errno), ")"));
  }
  const bool wrote = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const int saved_errno = errno;
  if (std::fclose(f) != 0 || !wrote) {
    std::remove(tmp.c_str());
    return absl::DataLossError(
        absl::StrCat("'", path, "': write failed (", std::strerror(saved_errno), ")"));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    std::remove(tmp.c_str());
    return absl::PermissionDeniedError(
        absl::StrCat("'", path, "': cannot rename into place (", std::strerror(rename_errno), ")"));
  }
  return absl::OkStatus();
}

}  // namespace qcc
