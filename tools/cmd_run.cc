// `qcc run MODEL.onnx [--input NAME=FILE]... [--test-data DIR] [--output-dir DIR] [--threads N]`

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backend_cpu/evaluator.h"
#include "frontend/tensor_proto.h"
#include "ir/printer.h"
#include "runtime/engine.h"
#include "support/status.h"
#include "tools/commands.h"
#include "tools/plan_session.h"
#include "tools/tool_io.h"

namespace qcc::tools {
namespace {

// Outputs whose batch rows hold at most this many elements get a per-row argmax.
constexpr int64_t kMaxTop1RowSize = 1000;
constexpr int64_t kMaxTop1Rows = 10;

std::string JoinPath(const std::string& dir, const std::string& file) {
  return (std::filesystem::path(dir) / file).string();
}

// The graph inputs, in order, from --input files first and then --test-data's input_K.pb.
// `sources` receives the file each input came from.
/// A model input as `qcc run` names it: from an ONNX graph or from a plan.
struct InputDesc {
  std::string name;
  std::string type_text;  // "f32[N,3,32,32]"
};

std::string NameList(const std::vector<InputDesc>& inputs) {
  std::vector<std::string> names;
  for (const InputDesc& in : inputs) names.push_back("'" + in.name + "'");
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<std::vector<Tensor>> GatherInputs(const std::vector<InputDesc>& inputs,
                                                 const RunOptions& opts,
                                                 std::vector<std::string>* sources) {
  std::vector<Tensor> feeds(inputs.size());
  sources->assign(inputs.size(), "");
  for (const std::string& arg : opts.inputs) {
    QCC_ASSIGN_OR_RETURN(auto name_file, SplitNameValue(arg, "--input"));
    const auto& [name, file] = name_file;
    size_t index = inputs.size();
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].name == name) index = i;
    }
    if (index == inputs.size()) {
      return absl::InvalidArgumentError(absl::StrCat("--input '", arg,
                                                     "': the model has no input '", name,
                                                     "'; its inputs are ", NameList(inputs)));
    }
    if (feeds[index].defined()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--input: input '", name, "' is given more than once"));
    }
    QCC_ASSIGN_OR_RETURN(feeds[index], ReadTensorFile(file));
    (*sources)[index] = file;
  }
  if (!opts.test_data.empty()) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string path = JoinPath(opts.test_data, absl::StrCat("input_", i, ".pb"));
      if (feeds[i].defined() || !PathExists(path)) continue;
      QCC_ASSIGN_OR_RETURN(feeds[i], ReadTensorFile(path));
      (*sources)[i] = path;
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (feeds[i].defined()) continue;
    const InputDesc& v = inputs[i];
    std::string hint = absl::StrCat("give --input ", v.name, "=FILE.npy");
    if (opts.test_data.empty()) {
      absl::StrAppend(&hint, " or --test-data DIR");
    } else {
      absl::StrAppend(&hint, " (test data folder '", opts.test_data, "' has no input_", i, ".pb)");
    }
    return absl::InvalidArgumentError(
        absl::StrCat("no value for model input '", v.name, "' (", v.type_text, "): ", hint));
  }
  return feeds;
}

// Min/max/mean over the finite and infinite values, NaNs counted apart.
std::string StatsText(const Tensor& t) {
  if (t.numel() == 0) return "empty";
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  double sum = 0;
  int64_t nans = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.GetAsDouble(i);
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  if (nans == t.numel()) return absl::StrCat("all ", nans, " values are NaN");
  std::string s = absl::StrFormat("min %g  max %g  mean %g", lo, hi, sum / (t.numel() - nans));
  if (nans > 0) absl::StrAppend(&s, "  NaN ", nans);
  return s;
}

// "top-1: class 7 (score 0.98)" per batch row, for outputs with short rows.
void PrintTop1(const Tensor& t) {
  if (t.rank() == 0 || t.numel() == 0 || t.dtype() == DType::kBool) return;
  const int64_t rows = t.rank() >= 2 ? t.dim(0) : 1;
  const int64_t row_size = t.numel() / rows;
  if (row_size < 2 || row_size > kMaxTop1RowSize) return;
  for (int64_t r = 0; r < rows && r < kMaxTop1Rows; ++r) {
    int64_t best = 0;
    double best_v = t.GetAsDouble(r * row_size);
    for (int64_t j = 1; j < row_size; ++j) {
      const double v = t.GetAsDouble(r * row_size + j);
      if (v > best_v || (std::isnan(best_v) && !std::isnan(v))) {
        best = j;
        best_v = v;
      }
    }
    const std::string row = rows > 1 ? absl::StrCat("row ", r, " ") : "";
    std::printf("  %stop-1: class %lld (score %g)\n", row.c_str(), static_cast<long long>(best),
                best_v);
  }
  if (rows > kMaxTop1Rows) {
    std::printf("  ... %lld more rows\n", static_cast<long long>(rows - kMaxTop1Rows));
  }
}

// Compares with a reference tensor: |got - want| <= atol + rtol * |want| everywhere.
void PrintComparison(const Tensor& got, const Tensor& want, const std::string& ref_path) {
  const std::string file = std::filesystem::path(ref_path).filename().string();
  if (got.dims() != want.dims()) {
    std::printf("  vs %s: shape mismatch (reference %s, got %s)\n", file.c_str(),
                DimsToString(want.dims()).c_str(), DimsToString(got.dims()).c_str());
    return;
  }
  const bool reduced = IsReducedFloat(got.dtype()) || IsReducedFloat(want.dtype());
  const double rtol = reduced ? 1e-2 : 1e-3;
  const double atol = 1e-4;
  double max_err = 0;
  int64_t outside = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.GetAsDouble(i);
    const double w = want.GetAsDouble(i);
    const double err = std::fabs(g - w);
    if (std::isnan(g) != std::isnan(w) || err > atol + rtol * std::fabs(w)) ++outside;
    if (!std::isnan(err)) max_err = std::max(max_err, err);
  }
  if (outside == 0) {
    std::printf("  vs %s: max abs error %g, within rtol %g/atol %g\n", file.c_str(), max_err, rtol,
                atol);
  } else {
    std::printf("  vs %s: max abs error %g, NOT within rtol %g/atol %g (%lld of %lld elements)\n",
                file.c_str(), max_err, rtol, atol, static_cast<long long>(outside),
                static_cast<long long>(got.numel()));
  }
}

// Adds the source file to an evaluator error about one input ("input 'x' must be f32, ...").
absl::Status NameInputFile(const absl::Status& s, const std::vector<InputDesc>& inputs,
                           const std::vector<std::string>& sources) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    // "input 'x' ..." (evaluator) or "input 0 'x': ..." (runtime).
    const std::string prefix = absl::StrCat("input '", inputs[i].name, "'");
    const std::string indexed = absl::StrCat("input ", i, " '", inputs[i].name, "'");
    const bool about_it =
        absl::StartsWith(s.message(), prefix) || absl::StartsWith(s.message(), indexed);
    if (about_it && !sources[i].empty()) {
      return absl::Status(s.code(), absl::StrCat(s.message(), " (read from '", sources[i], "')"));
    }
  }
  return s;
}

}  // namespace

absl::Status RunCommand(const RunOptions& opts) {
  if (!opts.test_data.empty()) QCC_RETURN_IF_ERROR(CheckDirectory(opts.test_data, "--test-data"));
  // A plan runs on the runtime, a model in fp32 on the CPU evaluator.
  std::vector<InputDesc> inputs;
  std::vector<std::string> output_names;
  std::function<absl::StatusOr<std::vector<Tensor>>(const std::vector<Tensor>&)> run;
  std::unique_ptr<ir::Graph> graph;
  std::unique_ptr<cpu::Evaluator> evaluator;
  std::unique_ptr<PlanSession> session;
  QCC_ASSIGN_OR_RETURN(const int64_t max_memory, ParseMaxMemory(opts.max_memory));
  if (absl::EndsWithIgnoreCase(opts.model, ".plan")) {
    QCC_ASSIGN_OR_RETURN(session,
                         PlanSession::Open(opts.model, opts.device, opts.threads, max_memory));
    const runtime::Engine* engine = &session->engine();
    for (const runtime::TensorInfo& in : engine->inputs()) {
      std::vector<std::string> dims;
      for (int64_t d : in.dims) dims.push_back(d < 0 ? "N" : absl::StrCat(d));
      inputs.push_back(
          {in.name, absl::StrCat(DTypeName(in.dtype), "[", absl::StrJoin(dims, ","), "]")});
    }
    for (const runtime::TensorInfo& out : engine->outputs()) output_names.push_back(out.name);
    run = [&](const std::vector<Tensor>& feeds) { return session->Run(feeds); };
  } else {
    QCC_ASSIGN_OR_RETURN(graph, LoadModel(opts.model));
    cpu::EvalOptions eval_options;
    eval_options.num_threads = opts.threads;
    eval_options.max_memory = max_memory;
    QCC_ASSIGN_OR_RETURN(evaluator, cpu::Evaluator::Create(*graph, eval_options));
    for (const ir::Value* v : graph->inputs()) {
      inputs.push_back({v->name(), ir::TypeToString(*graph, v->type())});
    }
    for (const ir::Value* v : graph->outputs()) output_names.push_back(v->name());
    run = [&](const std::vector<Tensor>& feeds) { return evaluator->Run(feeds); };
  }
  std::vector<std::string> sources;
  QCC_ASSIGN_OR_RETURN(std::vector<Tensor> feeds, GatherInputs(inputs, opts, &sources));
  absl::StatusOr<std::vector<Tensor>> outputs = run(feeds);
  if (!outputs.ok()) return NameInputFile(outputs.status(), inputs, sources);

  // Reference outputs are read before anything is written, so a bad one leaves no files.
  std::vector<Tensor> references(outputs->size());
  std::vector<std::string> reference_paths(outputs->size());
  if (!opts.test_data.empty()) {
    for (size_t k = 0; k < outputs->size(); ++k) {
      const std::string path = JoinPath(opts.test_data, absl::StrCat("output_", k, ".pb"));
      if (!PathExists(path)) continue;
      QCC_ASSIGN_OR_RETURN(references[k], ReadTensorFile(path));
      reference_paths[k] = path;
    }
  }

  for (size_t k = 0; k < outputs->size(); ++k) {
    const Tensor& t = (*outputs)[k];
    std::printf("output %zu '%s': %s%s  %s\n", k, output_names[k].c_str(),
                std::string(DTypeName(t.dtype())).c_str(), DimsToString(t.dims()).c_str(),
                StatsText(t).c_str());
    PrintTop1(t);
    if (references[k].defined()) PrintComparison(t, references[k], reference_paths[k]);
  }

  if (!opts.output_dir.empty()) {
    QCC_RETURN_IF_ERROR(EnsureDirectory(opts.output_dir, "--output-dir"));
    for (size_t k = 0; k < outputs->size(); ++k) {
      const std::string path = JoinPath(opts.output_dir, absl::StrCat("output_", k, ".pb"));
      QCC_RETURN_IF_ERROR(frontend::WriteTensorProtoFile(path, (*outputs)[k], output_names[k]));
      std::printf("wrote %s\n", path.c_str());
    }
  }
  std::fflush(stdout);
  return absl::OkStatus();
}

}  // namespace qcc::tools
