// `qcc compile MODEL --int8 [--per-channel|--per-tensor] [--asymmetric] [--calib TABLE]
// [--calib-method M] [--exclude NAME,...] [--target cpu] [--batch MIN:MAX] [-o MODEL.plan]`:
// the flags, the model and its calibration table in, builder::Build (builder/build.h), the plan
// written and summarised.

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "builder/build.h"
#include "calib/calib_table.h"
#include "calib/scale_solvers.h"
#include "ir/fingerprint.h"
#include "ir/shape_inference.h"
#include "passes/absorb_qdq.h"
#include "runtime/plan_format.h"
#include "support/status.h"
#include "tools/commands.h"
#include "tools/int8_setup.h"
#include "tools/tool_io.h"

namespace qcc::tools {
namespace {

/// --batch: "N" or "MIN:MAX" (empty: 0 and 0, the builder's default: the model's fixed batch,
/// or 1 to 32).
absl::Status ParseBatch(const std::string& text, const ir::Graph& graph, int64_t* lo, int64_t* hi) {
  *lo = *hi = 0;
  if (text.empty()) return absl::OkStatus();
  std::vector<std::string> parts = absl::StrSplit(text, ':');
  bool ok = parts.size() <= 2 && absl::SimpleAtoi(parts[0], lo) &&
            absl::SimpleAtoi(parts.back(), hi) && *lo >= 1 && *hi >= *lo;
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch '", text, "' is not N or MIN:MAX with 1 <= MIN <= MAX"));
  }
  const std::optional<int64_t> fixed = builder::FixedBatch(graph);
  if (fixed && (*lo != *fixed || *hi != *fixed)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch ", text, ": the model's batch is fixed at ", *fixed));
  }
  return absl::OkStatus();
}

}  // namespace

namespace fs = std::filesystem;

absl::Status CompileCommand(const CompileOptions& options) {
  if (int{options.int8} + int{options.fp16} + int{options.fp32} != 1) {
    return absl::InvalidArgumentError("pass exactly one of --int8, --fp16 and --fp32");
  }
  if (options.target != "cpu" && options.target != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("--target ", options.target, ": the targets are cpu and cuda"));
  }
  if (options.dynamic) {
    if (!options.int8) return absl::InvalidArgumentError("--dynamic goes with --int8");
    for (const auto& [flag, given] :
         {std::pair<const char*, bool>{"--calib", !options.calib.empty()},
          {"--calib-method", !options.calib_method.empty()},
          {"--asymmetric", options.asymmetric}}) {
      if (given) {
        return absl::InvalidArgumentError(
            absl::StrCat(flag,
                         " does not apply to --dynamic: dynamic quantization needs no calibration "
                         "table and always gives activations a zero point; drop it"));
      }
    }
  }
  QCC_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, LoadModel(options.model));
  const std::string fingerprint = ir::Fingerprint(*graph);
  // int8 needs the table (checked before anything else is done), unless the model is a QDQ model
  // (its Q/DQ nodes give the scales); fp16 needs no ranges.
  const bool qdq_model = passes::HasQdq(*graph);
  if (qdq_model && options.dynamic) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", options.model,
                     "' is a QDQ model: its QuantizeLinear/DequantizeLinear nodes give the "
                     "scales, so --dynamic does not apply; drop it"));
  }
  if (qdq_model && options.int8) {
    for (const auto& [flag, given] :
         {std::pair<const char*, bool>{"--calib", !options.calib.empty()},
          {"--calib-method", !options.calib_method.empty()},
          {"--asymmetric", options.asymmetric},
          {"--per-tensor", options.per_tensor}}) {
      if (given) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", options.model,
                         "' is a QDQ model: its QuantizeLinear/DequantizeLinear nodes give "
                         "the scales and zero points, so ",
                         flag, " does not apply; drop it"));
      }
    }
  }
  Int8Table table;
  if (options.int8 && !qdq_model && !options.dynamic) {
    QCC_ASSIGN_OR_RETURN(table,
                         LoadInt8Table(options.model, options.calib, options.calib_method, *graph));
  }
  QCC_RETURN_IF_ERROR(ApplyShapes(options.shapes, *graph));

  builder::BuildOptions build;
  build.precision = options.int8   ? builder::Precision::kInt8
                    : options.fp16 ? builder::Precision::kFp16
                                   : builder::Precision::kFp32;
  build.target = options.target == "cuda" ? builder::Target::kCuda : builder::Target::kCpu;
  build.fingerprint = fingerprint;
  QCC_RETURN_IF_ERROR(ParseBatch(options.batch, *graph, &build.batch_min, &build.batch_max));
  for (const auto& [flag, given] :
       {std::pair<const char*, bool>{"--exclude", !options.exclude.empty()},
        {"--per-tensor", options.per_tensor},
        {"--asymmetric", options.asymmetric}}) {
    if (!options.int8 && given) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, " applies to --int8 (an fp16 or fp32 plan has no int8 op)"));
    }
  }
  build.dynamic = options.dynamic;
  build.per_tensor = options.per_tensor;
  build.asymmetric = options.asymmetric;
  build.exclude = options.exclude;
  if (options.int8 && !qdq_model && !options.dynamic) {
    build.ranges = SolveRanges(table, options.asymmetric);
    build.gemm_input_ranges = GemmInputRanges(table);
    build.calib_method = calib::CalibMethodName(table.method);
  }
  QCC_ASSIGN_OR_RETURN(
      builder::BuildResult built,
      builder::Build(std::move(graph), fs::path(options.model).filename().string(), build));
  runtime::Plan& plan = built.plan;
  const passes::PrecisionReport& precision = built.precision;
  const builder::NodeCounts& counts = built.counts;
  const passes::QdqImport& qdq = built.qdq;
  const int64_t batch_max = plan.batch_max;

  const std::string output =
      options.output.empty() ? BesideModel(options.model, ".plan") : options.output;
  QCC_RETURN_IF_ERROR(runtime::WritePlan(plan, output));

  // Shape arithmetic computed at compile time runs no step: it is counted apart.
  const std::string shape_note =
      counts.shape_nodes == 0 ? ""
                              : absl::StrCat("; ", counts.shape_nodes,
                                             " shape-arithmetic nodes computed at compile time");
  std::map<std::string, uint64_t> weight_bytes;
  for (const runtime::PlanWeight& w : plan.weights)
    weight_bytes[std::string(DTypeName(w.dtype))] += w.nbytes;
  std::string bytes;
  for (const auto& [dtype, n] : weight_bytes) absl::StrAppend(&bytes, " ", dtype, " ", n, " B");
  if (options.int8) {
    std::printf(
        "compiled %s: %d of %d nodes in int8 (%s weights, %s activations, %s), %zu steps%s\n",
        options.model.c_str(), counts.int8, counts.nodes, plan.metadata["weights"].c_str(),
        plan.metadata["activations"].c_str(), plan.metadata["calib_method"].c_str(),
        plan.steps.size(), shape_note.c_str());
  } else if (options.fp16) {
    std::printf(
        "compiled %s: %d nodes in fp16 (fp16 weights and activations, fp32 "
        "accumulation), %zu steps%s\n",
        options.model.c_str(), counts.nodes, plan.steps.size(), shape_note.c_str());
  } else {
    std::printf("compiled %s: %d nodes in fp32 (the unquantized baseline), %zu steps%s\n",
                options.model.c_str(), counts.nodes, plan.steps.size(), shape_note.c_str());
  }
  std::printf("weights:%s; arena %llu B at batch %lld (no reuse: %s B)\n", bytes.c_str(),
              static_cast<unsigned long long>(plan.arena_bytes), static_cast<long long>(batch_max),
              plan.metadata["arena_no_reuse_bytes"].c_str());
  if (options.int8 && counts.gemms > 0) {
    // What a transformer's user asks first: which products run in int8, and why the rest do not
    // (one "stays in float" line each, below).
    std::printf("  MatMul/Gemm: %d of %d in int8%s; %d in fp32%s\n",
                counts.gemms - counts.float_gemms, counts.gemms,
                options.dynamic ? " (activations quantized per row at run time, fp32 results)"
                : counts.float_results > 0
                    ? absl::StrCat(" (", counts.float_results,
                                   " with fp32 results: their consumers are float)")
                          .c_str()
                    : "",
                counts.float_gemms, counts.float_gemms > 0 ? " (why: the lines below)" : "");
  }
  if (options.int8 && counts.attentions > 0) {
    std::printf(
        "  attention: %d fused (Q.K^T, mask, softmax and P.V in one step each: %d products of two "
        "activations); %d in int8 (Q and K quantized per row, V per column, at run time; "
        "probabilities in u8); %d in fp32%s\n",
        counts.attentions, 2 * counts.attentions, counts.int8_attentions,
        counts.attentions - counts.int8_attentions,
        counts.attentions > counts.int8_attentions ? " (why: the lines below)" : "");
  }
  if (precision.widened_channels > 0) {
    std::printf(
        "  %d output channels in %d Conv/Gemm nodes have weights too small next to their bias for "
        "an int32 bias: their weight scales were widened to fit it\n",
        precision.widened_channels, precision.widened_nodes);
  }
  if (qdq_model) {
    std::printf(
        "  QDQ model: %d Q/DQ pairs and %d dequantized constants read, %d weight tensors "
        "keep the model's scales\n",
        qdq.pairs, qdq.folded_constants, qdq.weights);
    if (options.int8) {
      // The tensors the model quantizes that the plan holds in float.
      const std::vector<std::string>& in_float = built.qdq_in_float;
      if (!in_float.empty()) {
        std::printf(
            "  %zu tensors with a Q/DQ pair in the model run in float in the plan (their "
            "consumers have no int8 form in qcc, see below): %s\n",
            in_float.size(), absl::StrJoin(in_float, ", ").c_str());
      }
    } else {
      std::printf("  an %s plan runs the float model between the model's Q/DQ pairs\n",
                  options.fp16 ? "fp16" : "fp32");
    }
  }
  for (const std::string& note : qdq.notes) std::printf("  %s\n", note.c_str());
  for (const std::string& note : precision.notes) std::printf("  %s\n", note.c_str());
  std::printf("plan -> %s\n", output.c_str());
  return absl::OkStatus();
}

}  // namespace qcc::tools
