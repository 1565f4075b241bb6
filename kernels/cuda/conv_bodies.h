// Index bodies (launch.h) of convolution and GEMM on the CUDA backend: im2col into a GEMM operand,
// the row padding of QGemm's activations, the epilogues that turn the GEMM's accumulators into
// the step's output (int8 requantize, float bias + activation), and direct convolutions for
// depthwise/grouped convs with a small reduction. The layouts are those of gemm_problem.h, per
// image: int8 im2col rows [group][P_pad, Kred_pad] and accumulators C = [K, P_pad] (NCHW); fp32
// and fp16 im2col A = [C*R*S, lda] and C = [K, ldc] (NCHW), or no im2col at all for 1x1 fp32
// convs. QGemm's layout is the conv GEMM's of issue 5: C = [M, N_pad] row-major.
//
// The int8 bodies compute qconv.h's / qgemm.h's contract exactly (tests/backend_cuda/
// conv_gemm_test.cc proves them bit-identical to the CPU references): int32 sums wrap modulo
// 2^32 and Requantize is support/quantize.h's. The float bodies add bias and the fused
// activation y = min(max(v < 0 ? slope * v : v, lo), hi) (runtime StepActivation); pass
// lo = -inf / hi = +inf for "none" (runtime/step_exec_float.cc's ToActivation maps +-FLT_MAX).
#ifndef QCC_KERNELS_CUDA_CONV_BODIES_H_
#define QCC_KERNELS_CUDA_CONV_BODIES_H_

#include <cstdint>
#include <cstring>

#include "kernels/cuda/index_math.h"
#include "support/conv_geometry.h"
#include "support/float16.h"
#include "support/quantize.h"

namespace qcc::cuda {

/// A 2-D convolution as the bodies see it: support/conv_geometry.h's ConvShape (input [n, c, h, w]
/// NCHW, weights [k, c / group, r, s], strides, pads, dilations, group) with the output extents
/// oh, ow stored, so device code never computes them (the host sets them, to out_h() and
/// out_w(); pad_bottom and pad_right only show there).
struct ConvDims : ConvShape {
  int64_t oh = 1, ow = 1;

  QCC_HOST_DEVICE int64_t c_per_group() const { return IndexDiv(c, group); }
  QCC_HOST_DEVICE int64_t k_per_group() const { return IndexDiv(k, group); }
  /// Reduction length of one output: C/group * R * S.
  QCC_HOST_DEVICE int64_t kred() const { return c_per_group() * r * s; }
  /// Output positions of all images: N * OH * OW (the GEMM's n).
  QCC_HOST_DEVICE int64_t npix() const { return n * oh * ow; }
};

/// +infinity for the activation bounds' defaults ("no clamp").
inline constexpr float kFloatInfinity = __builtin_huge_valf();

namespace internal {

/// The fused float activation (file comment).
QCC_HOST_DEVICE inline float Activate(float v, float lo, float hi, float slope) {
  v = v < 0.0f ? v * slope : v;
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

}  // namespace internal

// ---- im2col -----------------------------------------------------------------------------------

namespace internal {
/// im2col's element conversion: none, or fp32 to fp16 bits through FloatToHalf.
template <typename In, typename Out>
struct Im2colConvert {
  static QCC_HOST_DEVICE Out Of(In v) { return v; }
};
template <>
struct Im2colConvert<float, uint16_t> {
  static QCC_HOST_DEVICE uint16_t Of(float v) { return FloatToHalf(v); }
};
}  // namespace internal

/// int8 im2col for the per-image IMMA conv GEMM (gemm_problem.h Int8ConvGemmNchw): A =
/// [N][group][P_pad][kred_pad] whose row p < P = OH*OW of group g holds the taps (c, r, s) of
/// output pixel p in the weights' order (pad_value, the input zero point, in the spatial
/// padding), with zeros in columns [Kred, kred_pad) and in rows [P, P_pad). Each index writes 4
/// consecutive bytes of a row as one word (kred_pad is a multiple of 4, A 4-byte aligned):
/// n = N * group * P_pad * kred_pad / 4; i = the byte offset / 4.
struct Im2colRowsInt8Args {
  ConvDims d;
  const int8_t* x = nullptr;  // [N, C, H, W]
  int8_t* a = nullptr;        // [N, group, pixels_pad, kred_pad]
  int64_t pixels_pad = 0, kred_pad = 0;
  int32_t pad_value = 0;
};
struct Im2colRowsInt8 {
  static QCC_HOST_DEVICE void Run(const Im2colRowsInt8Args& a, int64_t i) {
    const ConvDims& d = a.d;
    const QuotRem t = DivRem(i * 4, a.kred_pad);
    const QuotRem row = DivRem(t.quot, a.pixels_pad);
    uint32_t word = 0;
    if (row.rem < d.oh * d.ow) {
      const QuotRem img_g = DivRem(row.quot, d.group);
      const QuotRem pix = DivRem(row.rem, d.ow);
      const QuotRem col_s = DivRem(t.rem, d.s);
      const QuotRem cr = DivRem(col_s.quot, d.r);
      int64_t c = cr.quot, r = cr.rem, s = col_s.rem;
      const int8_t* plane = a.x + (img_g.quot * d.c + img_g.rem * d.c_per_group()) * d.h * d.w;
      const int64_t iy0 = pix.quot * d.stride_h - d.pad_top;
      const int64_t ix0 = pix.rem * d.stride_w - d.pad_left;
      const int64_t taps = d.kred() - t.rem;
      for (int j = 0; j < 4 && j < taps; ++j) {
        const int64_t iy = iy0 + r * d.dilation_h, ix = ix0 + s * d.dilation_w;
        const int32_t v = iy >= 0 && iy < d.h && ix >= 0 && ix < d.w
                              ? int32_t{plane[(c * d.h + iy) * d.w + ix]}
                              : a.pad_value;
        word |= static_cast<uint32_t>(static_cast<uint8_t>(v)) << (8 * j);
        if (++s == d.s) {
          s = 0;
          if (++r == d.r) {
            r = 0;
            ++c;
          }
        }
      }
    }
    // Little-endian on both sides: byte j of the word is column t.rem + j.
#if defined(__CUDA_ARCH__)
    *reinterpret_cast<uint32_t*>(a.a + i * 4) = word;
#else
    std::memcpy(a.a + i * 4, &word, sizeof(word));
#endif
  }
};

/// im2col for the float convs' NCHW GEMMs (gemm_problem.h FloatConvGemmNchw): per image, A =
/// [C*R*S][lda] with A[img][(c * R + r) * S + s][p] = the input tap (c, r, s) of output pixel
/// p < OH*OW (every channel c < C, so group g's columns start at g * C/group * R * S), 0 in the
/// spatial padding and for pixels [OH*OW, lda). n = N * C*R*S * lda; i = (img * C*R*S + col) *
/// lda + p is the output offset, and a warp reads consecutive pixels of one input row.
template <typename In, typename Out>
struct Im2colNchwArgsOf {
  ConvDims d;
  const In* x = nullptr;  // [N, C, H, W]
  Out* a = nullptr;       // [N, C*R*S, lda]
  int64_t lda = 0;        // >= OH*OW
};
template <typename In, typename Out>
struct Im2colNchwOf {
  static QCC_HOST_DEVICE void Run(const Im2colNchwArgsOf<In, Out>& a, int64_t i) {
    const ConvDims& d = a.d;
    const QuotRem t = DivRem(i, a.lda);
    Out v = 0;
    if (t.rem < d.oh * d.ow) {
      const QuotRem img_col = DivRem(t.quot, d.c * d.r * d.s);
      const QuotRem col_s = DivRem(img_col.rem, d.s);
      const QuotRem cr = DivRem(col_s.quot, d.r);
      const QuotRem pix = DivRem(t.rem, d.ow);
      const int64_t iy = pix.quot * d.stride_h - d.pad_top + cr.rem * d.dilation_h;
      const int64_t ix = pix.rem * d.stride_w - d.pad_left + col_s.rem * d.dilation_w;
      if (iy >= 0 && iy < d.h && ix >= 0 && ix < d.w) {
        v = internal::Im2colConvert<In, Out>::Of(
            a.x[((img_col.quot * d.c + cr.quot) * d.h + iy) * d.w + ix]);
      }
    }
    a.a[i] = v;
  }
};
/// fp32 (the GEMM's A when the input cannot serve as it is: see FloatConvReadsInput).
using Im2colNchwFloatArgs = Im2colNchwArgsOf<float, float>;
using Im2colNchwFloat = Im2colNchwOf<float, float>;
/// fp16 bits from fp32 input, rounded by FloatToHalf.
using Im2colNchwFloatToHalfArgs = Im2colNchwArgsOf<float, uint16_t>;
using Im2colNchwFloatToHalf = Im2colNchwOf<float, uint16_t>;
/// fp16 bits from fp16 input (the same bits as Im2colNchwFloatToHalf of the widened input).
using Im2colNchwHalfArgs = Im2colNchwArgsOf<uint16_t, uint16_t>;
using Im2colNchwHalf = Im2colNchwOf<uint16_t, uint16_t>;

/// True when an fp32 conv's input is its NCHW GEMM's A as it is (1x1 kernel, stride 1, no
/// padding: A[img][c][p] = x[img][c][p] with lda = H*W), so no im2col runs.
QCC_HOST_DEVICE inline bool FloatConvReadsInput(const ConvDims& d) {
  return d.r == 1 && d.s == 1 && d.stride_h == 1 && d.stride_w == 1 && d.pad_top == 0 &&
         d.pad_left == 0 && d.oh == d.h && d.ow == d.w;
}

// ---- QGemm activations ------------------------------------------------------------------------

/// out [rows, cols_pad] = x [rows, cols] with zero columns [cols, cols_pad) (QGemm's A -> the
/// GEMM's B operand). n = rows * cols_pad; i = row * cols_pad + col (output offset).
struct PadRowsInt8Args {
  const int8_t* x = nullptr;
  int8_t* out = nullptr;
  int64_t cols = 0, cols_pad = 0;
};
struct PadRowsInt8 {
  static QCC_HOST_DEVICE void Run(const PadRowsInt8Args& a, int64_t i) {
    const QuotRem rc = DivRem(i, a.cols_pad);
    const int64_t col = rc.rem, row = rc.quot;
    a.out[i] = col < a.cols ? a.x[row * a.cols + col] : int8_t{0};
  }
};

/// PadRowsInt8 for fp32 -> fp16 bits (FloatToHalf; padding 0): n and i as PadRowsInt8.
struct PadRowsFloatToHalfArgs {
  const float* x = nullptr;
  uint16_t* out = nullptr;
  int64_t cols = 0, cols_pad = 0;
};
struct PadRowsFloatToHalf {
  static QCC_HOST_DEVICE void Run(const PadRowsFloatToHalfArgs& a, int64_t i) {
    const QuotRem rc = DivRem(i, a.cols_pad);
    const int64_t col = rc.rem, row = rc.quot;
    a.out[i] = col < a.cols ? FloatToHalf(a.x[row * a.cols + col]) : uint16_t{0};
  }
};

// ---- epilogues --------------------------------------------------------------------------------

/// int8 output from the GEMM's int32 accumulators:
///   y[img, k, p] = Requantize(acc + bias[k], multiplier[k], zp_out, lo, hi)
/// acc = acc[g * stride_c + (img * spatial + p) * ldc + (k - g * Kg)], g = k / Kg,
/// Kg = channels / groups (Int8ConvGemm's pixel-major C_g [Npix, Kout_pad], ldc = Kout_pad,
/// stride_c = Npix * Kout_pad, spatial = OH * OW, images = N; QGemm, its one user: images = M,
/// channels = N, spatial = 1, groups = 1, ldc = N_pad, giving y [M, N]). The sum acc + bias
/// wraps modulo 2^32.
/// n = images * channels * spatial; i = (img * channels + k) * spatial + p (the NCHW output
/// offset: coalesced writes).
struct RequantEpilogueArgs {
  const int32_t* acc = nullptr;
  int64_t ldc = 0, stride_c = 0;
  const int32_t* bias = nullptr;      // [channels]; null: 0
  const float* multiplier = nullptr;  // [channels]
  int8_t* y = nullptr;                // [images, channels, spatial]
  int64_t images = 1, channels = 1, spatial = 1, groups = 1;
  int32_t zp_out = 0, lo = -128, hi = 127;
};
struct RequantEpilogue {
  static QCC_HOST_DEVICE void Run(const RequantEpilogueArgs& a, int64_t i) {
    const QuotRem t = DivRem(i, a.spatial);
    const QuotRem img_k = DivRem(t.quot, a.channels);
    const int64_t p = t.rem, k = img_k.rem, img = img_k.quot;
    const int64_t kg = IndexDiv(a.channels, a.groups);
    const int64_t g = IndexDiv(k, kg);
    const int32_t acc = a.acc[g * a.stride_c + (img * a.spatial + p) * a.ldc + (k - g * kg)];
    const uint32_t sum =
        static_cast<uint32_t>(acc) + static_cast<uint32_t>(a.bias != nullptr ? a.bias[k] : 0);
    a.y[i] = Requantize(static_cast<int32_t>(sum), a.multiplier[k], a.zp_out, a.lo, a.hi);
  }
};

/// int8 output of the per-image IMMA conv GEMM (Int8ConvGemmNchw), C = [images][channels][ldc]
/// int32: y[i] = Requantize(acc[(img * channels + k) * ldc + p] + bias[k], multiplier[k], zp_out,
/// lo, hi), the sum wrapping modulo 2^32. n = images * channels * pixels; i = (img * channels +
/// k) * pixels + p (the NCHW output offset: reads and writes coalesced).
struct RequantEpilogueNchwArgs {
  const int32_t* acc = nullptr;
  int64_t ldc = 0;
  const int32_t* bias = nullptr;      // [channels]; null: 0
  const float* multiplier = nullptr;  // [channels]
  int8_t* y = nullptr;                // [images, channels, pixels]
  int64_t channels = 1, pixels = 1;
  int32_t zp_out = 0, lo = -128, hi = 127;
};
struct RequantEpilogueNchw {
  static QCC_HOST_DEVICE void Run(const RequantEpilogueNchwArgs& a, int64_t i) {
    const QuotRem t = DivRem(i, a.pixels);
    const int64_t k = IndexMod(t.quot, a.channels);
    const uint32_t sum = static_cast<uint32_t>(a.acc[t.quot * a.ldc + t.rem]) +
                         static_cast<uint32_t>(a.bias != nullptr ? a.bias[k] : 0);
    a.y[i] = Requantize(static_cast<int32_t>(sum), a.multiplier[k], a.zp_out, a.lo, a.hi);
  }
};

/// Float output from the fp32 accumulators of the NCHW GEMMs (FloatConvGemmNchw), C =
/// [images][channels][ldc]: v = Activate(acc[(img * channels + k) * ldc + p] + bias[k]) written to
/// y (fp32; may be acc itself when ldc == pixels) or, when y is null, y_half (fp16 bits via
/// FloatToHalf). n = images * channels * pixels; i = (img * channels + k) * pixels + p (the NCHW
/// output offset: reads and writes coalesced).
struct FloatEpilogueArgs {
  const float* acc = nullptr;
  int64_t ldc = 0;
  const float* bias = nullptr;  // [channels]; null: 0
  float* y = nullptr;           // [images, channels, pixels] fp32, or
  uint16_t* y_half = nullptr;   // the same in fp16 bits (used when y is null)
  int64_t channels = 1, pixels = 1;
  float lo = -kFloatInfinity, hi = kFloatInfinity;
  float negative_slope = 1.0f;
};
struct FloatEpilogue {
  static QCC_HOST_DEVICE void Run(const FloatEpilogueArgs& a, int64_t i) {
    const QuotRem t = DivRem(i, a.pixels);
    float v = a.acc[t.quot * a.ldc + t.rem];
    if (a.bias != nullptr) v = v + a.bias[IndexMod(t.quot, a.channels)];
    v = internal::Activate(v, a.lo, a.hi, a.negative_slope);
    if (a.y != nullptr) {
      a.y[i] = v;
    } else {
      a.y_half[i] = FloatToHalf(v);
    }
  }
};

/// ONNX Gemm's output from a FloatGemm problem run with beta = 0 (acc = alpha * op(A) op(B),
/// row-major [m, ldc]): y[r, j] = Activate(acc[r * ldc + j] + beta * c[r * c_row_stride +
/// j * c_col_stride]) (c null: no term). Broadcasting C: strides 0 along its size-1 axes
/// (C [n]: row stride 0, col stride 1; C [m, 1]: 1, 0; scalar: 0, 0). y may be acc when
/// ldc == cols. n = rows * cols; i = r * cols + j (the output offset).
struct GemmEpilogueF32Args {
  const float* acc = nullptr;
  int64_t ldc = 0;
  const float* c = nullptr;
  int64_t c_row_stride = 0, c_col_stride = 0;
  float beta = 1.0f;
  float* y = nullptr;
  int64_t cols = 1;
  float lo = -kFloatInfinity, hi = kFloatInfinity;
  float negative_slope = 1.0f;
};
struct GemmEpilogueF32 {
  static QCC_HOST_DEVICE void Run(const GemmEpilogueF32Args& a, int64_t i) {
    const QuotRem rj = DivRem(i, a.cols);
    const int64_t j = rj.rem, r = rj.quot;
    float v = a.acc[r * a.ldc + j];
    if (a.c != nullptr) v = v + a.beta * a.c[r * a.c_row_stride + j * a.c_col_stride];
    a.y[i] = internal::Activate(v, a.lo, a.hi, a.negative_slope);
  }
};

// ---- direct convolutions ----------------------------------------------------------------------

/// Consecutive outputs of one row that one index of the direct convolutions computes: they share
/// the index arithmetic and each weight load (every output's own sum is unchanged by this).
inline constexpr int64_t kDirectConvRun = 4;

/// The index range [0, n) of DirectQConv and DirectConv: n = N * K * OH * ceil(OW / 4), index
/// i = ((img * K + k) * OH + oy) * ceil(OW / 4) + run computing outputs ox = 4 * run ..
/// min(4 * run + 3, OW - 1) of row (img, k, oy).
QCC_HOST_DEVICE inline int64_t DirectConvIndices(const ConvDims& d) {
  return d.n * d.k * d.oh * ((d.ow + kDirectConvRun - 1) / kDirectConvRun);
}

/// True when every offset of the direct convolutions' input, weights and output fits in int32:
/// then the int32 forms (DirectQConv32, DirectConv32) give the same results with half the
/// integer work on a GPU. Host only.
inline bool DirectConvFitsInt32(const ConvDims& d) {
  constexpr int64_t kMax = int64_t{1} << 30;  // headroom for the sums of offsets below
  const int64_t row_span = (d.ow + kDirectConvRun) * d.stride_w + d.s * d.dilation_w;
  const int64_t column_span = d.oh * d.stride_h + d.r * d.dilation_h;
  return d.n * d.c * d.h * d.w < kMax && d.n * d.k * d.oh * (d.ow + kDirectConvRun) < kMax &&
         d.k * d.c_per_group() * d.r * d.s < kMax && row_span < kMax && column_span < kMax &&
         d.pad_top < kMax && d.pad_left < kMax;
}

namespace internal {

/// The run of outputs of index i (DirectConvIndices) of a direct convolution, in the index type
/// of its form, and the walk over its taps.
template <typename Index>
struct DirectConvRun {
  static constexpr int kRun = static_cast<int>(kDirectConvRun);

  QCC_HOST_DEVICE DirectConvRun(const ConvDims& d, int64_t i) {
    const Index runs = static_cast<Index>((d.ow + kDirectConvRun - 1) / kDirectConvRun);
    const QuotRem x = DivRem(i, runs);
    const QuotRem y = DivRem(x.quot, d.oh);
    const QuotRem kk = DivRem(y.quot, d.k);
    ox0 = static_cast<Index>(x.rem * kDirectConvRun);
    oy = static_cast<Index>(y.rem);
    k = static_cast<Index>(kk.rem);
    img = static_cast<Index>(kk.quot);
    count = static_cast<Index>(d.ow) - ox0;
    count = count < kRun ? count : static_cast<Index>(kRun);
    output_offset = ((img * static_cast<Index>(d.k) + k) * static_cast<Index>(d.oh) + oy) *
                        static_cast<Index>(d.ow) +
                    ox0;
  }

  /// Calls tap(j, weight, input) for each tap (c, r, s) in the weights' order and, within it,
  /// each output j < kRun of the run: `input` points at the input element, or is null in the
  /// spatial padding (kPaddingTaps false: no call for a padding tap). Outputs j >= count get
  /// taps too (their reads stay inside the input rows); the caller writes only j < count.
  template <bool kPaddingTaps, typename T, typename Tap>
  QCC_HOST_DEVICE void ForEachTap(const ConvDims& d, const T* x, const T* w, Tap&& tap) const {
    const Index h = static_cast<Index>(d.h), wd = static_cast<Index>(d.w);
    const Index r_n = static_cast<Index>(d.r), s_n = static_cast<Index>(d.s);
    const Index stride_w = static_cast<Index>(d.stride_w);
    const Index dil_h = static_cast<Index>(d.dilation_h), dil_w = static_cast<Index>(d.dilation_w);
    const Index cg = static_cast<Index>(d.c_per_group());
    const Index g = static_cast<Index>(IndexDiv(k, d.k_per_group()));
    const T* wk = w + k * cg * r_n * s_n;
    const Index iy0 = oy * static_cast<Index>(d.stride_h) - static_cast<Index>(d.pad_top);
    const Index ix0 = ox0 * stride_w - static_cast<Index>(d.pad_left);
    for (Index c = 0; c < cg; ++c) {
      const T* plane = x + (img * static_cast<Index>(d.c) + g * cg + c) * h * wd;
      for (Index r = 0; r < r_n; ++r, wk += s_n) {
        const Index iy = iy0 + r * dil_h;
        const bool row_inside = iy >= 0 && iy < h;
        if (!kPaddingTaps && !row_inside) continue;
        const T* row = plane + (row_inside ? iy * wd : 0);
        for (Index s = 0; s < s_n; ++s) {
          const T weight = wk[s];
          Index ix = ix0 + s * dil_w;
          for (int j = 0; j < kRun; ++j, ix += stride_w) {
            const bool inside = row_inside && ix >= 0 && ix < wd;
            if (kPaddingTaps || inside) tap(j, weight, inside ? row + ix : nullptr);
          }
        }
      }
    }
  }

  Index img, k, oy, ox0, count;
  Index output_offset;  // of output j = 0 in the NCHW output
};

}  // namespace internal

/// qconv.h's contract directly (for depthwise/grouped convs whose C/group * R * S is small, where
/// im2col + GEMM wastes work), a run of outputs per index (DirectConvIndices). Each output's sum
/// runs over (c, r, s) in the weights' order, the padding reading pad_value, and wraps modulo
/// 2^32, as the reference does.
struct DirectQConvArgs {
  ConvDims d;
  const int8_t* x = nullptr;          // [N, C, H, W]
  const int8_t* w = nullptr;          // [K, C/group, R, S] (unpacked)
  const int32_t* bias = nullptr;      // [K]; null: 0
  const float* multiplier = nullptr;  // [K]
  int8_t* y = nullptr;                // [N, K, OH, OW]
  int32_t pad_value = 0, zp_out = 0, lo = -128, hi = 127;
};
template <typename Index>
struct DirectQConvOf {
  static QCC_HOST_DEVICE void Run(const DirectQConvArgs& a, int64_t i) {
    using Outputs = internal::DirectConvRun<Index>;
    const Outputs o(a.d, i);
    const uint32_t b = static_cast<uint32_t>(a.bias != nullptr ? a.bias[o.k] : 0);
    uint32_t acc[Outputs::kRun];
    for (int j = 0; j < Outputs::kRun; ++j) acc[j] = b;
    o.template ForEachTap<true>(a.d, a.x, a.w, [&](int j, int8_t w, const int8_t* x) {
      const int32_t v = x != nullptr ? int32_t{*x} : a.pad_value;
      acc[j] += static_cast<uint32_t>(int32_t{w} * v);
    });
    const float m = a.multiplier[o.k];
    for (int j = 0; j < Outputs::kRun; ++j) {
      if (j < o.count) {
        a.y[o.output_offset + j] =
            Requantize(static_cast<int32_t>(acc[j]), m, a.zp_out, a.lo, a.hi);
      }
    }
  }
};
using DirectQConv = DirectQConvOf<int64_t>;
/// DirectQConv with int32 offsets: only where DirectConvFitsInt32.
using DirectQConv32 = DirectQConvOf<int32_t>;

/// fp32 conv directly: y = Activate(bias[k] + sum over (c, r, s) in order of w * x), the padding
/// skipped; a run of outputs per index as DirectQConv. (conv.h's kernels sum in other orders:
/// equal within fp32 rounding, not bit for bit.)
struct DirectConvArgs {
  ConvDims d;
  const float* x = nullptr;
  const float* w = nullptr;     // [K, C/group, R, S]
  const float* bias = nullptr;  // [K]; null: 0
  float* y = nullptr;
  float lo = -kFloatInfinity, hi = kFloatInfinity;
  float negative_slope = 1.0f;
};
template <typename Index>
struct DirectConvOf {
  static QCC_HOST_DEVICE void Run(const DirectConvArgs& a, int64_t i) {
    using Outputs = internal::DirectConvRun<Index>;
    const Outputs o(a.d, i);
    const float b = a.bias != nullptr ? a.bias[o.k] : 0.0f;
    float acc[Outputs::kRun];
    for (int j = 0; j < Outputs::kRun; ++j) acc[j] = b;
    o.template ForEachTap<false>(a.d, a.x, a.w, [&](int j, float w, const float* x) {
      const float prod = w * *x;
      acc[j] = acc[j] + prod;
    });
    for (int j = 0; j < Outputs::kRun; ++j) {
      if (j < o.count) {
        a.y[o.output_offset + j] = internal::Activate(acc[j], a.lo, a.hi, a.negative_slope);
      }
    }
  }
};
using DirectConv = DirectConvOf<int64_t>;
/// DirectConv with int32 offsets: only where DirectConvFitsInt32.
using DirectConv32 = DirectConvOf<int32_t>;

}  // namespace qcc::cuda

#endif  // QCC_KERNELS_CUDA_CONV_BODIES_H_
