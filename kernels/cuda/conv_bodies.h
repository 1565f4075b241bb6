// Index bodies (launch.h) of convolution and GEMM on the CUDA backend: im2col into the GEMM's B
// operand, the row padding of QGemm's activations, the epilogues that turn the GEMM's
// accumulators into the step's output (int8 requantize, float bias + activation), and direct
// convolutions for depthwise/grouped convs with a small reduction. The layouts are those of
// gemm_problem.h: per group g, im2col B_g = [Npix, Kred_pad] row-major, C_g = [Npix, Kout_pad]
// row-major int32/fp32 (ldc = Kout_pad), groups stacked at fixed strides.
//
// The int8 bodies compute qconv.h's / qgemm.h's contract exactly (tests/backend_cuda/
// conv_gemm_test.cc proves them bit-identical to the CPU references): int32 sums wrap modulo
// 2^32 and Requantize is support/quantize.h's. The float bodies add bias and the fused
// activation y = min(max(v < 0 ? slope * v : v, lo), hi) (runtime StepActivation); pass
// lo = -inf / hi = +inf for "none" (runtime/step_exec_float.cc's ToActivation maps +-FLT_MAX).
#ifndef QCC_KERNELS_CUDA_CONV_BODIES_H_
#define QCC_KERNELS_CUDA_CONV_BODIES_H_

#include <cstdint>

#include "kernels/cuda/index_math.h"
#include "support/float16.h"
#include "support/quantize.h"

namespace qcc::cuda {

/// 2-D convolution geometry as the bodies see it. Input [n, c, h, w] NCHW, weights
/// [k, c / group, r, s], output [n, k, oh, ow] (oh/ow as qconv.h's out_h()/out_w(): the caller
/// computes them, pad_bottom/pad_right only show there).
struct ConvDims {
  int64_t n = 1, c = 1, h = 1, w = 1;
  int64_t k = 1, r = 1, s = 1;
  int64_t oh = 1, ow = 1;
  int64_t stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t group = 1;

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

/// Offset in the NCHW input of column `col` (< kred) of im2col row `pix` of group `g`, or -1
/// when that tap falls in the padding. Column order is the weights' (c, r, s).
QCC_HOST_DEVICE inline int64_t Im2colSource(const ConvDims& d, int64_t g, int64_t pix,
                                            int64_t col) {
  const QuotRem col_s = DivRem(col, d.s);
  const QuotRem cr = DivRem(col_s.quot, d.r);
  const int64_t s = col_s.rem, r = cr.rem, c = cr.quot;
  const QuotRem pix_ox = DivRem(pix, d.ow);
  const QuotRem t = DivRem(pix_ox.quot, d.oh);
  const int64_t ox = pix_ox.rem, oy = t.rem, img = t.quot;
  const int64_t iy = oy * d.stride_h - d.pad_top + r * d.dilation_h;
  const int64_t ix = ox * d.stride_w - d.pad_left + s * d.dilation_w;
  if (iy < 0 || iy >= d.h || ix < 0 || ix >= d.w) return -1;
  return ((img * d.c + g * d.c_per_group() + c) * d.h + iy) * d.w + ix;
}

/// The fused float activation (file comment).
QCC_HOST_DEVICE inline float Activate(float v, float lo, float hi, float slope) {
  v = v < 0.0f ? v * slope : v;
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

/// The NCHW output element at offset i = ((img * K + k) * OH + oy) * OW + ox.
struct ConvOutputPosition {
  QCC_HOST_DEVICE ConvOutputPosition(const ConvDims& d, int64_t i) {
    const QuotRem x = DivRem(i, d.ow);
    const QuotRem y = DivRem(x.quot, d.oh);
    const QuotRem kk = DivRem(y.quot, d.k);
    ox = x.rem;
    oy = y.rem;
    k = kk.rem;
    img = kk.quot;
  }
  int64_t img, k, oy, ox;
};

}  // namespace internal

// ---- im2col -----------------------------------------------------------------------------------

/// im2col of all groups into B = [group][Npix][kred_pad] (row-major per group), from input
/// elements In to B elements Out (the same type, or fp32 to fp16 bits through FloatToHalf).
/// n = d.group * d.npix() * kred_pad; i = (g * Npix + pix) * kred_pad + col is also the output
/// offset (coalesced writes). Column col < Kred is tap (c, r, s) = the weights' order; spatial
/// padding reads `pad_value` (int8: the input zero point, QConvStepParams::pad_value; float and
/// fp16: 0); columns [Kred, kred_pad) are 0.
template <typename In, typename Out>
struct Im2colArgsOf {
  ConvDims d;
  const In* x = nullptr;  // [N, C, H, W]
  Out* b = nullptr;       // [group, Npix, kred_pad]
  int64_t kred_pad = 0;
  int32_t pad_value = 0;
};

namespace internal {
template <typename In, typename Out>
struct Im2colConvert {
  static QCC_HOST_DEVICE Out Of(In v) { return v; }
};
template <>
struct Im2colConvert<float, uint16_t> {
  static QCC_HOST_DEVICE uint16_t Of(float v) { return FloatToHalf(v); }
};
}  // namespace internal

template <typename In, typename Out>
struct Im2colOf {
  static QCC_HOST_DEVICE void Run(const Im2colArgsOf<In, Out>& a, int64_t i) {
    const QuotRem t = DivRem(i, a.kred_pad);
    const int64_t col = t.rem;
    Out v = 0;
    if (col < a.d.kred()) {
      const QuotRem g_pix = DivRem(t.quot, a.d.npix());
      const int64_t src = internal::Im2colSource(a.d, g_pix.quot, g_pix.rem, col);
      v = src < 0 ? static_cast<Out>(a.pad_value) : internal::Im2colConvert<In, Out>::Of(a.x[src]);
    }
    a.b[i] = v;
  }
};

/// int8 im2col (pad_value: the input zero point).
using Im2colInt8Args = Im2colArgsOf<int8_t, int8_t>;
using Im2colInt8 = Im2colOf<int8_t, int8_t>;
/// fp32 im2col (pad_value 0).
using Im2colFloatArgs = Im2colArgsOf<float, float>;
using Im2colFloat = Im2colOf<float, float>;
/// fp16 bits from fp16 input (pad_value 0 = +0.0).
using Im2colHalfArgs = Im2colArgsOf<uint16_t, uint16_t>;
using Im2colHalf = Im2colOf<uint16_t, uint16_t>;
/// fp16 bits from fp32 input, rounded by FloatToHalf (pad_value 0).
using Im2colFloatToHalfArgs = Im2colArgsOf<float, uint16_t>;
using Im2colFloatToHalf = Im2colOf<float, uint16_t>;

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
/// Kg = channels / groups (conv: C_g row-major [Npix, Kout_pad], ldc = Kout_pad, stride_c =
/// Npix * Kout_pad; spatial = OH * OW, images = N; QGemm: images = M, channels = N, spatial = 1,
/// groups = 1, ldc = N_pad, giving y [M, N]). The sum acc + bias wraps modulo 2^32.
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

/// Float output from fp32 accumulators (fp16 or fp32 GEMM), same indexing as RequantEpilogue:
///   v = Activate(acc + bias[k]) written to y (fp32) or, when y is null, y_half (fp16 bits via
///   FloatToHalf). n and i as RequantEpilogue.
struct FloatEpilogueArgs {
  const float* acc = nullptr;
  int64_t ldc = 0, stride_c = 0;
  const float* bias = nullptr;  // [channels]; null: 0
  float* y = nullptr;           // [images, channels, spatial] fp32, or
  uint16_t* y_half = nullptr;   // the same in fp16 bits (used when y is null)
  int64_t images = 1, channels = 1, spatial = 1, groups = 1;
  float lo = -kFloatInfinity, hi = kFloatInfinity;
  float negative_slope = 1.0f;
};
struct FloatEpilogue {
  static QCC_HOST_DEVICE void Run(const FloatEpilogueArgs& a, int64_t i) {
    const QuotRem t = DivRem(i, a.spatial);
    const QuotRem img_k = DivRem(t.quot, a.channels);
    const int64_t p = t.rem, k = img_k.rem, img = img_k.quot;
    const int64_t kg = IndexDiv(a.channels, a.groups);
    const int64_t g = IndexDiv(k, kg);
    float v = a.acc[g * a.stride_c + (img * a.spatial + p) * a.ldc + (k - g * kg)];
    if (a.bias != nullptr) v = v + a.bias[k];
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

/// qconv.h's contract directly, one output element per index (for depthwise/grouped convs whose
/// C/group * R * S is small, where im2col + GEMM wastes work):
/// n = N * K * OH * OW; i = ((img * K + k) * OH + oy) * OW + ox (the output offset). The sum
/// runs over (c, r, s) in the weights' order and wraps modulo 2^32, as the reference does.
struct DirectQConvArgs {
  ConvDims d;
  const int8_t* x = nullptr;          // [N, C, H, W]
  const int8_t* w = nullptr;          // [K, C/group, R, S] (unpacked)
  const int32_t* bias = nullptr;      // [K]; null: 0
  const float* multiplier = nullptr;  // [K]
  int8_t* y = nullptr;                // [N, K, OH, OW]
  int32_t pad_value = 0, zp_out = 0, lo = -128, hi = 127;
};
struct DirectQConv {
  static QCC_HOST_DEVICE void Run(const DirectQConvArgs& a, int64_t i) {
    const ConvDims& d = a.d;
    const internal::ConvOutputPosition o(d, i);
    const int64_t ox = o.ox, oy = o.oy, k = o.k, img = o.img;
    const int64_t cg = d.c_per_group();
    const int64_t g = IndexDiv(k, d.k_per_group());
    const int8_t* wk = a.w + k * cg * d.r * d.s;
    uint32_t acc = static_cast<uint32_t>(a.bias != nullptr ? a.bias[k] : 0);
    for (int64_t c = 0; c < cg; ++c) {
      const int8_t* in = a.x + (img * d.c + g * cg + c) * d.h * d.w;
      for (int64_t r = 0; r < d.r; ++r) {
        const int64_t iy = oy * d.stride_h - d.pad_top + r * d.dilation_h;
        const bool row_inside = iy >= 0 && iy < d.h;
        for (int64_t s = 0; s < d.s; ++s) {
          const int64_t ix = ox * d.stride_w - d.pad_left + s * d.dilation_w;
          const int32_t v =
              row_inside && ix >= 0 && ix < d.w ? int32_t{in[iy * d.w + ix]} : a.pad_value;
          acc += static_cast<uint32_t>(int32_t{wk[(c * d.r + r) * d.s + s]} * v);
        }
      }
    }
    a.y[i] = Requantize(static_cast<int32_t>(acc), a.multiplier[k], a.zp_out, a.lo, a.hi);
  }
};

/// fp32 conv directly: y = Activate(bias[k] + sum over (c, r, s) in order of w * x), x = 0 in
/// the padding. n and i as DirectQConv. (conv.h's kernels sum in other orders: equal within
/// fp32 rounding, not bit for bit.)
struct DirectConvArgs {
  ConvDims d;
  const float* x = nullptr;
  const float* w = nullptr;     // [K, C/group, R, S]
  const float* bias = nullptr;  // [K]; null: 0
  float* y = nullptr;
  float lo = -kFloatInfinity, hi = kFloatInfinity;
  float negative_slope = 1.0f;
};
struct DirectConv {
  static QCC_HOST_DEVICE void Run(const DirectConvArgs& a, int64_t i) {
    const ConvDims& d = a.d;
    const internal::ConvOutputPosition o(d, i);
    const int64_t ox = o.ox, oy = o.oy, k = o.k, img = o.img;
    const int64_t cg = d.c_per_group();
    const int64_t g = IndexDiv(k, d.k_per_group());
    const float* wk = a.w + k * cg * d.r * d.s;
    float acc = a.bias != nullptr ? a.bias[k] : 0.0f;
    for (int64_t c = 0; c < cg; ++c) {
      const float* in = a.x + (img * d.c + g * cg + c) * d.h * d.w;
      for (int64_t r = 0; r < d.r; ++r) {
        const int64_t iy = oy * d.stride_h - d.pad_top + r * d.dilation_h;
        if (iy < 0 || iy >= d.h) continue;
        for (int64_t s = 0; s < d.s; ++s) {
          const int64_t ix = ox * d.stride_w - d.pad_left + s * d.dilation_w;
          if (ix < 0 || ix >= d.w) continue;
          const float prod = wk[(c * d.r + r) * d.s + s] * in[iy * d.w + ix];
          acc = acc + prod;
        }
      }
    }
    a.y[i] = internal::Activate(acc, a.lo, a.hi, a.negative_slope);
  }
};

}  // namespace qcc::cuda

#endif  // QCC_KERNELS_CUDA_CONV_BODIES_H_
