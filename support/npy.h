// NumPy .npy files <-> Tensor: the format every Python user can write with `np.save`.
#ifndef QCC_SUPPORT_NPY_H_
#define QCC_SUPPORT_NPY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "support/tensor.h"

namespace qcc {

/// Decodes the bytes of a .npy file (format 1.0, 2.0 or 3.0; C order; dtypes <f4 <f2 <f8 <i1 |u1
/// <i2 <u2 <i4 <u4 <i8 <u8 |b1, little-endian or byte-order free). `source` names the data in
/// errors (InvalidArgument for malformed or truncated data, Unimplemented for Fortran order,
/// big-endian data or other dtypes).
absl::StatusOr<Tensor> ParseNpy(absl::string_view bytes, absl::string_view source);

/// Reads a .npy file; errors name the file.
absl::StatusOr<Tensor> ReadNpy(const std::string& path);

/// Encodes `t` as .npy bytes (format 1.0, or 2.0 when the header needs it). bf16 and fp8 have no
/// NumPy dtype: Unimplemented.
absl::StatusOr<std::string> EncodeNpy(const Tensor& t);

/// Writes `t` as a .npy file, atomically (a temporary file in the same folder, then rename).
absl::Status WriteNpy(const std::string& path, const Tensor& t);

}  // namespace qcc

#endif  // QCC_SUPPORT_NPY_H_
