// The compile pipeline as a library: an imported model and options in, a plan out, for the CPU
// and the CUDA target alike. `qcc compile` calls it (tools/cmd_compile.cc reads the flags, the
// model and the calibration table, and prints the summary); an embedder that builds plans links
// qcc_builder instead of copying that code.
//
// Build runs, in order: the QDQ import when the model has Q/DQ pairs (passes/absorb_qdq.h), the
// fp32 pipeline (passes::DefaultPipeline), for int8 passes::QuantizePipeline (the
// assign-precision pass, static from the ranges, dynamic, or from the model's own Q/DQ
// parameters, then the passes on the quantized graph), and the lowering for the target; then it
// fills the plan's metadata.
#ifndef QCC_BUILDER_BUILD_H_
#define QCC_BUILDER_BUILD_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "passes/absorb_qdq.h"
#include "passes/quantize.h"
#include "runtime/plan.h"

namespace qcc::builder {

enum class Precision { kFp32, kFp16, kInt8 };
enum class Target { kCpu, kCuda };

struct BuildOptions {
  Precision precision = Precision::kFp32;
  /// kCuda: the CPU plan plus the CUDA kernel of every step (backend_cuda/lowering.h); the CPU
  /// runtime runs either.
  Target target = Target::kCpu;
  /// The batch range the plan accepts; 0 and 0: the model's fixed batch, or 1 to 32.
  int64_t batch_min = 0, batch_max = 0;
  /// The plan's "fingerprint" (what calibration tables and plans are matched to a model by):
  /// ir::Fingerprint of the model as imported, before any input shape was fixed. Empty: the
  /// fingerprint of the graph Build gets.
  std::string fingerprint;

  // int8 only.
  /// Activations quantized at run time; no ranges (passes::AssignDynamic).
  bool dynamic = false;
  /// One weight scale per tensor instead of per output channel.
  bool per_tensor = false;
  /// Activations with a zero point.
  bool asymmetric = false;
  /// Node names and op names (ONNX spelling) kept in float.
  std::vector<std::string> exclude;
  /// Static quantization of a model without Q/DQ pairs: the range of every calibrated tensor,
  /// the ranges with a zero point of the tensors fp32-result GEMMs read (tools/int8_setup.h's
  /// SolveRanges and GemmInputRanges), and the calibration method's name for the plan.
  std::map<std::string, passes::TensorRange> ranges;
  std::map<std::string, passes::TensorRange> gemm_input_ranges;
  std::string calib_method;
};

/// The fused graph's nodes by what they run in (what `qcc compile` prints).
struct NodeCounts {
  /// Nodes that run a step: not Constant, and not shape arithmetic computed when compiling (a
  /// Shape of the batch-N input and what is computed from it), which `shape_nodes` counts.
  int nodes = 0;
  int shape_nodes = 0;
  /// Of `nodes`: in int8 (statically, dynamically, or an attention's int8 products).
  int int8 = 0;
  /// MatMul and Gemm nodes; of them, int8 ones with an fp32 result, and float ones.
  int gemms = 0;
  int float_results = 0;
  int float_gemms = 0;
  /// Fused qcc.Attention nodes, and those whose products run in int8.
  int attentions = 0;
  int int8_attentions = 0;
};

struct BuildResult {
  runtime::Plan plan;
  /// The graph the plan was lowered from: the fused graph, or for int8 the quantized graph
  /// (passes::QuantizePipeline).
  std::unique_ptr<ir::Graph> graph;
  /// What assign-precision decided (int8 only), and the fused graph's nodes counted with it.
  passes::PrecisionReport precision;
  NodeCounts counts;
  /// The model's Q/DQ pairs as tensor parameters (empty unless it has them), and for an int8
  /// plan the tensors among them that it computes in float (their consumers have no int8 form).
  passes::QdqImport qdq;
  std::vector<std::string> qdq_in_float;
  bool qdq_model = false;
  /// The model's float weights (a QDQ model's: the constants its DequantizeLinear nodes read).
  int64_t parameters = 0;
  int64_t model_weight_bytes = 0;
};

/// The batch the model's inputs fix (the first extent of an input that has a known one), or
/// nullopt when the batch is dynamic.
std::optional<int64_t> FixedBatch(const ir::Graph& graph);

/// What the assign-precision pass decides an int8 plan from, for `options`; for a QDQ model
/// (`qdq_model`) the parameters are the ones absorb-qdq wrote into the graph, and options'
/// ranges are not used.
passes::PrecisionSetup PrecisionSetupFor(const BuildOptions& options, bool qdq_model);

/// Compiles `graph`, an imported and unfused model with its input shapes as the plan should
/// have them; `source` names it in the plan's metadata (the model's file name). Errors:
/// InvalidArgument for options that contradict each other or the model (--dynamic on a QDQ
/// model, a batch range other than a fixed batch), and whatever a pass or the lowering refuses,
/// naming the node.
absl::StatusOr<BuildResult> Build(std::unique_ptr<ir::Graph> graph, const std::string& source,
                                  const BuildOptions& options);

}  // namespace qcc::builder

#endif  // QCC_BUILDER_BUILD_H_
