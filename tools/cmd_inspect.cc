// `qcc inspect MODEL.onnx [--passes [--int8 [--qdq] [--calib TABLE]]]`: the imported IR
// (optionally after the default pass pipeline, with one line per pass, and then the quantized
// graph compile --int8 lowers, or with --qdq the QDQ graph qcc export writes) and a one-line
// summary.

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "builder/build.h"
#include "ir/printer.h"
#include "passes/absorb_qdq.h"
#include "passes/passes.h"
#include "passes/qdq_form.h"
#include "passes/realize_int8.h"
#include "support/status.h"
#include "tools/commands.h"
#include "tools/int8_setup.h"
#include "tools/tool_io.h"

namespace qcc::tools {
namespace {

// "Conv x2, Relu x2, MatMul x1": by count, most frequent first, then by name.
std::string OpCounts(const ir::Graph& graph) {
  std::map<std::string, int> counts;
  for (const auto& node : graph.nodes()) ++counts[std::string(ir::OpName(node->kind()))];
  std::vector<std::pair<std::string, int>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (const auto& [name, count] : sorted) parts.push_back(absl::StrCat(name, " x", count));
  return absl::StrJoin(parts, ", ");
}

// Parameters (elements of constant values and of Constant nodes, where exporters such as
// paddle2onnx keep weights) and their bytes per dtype, e.g. "f32 23976 B".
std::string WeightSummary(const ir::Graph& graph) {
  int64_t params = 0;
  std::map<DType, int64_t> bytes;
  auto add = [&](const Tensor& t) {
    params += t.numel();
    bytes[t.dtype()] += static_cast<int64_t>(t.nbytes());
  };
  for (const auto& value : graph.values()) {
    if (const Tensor* c = value->constant()) add(*c);
  }
  for (const auto& node : graph.nodes()) {
    if (node->kind() == ir::OpKind::kConstant) add(node->attrs<ir::ConstantAttrs>().value);
  }
  std::vector<std::string> parts;
  int64_t total = 0;
  for (const auto& [dtype, n] : bytes) {
    parts.push_back(absl::StrCat(DTypeName(dtype), " ", n, " B"));
    total += n;
  }
  return absl::StrCat(params, " parameters, weight bytes ", total,
                      parts.empty() ? "" : absl::StrCat(" (", absl::StrJoin(parts, ", "), ")"));
}

}  // namespace

absl::Status InspectCommand(const InspectOptions& opts) {
  if (absl::EndsWithIgnoreCase(opts.model, ".json")) {
    if (opts.passes) return absl::InvalidArgumentError("--passes applies to models, not tables");
    return InspectTableCommand(opts.model);
  }
  if (absl::EndsWithIgnoreCase(opts.model, ".plan")) {
    if (opts.passes) return absl::InvalidArgumentError("--passes applies to models, not plans");
    return InspectPlanCommand(opts.model);
  }
  QCC_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, LoadModel(opts.model));
  const bool qdq_model = passes::HasQdq(*graph);
  std::vector<passes::PassRecord> records;
  passes::QdqImport qdq;
  if (opts.passes) {
    // A QDQ model's pairs first become tensor parameters, as in compile.
    auto ran = passes::RunPipeline(
        *graph, qdq_model ? passes::QdqModelPipeline(&qdq) : passes::DefaultPipeline());
    if (!ran.ok()) {
      return absl::Status(ran.status().code(),
                          absl::StrCat("model '", opts.model, "': ", ran.status().message()));
    }
    records = *std::move(ran);
  }
  if (opts.int8 || opts.qdq || !opts.calib.empty()) {
    if (!opts.passes || !opts.int8) {
      return absl::InvalidArgumentError(
          "--int8, --qdq and --calib go together with --passes: qcc inspect MODEL --passes "
          "--int8");
    }
    passes::PrecisionSetup setup;
    if (qdq_model) {
      // The model's own scales, as compile --int8 uses them.
      if (!opts.calib.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "'", opts.model,
            "' is a QDQ model: its QuantizeLinear/DequantizeLinear nodes give the scales, so "
            "--calib does not apply; drop it"));
      }
      builder::BuildOptions build;
      build.precision = builder::Precision::kInt8;
      setup = builder::PrecisionSetupFor(build, /*qdq_model=*/true);
    } else {
      // The table was made for the unfused model: check it against a fresh import.
      QCC_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> imported, LoadModel(opts.model));
      QCC_ASSIGN_OR_RETURN(Int8Table table, LoadInt8Table(opts.model, opts.calib, "", *imported));
      setup = StaticSetup(table, false, false, {});
    }
    QCC_ASSIGN_OR_RETURN(
        std::vector<passes::PassRecord> quantized,
        passes::RunPipeline(*graph,
                            passes::QuantizePipeline(std::move(setup), /*report=*/nullptr,
                                                     opts.qdq ? passes::QuantizedForm::kScale
                                                              : passes::QuantizedForm::kInteger)));
    records.insert(records.end(), quantized.begin(), quantized.end());
    if (opts.qdq) {
      QCC_ASSIGN_OR_RETURN(passes::QdqModel qdq, passes::QdqForm(*graph, {}));
      graph = std::move(qdq.graph);
    }
  }
  std::fputs(ir::PrintGraph(*graph).c_str(), stdout);
  for (const passes::PassRecord& r : records) {
    std::printf("pass %s: %s, nodes %d -> %d (%s)\n", r.name.c_str(),
                r.changed ? "changed" : "unchanged", r.nodes_before, r.nodes_after,
                r.summary.empty() ? "no op count change" : r.summary.c_str());
  }
  std::printf("summary: %zu nodes (%s), %s, opset %d\n", graph->nodes().size(),
              OpCounts(*graph).c_str(), WeightSummary(*graph).c_str(), graph->opset());
  std::fflush(stdout);
  return absl::OkStatus();
}

}  // namespace qcc::tools
