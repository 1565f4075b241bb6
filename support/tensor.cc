#include "support/tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "absl/strings/str_join.h"
#include "support/float16.h"

namespace qcc {

int64_t NumElements(absl::Span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string DimsToString(absl::Span<const int64_t> dims) {
  return "[" + absl::StrJoin(dims, ",") + "]";
}

Dims RowMajorStrides(absl::Span<const int64_t> dims) {
  Dims strides(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return strides;
}

std::shared_ptr<uint8_t> Tensor::AllocateStorage(size_t nbytes) {
  const size_t rounded = StorageBytes(nbytes);
  void* p = std::aligned_alloc(64, rounded);
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); });
}

Tensor::Tensor(DType dtype, Dims dims) : dtype_(dtype), dims_(std::move(dims)) {
  data_ = AllocateStorage(nbytes());
  std::memset(data_.get(), 0, StorageBytes(nbytes()));
}

Tensor::Tensor(DType dtype, Dims dims, std::shared_ptr<uint8_t> storage)
    : dtype_(dtype), dims_(std::move(dims)), data_(std::move(storage)) {}

Tensor Tensor::Reshaped(Dims dims) const {
  Tensor t = *this;
  t.dims_ = std::move(dims);
  return t;
}

Tensor Tensor::Clone() const {
  if (!defined()) return Tensor();
  Tensor t(dtype_, dims_);
  if (nbytes() > 0) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

bool Tensor::BitwiseEquals(const Tensor& other) const {
  return dtype_ == other.dtype_ && dims_ == other.dims_ &&
         (nbytes() == 0 || std::memcmp(raw(), other.raw(), nbytes()) == 0);
}

double Tensor::GetAsDouble(int64_t i) const {
  switch (dtype_) {
    case DType::kFloat32:
      return data<float>()[i];
    case DType::kFloat16:
      return HalfToFloat(data<uint16_t>()[i]);
    case DType::kBFloat16:
      return BFloat16ToFloat(data<uint16_t>()[i]);
    case DType::kFloat64:
      return data<double>()[i];
    case DType::kInt8:
      return data<int8_t>()[i];
    case DType::kUInt8:
      return data<uint8_t>()[i];
    case DType::kInt16:
      return data<int16_t>()[i];
    case DType::kUInt16:
      return data<uint16_t>()[i];
    case DType::kInt32:
      return data<int32_t>()[i];
    case DType::kUInt32:
      return data<uint32_t>()[i];
    case DType::kInt64:
      return static_cast<double>(data<int64_t>()[i]);
    case DType::kUInt64:
      return static_cast<double>(data<uint64_t>()[i]);
    case DType::kBool:
      return data<uint8_t>()[i] ? 1.0 : 0.0;
    case DType::kFloat8E4M3:
    case DType::kUndefined:
      return 0.0;
  }
  return 0.0;
}

namespace {

/// `d` truncated toward zero, saturating: a float outside int64's range (a hostile model's axes,
/// say) converts to the nearest end and NaN to 0, where the plain cast is undefined.
int64_t SaturatingInt64(double d) {
  if (std::isnan(d)) return 0;
  if (d >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
  if (d < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(d);
}

}  // namespace

int64_t Tensor::GetAsInt64(int64_t i) const {
  switch (dtype_) {
    case DType::kInt64:
      return data<int64_t>()[i];
    case DType::kUInt64:
      return static_cast<int64_t>(data<uint64_t>()[i]);
    case DType::kInt32:
      return data<int32_t>()[i];
    default:
      return SaturatingInt64(GetAsDouble(i));
  }
}

std::vector<int64_t> Tensor::ToInt64Vector() const {
  std::vector<int64_t> v(numel());
  for (int64_t i = 0; i < numel(); ++i) v[i] = GetAsInt64(i);
  return v;
}

std::vector<float> Tensor::ToFloatVector() const {
  std::vector<float> v(numel());
  for (int64_t i = 0; i < numel(); ++i) v[i] = static_cast<float>(GetAsDouble(i));
  return v;
}

namespace {

template <typename T>
void StoreAll(const Tensor& src, T* dst) {
  const int64_t n = src.numel();
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_integral_v<T>) {
      if (IsFloat(src.dtype())) {
        const double d = src.GetAsDouble(i);
        dst[i] = std::isfinite(d) ? static_cast<T>(SaturatingInt64(d)) : T{0};
      } else {
        dst[i] = static_cast<T>(src.GetAsInt64(i));
      }
    } else {
      dst[i] = static_cast<T>(src.GetAsDouble(i));
    }
  }
}

}  // namespace

Tensor CastTensor(const Tensor& t, DType to) {
  if (t.dtype() == to) return t;
  Tensor out(to, t.dims());
  const int64_t n = t.numel();
  switch (to) {
    case DType::kFloat32:
      if (t.dtype() == DType::kFloat16) {  // the hot case: fp16 models computed in fp32
        const uint16_t* src = t.data<uint16_t>();
        float* dst = out.data<float>();
        for (int64_t i = 0; i < n; ++i) dst[i] = HalfToFloat(src[i]);
      } else if (t.dtype() == DType::kInt64) {
        for (int64_t i = 0; i < n; ++i)
          out.data<float>()[i] = static_cast<float>(t.data<int64_t>()[i]);
      } else {
        StoreAll(t, out.data<float>());
      }
      break;
    case DType::kFloat64:
      StoreAll(t, out.data<double>());
      break;
    case DType::kFloat16:
      if (t.dtype() == DType::kFloat32) {
        const float* src = t.data<float>();
        uint16_t* dst = out.data<uint16_t>();
        for (int64_t i = 0; i < n; ++i) dst[i] = FloatToHalf(src[i]);
        break;
      }
      for (int64_t i = 0; i < n; ++i) {
        out.data<uint16_t>()[i] = FloatToHalf(static_cast<float>(t.GetAsDouble(i)));
      }
      break;
    case DType::kBFloat16:
      for (int64_t i = 0; i < n; ++i) {
        out.data<uint16_t>()[i] = FloatToBFloat16(static_cast<float>(t.GetAsDouble(i)));
      }
      break;
    case DType::kInt8:
      StoreAll(t, out.data<int8_t>());
      break;
    case DType::kUInt8:
      StoreAll(t, out.data<uint8_t>());
      break;
    case DType::kInt16:
      StoreAll(t, out.data<int16_t>());
      break;
    case DType::kUInt16:
      StoreAll(t, out.data<uint16_t>());
      break;
    case DType::kInt32:
      StoreAll(t, out.data<int32_t>());
      break;
    case DType::kUInt32:
      StoreAll(t, out.data<uint32_t>());
      break;
    case DType::kInt64:
      StoreAll(t, out.data<int64_t>());
      break;
    case DType::kUInt64:
      StoreAll(t, out.data<uint64_t>());
      break;
    case DType::kBool:
      for (int64_t i = 0; i < n; ++i) out.data<uint8_t>()[i] = t.GetAsDouble(i) != 0.0;
      break;
    case DType::kFloat8E4M3:
    case DType::kUndefined:
      break;
  }
  return out;
}

}  // namespace qcc
