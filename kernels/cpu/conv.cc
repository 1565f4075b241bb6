#include "kernels/cpu/conv.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "kernels/cpu/conv_internal.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/lane_masks.h"
#include "kernels/cpu/nn_parallel.h"
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/qelementwise.h"

namespace qcc::cpu {

namespace {

// sgemm is as efficient per image as over batched images once an image has a few dozen output
// positions, and per-image products write straight into y; so images are batched into one
// sgemm only for tiny feature maps. An image whose im2col matrix is larger than about the L2
// cache is cut into bands of output rows instead.
constexpr int64_t kTargetColumns = 64;
constexpr int64_t kMaxColFloats = int64_t{1} << 19;

/// How ConvF32Im2col cuts the work: `images` per sgemm, or (when images == 1) bands of
/// `band_rows` output rows (a row is the innermost output axis).
struct Tiling {
  int64_t images = 1;
  int64_t band_rows = 1;
};

Tiling ChooseTiling(const ConvF32Params& p) {
  const int64_t k = p.in_channels / p.groups * p.kernel_size();
  const int64_t sp = std::max<int64_t>(1, p.out_size());
  const int64_t rows = p.out[0] * p.out[1];
  Tiling t;
  t.band_rows = std::max<int64_t>(1, rows);
  if (p.IsPointwise()) return t;
  if (k * sp > kMaxColFloats) {
    t.band_rows = std::clamp<int64_t>(kMaxColFloats / std::max<int64_t>(1, k * p.out[2]), 1, rows);
    return t;
  }
  int64_t b = std::max<int64_t>(1, kTargetColumns / sp);
  b = std::min(b, std::max<int64_t>(1, kMaxColFloats / (k * sp)));
  t.images = std::max<int64_t>(1, std::min(b, p.batch));
  return t;
}

using internal::ValidRange;

/// dst[0, n) = 0.
inline void Zero(float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = 0.0f;
}

/// dst[i] = src[2 * i] for i < n, 16 at a time: the even lanes of two loads, nothing read past
/// src[2 * (n - 1)]. (A stride-2 im2col row; the scalar loop was most of a stride-2 stem's time.)
__attribute__((target("avx512f"))) void CopyEvenAvx512(const float* src, int64_t n, float* dst) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, EvenFloats(src + 2 * i, SpanMasksOf(31)));
  if (i < n) {  // lane l reads src[2 (i + l)], the last one 2 (n - 1)
    _mm512_mask_storeu_ps(dst + i, LowBits16(n - i),
                          EvenFloats(src + 2 * i, SpanMasksOf(2 * (n - i) - 1)));
  }
}

/// Where one kernel tap reads: input offsets and the output ranges that fall inside the input.
struct Tap {
  int64_t kz = 0, iy0 = 0, ix0 = 0;
  int64_t lo = 0, hi = 0;    // valid output columns
  int64_t ylo = 0, yhi = 0;  // valid output rows (within one depth slice)
};

Tap MakeTap(const ConvF32Params& p, int64_t k) {
  Tap t;
  const int64_t kx = k % p.kernel[2], ky = k / p.kernel[2] % p.kernel[1];
  t.kz = k / (p.kernel[2] * p.kernel[1]);
  t.ix0 = kx * p.dilation[2] - p.pad[2];
  t.iy0 = ky * p.dilation[1] - p.pad[1];
  ValidRange(t.ix0, p.stride[2], p.in[2], p.out[2], t.lo, t.hi);
  ValidRange(t.iy0, p.stride[1], p.in[1], p.out[1], t.ylo, t.yhi);
  return t;
}

/// One im2col row: kernel tap `t` of channel plane `xc` over output rows [r0, r1) (a row is
/// the innermost output axis; rows count across depth then height).
void Im2colRow(const ConvF32Params& p, const Tap& t, const float* xc, int64_t r0, int64_t r1,
               float* dst) {
  const int64_t ow = p.out[2], oh = p.out[1], w_in = p.in[2], h_in = p.in[1];
  const int64_t sx = p.stride[2], sy = p.stride[1];
  const int64_t lo = t.lo, hi = t.hi, ix0 = t.ix0;
  // Stride 1 with rows as wide as the input's: a run of valid rows is one contiguous shifted
  // copy of the input, after which the columns that wrapped around are zeroed.
  const bool block_copy = sx == 1 && sy == 1 && ow == w_in;
  for (int64_t r = r0; r < r1;) {
    const int64_t oz = r / oh, oy_begin = r % oh;
    const int64_t oy_end = std::min(oh, oy_begin + (r1 - r));
    float* d = dst + (r - r0) * ow;
    r += oy_end - oy_begin;
    const int64_t iz = oz * p.stride[0] - p.pad[0] + t.kz * p.dilation[0];
    const int64_t y0 = std::clamp(t.ylo, oy_begin, oy_end), y1 = std::clamp(t.yhi, y0, oy_end);
    if (iz < 0 || iz >= p.in[0] || lo >= hi || y0 >= y1) {
      Zero(d, (oy_end - oy_begin) * ow);
      continue;
    }
    Zero(d, (y0 - oy_begin) * ow);
    float* rows = d + (y0 - oy_begin) * ow;
    const float* plane = xc + iz * h_in * w_in;
    if (block_copy) {
      const int64_t n = (y1 - y0) * ow;
      const float* src = plane + (y0 + t.iy0) * w_in;
      const int64_t j0 = std::max<int64_t>(0, -ix0), j1 = n - std::max<int64_t>(0, ix0);
      std::memcpy(rows + j0, src + j0 + ix0, sizeof(float) * (j1 - j0));
      // Columns [0, lo) and [hi, ow) of every row (including the uncopied ends) read outside
      // the input. Zeroed column by column: usually one column, never worth a memset call.
      const int64_t n_rows = y1 - y0;
      for (int64_t i = 0; i < lo; ++i) {
        for (int64_t y = 0; y < n_rows; ++y) rows[y * ow + i] = 0.0f;
      }
      for (int64_t i = hi; i < ow; ++i) {
        for (int64_t y = 0; y < n_rows; ++y) rows[y * ow + i] = 0.0f;
      }
    } else {
      for (int64_t oy = y0; oy < y1; ++oy, rows += ow) {
        const float* src = plane + (oy * sy + t.iy0) * w_in + lo * sx + ix0;
        Zero(rows, lo);
        if (sx == 1) {
          for (int64_t i = 0; i < hi - lo; ++i) rows[lo + i] = src[i];
        } else if (sx == 2 && Cpu().avx512f) {
          CopyEvenAvx512(src, hi - lo, rows + lo);
        } else if (sx == 2 && Cpu().avx2) {
          internal::CopyEvenAvx2(src, hi - lo, rows + lo);
        } else {
          for (int64_t i = 0; i < hi - lo; ++i) rows[lo + i] = src[i * sx];
        }
        Zero(rows + hi, ow - hi);
      }
    }
    Zero(d + (y1 - oy_begin) * ow, (oy_end - y1) * ow);
  }
}

/// Im2colRow for every tap of one plane of a 2-D convolution with stride 2 in x, on AVX-512:
/// each output row of a tap is built in registers 16 columns at a time (the even floats of two
/// masked loads, zeros where the tap falls outside x) and stored whole, with each 16-column
/// chunk's masks computed once per tap, not per row. The im2col was half of a small stride-2
/// convolution's time (resnet20's 16 x 16 -> 8 x 8 layer: a call per row, separate zero fills).
/// The same floats as Im2colRow. Needs ow <= 16 * kMaxStride2Chunks.
constexpr int64_t kMaxStride2Chunks = 16;
__attribute__((target("avx512f"))) void Im2colStride2Avx512(const ConvF32Params& p, const Tap* taps,
                                                            int64_t kvol, const float* xc,
                                                            int64_t r0, int64_t r1, float* col,
                                                            int64_t ld) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const int64_t ow = p.out[2], w_in = p.in[2], sy = p.stride[1];
  const int64_t chunks = (ow + 15) / 16;
  // Per chunk of 16 output columns [i0, i0 + 16): the first column the tap reads (j0), the load
  // masks of its floats, the lanes they go to when the chunk starts before the tap's first
  // column (expand; 0: lane l is column j0 + l), and the lanes stored.
  struct Chunk {
    int64_t j0;
    __mmask16 lo, hi, expand, store;
  };
  Chunk c[kMaxStride2Chunks];
  for (int64_t k = 0; k < kvol; ++k, col += ld) {
    const Tap& t = taps[k];
    for (int64_t i = 0; i < chunks; ++i) {
      const int64_t i0 = i * 16, lanes = std::min<int64_t>(16, ow - i0);
      const int64_t j0 = std::max(t.lo, i0), j1 = std::min(t.hi, i0 + lanes);
      const SpanMasks span = SpanMasksOf(j0 < j1 ? 2 * (j1 - j0) - 1 : 0);
      c[i].j0 = j0 < j1 ? j0 : i0;
      c[i].lo = span.lo;
      c[i].hi = span.hi;
      c[i].expand =
          j0 > i0 && j0 < j1 ? static_cast<__mmask16>(LowBits16(j1 - i0) & ~LowBits16(j0 - i0)) : 0;
      c[i].store = LowBits16(lanes);
    }
    float* d = col;
    for (int64_t oy = r0; oy < r1; ++oy, d += ow) {
      if (oy < t.ylo || oy >= t.yhi || t.lo >= t.hi) {
        for (int64_t i = 0; i < chunks; ++i) {
          _mm512_mask_storeu_ps(d + i * 16, c[i].store, _mm512_setzero_ps());
        }
        continue;
      }
      // Input column 0 of this row (x[row + 2 j] is output column j's tap).
      const int64_t row = (oy * sy + t.iy0) * w_in + t.ix0;
      // The input row 8 output rows on, at the first tap of each kernel row, which reads it
      // first: x is often a model's input, not in cache, and these rows' stride (2 rows) outran
      // the hardware's prefetch (squeezenet's conv1 read its input 3x slower in the model).
      if (k % p.kernel[2] == 0) PrefetchLines(xc, row + 8 * sy * w_in, 2 * ow);
      for (int64_t i = 0; i < chunks; ++i) {
        __m512 v = _mm512_setzero_ps();
        if (c[i].lo != 0) {  // a column of the chunk reads x: `at` lies in x
          const float* at = xc + (row + 2 * c[i].j0);
          v = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(c[i].lo, at), even,
                                     _mm512_maskz_loadu_ps(c[i].hi, at + 16));
          if (c[i].expand != 0) v = _mm512_maskz_expand_ps(c[i].expand, v);
        }
        _mm512_mask_storeu_ps(d + i * 16, c[i].store, v);
      }
    }
  }
}

/// y[m, j] = bias[m] for `rows` rows of `cols` floats, row stride `ld`.
void FillRows(const float* bias, int64_t rows, int64_t cols, int64_t ld, float* y) {
  for (int64_t r = 0; r < rows; ++r) std::fill(y + r * ld, y + r * ld + cols, bias[r]);
}

}  // namespace

namespace internal {

void ValidRange(int64_t i0, int64_t s, int64_t in, int64_t out, int64_t& lo, int64_t& hi) {
  lo = i0 >= 0 ? 0 : (-i0 + s - 1) / s;
  hi = in - i0 <= 0 ? 0 : (in - i0 - 1) / s + 1;
  lo = std::min(lo, out);
  hi = std::max(lo, std::min(hi, out));
}

void Im2colRowsF32(const ConvF32Params& p, int64_t channels, const float* x, int64_t r0, int64_t r1,
                   float* col, int64_t ld, int64_t col_offset, int num_threads) {
  constexpr int64_t kMaxTaps = 64;
  const int64_t kvol = p.kernel_size();
  const int64_t in_sp = p.in_size();
  std::array<Tap, kMaxTaps> taps;
  for (int64_t k = 0; k < std::min(kvol, kMaxTaps); ++k) taps[k] = MakeTap(p, k);
  const int64_t cost = kvol * (r1 - r0) * p.out[2];
  // 2-D (rows are output rows), stride 2 in x, every tap's geometry in the table.
  const bool stride2 = Cpu().avx512f && p.in[0] == 1 && p.kernel[0] == 1 && p.out[0] == 1 &&
                       p.stride[2] == 2 && kvol <= kMaxTaps && p.out[2] <= 16 * kMaxStride2Chunks;
  NnParallelFor(num_threads, channels, cost, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      if (stride2) {
        Im2colStride2Avx512(p, taps.data(), kvol, x + c * in_sp, r0, r1,
                            col + c * kvol * ld + col_offset, ld);
        continue;
      }
      for (int64_t k = 0; k < kvol; ++k) {
        const Tap t = k < kMaxTaps ? taps[k] : MakeTap(p, k);
        Im2colRow(p, t, x + c * in_sp, r0, r1, col + (c * kvol + k) * ld + col_offset);
      }
    }
  });
}

void PackWeightRowBlocks(const ConvF32Params& p, const float* w, int64_t rows, float* packed) {
  const int64_t mg = p.out_channels / p.groups;
  const int64_t k = p.in_channels / p.groups * p.kernel_size();
  const int64_t blocks = (mg + rows - 1) / rows;
  for (int64_t grp = 0; grp < p.groups; ++grp) {
    for (int64_t mb = 0; mb < blocks; ++mb) {
      float* dst = packed + (grp * blocks + mb) * k * rows;
      for (int64_t kk = 0; kk < k; ++kk) {
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t m = mb * rows + r;
          dst[kk * rows + r] = m < mg ? w[(grp * mg + m) * k + kk] : 0.0f;
        }
      }
    }
  }
}

}  // namespace internal

namespace {

/// Depthwise convolutions (one input channel per group, several groups) run direct.
bool UseDepthwiseDirect(const ConvF32Params& p) {
  return p.groups > 1 && p.IsDepthwise() && !p.IsPointwise();
}

}  // namespace

namespace {

/// The paths that add ConvF32Params::residual and round to fp16 (ActivationF32::round_to_f16)
/// in their epilogue: the AVX-512 microkernels.
bool EpilogueInKernel(const ConvF32Params& p) {
  return ConvF32HasAvx512() && !UseDepthwiseDirect(p);
}

/// y = act(y + residual) over y's elements: the residual of the paths that do not take it
/// themselves, after the convolution ran without it and without its activation.
void AddResidualAndActivate(const ConvF32Params& p, float* y) {
  const float* r = p.residual;
  const ActivationF32 act = p.activation;
  ParallelForElements(p.num_threads, p.batch * p.out_channels * p.out_size(), 2,
                      [&](int64_t begin, int64_t end) {
                        for (int64_t i = begin; i < end; ++i) y[i] = y[i] + r[i];
                        ApplyActivationF32(act, y + begin, end - begin);
                      });
}

/// Runs `conv` on `p`, or, when p has a residual or an fp16 rounding that the path `conv` takes
/// would not apply: on p without the residual and the activation, then adds and applies them
/// (without the residual: on p without the rounding), then rounds y in a pass of its own.
template <typename Conv>
void WithEpilogue(const ConvF32Params& p, float* y, Conv&& conv) {
  if ((p.residual == nullptr && !p.activation.round_to_f16) || EpilogueInKernel(p)) {
    conv(p);
    return;
  }
  ConvF32Params q = p;
  q.activation.round_to_f16 = false;
  if (p.residual != nullptr) {
    ConvF32Params act = q;
    q.residual = nullptr;
    q.activation = ActivationF32{};
    conv(q);
    AddResidualAndActivate(act, y);
  } else {
    conv(q);
  }
  if (p.activation.round_to_f16) {
    RoundF32ToF16InPlace(p.batch * p.out_channels * p.out_size(), y, p.num_threads);
  }
}

}  // namespace

int64_t ConvF32WorkspaceSize(const ConvF32Params& p) {
  if (UseDepthwiseDirect(p)) return 0;
  if (ConvF32HasAvx512()) return ConvF32Avx512WorkspaceSize(p);
  return ConvF32HasAvx2() ? ConvF32Avx2WorkspaceSize(p) : ConvF32Im2colWorkspaceSize(p);
}

namespace {

/// ConvF32 without the residual pass: the path for `p`.
void ConvF32Dispatch(const ConvF32Params& p, const float* x, const float* w, const float* bias,
                     float* y, float* workspace) {
  if (UseDepthwiseDirect(p)) {
    if (ConvF32HasAvx512() && ConvF32DepthwiseAvx512Fits(p)) {
      ConvF32DepthwiseAvx512(p, x, w, bias, y);
    } else if (ConvF32HasAvx2() && ConvF32DepthwiseAvx2Fits(p)) {
      ConvF32DepthwiseAvx2(p, x, w, bias, y);
    } else {
      ConvF32DepthwiseDirect(p, x, w, bias, y);
    }
  } else if (ConvF32HasAvx512()) {
    ConvF32Im2colAvx512(p, x, w, bias, y, workspace);
  } else if (ConvF32HasAvx2()) {
    ConvF32Avx2(p, x, w, bias, y, workspace);
  } else {
    ConvF32Im2col(p, x, w, bias, y, workspace);
  }
}

}  // namespace

void ConvF32(const ConvF32Params& p, const float* x, const float* w, const float* bias, float* y,
             float* workspace) {
  WithEpilogue(p, y, [&](const ConvF32Params& q) { ConvF32Dispatch(q, x, w, bias, y, workspace); });
}

PackedConvF32 PackConvF32Weights(const ConvF32Params& p, const float* w) {
  // Depthwise convolutions (but 1x1 ones) run direct on w; 1x1 ones pack per call.
  if (p.groups > 1 && p.IsDepthwise()) return {};
  if (ConvF32HasAvx512()) {
    PackedConvF32 packed(ConvF32Avx512PackedSize(p));
    PackConvF32Avx512(p, w, packed.data());
    return packed;
  }
  if (ConvF32HasAvx2()) {
    PackedConvF32 packed(ConvF32Avx2PackedSize(p));
    PackConvF32Avx2(p, w, packed.data());
    return packed;
  }
  return {};
}

bool ConvF32PackingDependsOnExtents(const ConvF32Params& p) {
  return ConvF32HasAvx512() && ConvF32Avx512PackingDependsOnExtents(p);
}

namespace {

/// ConvF32WithPacked takes the packed path: ConvF32 would pick a microkernel (AVX-512 or AVX2,
/// which PackConvF32Weights packed for on this CPU).
bool UsePacked(const ConvF32Params& p, const PackedConvF32& packed) {
  return !packed.empty() && !UseDepthwiseDirect(p) && (ConvF32HasAvx512() || ConvF32HasAvx2());
}

}  // namespace

int64_t ConvF32WithPackedWorkspaceSize(const ConvF32Params& p, const PackedConvF32& packed) {
  if (!UsePacked(p, packed)) return ConvF32WorkspaceSize(p);
  return ConvF32HasAvx512() ? ConvF32Avx512ColumnsSize(p) : ConvF32Avx2ColumnsSize(p);
}

void ConvF32WithPacked(const ConvF32Params& p, const float* x, const float* w,
                       const PackedConvF32& packed, const float* bias, float* y, float* workspace) {
  if (!UsePacked(p, packed)) {
    ConvF32(p, x, w, bias, y, workspace);
    return;
  }
  WithEpilogue(p, y, [&](const ConvF32Params& q) {
    if (ConvF32HasAvx512()) {
      ConvF32Im2colAvx512Packed(q, x, packed.data(), bias, y, workspace);
    } else {
      ConvF32Avx2Packed(q, x, packed.data(), bias, y, workspace);
    }
  });
}

void ConvF32Params::SetGeometry2d(const ConvGeometry& g, int64_t kernel_h, int64_t kernel_w) {
  groups = g.group;
  kernel = {1, kernel_h, kernel_w};
  stride = {1, g.stride_h, g.stride_w};
  dilation = {1, g.dilation_h, g.dilation_w};
  pad = {0, g.pad_top, g.pad_left};
}

bool ConvF32Params::IsPointwise() const {
  for (int a = 0; a < 3; ++a) {
    if (kernel[a] != 1 || stride[a] != 1 || pad[a] != 0 || out[a] != in[a]) return false;
  }
  return true;
}

int64_t ConvF32Im2colWorkspaceSize(const ConvF32Params& p) {
  if (p.IsPointwise()) return 0;
  const Tiling t = ChooseTiling(p);
  const int64_t k = p.in_channels / p.groups * p.kernel_size();
  if (t.images == 1) return k * t.band_rows * p.out[2];
  const int64_t cols = t.images * p.out_size();
  return (k + p.out_channels / p.groups) * cols;
}

void ConvF32Im2col(const ConvF32Params& p, const float* x, const float* w, const float* bias,
                   float* y, float* workspace) {
  const int64_t cg = p.in_channels / p.groups, mg = p.out_channels / p.groups;
  const int64_t in_sp = p.in_size(), out_sp = p.out_size();
  const int64_t k = cg * p.kernel_size();
  if (p.batch == 0 || out_sp == 0 || p.out_channels == 0) return;
  const bool pointwise = p.IsPointwise();
  const Tiling t = ChooseTiling(p);
  const int64_t rows = p.out[0] * p.out[1], ow = p.out[2];
  GemmF32Params gp;
  gp.m = mg;
  gp.k = k;
  gp.lda = k;
  gp.threads = p.num_threads;
  for (int64_t n0 = 0; n0 < p.batch; n0 += t.images) {
    const int64_t nb = std::min(t.images, p.batch - n0);
    for (int64_t g = 0; g < p.groups; ++g) {
      const float* xg = x + (n0 * p.in_channels + g * cg) * in_sp;
      const float* wg = w + g * mg * k;
      float* yg = y + (n0 * p.out_channels + g * mg) * out_sp;
      const float* bg = bias != nullptr ? bias + g * mg : nullptr;
      if (nb == 1) {
        // Straight into y, band by band; the bias is pre-filled and accumulated onto.
        gp.ldc = out_sp;
        gp.beta = bg != nullptr ? 1.0f : 0.0f;
        for (int64_t r0 = 0; r0 < rows; r0 += t.band_rows) {
          const int64_t r1 = std::min(rows, r0 + t.band_rows);
          gp.n = (r1 - r0) * ow;
          gp.ldb = pointwise ? in_sp : gp.n;
          if (!pointwise)
            internal::Im2colRowsF32(p, cg, xg, r0, r1, workspace, gp.n, 0, p.num_threads);
          if (bg != nullptr) FillRows(bg, mg, gp.n, out_sp, yg + r0 * ow);
          GemmF32(gp, wg, pointwise ? xg + r0 * ow : workspace, yg + r0 * ow);
          // The band was just written: still in cache for the activation.
          ApplyActivationRowsF32(p.activation, yg + r0 * ow, mg, gp.n, out_sp);
        }
        continue;
      }
      // Several images side by side in one im2col matrix and one sgemm into scratch
      // [mg, nb * out_sp], then scattered back to N, M, spatial with the bias and activation.
      const int64_t ld = nb * out_sp;
      float* scratch = workspace + k * ld;
      for (int64_t b = 0; b < nb; ++b) {
        internal::Im2colRowsF32(p, cg, xg + b * p.in_channels * in_sp, 0, rows, workspace, ld,
                                b * out_sp, p.num_threads);
      }
      gp.n = ld;
      gp.ldb = ld;
      gp.ldc = ld;
      gp.beta = 0.0f;
      GemmF32(gp, wg, workspace, scratch);
      for (int64_t b = 0; b < nb; ++b) {
        for (int64_t m = 0; m < mg; ++m) {
          const float* src = scratch + m * ld + b * out_sp;
          float* dst = yg + (b * p.out_channels + m) * out_sp;
          const float bv = bg != nullptr ? bg[m] : 0.0f;
          if (p.activation.is_identity()) {
            for (int64_t i = 0; i < out_sp; ++i) dst[i] = src[i] + bv;
          } else {
            for (int64_t i = 0; i < out_sp; ++i) dst[i] = p.activation(src[i] + bv);
          }
        }
      }
    }
  }
}

void ConvF32DepthwiseDirect(const ConvF32Params& p, const float* x, const float* w,
                            const float* bias, float* y) {
  const int64_t mult = p.out_channels / p.groups;
  const int64_t in_sp = p.in_size(), out_sp = p.out_size();
  const int64_t kvol = p.kernel_size();
  const int64_t ow = p.out[2], sx = p.stride[2];
  // Valid output columns per horizontal tap, shared by every row.
  int64_t lo[16], hi[16];
  const bool small_kw = p.kernel[2] <= 16;
  for (int64_t kx = 0; small_kw && kx < p.kernel[2]; ++kx) {
    ValidRange(kx * p.dilation[2] - p.pad[2], sx, p.in[2], ow, lo[kx], hi[kx]);
  }
  const int64_t planes = p.batch * p.out_channels;
  NnParallelFor(p.num_threads, planes, out_sp * kvol, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t n = plane / p.out_channels, m = plane % p.out_channels;
      const float* xp = x + (n * p.in_channels + m / mult) * in_sp;
      const float* wm = w + m * kvol;
      float* yp = y + plane * out_sp;
      std::fill(yp, yp + out_sp, bias != nullptr ? bias[m] : 0.0f);
      for (int64_t oz = 0; oz < p.out[0]; ++oz) {
        for (int64_t oy = 0; oy < p.out[1]; ++oy) {
          float* yrow = yp + (oz * p.out[1] + oy) * ow;
          for (int64_t kz = 0; kz < p.kernel[0]; ++kz) {
            const int64_t iz = oz * p.stride[0] - p.pad[0] + kz * p.dilation[0];
            if (iz < 0 || iz >= p.in[0]) continue;
            for (int64_t ky = 0; ky < p.kernel[1]; ++ky) {
              const int64_t iy = oy * p.stride[1] - p.pad[1] + ky * p.dilation[1];
              if (iy < 0 || iy >= p.in[1]) continue;
              const float* xrow = xp + (iz * p.in[1] + iy) * p.in[2];
              const float* wrow = wm + (kz * p.kernel[1] + ky) * p.kernel[2];
              for (int64_t kx = 0; kx < p.kernel[2]; ++kx) {
                const int64_t ix0 = kx * p.dilation[2] - p.pad[2];
                int64_t l, h;
                if (small_kw) {
                  l = lo[kx], h = hi[kx];
                } else {
                  ValidRange(ix0, sx, p.in[2], ow, l, h);
                }
                if (l >= h) continue;
                const float wv = wrow[kx];
                const float* src = xrow + l * sx + ix0;
                float* dst = yrow + l;
                if (sx == 1) {
                  for (int64_t i = 0; i < h - l; ++i) dst[i] += wv * src[i];
                } else {
                  for (int64_t i = 0; i < h - l; ++i) dst[i] += wv * src[i * sx];
                }
              }
            }
          }
        }
      }
      ApplyActivationF32(p.activation, yp, out_sp);
    }
  });
}

}  // namespace qcc::cpu
