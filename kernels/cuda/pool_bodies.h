// Pooling kernel bodies of the CUDA backend over NCHW data: int8 MaxPool / AveragePool /
// GlobalAveragePool and their fp32 counterparts. One index per output element; the window loops
// run inside the body. See launch.h for how bodies run, elementwise_bodies.h for conventions.
//
// Bit-identical to kernels/cpu/qpool.h and pool.h (tests/backend_cuda/
// pool_bodies_test.cc): the same taps are visited in the same order (rows, then columns), the
// int8 averages call AverageValue, the fp32 sums are float (windows) or double (global) as there.
#ifndef QCC_KERNELS_CUDA_POOL_BODIES_H_
#define QCC_KERNELS_CUDA_POOL_BODIES_H_

#include <cstdint>

#include "kernels/cuda/index_math.h"
#include "support/float16.h"
#include "support/quantize.h"

namespace qcc::cuda {

/// A 2-D pooling window over `planes` = N * C planes of in_h x in_w, producing out_h x out_w
/// per plane. The fields are runtime's PoolStepParams; out_h / out_w are the output buffer's
/// extents (ONNX's floor or ceil_mode size, computed by the compiler: ceil_mode itself is not
/// needed here). Taps outside the input are skipped (padding never wins a max, is never summed).
struct PoolWindow {
  int64_t planes;
  int64_t in_h, in_w, out_h, out_w;
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w;
  int64_t pad_top, pad_left, pad_bottom, pad_right;
  int64_t dilation_h, dilation_w;
};

/// Taps [k0, k1) of a window starting at `start` (step d, `kernel` taps) whose positions lie in
/// [lo, hi): backend_cpu's TapRange.
QCC_HOST_DEVICE inline void PoolTapRange(int64_t start, int64_t d, int64_t kernel, int64_t lo,
                                         int64_t hi, int64_t* k0, int64_t* k1) {
  *k0 = start >= lo ? 0 : (lo - start + d - 1) / d;
  int64_t e = (hi - start + d - 1) / d;
  e = e < kernel ? e : kernel;
  *k1 = start >= hi ? 0 : e;
  *k1 = *k1 > *k0 ? *k1 : *k0;
}

/// The window of output index i (= (plane * out_h + oy) * out_w + ox): its plane, starts and
/// tap ranges inside the input.
struct PoolTaps {
  int64_t plane, o;  // o = oy * out_w + ox
  int64_t sy, sx;    // window start (may be negative)
  int64_t ky0, ky1, kx0, kx1;
};

QCC_HOST_DEVICE inline PoolTaps PoolTapsAt(const PoolWindow& g, int64_t i) {
  PoolTaps t;
  const int64_t out_sp = g.out_h * g.out_w;
  const QuotRem plane_o = DivRem(i, out_sp);
  t.plane = plane_o.quot;
  t.o = plane_o.rem;
  const QuotRem y_x = DivRem(t.o, g.out_w);
  const int64_t oy = y_x.quot, ox = y_x.rem;
  t.sy = oy * g.stride_h - g.pad_top;
  t.sx = ox * g.stride_w - g.pad_left;
  PoolTapRange(t.sy, g.dilation_h, g.kernel_h, 0, g.in_h, &t.ky0, &t.ky1);
  PoolTapRange(t.sx, g.dilation_w, g.kernel_w, 0, g.in_w, &t.kx0, &t.kx1);
  return t;
}

/// The average pools' divisor: taps inside the input, or with count_include_pad those inside
/// the padded extent [-pad_begin, in + pad_end) (a ceil_mode window hanging past the end padding
/// is not padded further), as ONNX counts.
QCC_HOST_DEVICE inline int64_t PoolCount(const PoolWindow& g, const PoolTaps& t,
                                         bool count_include_pad) {
  if (!count_include_pad) return (t.ky1 - t.ky0) * (t.kx1 - t.kx0);
  int64_t y0, y1, x0, x1;
  PoolTapRange(t.sy, g.dilation_h, g.kernel_h, -g.pad_top, g.in_h + g.pad_bottom, &y0, &y1);
  PoolTapRange(t.sx, g.dilation_w, g.kernel_w, -g.pad_left, g.in_w + g.pad_right, &x0, &x1);
  return (y1 - y0) * (x1 - x0);
}

// ---- int8 -----------------------------------------------------------------------------------

/// QMaxPool: n = planes * out_h * out_w; i = output index (NCHW). y = max of the raw int8 taps
/// inside x (-128 when none); scale and zero point are the input's.
struct QMaxPoolArgs {
  const int8_t* x;
  int8_t* y;
  PoolWindow g;
};
struct QMaxPoolBody {
  static QCC_HOST_DEVICE void Run(const QMaxPoolArgs& a, int64_t i) {
    const PoolWindow& g = a.g;
    const PoolTaps t = PoolTapsAt(g, i);
    const int8_t* xp = a.x + t.plane * g.in_h * g.in_w;
    int8_t best = -128;
    for (int64_t ky = t.ky0; ky < t.ky1; ++ky) {
      const int8_t* row = xp + (t.sy + ky * g.dilation_h) * g.in_w;
      for (int64_t kx = t.kx0; kx < t.kx1; ++kx) {
        const int8_t v = row[t.sx + kx * g.dilation_w];
        best = v > best ? v : best;
      }
    }
    a.y[i] = best;
  }
};

/// QAveragePool: n = planes * out_h * out_w; i = output index.
/// y = AverageValue(sum of (x - zp_in) over the taps inside x, PoolCount, multiplier, zp_out,
/// lo, hi); a window with count 0 gives Saturate(0, zp_out, lo, hi). Fields after `g` are
/// runtime's QAveragePoolStepParams.
struct QAveragePoolArgs {
  const int8_t* x;
  int8_t* y;
  PoolWindow g;
  int32_t count_include_pad;  // 0 or 1
  int32_t zp_in;
  float multiplier;
  int32_t zp_out;
  int32_t lo, hi;
};
struct QAveragePoolBody {
  static QCC_HOST_DEVICE void Run(const QAveragePoolArgs& a, int64_t i) {
    const PoolWindow& g = a.g;
    const PoolTaps t = PoolTapsAt(g, i);
    const int8_t* xp = a.x + t.plane * g.in_h * g.in_w;
    int64_t sum = 0;
    for (int64_t ky = t.ky0; ky < t.ky1; ++ky) {
      const int8_t* row = xp + (t.sy + ky * g.dilation_h) * g.in_w;
      for (int64_t kx = t.kx0; kx < t.kx1; ++kx) sum += row[t.sx + kx * g.dilation_w] - a.zp_in;
    }
    const int64_t count = PoolCount(g, t, a.count_include_pad != 0);
    a.y[i] = count > 0 ? AverageValue(sum, count, a.multiplier, a.zp_out, a.lo, a.hi)
                       : static_cast<int8_t>(Saturate(0.0f, a.zp_out, a.lo, a.hi));
  }
};

/// QGlobalAveragePool: n = planes (N * C); i = plane; y[i] = AverageValue(sum of (x - zp_in)
/// over x[i * size, (i + 1) * size), size, multiplier, zp_out, lo, hi), size = H * W (size 0
/// gives Saturate(0, zp_out, lo, hi)).
struct QGlobalAveragePoolArgs {
  const int8_t* x;
  int8_t* y;
  int64_t size;
  int32_t zp_in;
  float multiplier;
  int32_t zp_out;
  int32_t lo, hi;
};
struct QGlobalAveragePoolBody {
  static QCC_HOST_DEVICE void Run(const QGlobalAveragePoolArgs& a, int64_t i) {
    const int8_t* xp = a.x + i * a.size;
    int64_t sum = 0;
    for (int64_t j = 0; j < a.size; ++j) sum += xp[j];
    sum -= static_cast<int64_t>(a.zp_in) * a.size;
    a.y[i] = a.size > 0 ? AverageValue(sum, a.size, a.multiplier, a.zp_out, a.lo, a.hi)
                        : static_cast<int8_t>(Saturate(0.0f, a.zp_out, a.lo, a.hi));
  }
};

// ---- fp32 -----------------------------------------------------------------------------------

/// MaxPool f32: n = planes * out_h * out_w; i = output index. y = max over the taps inside x,
/// first tap taken unconditionally then replaced by any greater one (as backend_cpu's
/// MaxPoolF32, so NaN handling matches); -FLT_MAX when the window has no tap inside x.
struct MaxPoolArgs {
  const float* x;
  float* y;
  PoolWindow g;
};
struct MaxPoolBody {
  static QCC_HOST_DEVICE void Run(const MaxPoolArgs& a, int64_t i) {
    const PoolWindow& g = a.g;
    const PoolTaps t = PoolTapsAt(g, i);
    const float* xp = a.x + t.plane * g.in_h * g.in_w;
    float best = -3.402823466e+38f;  // std::numeric_limits<float>::lowest()
    bool any = false;
    for (int64_t ky = t.ky0; ky < t.ky1; ++ky) {
      const float* row = xp + (t.sy + ky * g.dilation_h) * g.in_w;
      for (int64_t kx = t.kx0; kx < t.kx1; ++kx) {
        const float v = row[t.sx + kx * g.dilation_w];
        if (v > best || !any) {
          best = v;
          any = true;
        }
      }
    }
    a.y[i] = best;
  }
};

/// AveragePool f32: n = planes * out_h * out_w; i = output index. y = (float sum of the taps
/// inside x, rows then columns) / float(PoolCount); 0 when the count is 0.
struct AveragePoolArgs {
  const float* x;
  float* y;
  PoolWindow g;
  int32_t count_include_pad;  // 0 or 1
};
struct AveragePoolBody {
  static QCC_HOST_DEVICE void Run(const AveragePoolArgs& a, int64_t i) {
    const PoolWindow& g = a.g;
    const PoolTaps t = PoolTapsAt(g, i);
    const float* xp = a.x + t.plane * g.in_h * g.in_w;
    float sum = 0.0f;
    for (int64_t ky = t.ky0; ky < t.ky1; ++ky) {
      const float* row = xp + (t.sy + ky * g.dilation_h) * g.in_w;
      for (int64_t kx = t.kx0; kx < t.kx1; ++kx) sum += row[t.sx + kx * g.dilation_w];
    }
    const int64_t count = PoolCount(g, t, a.count_include_pad != 0);
    a.y[i] = count > 0 ? sum / static_cast<float>(count) : 0.0f;
  }
};

/// GlobalAveragePool f32: n = planes; i = plane; y[i] = float(double sum of x[i * size, (i + 1)
/// * size) in order / double(size)), 0 when size is 0 (size = H * W).
struct GlobalAveragePoolArgs {
  const float* x;
  float* y;
  int64_t size;
};
struct GlobalAveragePoolBody {
  static QCC_HOST_DEVICE void Run(const GlobalAveragePoolArgs& a, int64_t i) {
    const float* xp = a.x + i * a.size;
    double sum = 0.0;
    for (int64_t j = 0; j < a.size; ++j) sum += xp[j];
    a.y[i] = a.size > 0 ? static_cast<float>(sum / static_cast<double>(a.size)) : 0.0f;
  }
};

}  // namespace qcc::cuda

#endif  // QCC_KERNELS_CUDA_POOL_BODIES_H_
