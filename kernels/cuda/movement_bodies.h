// Data-movement kernel bodies of the CUDA backend: Transpose, Slice, Pad, Concat, QConcat and
// the NCHW <-> NHWC layout changes. Elements are moved as 1, 2, 4 or 8-byte words, never
// converted (except QConcat's rescale). One index per output element (Concat / QConcat: per
// element of one input). See launch.h for how bodies run.
//
// Bit-identical to kernels/cpu/movement.h (TransposeBytes, IndexedCopy, ConcatBytes)
// and runtime's QConcat (tests/backend_cuda/movement_bodies_test.cc).
#ifndef QCC_KERNELS_CUDA_MOVEMENT_BODIES_H_
#define QCC_KERNELS_CUDA_MOVEMENT_BODIES_H_

#include <cstdint>

#include "kernels/cuda/elementwise_bodies.h"  // kMaxBodyRank
#include "kernels/cuda/index_math.h"
#include "support/float16.h"
#include "support/quantize.h"

namespace qcc::cuda {

/// Copies element `src_index` of `src` to element `dst_index` of `dst`, elements of
/// `elem_size` bytes (1, 2, 4 or 8; both buffers aligned to it, as every tensor buffer is).
QCC_HOST_DEVICE inline void CopyElement(const void* src, int64_t src_index, void* dst,
                                        int64_t dst_index, int32_t elem_size) {
  switch (elem_size) {
    case 1:
      static_cast<uint8_t*>(dst)[dst_index] = static_cast<const uint8_t*>(src)[src_index];
      break;
    case 2:
      static_cast<uint16_t*>(dst)[dst_index] = static_cast<const uint16_t*>(src)[src_index];
      break;
    case 4:
      static_cast<uint32_t*>(dst)[dst_index] = static_cast<const uint32_t*>(src)[src_index];
      break;
    default:
      static_cast<uint64_t*>(dst)[dst_index] = static_cast<const uint64_t*>(src)[src_index];
      break;
  }
}

/// Writes the low `elem_size` bytes of `bits` as element `index` of `dst` (little-endian: the
/// element's own bit pattern).
QCC_HOST_DEVICE inline void StoreElementBits(void* dst, int64_t index, uint64_t bits,
                                             int32_t elem_size) {
  switch (elem_size) {
    case 1:
      static_cast<uint8_t*>(dst)[index] = static_cast<uint8_t>(bits);
      break;
    case 2:
      static_cast<uint16_t*>(dst)[index] = static_cast<uint16_t>(bits);
      break;
    case 4:
      static_cast<uint32_t*>(dst)[index] = static_cast<uint32_t>(bits);
      break;
    default:
      static_cast<uint64_t*>(dst)[index] = bits;
      break;
  }
}

// ---- Transpose and Slice: a strided gather ---------------------------------------------------

/// y[i] = x[in_offset + sum_k c_k * in_strides[k]], where (c_0, .., c_{rank-1}) is i's
/// row-major coordinate over out_dims: n = output element count; rank in [0, 6] (0: one
/// element); strides in elements, may be negative (Slice with negative steps) or 0.
/// Transpose and Slice are this body with the Args of MakeTransposeArgs / MakeSliceArgs.
struct StridedCopyArgs {
  const void* x;
  void* y;
  int32_t elem_size;  // 1, 2, 4 or 8 bytes
  int32_t rank;
  int64_t in_offset;  // elements
  int64_t out_dims[kMaxBodyRank];
  int64_t in_strides[kMaxBodyRank];
};
struct StridedCopyBody {
  static QCC_HOST_DEVICE void Run(const StridedCopyArgs& a, int64_t i) {
    int64_t src = a.in_offset, rest = i;
    for (int k = a.rank - 1; k >= 0; --k) {
      const QuotRem c = DivRem(rest, a.out_dims[k]);
      src += c.rem * a.in_strides[k];
      rest = c.quot;
    }
    CopyElement(a.x, src, a.y, i, a.elem_size);
  }
};
using TransposeBody = StridedCopyBody;
using SliceBody = StridedCopyBody;

/// Transpose of a row-major x with dims in_dims[0..rank): output axis k is input axis perm[k]
/// (runtime's TransposeStepParams). Returns false when rank > 6 or perm is not a permutation.
/// Launch over n = product of in_dims.
QCC_HOST_DEVICE inline bool MakeTransposeArgs(const int64_t* in_dims, int rank, const int64_t* perm,
                                              int32_t elem_size, const void* x, void* y,
                                              StridedCopyArgs* a) {
  if (rank < 0 || rank > kMaxBodyRank) return false;
  int64_t in_strides[kMaxBodyRank];
  int64_t s = 1;
  for (int k = rank - 1; k >= 0; --k) {
    in_strides[k] = s;
    s *= in_dims[k];
  }
  unsigned seen = 0;
  for (int k = 0; k < rank; ++k) {
    if (perm[k] < 0 || perm[k] >= rank || (seen >> perm[k] & 1u) != 0) return false;
    seen |= 1u << perm[k];
    a->out_dims[k] = in_dims[perm[k]];
    a->in_strides[k] = in_strides[perm[k]];
  }
  a->x = x;
  a->y = y;
  a->elem_size = elem_size;
  a->rank = rank;
  a->in_offset = 0;
  return true;
}

/// Slice of a row-major x (dims in_dims) into y (dims out_dims, same rank): y's coordinate c_k
/// reads x's starts[k] + c_k * steps[k] (runtime's SliceStepParams: normalised, in range,
/// steps non-zero and possibly negative). Returns false when rank > 6. Launch over n = product
/// of out_dims.
QCC_HOST_DEVICE inline bool MakeSliceArgs(const int64_t* in_dims, const int64_t* out_dims, int rank,
                                          const int64_t* starts, const int64_t* steps,
                                          int32_t elem_size, const void* x, void* y,
                                          StridedCopyArgs* a) {
  if (rank < 0 || rank > kMaxBodyRank) return false;
  int64_t s = 1, offset = 0;
  for (int k = rank - 1; k >= 0; --k) {
    a->out_dims[k] = out_dims[k];
    a->in_strides[k] = steps[k] * s;
    offset += starts[k] * s;
    s *= in_dims[k];
  }
  a->x = x;
  a->y = y;
  a->elem_size = elem_size;
  a->rank = rank;
  a->in_offset = offset;
  return true;
}

// ---- Pad (constant) -------------------------------------------------------------------------

/// Constant Pad: n = output element count; i = output row-major index over out_dims with
/// coordinate c_k; y[i] = x[c - pad_begin] when every c_k - pad_begin[k] lies in [0, in_dims[k]),
/// else the fill element. pad_begin[k] = runtime's pads[k] (non-negative; out_dims[k] =
/// in_dims[k] + pads[k] + pads[k + rank]). fill_bits = the fill element's bit pattern in its low
/// elem_size bytes: f32 BitCast<uint32_t>(value), f16 FloatToHalf(value), int8 uint8_t(int_value),
/// int32/int64 the two's complement int_value (PadFillBits computes it for f32/f16/int8).
struct PadArgs {
  const void* x;
  void* y;
  int32_t elem_size;  // 1, 2, 4 or 8
  int32_t rank;       // [0, 6]
  uint64_t fill_bits;
  int64_t in_dims[kMaxBodyRank];
  int64_t out_dims[kMaxBodyRank];
  int64_t pad_begin[kMaxBodyRank];
};
struct PadBody {
  static QCC_HOST_DEVICE void Run(const PadArgs& a, int64_t i) {
    int64_t src = 0, stride = 1, rest = i;
    for (int k = a.rank - 1; k >= 0; --k) {
      const QuotRem q = DivRem(rest, a.out_dims[k]);
      const int64_t c = q.rem - a.pad_begin[k];
      rest = q.quot;
      if (c < 0 || c >= a.in_dims[k]) {
        StoreElementBits(a.y, i, a.fill_bits, a.elem_size);
        return;
      }
      src += c * stride;
      stride *= a.in_dims[k];
    }
    CopyElement(a.x, src, a.y, i, a.elem_size);
  }
};

/// Pad fill bits for the dtypes quantized graphs pad: elem_size 4 -> the float `value`'s bits,
/// 2 -> FloatToHalf(value) (f16), 1 -> int8 `int_value`; 8 -> int_value (int64).
QCC_HOST_DEVICE inline uint64_t PadFillBits(int32_t elem_size, float value, int64_t int_value) {
  switch (elem_size) {
    case 1:
      return static_cast<uint8_t>(static_cast<int8_t>(int_value));
    case 2:
      return FloatToHalf(value);
    case 4:
      return BitCast<uint32_t>(value);
    default:
      return static_cast<uint64_t>(int_value);
  }
}

// ---- Concat and QConcat ---------------------------------------------------------------------

/// Concat, one launch per input: the input is [outer, chunk] (outer = product of the axes
/// before the concat axis, chunk = its elements from the axis on), the output [outer, out_row]
/// (out_row = sum of the inputs' chunks); this input's rows go to columns [offset, offset +
/// chunk) of each output row (offset = sum of the previous inputs' chunks). n = outer * chunk;
/// i = index into the input; y[(i / chunk) * out_row + offset + i % chunk] = x[i].
struct ConcatArgs {
  const void* x;
  void* y;
  int32_t elem_size;  // 1, 2, 4 or 8
  int64_t chunk;
  int64_t out_row;
  int64_t offset;
};
struct ConcatBody {
  static QCC_HOST_DEVICE void Run(const ConcatArgs& a, int64_t i) {
    const QuotRem oj = DivRem(i, a.chunk);
    const int64_t o = oj.quot, j = oj.rem;
    CopyElement(a.x, i, a.y, o * a.out_row + a.offset + j, a.elem_size);
  }
};

/// QConcat, one launch per input; layout as ConcatArgs with int8 elements. The value is
/// RescaleValue(x, zp_in, multiplier, zp_out, -128, 127), or a plain copy when multiplier is
/// 1.0f and zp_in == zp_out, as runtime's QConcat decides (runtime's QConcatStepParams gives
/// multipliers[k], zp_in[k], zp_out for input k).
struct QConcatArgs {
  const int8_t* x;
  int8_t* y;
  int64_t chunk;
  int64_t out_row;
  int64_t offset;
  int32_t zp_in;
  float multiplier;
  int32_t zp_out;
};
struct QConcatBody {
  static QCC_HOST_DEVICE void Run(const QConcatArgs& a, int64_t i) {
    const QuotRem oj = DivRem(i, a.chunk);
    const int64_t o = oj.quot, j = oj.rem;
    const int8_t v = a.x[i];
    a.y[o * a.out_row + a.offset + j] =
        (a.multiplier == 1.0f && a.zp_in == a.zp_out)
            ? v
            : RescaleValue(v, a.zp_in, a.multiplier, a.zp_out, kInt8Min, kInt8Max);
  }
};

// ---- Layout changes -------------------------------------------------------------------------

/// NCHW <-> NHWC for one tensor of logical dims [n, c, h, w]: n_elems = n * c * h * w; i =
/// the OUTPUT's index. NchwToNhwc: y[((b * h + p) * w + q) * c + ch] = x[((b * c + ch) * h + p) *
/// w + q]; NhwcToNchw the inverse. elem_size 1 (int8), 2 (f16) or 4 (f32).
struct LayoutArgs {
  const void* x;
  void* y;
  int32_t elem_size;
  int64_t n, c, h, w;
};
struct NchwToNhwcBody {
  static QCC_HOST_DEVICE void Run(const LayoutArgs& a, int64_t i) {
    // i = ((b * h + p) * w + q) * c + ch
    const QuotRem t = DivRem(i, a.c);
    const QuotRem b_hw = DivRem(t.quot, a.h * a.w);
    const int64_t ch = t.rem, hw = b_hw.rem, b = b_hw.quot;
    CopyElement(a.x, (b * a.c + ch) * (a.h * a.w) + hw, a.y, i, a.elem_size);
  }
};
struct NhwcToNchwBody {
  static QCC_HOST_DEVICE void Run(const LayoutArgs& a, int64_t i) {
    // i = ((b * c + ch) * h + p) * w + q
    const QuotRem t = DivRem(i, a.h * a.w);
    const QuotRem b_ch = DivRem(t.quot, a.c);
    const int64_t hw = t.rem, ch = b_ch.rem, b = b_ch.quot;
    CopyElement(a.x, (b * a.h * a.w + hw) * a.c + ch, a.y, i, a.elem_size);
  }
};

}  // namespace qcc::cuda

#endif  // QCC_KERNELS_CUDA_MOVEMENT_BODIES_H_
