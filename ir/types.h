// Symbolic tensor types: element type plus a shape whose extents may be unknown or named.
#ifndef QCC_IR_TYPES_H_
#define QCC_IR_TYPES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/dtype.h"
#include "support/tensor.h"

namespace qcc::ir {

/// One extent: >= 0 is known; kUnknownDim is unknown; <= -2 is the named symbol
/// `-2 - dim` of the graph's symbol table (e.g. the batch "N"), equal wherever it appears.
using Dim = int64_t;
inline constexpr Dim kUnknownDim = -1;
inline bool IsKnown(Dim d) { return d >= 0; }
inline bool IsSymbol(Dim d) { return d <= -2; }
inline Dim SymbolDim(int index) { return -2 - index; }
inline int SymbolIndex(Dim d) { return static_cast<int>(-2 - d); }

/// How an int8 tensor stands for real numbers: real = (q - zero_point) * scale, scale finite and
/// > 0. Values of an int8 compile's quantized graph carry it (Value::quant, passes/realize_int8.h).
struct QuantParams {
  float scale = 1.0f;
  int32_t zero_point = 0;
};

/// How an int8 weight tensor quantized per output channel stands for real numbers: element i of
/// channel k (index k along `axis`) is q * scales[k], zero point 0.
struct ChannelScales {
  std::vector<float> scales;
  int64_t axis = 0;
};

/// A tensor type. `dims` is nullopt when even the rank is unknown.
struct TensorType {
  DType dtype = DType::kUndefined;
  std::optional<std::vector<Dim>> dims;

  TensorType() = default;
  TensorType(DType t, std::vector<Dim> d) : dtype(t), dims(std::move(d)) {}
  static TensorType UnknownShape(DType t) {
    TensorType tt;
    tt.dtype = t;
    return tt;
  }

  bool has_rank() const { return dims.has_value(); }
  int64_t rank() const { return dims ? static_cast<int64_t>(dims->size()) : -1; }
  /// True when the rank and every extent are known.
  bool IsStatic() const {
    if (!dims) return false;
    for (Dim d : *dims) {
      if (!IsKnown(d)) return false;
    }
    return true;
  }
  /// The extents, all known (only valid when IsStatic()).
  Dims StaticDims() const { return *dims; }
  bool operator==(const TensorType& o) const { return dtype == o.dtype && dims == o.dims; }
};

}  // namespace qcc::ir

#endif  // QCC_IR_TYPES_H_
