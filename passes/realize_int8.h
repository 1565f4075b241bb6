// The quantized graph of an int8 compile: the precision decision (passes/quantize.h) written into
// the IR, which the CPU lowering reads (backend_cpu/lowering.h) and `qcc inspect --passes --int8`
// prints.
#ifndef QCC_PASSES_REALIZE_INT8_H_
#define QCC_PASSES_REALIZE_INT8_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/graph.h"
#include "passes/pass.h"
#include "passes/quantize.h"

namespace qcc::passes {

/// The suffix of an int8 tensor's name in the quantized graph: tensor `x` of the fused graph
/// computed in int8 is the value `x:int8` (the plan's buffer name for it).
inline constexpr absl::string_view kInt8Suffix = ":int8";

/// The fused graph's name of an int8 value of the quantized graph (`x` for `x:int8`).
std::string FloatTensorName(const ir::Value& int8_value);

/// How far RealizeInt8 takes the quantized graph.
enum class QuantizedForm {
  /// After cancel-qdq and eliminate-dead-code: qcc.QConv and qcc.QGemm in scale form (int8
  /// weights with their scales, float bias), which the QDQ export writes (passes/qdq_form.h).
  kScale,
  /// After fold-scales too: their int32 bias and multipliers, which the lowering reads.
  kInteger,
};

/// Writes `decision`, made for the fused graph `graph`, into a new graph where quantization is
/// explicit, in two steps.
///
/// realize-int8 quantizes each node on its own:
/// - every tensor that exists in int8 (decision.params) is a value `NAME:int8` of dtype int8
///   with its parameters (Value::quant) and saturation interval (Value::saturation);
/// - every int8 node reads its int8 inputs through a qcc.Quantize of their fp32 form, and its
///   int8 result is given back in fp32 by a qcc.Dequantize; each sits just before the node that
///   first needs it (a graph output's just after its producer);
/// - int8 Conv, Gemm and MatMul nodes become qcc.QConv and qcc.QGemm in scale form: their int8
///   weights with per-channel scales (Value::channel_scales) and their float bias (fp32-result
///   GEMMs with the bias Add folded into them take that Add's output and bias); dynamic ones
///   become qcc.DynamicQGemm; int8 table-driven nodes become qcc.QLut with their table and
///   their function and its constants as attributes (ir::QLutAttrs); other
///   int8 nodes (Add, pools, Concat, data movement) keep their kind and read and write int8
///   values; int8 attention nodes have AttentionAttrs::qcc_int8 set;
/// - every other node, value and constant is copied with its name, in order.
///
/// Int8Pipeline then runs as ordinary passes: cancel-qdq removes each Quantize(Dequantize(x))
/// between two int8 nodes, eliminate-dead-code the Dequantize nothing reads any more, and
/// fold-scales (for `form` kInteger) gives QConv and QGemm their int32 bias and requantization
/// multipliers.
///
/// Values and nodes keep the fused graph's names, so the plan lowered from it names its buffers
/// and steps as before. The result passes ir::Verify. Internal when `decision` does not fit
/// `graph` (a node or tensor it names without parameters). `records`, when given, gets one
/// record per step (realize-int8, then the pipeline's), as `qcc inspect --passes` prints them.
absl::StatusOr<std::unique_ptr<ir::Graph>> RealizeInt8(
    const ir::Graph& graph, const QuantDecision& decision,
    std::vector<PassRecord>* records = nullptr, QuantizedForm form = QuantizedForm::kInteger);

/// The passes RealizeInt8 runs on the graph it writes: cancel-qdq, eliminate-dead-code, and for
/// the integer form fold-scales.
Pipeline Int8Pipeline(QuantizedForm form = QuantizedForm::kInteger);

/// assign-precision: precision assignment as a pass. Run decides on the fused graph it is given
/// (AssignPrecision from `setup`'s ranges, or AssignDynamic), writes `report` (when not null) and
/// replaces the graph by the realize-int8 step's quantized graph (as RealizeInt8 before its
/// Int8Pipeline), so the pipeline's shape inference and verifier see the Q/DQ ops and `qcc
/// inspect --passes` records it like any pass. Each Run overwrites `report`; the report must
/// outlive the pass.
std::unique_ptr<Pass> CreateAssignPrecisionPass(PrecisionSetup setup, PrecisionReport* report);

/// The int8 compile after the fp32 pipeline: assign-precision, then Int8Pipeline(form). What
/// `qcc compile --int8` lowers (kInteger) and `qcc export` writes (kScale).
Pipeline QuantizePipeline(PrecisionSetup setup, PrecisionReport* report,
                          QuantizedForm form = QuantizedForm::kInteger);

}  // namespace qcc::passes

#endif  // QCC_PASSES_REALIZE_INT8_H_
