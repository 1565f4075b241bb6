// Precision assignment and quantization parameters for an int8 compile (DESIGN.md s.2).
//
// Input: the fused fp32 graph (passes::DefaultPipeline) and, per observed tensor, the range a
// calibration method picked. Output: which nodes run in int8, the scale and zero point of every
// int8 tensor, and the quantized weights, bias (zero-point correction folded in) and
// requantization multipliers of every int8 Conv/Gemm. The assign-precision pass
// (passes/realize_int8.h) decides and writes the decision into the IR in one step
// (qcc.Quantize/Dequantize, QConv, QGemm, QLut; the int32 bias and multipliers again by the
// fold-scales pass, from the same FoldedBias and RequantMultiplier), which the lowering reads;
// it leaves a PrecisionReport, the decision by name, for the reports that outlive the fused
// graph.
#ifndef QCC_PASSES_QUANTIZE_H_
#define QCC_PASSES_QUANTIZE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "support/tensor.h"

namespace qcc::passes {

/// The calibrated range of a tensor: [lo, hi] with lo <= 0 <= hi, lo < hi (symmetric: lo = -hi).
struct TensorRange {
  float lo = -1.0f;
  float hi = 1.0f;
};

/// int8 quantization of one tensor: real = (q - zero_point) * scale.
using QuantParams = ir::QuantParams;

struct QuantizeOptions {
  bool per_channel = true;
  bool asymmetric = false;
  /// Node names and op names (ONNX spelling, e.g. "Add") that stay in float.
  std::vector<std::string> exclude;
  /// Ranges with a zero point, by tensor name, for the tensors fp32-result GEMMs read (see
  /// QuantDecision::float_result), in either mode; a tensor not here keeps its range above.
  std::map<std::string, TensorRange> asymmetric_ranges;
  /// The graph is a QDQ model's (absorb-qdq ran): tensors are quantized on the parameters the
  /// model gave them (ir::Value::given_quant, given_weight_scales), the model's own choices
  /// decide what runs in int8 (no Add or attention rule), and no ranges are used.
  bool qdq_model = false;
};

/// Quantized weights of an int8 Conv or Gemm/MatMul (Gemm weights as [N, K]).
struct QuantizedWeights {
  Tensor weights;     ///< i8, [K, C/g, R, S] or [N, K]
  Tensor bias;        ///< i32 [K]: round(b / (s_in * s_w[k])) - zp_in * sum(w[k])
  Tensor multiplier;  ///< f32 [K]: RequantMultiplier(s_in, s_w[k], s_out) (times Gemm's alpha);
                      ///< s_in * s_w[k] for a float_result MatMul
  Tensor float_bias;  ///< f32 [K]: a float_result MatMul's folded bias (undefined: none)
  Tensor real_bias;   ///< f32 [K]: the float bias `bias` was folded from (undefined: none)
  std::vector<float> weight_scales;
};

/// What AssignPrecision decided.
struct QuantDecision {
  /// Nodes that run in int8.
  absl::flat_hash_map<const ir::Node*, bool> int8;
  /// Parameters of every tensor that exists in int8 (inputs and outputs of int8 nodes).
  absl::flat_hash_map<const ir::Value*, QuantParams> params;
  /// For int8 Conv, Gemm and MatMul nodes.
  absl::flat_hash_map<const ir::Node*, QuantizedWeights> weights;
  /// For int8 LUT nodes (Sigmoid, HardSigmoid, HardSwish, Tanh, standalone Relu/Clip/LeakyRelu):
  /// the function with its constants and its 256-entry table, indexed by q + 128.
  struct Lut {
    UnaryCall call;
    std::vector<int8_t> table;
  };
  absl::flat_hash_map<const ir::Node*, Lut> luts;
  /// Tensors whose range was clamped to the interval where their consumers are not constant
  /// (SaturationInterval): their int8 values are the fp32 values clamped to it, by design.
  absl::flat_hash_map<const ir::Value*, std::pair<float, float>> saturation;
  /// One line per node kept in float that could have been int8, saying why (for the user).
  std::vector<std::string> notes;
  /// int8 MatMuls of a Linear layer on [.., tokens, K] activations (a transformer's projections
  /// and feed-forward layers) whose result no int8 node reads: they give an fp32 result
  /// (kernels/cpu/qgemm.h), the accumulator scaled by s_in * s_w (their multipliers),
  /// with the layer's bias Add folded in when it follows. Their output has no QuantParams. The
  /// value is the folded Add, or null.
  absl::flat_hash_map<const ir::Node*, const ir::Node*> float_result;
  /// The Adds folded into a float_result or dynamic MatMul (no step of their own), with it.
  absl::flat_hash_map<const ir::Node*, const ir::Node*> folded_bias;
  /// Dynamic quantization (AssignDynamic): MatMul/Gemm nodes whose activations are quantized at
  /// run time, with their int8 weights, weight_scales and float_bias (multiplier and bias
  /// unused), and the bias Add folded in (or null) as in float_result.
  absl::flat_hash_map<const ir::Node*, QuantizedWeights> dynamic;
  absl::flat_hash_map<const ir::Node*, const ir::Node*> dynamic_bias_add;
  /// Fused attention nodes (qcc.Attention) whose two products run in int8, Q and K quantized
  /// per row and V per column at run time, the probabilities in u8
  /// (kernels/cpu/attention.h); the others run in fp32.
  absl::flat_hash_set<const ir::Node*> int8_attention;
  /// Output channels of int8 Conv/Gemm/MatMul whose weight scale was widened so that their
  /// int32 bias fits (weights tiny next to the bias), and the nodes they are in.
  int widened_channels = 0;
  int widened_nodes = 0;
  bool runs_int8(const ir::Node* n) const { return int8.contains(n); }
};

/// The int32 bias of one output channel of an int8 Conv/Gemm: round(b / (s_in * s_w)), the
/// rounding in double, less the zero-point correction zp_in * sum(q_w) (`weight_sum`).
int32_t FoldedBias(float b, const QuantParams& in, float s_w, int64_t weight_sum);

/// The int8 parameters of a range: symmetric scale = max(|lo|, |hi|) / 127, zero point 0; or
/// asymmetric scale = (hi - lo) / 255 and the zero point that maps lo to -128 (clamped). The
/// scale is always finite and > 0.
QuantParams ParamsForRange(const TensorRange& range, bool asymmetric);

/// The interval [lo, hi] outside which every consumer of `v` is constant: HardSwish below -3,
/// HardSigmoid outside its ramp, Relu below 0, Clip outside its bounds (lo may be -inf, hi +inf).
/// Quantizing `v` with a range clamped to it loses nothing its consumers can see, and spends the
/// 256 levels where they can. nullopt when `v` is a graph output, has no use, or has a use that is
/// not one of these.
std::optional<std::pair<float, float>> SaturationInterval(const ir::Graph& graph,
                                                          const ir::Value& v);

/// InvalidArgument naming the first `exclude` entry (--exclude) that matches no node name and no
/// op name of `graph`, with the closest node names.
absl::Status CheckExclude(const ir::Graph& graph, const std::vector<std::string>& exclude);

/// Decides precision and computes the parameters. InvalidArgument when an `exclude` entry
/// matches no node name and no op name (CheckExclude).
absl::StatusOr<QuantDecision> AssignPrecision(const ir::Graph& graph,
                                              const std::map<std::string, TensorRange>& ranges,
                                              const QuantizeOptions& options);

/// Dynamic quantization (`qcc compile --int8 --dynamic`, no table): every MatMul with a constant
/// [K, N] weight and every Gemm (transA 0, constant weight and bias, no fused activation) not
/// excluded gets int8 weights (per channel unless !options.per_channel) and quantizes its
/// activation at run time; a MatMul's following bias Add is folded in. Nothing else is int8.
absl::StatusOr<QuantDecision> AssignDynamic(const ir::Graph& graph, const QuantizeOptions& options);

/// What the assign-precision pass (passes/realize_int8.h) decides from.
struct PrecisionSetup {
  /// Dynamic quantization (AssignDynamic): `ranges` are unused.
  bool dynamic = false;
  /// Static quantization: the calibrated range of every observed tensor (empty for a QDQ model,
  /// whose parameters are in the graph: ir::Value::given_quant and given_weight_scales).
  std::map<std::string, TensorRange> ranges;
  QuantizeOptions options;
};

/// How one node of the fused graph runs.
enum class NodePrecision {
  kFloat,
  kInt8,           ///< QuantDecision::int8
  kDynamic,        ///< QuantDecision::dynamic
  kInt8Attention,  ///< QuantDecision::int8_attention
};

/// A QuantDecision by name, for reports: it outlives the fused graph, which the assign-precision
/// pass replaces by the quantized one.
struct PrecisionReport {
  struct NodeReport {
    std::string name;
    ir::OpKind kind = ir::OpKind::kConstant;
    NodePrecision precision = NodePrecision::kFloat;
    bool float_result = false;  ///< QuantDecision::float_result
    bool int8_weights = false;  ///< QuantDecision::weights (an int8 Conv, Gemm or MatMul)
  };
  /// Every node of the fused graph, in its order.
  std::vector<NodeReport> nodes;
  /// QuantDecision::params by tensor name, and how many of them are not constants.
  std::map<std::string, QuantParams> int8_tensors;
  int int8_activations = 0;
  std::vector<std::string> notes;
  int widened_channels = 0;
  int widened_nodes = 0;

  /// The nodes that run in `precision`.
  int Count(NodePrecision precision) const;
};

/// The report of `decision`, made for `graph`.
PrecisionReport ReportDecision(const ir::Graph& graph, const QuantDecision& decision);

}  // namespace qcc::passes

#endif  // QCC_PASSES_QUANTIZE_H_
