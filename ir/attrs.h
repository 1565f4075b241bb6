// Typed attribute structs, one per attribute shape an op can have. Each struct lists its fields
// once in QCC_ATTR_FIELDS; the importer fills them by their ONNX names and the printer prints them
// from the same list, so a new field is declared in exactly one place.
#ifndef QCC_IR_ATTRS_H_
#define QCC_IR_ATTRS_H_

#include <cstdint>
#include <limits>
#include <variant>
#include <vector>

#include "absl/strings/string_view.h"
#include "support/dtype.h"
#include "support/tensor.h"
#include "support/unary_fn.h"

namespace qcc::ir {

using Ints = std::vector<int64_t>;
using Floats = std::vector<float>;

/// Declares Visit(v) (const and non-const) calling v("onnx_name", field) for every field.
#define QCC_ATTR_FIELDS(...) \
  template <typename V>      \
  void Visit(V&& v) {        \
    __VA_ARGS__              \
  }                          \
  template <typename V>      \
  void Visit(V&& v) const {  \
    __VA_ARGS__              \
  }

/// Names of an attribute enum's values, in declaration order, as ONNX spells them.
template <typename E>
struct EnumNames;

#define QCC_ATTR_ENUM(Enum, ...)                                 \
  template <>                                                    \
  struct EnumNames<Enum> {                                       \
    static constexpr absl::string_view kNames[] = {__VA_ARGS__}; \
  };

enum class AutoPad : uint8_t { kNotSet, kSameUpper, kSameLower, kValid };
QCC_ATTR_ENUM(AutoPad, "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")
enum class PadMode : uint8_t { kConstant, kReflect, kEdge, kWrap };
QCC_ATTR_ENUM(PadMode, "constant", "reflect", "edge", "wrap")
enum class ResizeMode : uint8_t { kNearest, kLinear, kCubic };
QCC_ATTR_ENUM(ResizeMode, "nearest", "linear", "cubic")
enum class CoordTransform : uint8_t {
  kHalfPixel,
  kAsymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kTfCropAndResize,
  kHalfPixelSymmetric,
  kTfHalfPixelForNn,  // opset 11 only
};
QCC_ATTR_ENUM(CoordTransform, "half_pixel", "asymmetric", "pytorch_half_pixel", "align_corners",
              "tf_crop_and_resize", "half_pixel_symmetric", "tf_half_pixel_for_nn")
enum class NearestMode : uint8_t { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
QCC_ATTR_ENUM(NearestMode, "round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
enum class KeepAspectRatio : uint8_t { kStretch, kNotLarger, kNotSmaller };
QCC_ATTR_ENUM(KeepAspectRatio, "stretch", "not_larger", "not_smaller")
enum class GeluApprox : uint8_t { kNone, kTanh };
QCC_ATTR_ENUM(GeluApprox, "none", "tanh")
enum class DepthToSpaceMode : uint8_t { kDCR, kCRD };
QCC_ATTR_ENUM(DepthToSpaceMode, "DCR", "CRD")
/// An activation fused into the op that produces its input (by the fusion passes; never set by
/// the importer: ONNX has no such attribute).
enum class Activation : uint8_t { kNone, kRelu, kClip, kLeakyRelu };
QCC_ATTR_ENUM(Activation, "none", "relu", "clip", "leaky_relu")
template <>
struct EnumNames<UnaryFn> {
  static constexpr absl::string_view kNames[] = {
#define QCC_UNARY_NAME(name, cost) #name,
      QCC_UNARY_FNS(QCC_UNARY_NAME)
#undef QCC_UNARY_NAME
  };
};

/// Fields of a fused activation, shared by the attribute structs of ops that can carry one:
/// y = act(op(x)), with kClip clamping to [activation_min, activation_max] and kLeakyRelu using
/// activation_alpha.
#define QCC_FUSED_ACTIVATION_FIELDS                               \
  Activation activation = Activation::kNone;                      \
  float activation_alpha = 0.01f;                                 \
  float activation_min = -std::numeric_limits<float>::infinity(); \
  float activation_max = std::numeric_limits<float>::infinity();
#define QCC_VISIT_FUSED_ACTIVATION             \
  v("qcc_activation", activation);             \
  v("qcc_activation_alpha", activation_alpha); \
  v("qcc_activation_min", activation_min);     \
  v("qcc_activation_max", activation_max);

struct NoAttrs {
  QCC_ATTR_FIELDS()
};

struct ConvAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  Ints dilations;  // empty: all 1
  int64_t group = 1;
  Ints kernel_shape;  // empty: from the weight's shape
  Ints pads;          // [begin..., end...]; empty: all 0
  Ints strides;       // empty: all 1
  QCC_FUSED_ACTIVATION_FIELDS
  QCC_ATTR_FIELDS(v("auto_pad", auto_pad); v("dilations", dilations); v("group", group);
                  v("kernel_shape", kernel_shape); v("pads", pads); v("strides", strides);
                  QCC_VISIT_FUSED_ACTIVATION)
};

struct ConvTransposeAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  Ints dilations;
  int64_t group = 1;
  Ints kernel_shape;
  Ints output_padding;
  Ints output_shape;
  Ints pads;
  Ints strides;
  QCC_ATTR_FIELDS(v("auto_pad", auto_pad); v("dilations", dilations); v("group", group);
                  v("kernel_shape", kernel_shape); v("output_padding", output_padding);
                  v("output_shape", output_shape); v("pads", pads); v("strides", strides);)
};

struct PoolAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  int64_t ceil_mode = 0;
  int64_t count_include_pad = 0;
  Ints dilations;
  Ints kernel_shape;
  Ints pads;
  int64_t storage_order = 0;
  Ints strides;
  QCC_ATTR_FIELDS(v("auto_pad", auto_pad); v("ceil_mode", ceil_mode);
                  v("count_include_pad", count_include_pad); v("dilations", dilations);
                  v("kernel_shape", kernel_shape); v("pads", pads);
                  v("storage_order", storage_order); v("strides", strides);)
};

struct BatchNormAttrs {
  float epsilon = 1e-5f;
  float momentum = 0.9f;
  int64_t training_mode = 0;
  QCC_ATTR_FIELDS(v("epsilon", epsilon); v("momentum", momentum);
                  v("training_mode", training_mode);)
};

struct EpsilonAttrs {
  float epsilon = 1e-5f;
  QCC_ATTR_FIELDS(v("epsilon", epsilon);)
};

struct LayerNormAttrs {
  int64_t axis = -1;
  float epsilon = 1e-5f;
  int64_t stash_type = 1;
  QCC_ATTR_FIELDS(v("axis", axis); v("epsilon", epsilon); v("stash_type", stash_type);)
};

/// qcc.Attention: head counts of Q and of K/V (q_num_heads a multiple of kv_num_heads), and the
/// factor the scores Q·Kᵀ are multiplied by (explicit: the fusion computes it).
struct AttentionAttrs {
  int64_t q_num_heads = 0;
  int64_t kv_num_heads = 0;
  float scale = 1.0f;
  /// Set in an int8 compile's quantized graph (passes/realize_int8.h): the two products run in
  /// int8, Q and K quantized per row and V per column at run time (kernels/cpu/attention.h).
  int64_t qcc_int8 = 0;
  QCC_ATTR_FIELDS(v("q_num_heads", q_num_heads); v("kv_num_heads", kv_num_heads); v("scale", scale);
                  v("qcc_int8", qcc_int8);)
};

struct GemmAttrs {
  float alpha = 1.0f;
  float beta = 1.0f;
  int64_t transA = 0;
  int64_t transB = 0;
  QCC_FUSED_ACTIVATION_FIELDS
  QCC_ATTR_FIELDS(v("alpha", alpha); v("beta", beta); v("transA", transA); v("transB", transB);
                  QCC_VISIT_FUSED_ACTIVATION)
};

/// qcc.QGemm: the fused activation of its Gemm, and whether its result is fp32 (see ops.def).
struct QGemmAttrs {
  int64_t float_result = 0;
  QCC_FUSED_ACTIVATION_FIELDS
  QCC_ATTR_FIELDS(v("float_result", float_result); QCC_VISIT_FUSED_ACTIVATION)
};

/// Add: numpy-broadcast sum, optionally with a fused activation (residual Add + Relu).
struct AddAttrs {
  QCC_FUSED_ACTIVATION_FIELDS
  QCC_ATTR_FIELDS(QCC_VISIT_FUSED_ACTIVATION)
};

/// qcc.QLut: the function its table was built from (support/unary_fn.h) and its constants, as
/// UnaryCallOf gave them for the source node (a Clip's bounds in alpha and beta), so that the
/// quantized graph still says which op each table computes (printing, QDQ export).
struct QLutAttrs {
  UnaryFn fn = UnaryFn::kRelu;
  float alpha = 0.0f;
  float beta = 0.0f;
  float gamma = 0.0f;
  QCC_ATTR_FIELDS(v("fn", fn); v("alpha", alpha); v("beta", beta); v("gamma", gamma);)
  UnaryCall call() const { return UnaryCall{fn, alpha, beta, gamma}; }
};

/// Observe: a calibration tap that records its input's statistics under `observer_id`.
struct ObserveAttrs {
  int64_t observer_id = 0;
  QCC_ATTR_FIELDS(v("observer_id", observer_id);)
};

// The attributes of the elementwise ops (ops.def's Unary column) give their function's
// constants: SetUnaryConstants fills those of a UnaryCall (support/unary_fn.h), and
// ir::UnaryCallOf (graph.h) calls it; TakeUnaryConstants is its inverse (the QDQ export writes a
// qcc.QLut back as its op, passes/qdq_form.h). An op without attributes has no constants.

struct LeakyReluAttrs {
  float alpha = 0.01f;
  QCC_ATTR_FIELDS(v("alpha", alpha);)
  void SetUnaryConstants(UnaryCall& c) const { c.alpha = alpha; }
  void TakeUnaryConstants(const UnaryCall& c) { alpha = c.alpha; }
};

/// Elu and Celu.
struct EluAttrs {
  float alpha = 1.0f;
  QCC_ATTR_FIELDS(v("alpha", alpha);)
  void SetUnaryConstants(UnaryCall& c) const { c.alpha = alpha; }
  void TakeUnaryConstants(const UnaryCall& c) { alpha = c.alpha; }
};

struct ThresholdedReluAttrs {
  float alpha = 1.0f;
  QCC_ATTR_FIELDS(v("alpha", alpha);)
  void SetUnaryConstants(UnaryCall& c) const { c.alpha = alpha; }
  void TakeUnaryConstants(const UnaryCall& c) { alpha = c.alpha; }
};

struct SeluAttrs {
  float alpha = 1.67326319217681884765625f;
  float gamma = 1.05070102214813232421875f;
  QCC_ATTR_FIELDS(v("alpha", alpha); v("gamma", gamma);)
  void SetUnaryConstants(UnaryCall& c) const {
    c.alpha = alpha;
    c.gamma = gamma;
  }
  void TakeUnaryConstants(const UnaryCall& c) {
    alpha = c.alpha;
    gamma = c.gamma;
  }
};

struct HardSigmoidAttrs {
  float alpha = 0.2f;
  float beta = 0.5f;
  QCC_ATTR_FIELDS(v("alpha", alpha); v("beta", beta);)
  void SetUnaryConstants(UnaryCall& c) const {
    c.alpha = alpha;
    c.beta = beta;
  }
  void TakeUnaryConstants(const UnaryCall& c) {
    alpha = c.alpha;
    beta = c.beta;
  }
};

struct GeluAttrs {
  GeluApprox approximate = GeluApprox::kNone;
  QCC_ATTR_FIELDS(v("approximate", approximate);)
  /// The tanh approximation is a function of its own.
  void SetUnaryConstants(UnaryCall& c) const {
    if (approximate == GeluApprox::kTanh) c.fn = UnaryFn::kGeluTanh;
  }
};

struct ShrinkAttrs {
  float bias = 0.0f;
  float lambd = 0.5f;
  QCC_ATTR_FIELDS(v("bias", bias); v("lambd", lambd);)
  void SetUnaryConstants(UnaryCall& c) const {
    c.alpha = lambd;
    c.beta = bias;
  }
  void TakeUnaryConstants(const UnaryCall& c) {
    lambd = c.alpha;
    bias = c.beta;
  }
};

struct IsInfAttrs {
  int64_t detect_negative = 1;
  int64_t detect_positive = 1;
  QCC_ATTR_FIELDS(v("detect_negative", detect_negative); v("detect_positive", detect_positive);)
};

struct ModAttrs {
  int64_t fmod = 0;
  QCC_ATTR_FIELDS(v("fmod", fmod);)
};

/// Softmax, LogSoftmax, Hardmax. Before opset 13 these flatten the input to 2-D at `axis`
/// (default 1) and normalise over the whole second part; the importer sets `coerce_2d` then.
struct SoftmaxAttrs {
  int64_t axis = -1;
  int64_t coerce_2d = 0;
  QCC_ATTR_FIELDS(v("axis", axis); v("coerce_2d", coerce_2d);)
};

/// Reductions; `axes` arrive as the optional second input (opset 18 form).
struct ReduceAttrs {
  int64_t keepdims = 1;
  int64_t noop_with_empty_axes = 0;
  QCC_ATTR_FIELDS(v("keepdims", keepdims); v("noop_with_empty_axes", noop_with_empty_axes);)
};

struct ArgReduceAttrs {
  int64_t axis = 0;
  int64_t keepdims = 1;
  int64_t select_last_index = 0;
  QCC_ATTR_FIELDS(v("axis", axis); v("keepdims", keepdims);
                  v("select_last_index", select_last_index);)
};

struct FlattenAttrs {
  int64_t axis = 1;
  QCC_ATTR_FIELDS(v("axis", axis);)
};

struct ReshapeAttrs {
  int64_t allowzero = 0;
  QCC_ATTR_FIELDS(v("allowzero", allowzero);)
};

struct TransposeAttrs {
  Ints perm;  // empty: reverse the axes
  QCC_ATTR_FIELDS(v("perm", perm);)
};

/// Concat and Gather.
struct AxisAttrs {
  int64_t axis = 0;
  QCC_ATTR_FIELDS(v("axis", axis);)
};

/// Split; sizes arrive as the optional second input (opset 13 form).
struct SplitAttrs {
  int64_t axis = 0;
  int64_t num_outputs = 0;  // opset 18; 0 when not given
  QCC_ATTR_FIELDS(v("axis", axis); v("num_outputs", num_outputs);)
};

/// Pad; pads, constant_value and axes arrive as inputs (opset 18 form).
struct PadAttrs {
  PadMode mode = PadMode::kConstant;
  QCC_ATTR_FIELDS(v("mode", mode);)
};

struct ShapeAttrs {
  int64_t start = 0;
  int64_t end = std::numeric_limits<int64_t>::max();
  QCC_ATTR_FIELDS(v("start", start); v("end", end);)
};

struct CastAttrs {
  DType to = DType::kFloat32;
  QCC_ATTR_FIELDS(v("to", to);)
};

/// Constant (value) and ConstantOfShape (value, default a float 0).
struct ConstantAttrs {
  Tensor value;
  QCC_ATTR_FIELDS(v("value", value);)
};

/// Resize; roi, scales and sizes arrive as inputs 1..3.
struct ResizeAttrs {
  int64_t antialias = 0;
  Ints axes;
  CoordTransform coordinate_transformation_mode = CoordTransform::kHalfPixel;
  float cubic_coeff_a = -0.75f;
  int64_t exclude_outside = 0;
  float extrapolation_value = 0.0f;
  KeepAspectRatio keep_aspect_ratio_policy = KeepAspectRatio::kStretch;
  ResizeMode mode = ResizeMode::kNearest;
  NearestMode nearest_mode = NearestMode::kRoundPreferFloor;
  QCC_ATTR_FIELDS(v("antialias", antialias); v("axes", axes);
                  v("coordinate_transformation_mode", coordinate_transformation_mode);
                  v("cubic_coeff_a", cubic_coeff_a); v("exclude_outside", exclude_outside);
                  v("extrapolation_value", extrapolation_value);
                  v("keep_aspect_ratio_policy", keep_aspect_ratio_policy); v("mode", mode);
                  v("nearest_mode", nearest_mode);)
};

struct DepthToSpaceAttrs {
  int64_t blocksize = 1;
  DepthToSpaceMode mode = DepthToSpaceMode::kDCR;
  QCC_ATTR_FIELDS(v("blocksize", blocksize); v("mode", mode);)
};

/// Every attribute struct; a Node holds exactly the one its op kind names in ops.def.
struct QuantizeLinearAttrs {
  int64_t axis = 1;        // the axis of a 1-D scale (per-channel); ignored for a scalar scale
  int64_t block_size = 0;  // opset 21 blocked quantization; 0: not blocked
  int64_t saturate = 1;    // opset 19, float8 outputs only
  DType output_dtype = DType::kUndefined;  // opset 21; kUndefined: the zero point's type or u8
  QCC_ATTR_FIELDS(v("axis", axis); v("block_size", block_size); v("saturate", saturate);
                  v("output_dtype", output_dtype);)
};

struct DequantizeLinearAttrs {
  int64_t axis = 1;
  int64_t block_size = 0;
  QCC_ATTR_FIELDS(v("axis", axis); v("block_size", block_size);)
};

using Attrs =
    std::variant<NoAttrs, ConvAttrs, ConvTransposeAttrs, PoolAttrs, BatchNormAttrs, EpsilonAttrs,
                 LayerNormAttrs, AttentionAttrs, GemmAttrs, LeakyReluAttrs, EluAttrs,
                 ThresholdedReluAttrs, SeluAttrs, HardSigmoidAttrs, GeluAttrs, ShrinkAttrs,
                 IsInfAttrs, ModAttrs, SoftmaxAttrs, ReduceAttrs, ArgReduceAttrs, FlattenAttrs,
                 ReshapeAttrs, TransposeAttrs, AxisAttrs, SplitAttrs, PadAttrs, ShapeAttrs,
                 CastAttrs, ConstantAttrs, ResizeAttrs, DepthToSpaceAttrs, AddAttrs, ObserveAttrs,
                 QuantizeLinearAttrs, DequantizeLinearAttrs, QGemmAttrs, QLutAttrs>;

}  // namespace qcc::ir

#endif  // QCC_IR_ATTRS_H_
