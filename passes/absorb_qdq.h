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

/// What a QDQ model says about its quantization, keyed by value name (names survive the fusion
/// passes: they move to the tensor that stands for the fused one).
struct QdqImport {
  /// Activation tensors with a Q -> DQ pair: their scale and zero point in qcc's int8 domain
  /// (a uint8 zero point z becomes z - 128; the real values are the same).
  std::map<std::string, QuantParams> activations;
  /// Float weight constants that were DQ(int8, zero point 0) of a Conv/Gemm/MatMul: their scale
  /// per output channel (one entry for a per-tensor scale).
  std::map<std::string, std::vector<float>> weight_scales;
  /// Q/DQ pairs removed, DQs of constants folded.
  int pairs = 0;
  int folded_constants = 0;
  /// True when some activation zero point is not 0 (uint8 or asymmetric int8).
  bool asymmetric = false;
  /// One line per pair or weight whose parameters qcc cannot use as given (they run in float or
  /// get scales recomputed), saying why.
  std::vector<std::string> notes;
};

/// True when the graph has a QuantizeLinear or DequantizeLinear node.
bool HasQdq(const ir::Graph& graph);

/// Removes every Q -> DQ pair (the consumers read the float tensor; a graph output keeps its name)
/// and folds every DQ of a constant into a float constant of the same name, recording the
/// parameters. Run it on the imported graph before the default pipeline. InvalidArgument naming
/// the node for a Q/DQ qcc cannot read: a scale or zero point that is not a constant, a Q whose
/// output is read by something else than a DequantizeLinear, a DQ of a non-constant that no Q
/// feeds.
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
