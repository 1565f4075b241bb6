#include "builder/build.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backend_cpu/lowering.h"
#include "backend_cuda/lowering.h"
#include "ir/fingerprint.h"
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

}  // namespace

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

  // A QDQ model: the pairs become tensor parameters (an fp32 or fp16 plan runs the float model
  // between them).
  if (r.qdq_model) {
    absl::StatusOr<passes::QdqImport> absorbed = passes::AbsorbQdq(*graph);
    if (!absorbed.ok()) {
      return absl::Status(absorbed.status().code(),
                          absl::StrCat(source, ": ", absorbed.status().message()));
    }
    r.qdq = *std::move(absorbed);
  }
  QCC_RETURN_IF_ERROR(passes::RunPipeline(*graph, passes::DefaultPipeline()).status());
  if (int8 && options.dynamic) {
    passes::QuantizeOptions q;
    q.per_channel = !options.per_tensor;
    q.exclude = options.exclude;
    QCC_ASSIGN_OR_RETURN(r.decision, passes::AssignDynamic(*graph, q));
  } else if (int8) {
    passes::QuantizeOptions q;
    q.per_channel = !options.per_tensor;
    q.asymmetric = options.asymmetric;
    q.exclude = options.exclude;
    q.fixed_params = r.qdq.activations;
    q.fixed_weight_scales = r.qdq.weight_scales;
    if (!r.qdq_model) q.asymmetric_ranges = options.gemm_input_ranges;
    QCC_ASSIGN_OR_RETURN(
        r.decision,
        passes::AssignPrecision(
            *graph, r.qdq_model ? std::map<std::string, passes::TensorRange>{} : options.ranges,
            q));
  }
  cpu::LowerOptions lower;
  lower.batch_min = batch_min;
  lower.batch_max = batch_max;
  lower.fp16 = options.precision == Precision::kFp16;
  // An int8 compile lowers its quantized graph: the decision written into the IR.
  std::unique_ptr<ir::Graph> quantized;
  if (int8) {
    QCC_ASSIGN_OR_RETURN(quantized, passes::RealizeInt8(*graph, r.decision));
  }
  const ir::Graph& lowered = int8 ? *quantized : *graph;
  QCC_ASSIGN_OR_RETURN(r.plan, options.target == Target::kCuda
                                   ? cuda::LowerToCudaPlan(lowered, lower)
                                   : cpu::LowerToCpuPlan(lowered, lower));

  std::map<std::string, std::string>& meta = r.plan.metadata;
  meta["fingerprint"] = fingerprint;
  meta["qcc_version"] = QCC_VERSION;
  if (int8) {
    meta["precision"] = "int8";
    bool per_tensor = options.per_tensor;
    if (r.qdq_model && !r.qdq.weight_scales.empty()) {  // the model's weight scales decide
      per_tensor = true;
      for (const auto& [name, scales] : r.qdq.weight_scales) per_tensor &= scales.size() == 1;
    }
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
