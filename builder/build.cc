#include "builder/build.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backend_cpu/lowering.h"
#include "backend_cuda/lowering.h"
#include "ir/fingerprint.h"
#include "ir/symbolic_values.h"
#include "passes/passes.h"
#include "passes/realize_int8.h"
#include "support/status.h"

namespace qcc::builder {
namespace {

/// The batch range: the options' when given, else the model's fixed batch, else 1 to 32.
absl::Status ChooseBatch(const ir::Graph& graph, const BuildOptions& options, int64_t* lo,
                         int64_t* hi) {
  const std::optional<int64_t> fixed = FixedBatch(graph);
  if (options.batch_min == 0 && options.batch_max == 0) {
    *lo = fixed ? *fixed : 1;
    *hi = fixed ? *fixed : 32;
    return absl::OkStatus();
  }
  *lo = options.batch_min;
  *hi = options.batch_max;
  if (*lo < 1 || *hi < *lo) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch range ", *lo, ":", *hi, " is not MIN:MAX with 1 <= MIN <= MAX"));
  }
  if (fixed && (*lo != *fixed || *hi != *fixed)) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch range ", *lo, ":", *hi, ": the model's batch is fixed at ", *fixed));
  }
  return absl::OkStatus();
}

/// The model's float weights: parameter count and bytes.
void CountWeights(const ir::Graph& graph, int64_t* parameters, int64_t* bytes) {
  auto count = [&](const Tensor& t) {
    *parameters += t.numel();
    *bytes += static_cast<int64_t>(t.nbytes());
  };
  for (const auto& v : graph.values()) {
    if (v->constant() == nullptr) continue;
    // A QDQ model's weights are the integer constants its DequantizeLinear nodes read.
    bool dequantized = false;
    for (const ir::Use& use : v->uses()) {
      dequantized |= use.node->kind() == ir::OpKind::kDequantizeLinear && use.index == 0;
    }
    if (IsFloat(v->dtype()) || dequantized) count(*v->constant());
  }
  for (const auto& n : graph.nodes()) {
    if (n->kind() == ir::OpKind::kConstant) {
      const Tensor& t = n->attrs<ir::ConstantAttrs>().value;
      if (IsFloat(t.dtype())) count(t);
    }
  }
}

/// A node of the fused graph as `qcc compile` counts it.
struct FusedNode {
  ir::OpKind kind;
  /// Not a Constant and not computed when compiling (shape arithmetic).
  bool runs = false;
};

std::vector<FusedNode> FusedNodes(const ir::Graph& graph) {
  // Shape arithmetic whose values are known when compiling (a Shape of the batch-N input and
  // what is computed from it) runs no step.
  const ir::SymbolicValues symbolic = ir::ComputeSymbolicValues(graph);
  auto known = [&](const ir::Node& n) {
    for (const ir::Value* v : n.outputs()) {
      auto it = symbolic.find(v);
      if (it == symbolic.end()) return false;
      for (const auto& e : it->second) {
        if (!e) return false;
      }
    }
    return n.num_outputs() > 0;
  };
  std::vector<FusedNode> nodes;
  for (const auto& n : graph.nodes()) nodes.push_back({n->kind(), !known(*n)});
  return nodes;
}

/// `fused` counted with `precision` (empty, or made for the same nodes).
absl::StatusOr<NodeCounts> CountNodes(const std::vector<FusedNode>& fused,
                                      const passes::PrecisionReport& precision) {
  if (!precision.nodes.empty() && precision.nodes.size() != fused.size()) {
    return absl::InternalError(absl::StrCat("the precision report has ", precision.nodes.size(),
                                            " nodes and the fused graph ", fused.size()));
  }
  NodeCounts c;
  for (size_t i = 0; i < fused.size(); ++i) {
    const ir::OpKind kind = fused[i].kind;
    if (kind == ir::OpKind::kConstant) continue;
    if (!fused[i].runs) {
      ++c.shape_nodes;
      continue;
    }
    ++c.nodes;
    const passes::NodePrecision p =
        precision.nodes.empty() ? passes::NodePrecision::kFloat : precision.nodes[i].precision;
    c.int8 += p != passes::NodePrecision::kFloat ? 1 : 0;
    if (kind == ir::OpKind::kAttention) ++c.attentions;
    if (p == passes::NodePrecision::kInt8Attention) ++c.int8_attentions;
    if (kind == ir::OpKind::kMatMul || kind == ir::OpKind::kGemm) {
      ++c.gemms;
      if (!precision.nodes.empty() && precision.nodes[i].float_result) ++c.float_results;
      if (p != passes::NodePrecision::kInt8 && p != passes::NodePrecision::kDynamic) {
        ++c.float_gemms;
      }
    }
  }
  return c;
}

}  // namespace

passes::PrecisionSetup PrecisionSetupFor(const BuildOptions& options, bool qdq_model) {
  passes::PrecisionSetup setup;
  setup.dynamic = options.dynamic;
  passes::QuantizeOptions& q = setup.options;
  q.per_channel = !options.per_tensor;
  q.exclude = options.exclude;
  if (options.dynamic) return setup;
  q.asymmetric = options.asymmetric;
  q.qdq_model = qdq_model;
  if (!qdq_model) {
    q.asymmetric_ranges = options.gemm_input_ranges;
    setup.ranges = options.ranges;
  }
  return setup;
}

std::optional<int64_t> FixedBatch(const ir::Graph& graph) {
  std::optional<int64_t> fixed;
  for (const ir::Value* in : graph.inputs()) {
    if (in->type().has_rank() && !in->type().dims->empty() &&
        ir::IsKnown(in->type().dims->front())) {
      fixed = in->type().dims->front();
    }
  }
  return fixed;
}

absl::StatusOr<BuildResult> Build(std::unique_ptr<ir::Graph> graph, const std::string& source,
                                  const BuildOptions& options) {
  const bool int8 = options.precision == Precision::kInt8;
  BuildResult r;
  r.qdq_model = passes::HasQdq(*graph);
  if (!int8 &&
      (options.dynamic || options.per_tensor || options.asymmetric || !options.exclude.empty())) {
    return absl::InvalidArgumentError(
        "dynamic, per-tensor, asymmetric and exclude apply to int8 (an fp16 or fp32 plan has no "
        "int8 op)");
  }
  if (r.qdq_model && options.dynamic) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", source,
                     "' is a QDQ model: its QuantizeLinear/DequantizeLinear nodes give the "
                     "scales, so dynamic quantization does not apply"));
  }
  const std::string fingerprint =
      options.fingerprint.empty() ? ir::Fingerprint(*graph) : options.fingerprint;
  int64_t batch_min = 1, batch_max = 1;
  QCC_RETURN_IF_ERROR(ChooseBatch(*graph, options, &batch_min, &batch_max));
  CountWeights(*graph, &r.parameters, &r.model_weight_bytes);

  // The fp32 pipeline; for a QDQ model its pairs first become tensor parameters (an fp32 or fp16
  // plan runs the float model between them).
  absl::Status fused_ok = passes::RunPipeline(*graph, r.qdq_model ? passes::QdqModelPipeline(&r.qdq)
                                                                  : passes::DefaultPipeline())
                              .status();
  if (!fused_ok.ok()) {
    return absl::Status(fused_ok.code(), absl::StrCat(source, ": ", fused_ok.message()));
  }
  const std::vector<FusedNode> fused = FusedNodes(*graph);
  std::vector<std::string> qdq_tensors;         // the model's quantized tensors the fused graph has
  int given_weights = 0, given_per_tensor = 0;  // weights with the model's scales, one scale
  for (const auto& v : graph->values()) {
    if (v->given_quant() != nullptr) qdq_tensors.push_back(v->name());
    if (const std::vector<float>* w = v->given_weight_scales()) {
      ++given_weights;
      given_per_tensor += w->size() == 1;
    }
  }
  std::sort(qdq_tensors.begin(), qdq_tensors.end());
  if (int8) {
    // An --exclude typo is the user's: reported as it is, not as the pass's.
    QCC_RETURN_IF_ERROR(passes::CheckExclude(*graph, options.exclude));
    QCC_RETURN_IF_ERROR(
        passes::RunPipeline(
            *graph, passes::QuantizePipeline(PrecisionSetupFor(options, r.qdq_model), &r.precision))
            .status());
    for (const std::string& name : qdq_tensors) {
      if (r.precision.int8_tensors.count(name) == 0) r.qdq_in_float.push_back(name);
    }
  }
  QCC_ASSIGN_OR_RETURN(r.counts, CountNodes(fused, r.precision));
  cpu::LowerOptions lower;
  lower.batch_min = batch_min;
  lower.batch_max = batch_max;
  lower.fp16 = options.precision == Precision::kFp16;
  // An int8 compile lowers its quantized graph.
  QCC_ASSIGN_OR_RETURN(r.plan, options.target == Target::kCuda
                                   ? cuda::LowerToCudaPlan(*graph, lower)
                                   : cpu::LowerToCpuPlan(*graph, lower));

  std::map<std::string, std::string>& meta = r.plan.metadata;
  meta["fingerprint"] = fingerprint;
  meta["qcc_version"] = QCC_VERSION;
  if (int8) {
    meta["precision"] = "int8";
    bool per_tensor = options.per_tensor;
    // The model's scales decide, where weights with them remain in the fused graph.
    if (r.qdq_model && given_weights > 0) per_tensor = given_per_tensor == given_weights;
    meta["weights"] = per_tensor ? "per-tensor" : "per-channel";
    meta["activations"] = options.dynamic                          ? "dynamic"
                          : options.asymmetric || r.qdq.asymmetric ? "asymmetric"
                                                                   : "symmetric";
    // "qdq": the scales are the model's own; "none": computed at run time.
    meta["calib_method"] = r.qdq_model ? "qdq" : options.dynamic ? "none" : options.calib_method;
  } else {
    const char* precision = options.precision == Precision::kFp16 ? "fp16" : "fp32";
    meta["precision"] = precision;
    meta["weights"] = precision;
    meta["activations"] = precision;
    meta["calib_method"] = "none";
  }
  meta["parameters"] = absl::StrCat(r.parameters);
  meta["model_weight_bytes"] = absl::StrCat(r.model_weight_bytes);
  meta["source"] = source;
  r.graph = std::move(graph);
  return r;
}

}  // namespace qcc::builder
