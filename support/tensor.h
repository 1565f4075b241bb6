// Tensor: a dense, row-major, host-memory array with an element type and a concrete shape.
#ifndef QCC_SUPPORT_TENSOR_H_
#define QCC_SUPPORT_TENSOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "support/dtype.h"

namespace qcc {

/// A concrete shape: one non-negative extent per axis (rank 0 is a scalar).
using Dims = std::vector<int64_t>;

/// Product of the extents (1 for a scalar).
int64_t NumElements(absl::Span<const int64_t> dims);
/// "[2,3,4]".
std::string DimsToString(absl::Span<const int64_t> dims);
/// Row-major strides in elements.
Dims RowMajorStrides(absl::Span<const int64_t> dims);

/// A dense tensor. Copies share the storage (like a shared_ptr); use Clone() for a deep copy.
/// Storage is 64-byte aligned and zero-initialised on allocation.
class Tensor {
 public:
  /// An empty, undefined tensor (dtype kUndefined), used for omitted optional inputs.
  Tensor() = default;
  /// Allocates a zero-filled tensor.
  Tensor(DType dtype, Dims dims);

  /// A tensor of `dims` over existing storage of at least nbytes() bytes, 64-byte aligned
  /// (contents as they are: used to recycle buffers).
  Tensor(DType dtype, Dims dims, std::shared_ptr<uint8_t> storage);

  /// A scalar or 1-D tensor holding `values`.
  template <typename T>
  static Tensor FromVector(DType dtype, Dims dims, const std::vector<T>& values);

  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Dims& dims() const { return dims_; }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  int64_t dim(int64_t axis) const { return dims_[axis]; }
  int64_t numel() const { return NumElements(dims_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * DTypeSize(dtype_); }

  void* raw() { return data_.get(); }
  const void* raw() const { return data_.get(); }
  template <typename T>
  T* data() {
    return static_cast<T*>(raw());
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(raw());
  }

  /// The storage, shared with every copy of this tensor.
  const std::shared_ptr<uint8_t>& storage() const { return data_; }
  /// Bytes the storage of a tensor of `nbytes` bytes occupies (rounded up to 64).
  static size_t StorageBytes(size_t nbytes) { return nbytes == 0 ? 64 : (nbytes + 63) / 64 * 64; }
  /// Allocates storage of StorageBytes(nbytes) bytes, 64-byte aligned, uninitialised.
  static std::shared_ptr<uint8_t> AllocateStorage(size_t nbytes);

  /// Same storage, another shape with the same element count.
  Tensor Reshaped(Dims dims) const;
  /// A deep copy.
  Tensor Clone() const;
  /// True when both tensors have the same dtype, dims and bytes.
  bool BitwiseEquals(const Tensor& other) const;

  /// Element `i` converted to double / int64 (any numeric dtype).
  double GetAsDouble(int64_t i) const;
  int64_t GetAsInt64(int64_t i) const;
  /// All elements as int64 (for shape-like tensors).
  std::vector<int64_t> ToInt64Vector() const;
  /// All elements as float.
  std::vector<float> ToFloatVector() const;

 private:
  DType dtype_ = DType::kUndefined;
  Dims dims_;
  std::shared_ptr<uint8_t> data_;
};

/// Converts between any two numeric dtypes with ONNX Cast semantics (float to int truncates
/// toward zero, to bool is `!= 0`, fp16/bf16 round to nearest even).
Tensor CastTensor(const Tensor& t, DType to);

template <typename T>
Tensor Tensor::FromVector(DType dtype, Dims dims, const std::vector<T>& values) {
  Tensor t(dtype, std::move(dims));
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < t.numel(); ++i) {
    t.data<T>()[i] = values[i];
  }
  return t;
}

}  // namespace qcc

#endif  // QCC_SUPPORT_TENSOR_H_
