// ONNX TensorProto <-> qcc Tensor, for initializers and for `.pb` test data.
#ifndef QCC_FRONTEND_TENSOR_PROTO_H_
#define QCC_FRONTEND_TENSOR_PROTO_H_

#include <string>

#include "absl/status/statusor.h"
#include "support/tensor.h"

namespace onnx {
class TensorProto;
}  // namespace onnx

namespace qcc::frontend {

/// Maps an ONNX TensorProto data type to a DType; error for types qcc does not hold (string,
/// complex).
absl::StatusOr<DType> DTypeFromOnnx(int onnx_type);
/// The ONNX data type of `t`.
int DTypeToOnnx(DType t);

/// Decodes a TensorProto in any storage form: typed fields (float_data, int32_data holding
/// fp16/bf16/int8/bool, int64_data, double_data, uint64_data), raw_data (little-endian), or
/// external data (a file relative to `base_dir`, with offset and length).
absl::StatusOr<Tensor> TensorFromProto(const onnx::TensorProto& proto, const std::string& base_dir);

/// Encodes `t` as a TensorProto with raw_data.
void TensorToProto(const Tensor& t, const std::string& name, onnx::TensorProto* proto);

/// Reads a serialized TensorProto file (the ONNX test-data `.pb` layout).
absl::StatusOr<Tensor> ReadTensorProtoFile(const std::string& path, std::string* name = nullptr);
/// Writes `t` as a serialized TensorProto file, atomically (temp file + rename).
absl::Status WriteTensorProtoFile(const std::string& path, const Tensor& t,
                                  const std::string& name);

}  // namespace qcc::frontend

#endif  // QCC_FRONTEND_TENSOR_PROTO_H_
