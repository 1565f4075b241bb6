#include "kernels/cpu/movement.h"

#include <emmintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/cpu/nn_parallel.h"
#include "support/tensor.h"

namespace qcc::cpu {
namespace {

/// Copies n elements of type T (a same-sized stand-in for any dtype) from byte offsets `offs`
/// of `in`; a negative offset writes `fill`.
template <typename T>
void GatherRow(const uint8_t* in, const int64_t* offs, int64_t n, const uint8_t* fill_bytes,
               uint8_t* out) {
  T fill;
  std::memcpy(&fill, fill_bytes, sizeof(T));
  T* dst = reinterpret_cast<T*>(out);
  for (int64_t i = 0; i < n; ++i) {
    if (offs[i] < 0) {
      dst[i] = fill;
    } else {
      std::memcpy(&dst[i], in + offs[i], sizeof(T));
    }
  }
}

inline void GatherRowBytes(const uint8_t* in, const int64_t* offs, int64_t n, size_t elem_size,
                           const uint8_t* fill, uint8_t* out) {
  switch (elem_size) {
    case 1:
      return GatherRow<uint8_t>(in, offs, n, fill, out);
    case 2:
      return GatherRow<uint16_t>(in, offs, n, fill, out);
    case 4:
      return GatherRow<uint32_t>(in, offs, n, fill, out);
    case 8:
      return GatherRow<uint64_t>(in, offs, n, fill, out);
    default:
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(out + i * elem_size, offs[i] < 0 ? fill : in + offs[i], elem_size);
      }
  }
}

/// Each of the first (n + 1) / 2 elements of `in` twice, to n elements of `out` (a nearest 2x
/// upsampling's row). Through an integer twice T's width, x * (2^bits + 1) holding x in both
/// halves, so that the loop vectorizes (a widening multiply, where element pairs would need a
/// shuffle); T is uint8_t, uint16_t or uint32_t.
template <typename T, typename Wide>
void RepeatRow2(const uint8_t* in, int64_t n, uint8_t* out) {
  static_assert(sizeof(Wide) == 2 * sizeof(T));
  constexpr Wide kBoth = (Wide{1} << (8 * sizeof(T))) + 1;
  const T* src = reinterpret_cast<const T*>(in);
  Wide* dst = reinterpret_cast<Wide*>(out);
  const int64_t pairs = n / 2;
  for (int64_t i = 0; i < pairs; ++i) dst[i] = static_cast<Wide>(src[i]) * kBoth;
  if (n % 2 != 0) std::memcpy(out + (n - 1) * sizeof(T), src + pairs, sizeof(T));
}

/// RepeatRow2 for any element size.
inline void RepeatRow2Bytes(const uint8_t* in, int64_t n, size_t elem_size, uint8_t* out) {
  switch (elem_size) {
    case 1:
      return RepeatRow2<uint8_t, uint16_t>(in, n, out);
    case 2:
      return RepeatRow2<uint16_t, uint32_t>(in, n, out);
    case 4:
      return RepeatRow2<uint32_t, uint64_t>(in, n, out);
    default:
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(out + i * elem_size, in + i / 2 * elem_size, elem_size);
      }
  }
}

/// Copies n elements of type T lying `stride` elements apart (a same-sized stand-in for any
/// dtype).
template <typename T>
void StridedRow(const uint8_t* in, int64_t stride, int64_t n, uint8_t* out) {
  T* dst = reinterpret_cast<T*>(out);
  const int64_t step = stride * static_cast<int64_t>(sizeof(T));  // may be negative
  for (int64_t i = 0; i < n; ++i) std::memcpy(&dst[i], in + i * step, sizeof(T));
}

/// StridedRow of bytes: memcpy at stride 1; at stride 2, 16 bytes per step: elements 0-7 are
/// the low bytes of the 8 words at 2i, elements 8-15 the high bytes of the 8 words at 2i + 15,
/// so a step reads bytes 2i .. 2i + 30, only within the row's span (16 elements must remain);
/// then 8 per step the same way from two 8-byte loads at 2i and 2i + 7 (bytes 2i .. 2i + 14), so
/// rows of 8 to 15 (an int8 16 x 16 map's x[..., ::2]) are vector steps too.
void StridedRowU8(const uint8_t* in, int64_t stride, int64_t n, uint8_t* out) {
  if (stride == 1) {
    std::memcpy(out, in, static_cast<size_t>(n));
    return;
  }
  int64_t i = 0;
  if (stride == 2) {
    const __m128i low = _mm_set1_epi16(0x00FF);
    for (; i + 16 <= n; i += 16) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i + 15));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                       _mm_packus_epi16(_mm_and_si128(a, low), _mm_srli_epi16(b, 8)));
    }
    for (; i + 8 <= n; i += 8) {
      const __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + 2 * i));
      const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(in + 2 * i + 7));
      // Bytes 0-3 of the pack are a's 4 words, bytes 8-11 b's.
      const __m128i packed = _mm_packus_epi16(_mm_and_si128(a, low), _mm_srli_epi16(b, 8));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i),
                       _mm_shuffle_epi32(packed, _MM_SHUFFLE(3, 1, 2, 0)));
    }
  }
  StridedRow<uint8_t>(in + i * stride, stride, n - i, out + i);
}

/// StridedRow for 4-byte elements: at stride 2, four per step from two 16-byte loads (elements
/// 2i .. 2i + 7, all before the row's last one while i + 4 < n).
inline void StridedRowU32(const uint8_t* in, int64_t stride, int64_t n, uint8_t* out) {
  int64_t i = 0;
  if (stride == 2) {
    const float* f = reinterpret_cast<const float*>(in);
    for (; i + 4 < n; i += 4) {
      const __m128 a = _mm_loadu_ps(f + 2 * i), b = _mm_loadu_ps(f + 2 * i + 4);
      _mm_storeu_ps(reinterpret_cast<float*>(out) + i,
                    _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)));
    }
  }
  StridedRow<uint32_t>(in + i * stride * 4, stride, n - i, out + i * 4);
}

inline void StridedRowBytes(const uint8_t* in, int64_t stride, int64_t n, size_t elem_size,
                            uint8_t* out) {
  switch (elem_size) {
    case 1:
      return StridedRowU8(in, stride, n, out);
    case 2:
      return StridedRow<uint16_t>(in, stride, n, out);
    case 4:
      return StridedRowU32(in, stride, n, out);
    case 8:
      return StridedRow<uint64_t>(in, stride, n, out);
    default:
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(out + i * elem_size, in + i * stride * static_cast<int64_t>(elem_size),
                    elem_size);
      }
  }
}

/// Writes n copies of the element at `fill`.
template <typename T>
void FillRow(uint8_t* out, int64_t n, const uint8_t* fill_bytes) {
  bool one_byte = true;  // every byte of the element the same (zeros, as a Pad's usually are)
  for (size_t i = 1; i < sizeof(T); ++i) one_byte = one_byte && fill_bytes[i] == fill_bytes[0];
  if (one_byte) {
    std::memset(out, fill_bytes[0], static_cast<size_t>(n) * sizeof(T));
    return;
  }
  T fill;
  std::memcpy(&fill, fill_bytes, sizeof(T));
  T* dst = reinterpret_cast<T*>(out);
  for (int64_t i = 0; i < n; ++i) dst[i] = fill;
}

inline void FillRowBytes(uint8_t* out, int64_t n, size_t elem_size, const uint8_t* fill) {
  switch (elem_size) {
    case 1:
      return FillRow<uint8_t>(out, n, fill);
    case 2:
      return FillRow<uint16_t>(out, n, fill);
    case 4:
      return FillRow<uint32_t>(out, n, fill);
    case 8:
      return FillRow<uint64_t>(out, n, fill);
    default:
      for (int64_t i = 0; i < n; ++i) std::memcpy(out + i * elem_size, fill, elem_size);
  }
}

/// How the innermost axis of an IndexedCopy reads its row: one contiguous run (memcpy), an
/// evenly strided run without fill, each of a contiguous run's elements twice (a nearest 2x
/// Resize), or per-element offsets (anything else).
enum class RowKind { kContiguous, kStrided, kRepeat2, kGather };

/// IndexedCopy past its merged runs: the output in rows of the innermost axis. The axis before
/// it (the "middle" one) runs as an inner loop over its offsets, so a row costs an offset add
/// and the copy (CopyRows).
struct RowsPlan {
  // Byte offsets per axis and coordinate (-1: fill); of the innermost axis only the first
  // unless the rows gather.
  std::vector<std::vector<int64_t>> offs;
  RowKind kind;
  int64_t n;            // elements per row
  int64_t elem_stride;  // kStrided: elements of `in` between a row's elements
  int64_t mid_count;    // coordinates of the middle axis (1 for rank 1)
  int64_t rows;
};

/// One row of the plan from `row_in` (its source row's start, before the innermost offsets).
inline void CopyRow(const RowsPlan& pl, size_t elem_size, const uint8_t* row_in,
                    const uint8_t* fill, uint8_t* out) {
  switch (pl.kind) {
    case RowKind::kContiguous:
      std::memcpy(out, row_in + pl.offs.back()[0], static_cast<size_t>(pl.n) * elem_size);
      return;
    case RowKind::kStrided:
      return StridedRowBytes(row_in + pl.offs.back()[0], pl.elem_stride, pl.n, elem_size, out);
    case RowKind::kRepeat2:
      return RepeatRow2Bytes(row_in + pl.offs.back()[0], pl.n, elem_size, out);
    case RowKind::kGather:
      return GatherRowBytes(row_in, pl.offs.back().data(), pl.n, elem_size, fill, out);
  }
}

/// Rows [r_begin, r_end) of the plan. kElemSize: the element size as a constant, so that the
/// per-size switches of the row copies fold away (0: `elem_size`, any size).
template <size_t kElemSize>
void CopyRows(const RowsPlan& pl, size_t elem_size, const uint8_t* src, const uint8_t* fill,
              uint8_t* dst, int64_t r_begin, int64_t r_end) {
  if (kElemSize != 0) elem_size = kElemSize;
  const size_t rank = pl.offs.size();
  const size_t outer = rank >= 2 ? rank - 2 : 0;  // axes before the middle one
  const size_t row_bytes = static_cast<size_t>(pl.n) * elem_size;
  const std::vector<int64_t>* mid = rank >= 2 ? &pl.offs[rank - 2] : nullptr;
  // The outer coordinates of r_begin's group of middle-axis rows.
  std::vector<size_t> index(outer, 0);
  int64_t group = r_begin / pl.mid_count;
  for (size_t k = outer, q = group; k-- > 0;) {
    index[k] = q % pl.offs[k].size();
    q /= pl.offs[k].size();
  }
  for (int64_t r = r_begin; r < r_end; ++group) {
    int64_t base = 0;
    bool valid = true;
    for (size_t k = 0; k < outer; ++k) {
      const int64_t o = pl.offs[k][index[k]];
      valid = valid && o >= 0;
      base += o;
    }
    const int64_t j_end = std::min<int64_t>(pl.mid_count, r_end - group * pl.mid_count);
    const int64_t j_begin = r - group * pl.mid_count;
    for (int64_t j = j_begin; j < j_end; ++j, ++r) {
      const int64_t o = mid != nullptr ? (*mid)[j] : 0;
      uint8_t* row = dst + r * row_bytes;
      if (!valid || o < 0) {
        FillRowBytes(row, pl.n, elem_size, fill);
      } else if (mid != nullptr && j > j_begin && (*mid)[j - 1] == o) {
        // The source row the previous output row came from (a nearest upsampling's repeated
        // rows): that output row, contiguous, rather than the row's gather again.
        std::memcpy(row, row - row_bytes, row_bytes);
      } else {
        CopyRow(pl, elem_size, src + base + o, fill, row);
      }
    }
    for (size_t k = outer; k-- > 0;) {
      if (++index[k] < pl.offs[k].size()) break;
      index[k] = 0;
    }
  }
}

void RowsCopy(absl::Span<const CopyAxis> axes, size_t elem_size, const uint8_t* src,
              const uint8_t* fill, uint8_t* dst, int num_threads) {
  const size_t rank = axes.size();
  RowsPlan pl;
  pl.offs.resize(rank);
  for (size_t k = 0; k + 1 < rank; ++k) {
    const int64_t step = axes[k].in_stride * static_cast<int64_t>(elem_size);
    pl.offs[k].resize(axes[k].source.size());
    for (size_t i = 0; i < pl.offs[k].size(); ++i) {
      const int64_t s = axes[k].source[i];
      pl.offs[k][i] = s < 0 ? -1 : s * step;
    }
  }
  const CopyAxis& last = axes.back();
  pl.n = static_cast<int64_t>(last.source.size());
  const int64_t stride = pl.n > 1 ? last.source[1] - last.source[0] : 1;
  bool strided = last.source[0] >= 0;
  for (int64_t i = 1; strided && i < pl.n; ++i) {
    strided = last.source[i] >= 0 && last.source[i] == last.source[0] + i * stride;
  }
  const bool contiguous = strided && (pl.n == 1 || last.in_stride * stride == 1);
  // Each element of a contiguous run twice: source[i] = source[0] + i / 2.
  bool repeat2 = !strided && last.in_stride == 1 && last.source[0] >= 0;
  for (int64_t i = 1; repeat2 && i < pl.n; ++i) repeat2 = last.source[i] == last.source[0] + i / 2;
  pl.kind = contiguous ? RowKind::kContiguous
            : strided  ? RowKind::kStrided
            : repeat2  ? RowKind::kRepeat2
                       : RowKind::kGather;
  pl.elem_stride = strided ? last.in_stride * stride : 0;
  // The innermost axis's offsets: all of them for a gather, else its first (where a row starts).
  const int64_t last_step = last.in_stride * static_cast<int64_t>(elem_size);
  pl.offs.back().resize(pl.kind == RowKind::kGather ? pl.n : 1);
  for (size_t i = 0; i < pl.offs.back().size(); ++i) {
    pl.offs.back()[i] = last.source[i] < 0 ? -1 : last.source[i] * last_step;
  }
  pl.mid_count = rank >= 2 ? static_cast<int64_t>(axes[rank - 2].source.size()) : 1;
  pl.rows = 1;
  for (size_t k = 0; k + 1 < rank; ++k) pl.rows *= static_cast<int64_t>(axes[k].source.size());
  NnParallelFor(num_threads, pl.rows, pl.n, [&](int64_t r_begin, int64_t r_end) {
    switch (elem_size) {
      case 1:
        return CopyRows<1>(pl, elem_size, src, fill, dst, r_begin, r_end);
      case 2:
        return CopyRows<2>(pl, elem_size, src, fill, dst, r_begin, r_end);
      case 4:
        return CopyRows<4>(pl, elem_size, src, fill, dst, r_begin, r_end);
      case 8:
        return CopyRows<8>(pl, elem_size, src, fill, dst, r_begin, r_end);
      default:
        return CopyRows<0>(pl, elem_size, src, fill, dst, r_begin, r_end);
    }
  });
}

}  // namespace

CopyAxis IdentityAxis(int64_t extent, int64_t in_stride) {
  CopyAxis a;
  a.in_stride = in_stride;
  a.source.resize(extent);
  for (int64_t i = 0; i < extent; ++i) a.source[i] = i;
  return a;
}

void IndexedCopy(absl::Span<const CopyAxis> axes, size_t elem_size, const void* in,
                 const void* fill, void* out, int num_threads) {
  const auto* src = static_cast<const uint8_t*>(in);
  auto* dst = static_cast<uint8_t*>(out);
  const std::vector<uint8_t> zeros(elem_size, 0);
  const auto* fill_bytes = fill != nullptr ? static_cast<const uint8_t*>(fill) : zeros.data();
  const size_t rank = axes.size();
  if (rank == 0) {
    std::memcpy(dst, src, elem_size);
    return;
  }
  for (const CopyAxis& a : axes) {
    if (a.source.empty()) return;
  }
  // Trailing axes that continue one evenly spaced run of the input merge with it: a copy that
  // is one run altogether (a slice of every other column of every row) goes in long pieces,
  // and whole contiguous blocks become one row (a channel Pad of NCHW data copies H * W
  // elements per row, not W).
  const auto is_identity = [](const CopyAxis& a) {
    for (size_t i = 0; i < a.source.size(); ++i) {
      if (a.source[i] != static_cast<int64_t>(i)) return false;
    }
    return true;
  };
  const CopyAxis& inner = axes[rank - 1];
  const int64_t s0 = inner.source[0];
  const int64_t step = inner.source.size() > 1 ? inner.source[1] - s0 : 1;
  bool run = s0 >= 0 && step >= 1;
  for (size_t i = 1; run && i < inner.source.size(); ++i) {
    run = inner.source[i] == s0 + static_cast<int64_t>(i) * step;
  }
  if (run) {
    const int64_t delta = step * inner.in_stride;  // elements of `in` between run elements
    int64_t n = static_cast<int64_t>(inner.source.size());
    size_t keep = rank - 1;
    while (keep > 0 && axes[keep - 1].in_stride == n * delta && is_identity(axes[keep - 1])) {
      n *= static_cast<int64_t>(axes[--keep].source.size());
    }
    if (keep == 0) {
      const uint8_t* first = src + s0 * inner.in_stride * static_cast<int64_t>(elem_size);
      constexpr int64_t kPiece = 1 << 14;
      NnParallelFor(num_threads, (n + kPiece - 1) / kPiece, kPiece, [&](int64_t b, int64_t e) {
        const int64_t begin = b * kPiece, count = std::min(n, e * kPiece) - begin;
        StridedRowBytes(first + begin * delta * static_cast<int64_t>(elem_size), delta, count,
                        elem_size, dst + begin * static_cast<int64_t>(elem_size));
      });
      return;
    }
    if (keep < rank - 1 && s0 == 0 && delta == 1) {
      std::vector<CopyAxis> merged(axes.begin(), axes.begin() + keep);
      merged.push_back(IdentityAxis(n, 1));
      return IndexedCopy(merged, elem_size, in, fill, out, num_threads);
    }
  }
  RowsCopy(axes, elem_size, src, fill_bytes, dst, num_threads);
}

void TransposeBytes(absl::Span<const int64_t> in_dims, absl::Span<const int64_t> perm,
                    size_t elem_size, const void* in, void* out, int num_threads) {
  const Dims strides = RowMajorStrides(in_dims);
  std::vector<CopyAxis> axes;
  axes.reserve(perm.size());
  for (int64_t p : perm) axes.push_back(IdentityAxis(in_dims[p], strides[p]));
  IndexedCopy(axes, elem_size, in, nullptr, out, num_threads);
}

void ConcatBytes(int64_t outer, absl::Span<const int64_t> chunk_bytes,
                 absl::Span<const void* const> inputs, void* out) {
  auto* dst = static_cast<uint8_t*>(out);
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const uint8_t* src = static_cast<const uint8_t*>(inputs[i]) + o * chunk_bytes[i];
      // An input computed in place (already in its slice) is not copied onto itself.
      if (chunk_bytes[i] != 0 && src != dst) std::memcpy(dst, src, chunk_bytes[i]);
      dst += chunk_bytes[i];
    }
  }
}

void SplitBytes(int64_t outer, absl::Span<const int64_t> chunk_bytes, const void* in,
                absl::Span<void* const> outputs) {
  const auto* src = static_cast<const uint8_t*>(in);
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (chunk_bytes[i] == 0) continue;
      std::memcpy(static_cast<uint8_t*>(outputs[i]) + o * chunk_bytes[i], src, chunk_bytes[i]);
      src += chunk_bytes[i];
    }
  }
}

void GatherBytes(int64_t outer, int64_t axis_extent, int64_t inner_bytes,
                 absl::Span<const int64_t> indices, const void* in, void* out) {
  if (inner_bytes == 0) return;
  const auto* src = static_cast<const uint8_t*>(in);
  auto* dst = static_cast<uint8_t*>(out);
  for (int64_t o = 0; o < outer; ++o) {
    const uint8_t* block = src + o * axis_extent * inner_bytes;
    for (int64_t j : indices) {
      std::memcpy(dst, block + j * inner_bytes, inner_bytes);
      dst += inner_bytes;
    }
  }
}

}  // namespace qcc::cpu
