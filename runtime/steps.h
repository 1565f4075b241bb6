// The kernel kinds of a plan's steps (runtime/steps.def) and their parameters.
//
// A step's parameters are a small struct whose fields are listed once, in Visit; EncodeParams
// writes them as PlanStep::ints/floats and DecodeParams reads them back, checking that the
// counts match. The lowering (compiler side) encodes, the runtime decodes: both include only
// this header, so the two never disagree on a layout.
//
// Operands (PlanStep::inputs, in order; W/bias/multiplier/table are kWeight buffers):
//   Quantize            X f32 -> Y i8            Dequantize   X i8 -> Y f32
//   Requantize          X i8 -> Y i8
//   QConv               X i8 [N,C,H,W], W i8 [K,C/g,R,S], bias i32 [K], multiplier f32 [K]
//   QGemm               A i8 [M,K] (leading dims flattened), W i8 [N,K], bias i32 [N],
//                       multiplier f32 [N] -> Y i8 [M,N]; or with Y f32: multiplier = s_a * s_w,
//                       an optional fifth operand float bias f32 [N] (qgemm.h's fp32 result)
//   QAdd                A i8, B i8 (same shape) -> Y i8
//   QConvAdd            X, W, bias, multiplier as QConv, residual i8 of Y's dims -> Y i8: the
//                       QConv's int8 result is the QAdd's A and the residual its B (a ResNet's
//                       shortcut Add the compiler fused; one pass, the same bits)
//   QMaxPool, QAveragePool, QGlobalAveragePool   X i8 NCHW -> Y i8
//   QLut                X i8, table i8 [256] -> Y i8
//   QConcat             X0..Xn i8 -> Y i8
//   Reshape, Transpose, Slice, Pad   X (any dtype) -> Y (same dtype); output dims are the
//                       output buffer's (its batch taken from the input's)
//   Conv                X f32, W f32 [K,C/g,R,S], bias f32 [K] (or -1), residual f32 of Y's
//                       dims (or absent) -> Y f32: the residual (a shortcut Add the compiler
//                       fused) is added to every output before the activation
//   Gemm                A f32, B f32, C f32 (or -1) -> Y f32 (ONNX Gemm)
//   Softmax             X f32 -> Y f32 along `axis`
//   Unary               X f32 -> Y f32          Binary   A f32, B f32 (numpy broadcast) -> Y f32
//   MaxPool, AveragePool, GlobalAveragePool    X f32 NCHW -> Y f32
//   Concat              X0..Xn f32 -> Y f32 along `axis`
//   Cast                X f16 -> Y f32, X f32 -> Y f16, or X i64/i32/bool -> Y f32 (same shape)
//   Resize              X -> Y (f32 any filter; any dtype nearest), per-axis parameters; the
//                       batch axis is kept (scale 1)
//   Expand              X (any dtype) -> Y, numpy broadcast to the output buffer's dims
//   BatchAffine         no inputs -> Y i64, i32 or f32 [n]: offset[i] + coef[i] * batch
//   Gather              data (any dtype), indices i64/i32 -> Y: data's rows along `axis`
//   MatMul              A f32 [..,M,K], B f32 [..,K,N] (batch axes broadcast) -> Y f32 [..,M,N]
//   Reduce              X f32 -> Y f32, sum or mean over `axes`
//   LayerNorm           X f32, scale f32, bias f32 (or absent) -> Y f32
//   DynamicQGemm        X f32 [M,K] (leading dims flattened), W i8 [N,K], weight scale f32 [N],
//                       bias f32 [N] (or absent), residual f32 [M,N] (or absent) -> Y f32 [M,N]:
//                       each row of X quantized per run with its symmetric scale max|x| / 127
//                       (qelementwise.h's QuantizeRowsS8), then qgemm.h's fp32 result with
//                       multiplier s_row * s_w, the bias and the residual added
//   DynamicQGemms       X f32, then per product W i8 [N_i,K], weight scale f32 [N_i], bias f32
//                       [N_i] (or absent) -> Y_i f32 [M,N_i]: G >= 2 DynamicQGemm products of one
//                       X (a transformer's Q, K and V), X quantized once; the same bits
//   Attention           Q f32 [B,Sq,Hq*D], K f32 [B,Skv,Hkv*D], V f32 [B,Skv,Hkv*Dv], mask f32
//                       (or absent; rank <= 4, broadcast to [B,Hq,Sq,Skv]) -> Y f32 [B,Sq,Hq*Dv]
//   ConvTranspose       X f32 [N,C,H,W], W f32 [C,M/g,R,S], bias f32 [M] (or -1) -> Y f32
//                       [N,M,OH,OW] (ONNX ConvTranspose, 2-D)
#ifndef QCC_RUNTIME_STEPS_H_
#define QCC_RUNTIME_STEPS_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "runtime/plan.h"
#include "support/conv_geometry.h"
#include "support/unary_fn.h"

namespace qcc::runtime {

enum class StepKind : uint32_t {
#define STEP(kind, params) k##kind,
#include "runtime/steps.def"
#undef STEP
  kNumStepKinds
};

/// "QConv", ...; "unknown" for a number past the table.
absl::string_view StepKindName(uint32_t kind);

/// A fused activation after a float step: y = min(max(v < 0 ? slope * v : v, lo), hi).
struct StepActivation {
  float lo = -3.402823466e+38f;
  float hi = 3.402823466e+38f;
  float negative_slope = 1.0f;
  template <typename V>
  void Visit(V& v) {
    v.Float(lo);
    v.Float(hi);
    v.Float(negative_slope);
  }
};

struct NoStepParams {
  template <typename V>
  void Visit(V&) {}
};

/// Quantize / Dequantize: y = QuantizeValue(x, scale, zp) / DequantizeValue(x, scale, zp).
struct QuantizeParams {
  float scale = 1.0f;
  int64_t zero_point = 0;
  template <typename V>
  void Visit(V& v) {
    v.Float(scale);
    v.Int(zero_point);
  }
};

/// y = RescaleValue(x, zp_in, multiplier, zp_out, lo, hi).
struct RequantizeParams {
  float multiplier = 1.0f;
  int64_t zp_in = 0, zp_out = 0, lo = -128, hi = 127;
  template <typename V>
  void Visit(V& v) {
    v.Float(multiplier);
    v.Int(zp_in);
    v.Int(zp_out);
    v.Int(lo);
    v.Int(hi);
  }
};

/// 2-D convolution geometry (shared by QConv and Conv): support/conv_geometry.h's.
using ::qcc::ConvGeometry;

/// QConv: kernels/cpu/qconv.h's contract; pad_value is the input zero point.
struct QConvStepParams {
  ConvGeometry geometry;
  int64_t pad_value = 0, zp_out = 0, lo = -128, hi = 127;
  template <typename V>
  void Visit(V& v) {
    geometry.Visit(v);
    v.Int(pad_value);
    v.Int(zp_out);
    v.Int(lo);
    v.Int(hi);
  }
};

/// QGemm: kernels/cpu/qgemm.h's contract.
struct QGemmStepParams {
  int64_t zp_out = 0, lo = -128, hi = 127;
  template <typename V>
  void Visit(V& v) {
    v.Int(zp_out);
    v.Int(lo);
    v.Int(hi);
  }
};

/// QAdd: y = AddValue(a, zp_a, mult_a, b, zp_b, mult_b, zp_out, lo, hi).
struct QAddStepParams {
  float mult_a = 1.0f, mult_b = 1.0f;
  int64_t zp_a = 0, zp_b = 0, zp_out = 0, lo = -128, hi = 127;
  template <typename V>
  void Visit(V& v) {
    v.Float(mult_a);
    v.Float(mult_b);
    v.Int(zp_a);
    v.Int(zp_b);
    v.Int(zp_out);
    v.Int(lo);
    v.Int(hi);
  }
};

/// QConvAdd: `conv` as QConv's (its zp_out, lo and hi give the int8 conv result), then `add`
/// with that result as A and the residual as B.
struct QConvAddStepParams {
  QConvStepParams conv;
  QAddStepParams add;
  template <typename V>
  void Visit(V& v) {
    conv.Visit(v);
    add.Visit(v);
  }
};

/// 2-D pooling window (MaxPool, AveragePool; ONNX semantics).
struct PoolStepParams {
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1, ceil_mode = 0;
  template <typename V>
  void Visit(V& v) {
    v.Int(kernel_h);
    v.Int(kernel_w);
    v.Int(stride_h);
    v.Int(stride_w);
    v.Int(pad_top);
    v.Int(pad_left);
    v.Int(pad_bottom);
    v.Int(pad_right);
    v.Int(dilation_h);
    v.Int(dilation_w);
    v.Int(ceil_mode);
  }
};

/// Float AveragePool.
struct AveragePoolStepParams {
  PoolStepParams pool;
  int64_t count_include_pad = 0;
  template <typename V>
  void Visit(V& v) {
    pool.Visit(v);
    v.Int(count_include_pad);
  }
};

/// QAveragePool / QGlobalAveragePool (the window is ignored by the global one):
/// y = AverageValue(sum(x - zp_in), count, multiplier, zp_out, lo, hi).
struct QAveragePoolStepParams {
  PoolStepParams pool;
  int64_t count_include_pad = 0;
  float multiplier = 1.0f;
  int64_t zp_in = 0, zp_out = 0, lo = -128, hi = 127;
  template <typename V>
  void Visit(V& v) {
    pool.Visit(v);
    v.Int(count_include_pad);
    v.Float(multiplier);
    v.Int(zp_in);
    v.Int(zp_out);
    v.Int(lo);
    v.Int(hi);
  }
};

/// QConcat along `axis`: input i is rescaled by RescaleValue(x, zp_in[i], multipliers[i],
/// zp_out, -128, 127) (a copy when multiplier 1 and equal zero points).
struct QConcatStepParams {
  int64_t axis = 1;
  std::vector<float> multipliers;
  std::vector<int64_t> zp_in;
  int64_t zp_out = 0;
  template <typename V>
  void Visit(V& v) {
    v.Int(axis);
    v.Floats(multipliers);
    v.Ints(zp_in);
    v.Int(zp_out);
  }
};

struct TransposeStepParams {
  std::vector<int64_t> perm;
  template <typename V>
  void Visit(V& v) {
    v.Ints(perm);
  }
};

/// Slice with every axis given (normalised, clamped starts; steps may be negative).
struct SliceStepParams {
  std::vector<int64_t> starts, steps;
  template <typename V>
  void Visit(V& v) {
    v.Ints(starts);
    v.Ints(steps);
  }
};

/// Constant Pad: pads = [begin_0.., end_0..] (ONNX order, non-negative); the fill is `value`
/// for f32 and `int_value` (the zero point) for i8.
struct PadStepParams {
  std::vector<int64_t> pads;
  float value = 0.0f;
  int64_t int_value = 0;
  template <typename V>
  void Visit(V& v) {
    v.Ints(pads);
    v.Float(value);
    v.Int(int_value);
  }
};

struct ConvStepParams {
  ConvGeometry geometry;
  StepActivation activation;
  template <typename V>
  void Visit(V& v) {
    geometry.Visit(v);
    activation.Visit(v);
  }
};

/// ConvTranspose (2-D): kernels/cpu/conv_transpose.h. The pads are ONNX's, resolved by the
/// compiler (auto_pad, output_shape); the output extents are stride * (in - 1) + output_padding +
/// dilation * (kernel - 1) + 1 - pad_begin - pad_end on each axis.
struct ConvTransposeStepParams {
  ConvGeometry geometry;
  int64_t output_padding_h = 0, output_padding_w = 0;
  template <typename V>
  void Visit(V& v) {
    geometry.Visit(v);
    v.Int(output_padding_h);
    v.Int(output_padding_w);
  }
};

struct GemmStepParams {
  float alpha = 1.0f, beta = 1.0f;
  int64_t trans_a = 0, trans_b = 0;
  StepActivation activation;
  template <typename V>
  void Visit(V& v) {
    v.Float(alpha);
    v.Float(beta);
    v.Int(trans_a);
    v.Int(trans_b);
    activation.Visit(v);
  }
};

struct AxisStepParams {
  int64_t axis = -1;
  template <typename V>
  void Visit(V& v) {
    v.Int(axis);
  }
};

/// Unary: y = UnaryValue(op, alpha, beta, 0, x) (support/unary_fn.h; `op` is a UnaryFn's
/// number). HardSigmoid uses alpha, beta; Clip [alpha, beta] as [min, max]; LeakyRelu alpha.
struct UnaryStepParams {
  int64_t op = 0;  // UnaryFn
  float alpha = 0.0f, beta = 0.0f;
  template <typename V>
  void Visit(V& v) {
    v.Int(op);
    v.Float(alpha);
    v.Float(beta);
  }
};

/// Unary then Quantize in one pass over the tensor, with the two steps' bits (the lowering fuses
/// an fp32 Unary whose only reader is a Quantize: a transformer's GELU before an int8 GEMM).
struct UnaryQuantizeStepParams {
  UnaryStepParams unary;
  QuantizeParams quantize;
  template <typename V>
  void Visit(V& v) {
    unary.Visit(v);
    quantize.Visit(v);
  }
};

/// Resize: per axis, the scale and roi of kernels/cpu/resize.h's ResizeAxisParams (the
/// extents come from the buffers); the enums are that header's, as integers.
struct ResizeStepParams {
  int64_t coord = 0;     // cpu::ResizeCoordMode
  int64_t filter = 0;    // cpu::ResizeFilter
  int64_t rounding = 0;  // cpu::ResizeRounding
  int64_t exclude_outside = 0;
  float cubic_a = -0.75f;
  float extrapolation_value = 0.0f;
  std::vector<double> scales;  // one per axis
  std::vector<double> roi;     // [start_0.., end_0..]
  template <typename V>
  void Visit(V& v) {
    v.Int(coord);
    v.Int(filter);
    v.Int(rounding);
    v.Int(exclude_outside);
    v.Float(cubic_a);
    v.Float(extrapolation_value);
    v.Doubles(scales);
    v.Doubles(roi);
  }
};

/// BatchAffine: a small tensor the compiler knows as an affine function of the batch (the value
/// of shape arithmetic such as Cast(Shape(x)[0]) that a step reads as data).
struct BatchAffineStepParams {
  std::vector<int64_t> offsets, coefs;
  template <typename V>
  void Visit(V& v) {
    v.Ints(offsets);
    v.Ints(coefs);
  }
};

enum class ReduceOp : int64_t { kSum, kMean };

/// Reduce: `op` over `axes` (ascending, each in [0, rank)); the output holds the kept axes in
/// order, with or without the reduced ones as extent 1 (keepdims does not change the data).
struct ReduceStepParams {
  int64_t op = 0;  // ReduceOp
  std::vector<int64_t> axes;
  template <typename V>
  void Visit(V& v) {
    v.Int(op);
    v.Ints(axes);
  }
};

/// LayerNorm over the axes [axis, rank): y = (x - mean) / sqrt(var + epsilon) * scale + bias,
/// with the biased variance; scale and bias (optional) have the normalized extents.
struct LayerNormStepParams {
  int64_t axis = -1;
  float epsilon = 1e-5f;
  template <typename V>
  void Visit(V& v) {
    v.Int(axis);
    v.Float(epsilon);
  }
};

/// Attention: Y[b, h] = softmax(scale * Q[b, h] K[b, g]ᵀ + mask[b, h]) V[b, g] per query head
/// h, g = h / (q_heads / kv_heads) (kernels/cpu/attention.h).
struct AttentionStepParams {
  int64_t q_heads = 1;
  int64_t kv_heads = 1;
  float scale = 1.0f;
  template <typename V>
  void Visit(V& v) {
    v.Int(q_heads);
    v.Int(kv_heads);
    v.Float(scale);
  }
};

enum class BinaryOp : int64_t { kAdd, kSub, kMul, kDiv };

/// Binary with numpy broadcasting, then the activation (residual Add + Relu).
struct BinaryStepParams {
  int64_t op = 0;  // BinaryOp
  StepActivation activation;
  template <typename V>
  void Visit(V& v) {
    v.Int(op);
    activation.Visit(v);
  }
};

namespace internal {

class ParamWriter {
 public:
  explicit ParamWriter(PlanStep* step) : step_(step) {}
  void Int(int64_t x) { step_->ints.push_back(x); }
  void Float(float x) { step_->floats.push_back(x); }
  void Ints(const std::vector<int64_t>& xs) {
    Int(static_cast<int64_t>(xs.size()));
    step_->ints.insert(step_->ints.end(), xs.begin(), xs.end());
  }
  void Floats(const std::vector<float>& xs) {
    Int(static_cast<int64_t>(xs.size()));
    step_->floats.insert(step_->floats.end(), xs.begin(), xs.end());
  }
  /// Doubles travel exactly, as their bit patterns in `ints`.
  void Doubles(const std::vector<double>& xs) {
    Int(static_cast<int64_t>(xs.size()));
    for (double x : xs) {
      int64_t bits;
      std::memcpy(&bits, &x, sizeof(bits));
      Int(bits);
    }
  }

 private:
  PlanStep* step_;
};

class ParamReader {
 public:
  explicit ParamReader(const PlanStep& step) : step_(step) {}
  void Int(int64_t& x) {
    if (ints_ < step_.ints.size()) {
      x = step_.ints[ints_];
    } else {
      ok_ = false;
    }
    ++ints_;
  }
  void Float(float& x) {
    if (floats_ < step_.floats.size()) {
      x = step_.floats[floats_];
    } else {
      ok_ = false;
    }
    ++floats_;
  }
  void Ints(std::vector<int64_t>& xs) {
    int64_t n = 0;
    Int(n);
    if (!ok_ || n < 0 || static_cast<uint64_t>(n) > step_.ints.size() - ints_) {
      ok_ = false;
      return;
    }
    xs.assign(step_.ints.begin() + ints_, step_.ints.begin() + ints_ + n);
    ints_ += n;
  }
  void Floats(std::vector<float>& xs) {
    int64_t n = 0;
    Int(n);
    if (!ok_ || n < 0 || static_cast<uint64_t>(n) > step_.floats.size() - floats_) {
      ok_ = false;
      return;
    }
    xs.assign(step_.floats.begin() + floats_, step_.floats.begin() + floats_ + n);
    floats_ += n;
  }
  void Doubles(std::vector<double>& xs) {
    std::vector<int64_t> bits;
    Ints(bits);
    xs.resize(bits.size());
    for (size_t i = 0; i < bits.size(); ++i) std::memcpy(&xs[i], &bits[i], sizeof(double));
  }
  /// True when every value was present and every value was consumed.
  bool complete() const {
    return ok_ && ints_ == step_.ints.size() && floats_ == step_.floats.size();
  }

 private:
  const PlanStep& step_;
  size_t ints_ = 0, floats_ = 0;
  bool ok_ = true;
};

}  // namespace internal

/// Appends `params` to step->ints / step->floats.
template <typename P>
void EncodeParams(P params, PlanStep* step) {
  internal::ParamWriter writer(step);
  params.Visit(writer);
}

/// Reads a step's parameters; InvalidArgument naming the step when the counts do not match.
template <typename P>
absl::StatusOr<P> DecodeParams(const PlanStep& step) {
  P params;
  internal::ParamReader reader(step);
  params.Visit(reader);
  if (!reader.complete()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "step '", step.name, "' (", StepKindName(step.kind), "): malformed parameters"));
  }
  return params;
}

}  // namespace qcc::runtime

#endif  // QCC_RUNTIME_STEPS_H_
