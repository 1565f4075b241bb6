// `qcc export MODEL [--calib TABLE] [--qdq] [-o MODEL.qdq.onnx] [--asymmetric] [--per-tensor]
// [--calib-method M] [--exclude NAME,...] [--trt-cache FILE [--trt-version V]]`: qcc's int8
// quantization for other runtimes. The same table, solver, fusions and precision decisions as
// `qcc compile --int8`, written as an ONNX model with QuantizeLinear/DequantizeLinear pairs (the
// explicit quantization TensorRT and ONNX Runtime read), and/or as a TensorRT calibration cache.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "frontend/onnx_exporter.h"
#include "onnx/onnx_pb.h"
#include "passes/absorb_qdq.h"
#include "passes/passes.h"
#include "passes/qdq_form.h"
#include "passes/quantize.h"
#include "passes/realize_int8.h"
#include "support/atomic_file.h"
#include "support/status.h"
#include "tools/commands.h"
#include "tools/int8_setup.h"
#include "tools/tool_io.h"

namespace qcc::tools {
namespace {

/// TensorRT's calibration cache text: a "TRT-<version>-EntropyCalibration2" line, then one
/// "name: xxxxxxxx" line per tensor, the scale's float32 bits as 8 hex digits, most significant
/// first. The scale is the plan's where the tensor is int8 in it, else the solver's amax / 127.
std::string TrtCacheText(const std::map<std::string, passes::TensorRange>& ranges,
                         const std::map<std::string, passes::QuantParams>& int8_tensors,
                         int version) {
  std::map<std::string, float> scales;
  for (const auto& [name, r] : ranges) {
    scales[name] = passes::ParamsForRange(r, /*asymmetric=*/false).scale;
  }
  for (const auto& [name, params] : int8_tensors) {
    if (scales.count(name) != 0) scales[name] = params.scale;
  }
  std::string text = absl::StrCat("TRT-", version, "-EntropyCalibration2\n");
  for (const auto& [name, scale] : scales) {
    uint32_t bits;
    std::memcpy(&bits, &scale, sizeof bits);
    absl::StrAppendFormat(&text, "%s: %08x\n", name, bits);
  }
  return text;
}

}  // namespace

absl::Status ExportCommand(const ExportOptions& options) {
  QCC_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, LoadModel(options.model));
  if (passes::HasQdq(*graph)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", options.model,
        "' is already a QDQ model (it has QuantizeLinear/DequantizeLinear "
        "nodes); export the float model, or compile this one directly with qcc compile --int8"));
  }
  QCC_ASSIGN_OR_RETURN(Int8Table table,
                       LoadInt8Table(options.model, options.calib, options.calib_method, *graph));
  const bool write_qdq = options.qdq || options.trt_cache.empty();
  if (!write_qdq && !options.output.empty()) {
    return absl::InvalidArgumentError("-o names the QDQ model: pass --qdq with it");
  }
  if (!options.trt_cache.empty() && options.asymmetric) {
    return absl::InvalidArgumentError(
        "--trt-cache holds symmetric scales (TensorRT's int8 is symmetric): drop --asymmetric");
  }
  QCC_RETURN_IF_ERROR(passes::RunPipeline(*graph, passes::OnnxFormPipeline()).status());
  QCC_RETURN_IF_ERROR(passes::CheckExclude(*graph, options.exclude));
  // The quantized graph compile --int8 lowers, in scale form, written op for op in QDQ form.
  passes::PrecisionReport precision;
  QCC_RETURN_IF_ERROR(
      passes::RunPipeline(
          *graph, passes::QuantizePipeline(
                      StaticSetup(table, options.per_tensor, options.asymmetric, options.exclude),
                      &precision, passes::QuantizedForm::kScale))
          .status());
  int int8_weights = 0;
  for (const passes::PrecisionReport::NodeReport& n : precision.nodes) {
    int8_weights += n.int8_weights ? 1 : 0;
  }

  if (!options.trt_cache.empty()) {
    const std::string text = TrtCacheText(SolveRanges(table, /*asymmetric=*/false),
                                          precision.int8_tensors, options.trt_version);
    QCC_RETURN_IF_ERROR(WriteFileAtomically(options.trt_cache, text));
    std::printf("TensorRT calibration cache: %zu tensors -> %s\n", table.table.tensors.size(),
                options.trt_cache.c_str());
  }
  if (!write_qdq) return absl::OkStatus();
  passes::QdqOptions qdq_options;
  qdq_options.uint8_activations = options.asymmetric;
  QCC_ASSIGN_OR_RETURN(passes::QdqModel qdq, passes::QdqForm(*graph, qdq_options));
  if (qdq.widened > 0) {
    std::printf(
        "  %d fp16/bf16 tensors are fp32 in the QDQ model (opset-19 Q/DQ take the scale in "
        "the tensor's type, and ONNX Runtime's int8 kernels need fp32 scales); its inputs and "
        "outputs keep their types, with a Cast at each\n",
        qdq.widened);
  }
  QCC_ASSIGN_OR_RETURN(onnx::ModelProto model, frontend::ExportOnnxModel(*qdq.graph));
  model.set_producer_version(QCC_VERSION);
  const std::string output =
      options.output.empty() ? BesideModel(options.model, ".qdq.onnx") : options.output;
  QCC_RETURN_IF_ERROR(frontend::WriteOnnxFile(model, output));
  std::printf(
      "exported %s: %d nodes in int8 (%d with int8 weights, %s), %d tensors quantized (%s "
      "activations), opset %d\n",
      options.model.c_str(), precision.Count(passes::NodePrecision::kInt8), int8_weights,
      options.per_tensor ? "per-tensor" : "per-channel", precision.int8_activations,
      options.asymmetric ? "uint8 asymmetric" : "int8 symmetric",
      frontend::ExportOpset(*qdq.graph));
  for (const std::string& note : precision.notes) std::printf("  %s\n", note.c_str());
  std::printf("QDQ model -> %s\n", output.c_str());
  return absl::OkStatus();
}

}  // namespace qcc::tools
