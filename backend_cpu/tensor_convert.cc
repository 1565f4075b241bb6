#include "backend_cpu/tensor_convert.h"

#include <cstring>
#include <memory>

#include "kernels/cpu/qelementwise.h"  // ConvertF16ToF32, ConvertF32ToF16
#include "support/memory.h"

namespace qcc::cpu {

namespace {

/// A tensor whose elements the caller writes next: only the storage's padding past them is
/// zeroed (Tensor(dtype, dims) zeroes all of it, a second pass over every converted tensor).
Tensor TensorToOverwrite(DType dtype, const Dims& dims) {
  const size_t bytes = DenseBytes(dtype, dims).value_or(0);
  std::shared_ptr<uint8_t> storage = Tensor::AllocateStorage(bytes);
  std::memset(storage.get() + bytes, 0, Tensor::StorageBytes(bytes) - bytes);
  return Tensor(dtype, dims, std::move(storage));
}

}  // namespace

Tensor WidenToF32(const Tensor& t, int num_threads) {
  if (t.dtype() != DType::kFloat16) return CastTensor(t, DType::kFloat32);
  Tensor out = TensorToOverwrite(DType::kFloat32, t.dims());
  ConvertF16ToF32(t.numel(), t.data<uint16_t>(), out.data<float>(), num_threads);
  return out;
}

Tensor NarrowFromF32(const Tensor& t, DType to, int num_threads) {
  if (t.dtype() != DType::kFloat32 || to != DType::kFloat16) return CastTensor(t, to);
  Tensor out = TensorToOverwrite(DType::kFloat16, t.dims());
  ConvertF32ToF16(t.numel(), t.data<float>(), out.data<uint16_t>(), num_threads);
  return out;
}

}  // namespace qcc::cpu
