// Elementwise kernel bodies of the CUDA backend (DESIGN.md s.5): the precision boundaries
// (Quantize, Dequantize, Requantize, Cast), the int8 ops (QAdd, QLut) and the fp32 ops that stay
// in float (Unary, Binary with numpy broadcasting and a fused activation, Softmax).
//
// Each body is a struct with `static QCC_HOST_DEVICE void Run(const Args&, int64_t i)`, run over
// i in [0, n) by ForEachIndex (launch.h, CPU) or LaunchIndex (launch.cuh, GPU). Args are plain
// structs of pointers and numbers; the comment of each says what n is and what i means. Pointers
// are device pointers on the GPU. Outputs never alias inputs unless a comment says they may.
//
// Bit-identity with the CPU runtime (tests/backend_cuda/elementwise_bodies_test.cc): the int8
// bodies call support/quantize.h; the float bodies repeat backend_cpu's fp32 operations in the
// same order (files built with -ffp-contract=off / nvcc --fmad=false). Sigmoid, Tanh and Softmax
// use support/fast_math.h's ExpF32 / TanhF32, the functions the CPU kernels use, and Unary runs
// support/unary_fn.h's one formula per function, so they too are bit-identical to the CPU kernels.
#ifndef QCC_KERNELS_CUDA_ELEMENTWISE_BODIES_H_
#define QCC_KERNELS_CUDA_ELEMENTWISE_BODIES_H_

#include <cstdint>

#include "kernels/cuda/index_math.h"
#include "support/fast_math.h"
#include "support/float16.h"
#include "support/quantize.h"
#include "support/unary_fn.h"

namespace qcc::cuda {

// ---- Precision boundaries and int8 elementwise ----------------------------------------------

/// Quantize (f32 -> i8): n = element count; y[i] = QuantizeValue(x[i], scale, zero_point).
struct QuantizeArgs {
  const float* x;
  int8_t* y;
  float scale;
  int32_t zero_point;
};
struct QuantizeBody {
  static QCC_HOST_DEVICE void Run(const QuantizeArgs& a, int64_t i) {
    a.y[i] = QuantizeValue(a.x[i], a.scale, a.zero_point);
  }
};

/// Dequantize (i8 -> f32): n = element count; y[i] = DequantizeValue(x[i], scale, zero_point).
struct DequantizeArgs {
  const int8_t* x;
  float* y;
  float scale;
  int32_t zero_point;
};
struct DequantizeBody {
  static QCC_HOST_DEVICE void Run(const DequantizeArgs& a, int64_t i) {
    a.y[i] = DequantizeValue(a.x[i], a.scale, a.zero_point);
  }
};

/// Requantize (i8 -> i8 scale change): n = element count;
/// y[i] = RescaleValue(x[i], zp_in, multiplier, zp_out, lo, hi). y may be x.
struct RequantizeArgs {
  const int8_t* x;
  int8_t* y;
  int32_t zp_in;
  float multiplier;
  int32_t zp_out;
  int32_t lo, hi;  // [-128, 127] or narrower (fused clamp)
};
struct RequantizeBody {
  static QCC_HOST_DEVICE void Run(const RequantizeArgs& a, int64_t i) {
    a.y[i] = RescaleValue(a.x[i], a.zp_in, a.multiplier, a.zp_out, a.lo, a.hi);
  }
};

/// QAdd of two same-shape int8 tensors: n = element count;
/// y[i] = AddValue(a[i], zp_a, mult_a, b[i], zp_b, mult_b, zp_out, lo, hi). y may alias a or b.
struct QAddArgs {
  const int8_t* a;
  const int8_t* b;
  int8_t* y;
  int32_t zp_a;
  float mult_a;
  int32_t zp_b;
  float mult_b;
  int32_t zp_out;
  int32_t lo, hi;
};
struct QAddBody {
  static QCC_HOST_DEVICE void Run(const QAddArgs& p, int64_t i) {
    p.y[i] = AddValue(p.a[i], p.zp_a, p.mult_a, p.b[i], p.zp_b, p.mult_b, p.zp_out, p.lo, p.hi);
  }
};

/// QLut: n = element count; y[i] = table[x[i] + 128]. `table` is the step's 256-entry int8
/// weight buffer (device memory on the GPU). y may be x.
struct QLutArgs {
  const int8_t* x;
  int8_t* y;
  const int8_t* table;
};
struct QLutBody {
  static QCC_HOST_DEVICE void Run(const QLutArgs& a, int64_t i) {
    a.y[i] = a.table[static_cast<int32_t>(a.x[i]) + 128];
  }
};

/// Cast f32 -> f16: n = element count; y[i] = FloatToHalf(x[i]) (IEEE binary16 bits).
struct CastF32ToF16Args {
  const float* x;
  uint16_t* y;
};
struct CastF32ToF16Body {
  static QCC_HOST_DEVICE void Run(const CastF32ToF16Args& a, int64_t i) {
    a.y[i] = FloatToHalf(a.x[i]);
  }
};

/// Cast f16 -> f32: n = element count; y[i] = HalfToFloat(x[i]).
struct CastF16ToF32Args {
  const uint16_t* x;
  float* y;
};
struct CastF16ToF32Body {
  static QCC_HOST_DEVICE void Run(const CastF16ToF32Args& a, int64_t i) {
    a.y[i] = HalfToFloat(a.x[i]);
  }
};

// ---- fp32 math shared by the float bodies ---------------------------------------------------

/// +inf as a float on host and device.
QCC_HOST_DEVICE inline float DeviceInfinity() { return BitCast<float>(0x7f800000u); }

/// A fused activation as runtime's StepActivation stores it: y = min(max(v < 0 ? slope * v : v,
/// lo), hi), where lo <= -FLT_MAX and hi >= FLT_MAX mean "no bound" (as runtime's ToActivation
/// turns them into -inf / +inf, so +-inf inputs pass through). Pass StepActivation's fields
/// unchanged; the identity is {-FLT_MAX, FLT_MAX, 1}.
struct ActivationArgs {
  float lo;
  float hi;
  float negative_slope;
};

/// backend_cpu's ApplyActivationF32 on one value (same comparisons, same order).
QCC_HOST_DEVICE inline float ApplyActivation(const ActivationArgs& act, float v) {
  constexpr float kFltMax = 3.402823466e+38f;
  const float lo = act.lo <= -kFltMax ? -DeviceInfinity() : act.lo;
  const float hi = act.hi >= kFltMax ? DeviceInfinity() : act.hi;
  if (act.negative_slope != 1.0f) v = v < 0.0f ? v * act.negative_slope : v;
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

// ---- Unary f32 ------------------------------------------------------------------------------

/// Unary f32: n = element count; y[i] = UnaryValue(op, alpha, beta, 0, x[i]), the formula of
/// support/unary_fn.h that the CPU kernels also run (op: a UnaryFn's number, as the plan's
/// UnaryStepParams holds it). x and y may alias.
struct UnaryArgs {
  const float* x;
  float* y;
  int32_t op;   // UnaryFn
  float alpha;  // HardSigmoid alpha, Clip min, LeakyRelu alpha
  float beta;   // HardSigmoid beta, Clip max
};

struct UnaryBody {
  static QCC_HOST_DEVICE void Run(const UnaryArgs& a, int64_t i) {
    a.y[i] = UnaryValue<float>(static_cast<UnaryFn>(a.op), a.alpha, a.beta, 0.0f, a.x[i]);
  }
};

// ---- Binary f32 with numpy broadcasting -----------------------------------------------------

/// The binary functions; the numbers are runtime's BinaryOp (Add, Sub, Mul, Div).
enum BinaryFn : int32_t { kBinaryAdd = 0, kBinarySub = 1, kBinaryMul = 2, kBinaryDiv = 3 };

/// Largest rank of Binary, Transpose, Slice and Pad (movement_bodies.h).
inline constexpr int kMaxBodyRank = 6;

/// Binary f32 with numpy broadcasting, then the fused activation: n = output element count
/// (product of out_dims[0..rank)); i = the output's row-major index, decomposed over out_dims
/// into (c_0, .., c_{rank-1}); y[i] = act(f(a[sum c_k a_strides[k]], b[sum c_k b_strides[k]])).
/// Strides are element strides per OUTPUT axis, 0 where that operand broadcasts (extent 1 or
/// missing leading axis): fill them with BroadcastStrides. rank in [0, 6] (0: one element).
/// y must not alias a broadcast operand (it may alias a same-shape one).
struct BinaryArgs {
  const float* a;
  const float* b;
  float* y;
  int32_t op;  // BinaryFn
  int32_t rank;
  int64_t out_dims[kMaxBodyRank];
  int64_t a_strides[kMaxBodyRank];
  int64_t b_strides[kMaxBodyRank];
  ActivationArgs act;
};

/// Element strides, per output axis, of a row-major operand of `in_rank` dims broadcast to
/// `out_rank` >= in_rank dims (numpy rules, trailing axes aligned): 0 on the missing leading
/// axes and on extent-1 axes. Host or device.
QCC_HOST_DEVICE inline void BroadcastStrides(const int64_t* in_dims, int in_rank, int out_rank,
                                             int64_t* strides) {
  int64_t s = 1;
  for (int k = out_rank - 1; k >= 0; --k) {
    const int ik = k - (out_rank - in_rank);
    strides[k] = (ik < 0 || in_dims[ik] == 1) ? 0 : s;
    if (ik >= 0) s *= in_dims[ik];
  }
}

QCC_HOST_DEVICE inline float BinaryValue(int32_t op, float a, float b) {
  switch (op) {
    case kBinaryAdd:
      return a + b;
    case kBinarySub:
      return a - b;
    case kBinaryMul:
      return a * b;
    case kBinaryDiv:
      return a / b;
    default:
      return a;
  }
}

struct BinaryBody {
  static QCC_HOST_DEVICE void Run(const BinaryArgs& p, int64_t i) {
    int64_t ia = 0, ib = 0, rest = i;
    for (int k = p.rank - 1; k >= 0; --k) {
      const QuotRem q = DivRem(rest, p.out_dims[k]);
      const int64_t c = q.rem;
      rest = q.quot;
      ia += c * p.a_strides[k];
      ib += c * p.b_strides[k];
    }
    p.y[i] = ApplyActivation(p.act, BinaryValue(p.op, p.a[ia], p.b[ib]));
  }
};

// ---- Softmax f32 ----------------------------------------------------------------------------

/// Softmax along one axis of x viewed as [outer, axis_n, inner] (axis_n = the axis' extent,
/// outer / inner the products of the axes before / after it): n = outer * inner; index
/// i = o * inner + j normalises the row x[o * axis_n * inner + k * inner + j], k in [0, axis_n),
/// into the same positions of y, looping along the row inside the body. x and y must not alias.
/// Bit-identical to backend_cpu's Softmax<float>: with inner == 1 the row max (exact, so in any
/// order), the sum of exps in double over eight partial sums added in SoftmaxRow's order, and
/// the exps times the sum's reciprocal, as SoftmaxRow does; with inner > 1 the max is sequential
/// and the sum a sequential float sum, as SoftmaxBlock does.
struct SoftmaxArgs {
  const float* x;
  float* y;
  int64_t outer;
  int64_t axis_n;
  int64_t inner;
};

struct SoftmaxBody {
  static QCC_HOST_DEVICE void Run(const SoftmaxArgs& a, int64_t i) {
    const int64_t n = a.axis_n;
    if (n <= 0) return;
    const QuotRem oj = DivRem(i, a.inner);
    const int64_t o = oj.quot, j = oj.rem;
    const int64_t base = o * n * a.inner + j;
    const float* x = a.x + base;
    float* y = a.y + base;
    if (a.inner == 1) {
      // SoftmaxRow: RowMax (exact, so any grouping), exp, RowSum in double (eight partial sums
      // added in its order), then times the reciprocal of the sum.
      float m = x[0];
      int64_t k = 0;
      for (k = 1; k < n; ++k) m = x[k] > m ? x[k] : m;
      for (k = 0; k < n; ++k) y[k] = ExpF32(x[k] - m);
      double s8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (k = 0; k + 8 <= n; k += 8) {
        for (int q = 0; q < 8; ++q) s8[q] += y[k + q];
      }
      for (; k < n; ++k) s8[0] += y[k];
      const double sum = ((s8[0] + s8[4]) + (s8[2] + s8[6])) + ((s8[1] + s8[5]) + (s8[3] + s8[7]));
      const float inv = static_cast<float>(1.0 / sum);
      for (k = 0; k < n; ++k) y[k] *= inv;
      return;
    }
    // SoftmaxBlock at one inner position: sequential max, exps, float sum, division.
    const int64_t st = a.inner;
    float m = x[0];
    for (int64_t k = 1; k < n; ++k) m = x[k * st] > m ? x[k * st] : m;
    float sum = 0.0f;
    for (int64_t k = 0; k < n; ++k) {
      const float e = ExpF32(x[k * st] - m);
      y[k * st] = e;
      sum += e;
    }
    for (int64_t k = 0; k < n; ++k) y[k * st] /= sum;
  }
};

}  // namespace qcc::cuda

#endif  // QCC_KERNELS_CUDA_ELEMENTWISE_BODIES_H_
