// Reading a QDQ model's own quantization (QuantizeLinear/DequantizeLinear pairs, as ONNX Runtime's
// quantize_static, PyTorch QAT and TensorRT-style exports write them) into the parameters an int8
// compile uses instead of a calibration table.
#ifndef QCC_PASSES_ABSORB_QDQ_H_
#define QCC_PASSES_ABSORB_QDQ_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "passes/pass.h"
#include "passes/quantize.h"

namespace qcc::passes {

/// What absorb-qdq read from a QDQ model. The parameters themselves go into the IR, on the
/// tensors they quantize: ir::Value::given_quant (an activation's Q -> DQ pair) and
/// given_weight_scales (a Conv/Gemm/MatMul weight's DQ), which move with the tensor's name
/// through the fusion passes (ir::SwapNames), for assign-precision to read.
struct QdqImport {
  /// Q/DQ pairs removed, DQs of constants folded, weight constants that keep the model's scales.
  int pairs = 0;
  int folded_constants = 0;
  int weights = 0;
  /// True when some activation zero point is not 0 (uint8 or asymmetric int8).
  bool asymmetric = false;
  /// One line per pair or weight whose parameters qcc cannot use as given (they run in float or
  /// get scales recomputed), saying why.
  std::vector<std::string> notes;
};

/// True when the graph has a QuantizeLinear or DequantizeLinear node.
bool HasQdq(const ir::Graph& graph);

/// Removes every Q -> DQ pair (the consumers read the float tensor; a graph output keeps its name)
/// and folds every DQ of a constant into a float constant of the same name, writing the
/// parameters onto the float tensors (given_quant, given_weight_scales). Run it on the imported
/// graph before the default pipeline. InvalidArgument naming the node for a Q/DQ qcc cannot read: a
/// scale or zero point that is not a constant, a Q whose output is read by something else than a
/// DequantizeLinear, a DQ of a non-constant that no Q feeds.
absl::StatusOr<QdqImport> AbsorbQdq(ir::Graph& graph);

/// absorb-qdq: AbsorbQdq as a pass, the first of a QDQ model's pipeline, so that `qcc inspect
/// --passes` records it like the others. Each Run writes what it read to `report` (when not
/// null; empty for a graph without Q/DQ, which it leaves unchanged); the report must outlive
/// the pass.
std::unique_ptr<Pass> CreateAbsorbQdqPass(QdqImport* report);

/// The fp32 pipeline of a QDQ model: absorb-qdq (writing `report`), then DefaultPipeline.
Pipeline QdqModelPipeline(QdqImport* report);

}  // namespace qcc::passes

#endif  // QCC_PASSES_ABSORB_QDQ_H_
