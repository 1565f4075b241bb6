// `qcc run MODEL.onnx [--input NAME=FILE]... [--test-data DIR] [--output-dir DIR] [--threads N]`

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backend_cpu/evaluator.h"
#include "frontend/tensor_proto.h"
#include "ir/printer.h"
#include "support/status.h"
#include "tools/commands.h"
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
absl::StatusOr<std::vector<Tensor>> GatherInputs(const ir::Graph& graph, const RunOptions& opts,
                                                 std::vector<std::string>* sources) {
  const auto& inputs = graph.inputs();
  std::vector<Tensor> feeds(inputs.size());
  sources->assign(inputs.size(), "");
  for (const std::string& arg : opts.inputs) {
    QCC_ASSIGN_OR_RETURN(auto name_file, SplitNameValue(arg, "--input"));
    const auto& [name, file] = name_file;
    size_t index = inputs.size();
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i]->name() == name) index = i;
    }
    if (index == inputs.size()) {
      return absl::InvalidArgumentError(absl::StrCat("--input '", arg,
                                                     "': the model has no input '", name,
                                                     "'; its inputs are ", InputNameList(graph)));
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
    const ir::Value& v = *inputs[i];
    std::string hint = absl::StrCat("give --input ", v.name(), "=FILE.npy");
    if (opts.test_data.empty()) {
      absl::StrAppend(&hint, " or --test-data DIR");
    } else {
      absl::StrAppend(&hint, " (test data folder '", opts.test_data, "' has no input_", i, ".pb)");
    }
    return absl::InvalidArgumentError(absl::StrCat("no value for model input '", v.name(), "' (",
                                                   ir::TypeToString(graph, v.type()), "): ", hint));
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
absl::Status NameInputFile(const absl::Status& s, const ir::Graph& graph,
                           const std::vector<std::string>& sources) {
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const std::string prefix = absl::StrCat("input '", graph.inputs()[i]->name(), "'");
    if (absl::StartsWith(s.message(), prefix) && !sources[i].empty()) {
      return absl::Status(s.code(), absl::StrCat(s.message(), " (read from '", sources[i], "')"));
    }
  }
  return s;
}

}  // namespace

absl::Status RunCommand(const RunOptions& opts) {
  if (!opts.test_data.empty()) QCC_RETURN_IF_ERROR(CheckDirectory(opts.test_data, "--test-data"));
  QCC_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, LoadModel(opts.model));
  cpu::EvalOptions eval_options;
  eval_options.num_threads = opts.threads;
  QCC_ASSIGN_OR_RETURN(std::unique_ptr<cpu::Evaluator> evaluator,
                       cpu::Evaluator::Create(*graph, eval_options));
  std::vector<std::string> sources;
  QCC_ASSIGN_OR_RETURN(std::vector<Tensor> feeds, GatherInputs(*graph, opts, &sources));
  absl::StatusOr<std::vector<Tensor>> outputs = evaluator->Run(feeds);
  if (!outputs.ok()) return NameInputFile(outputs.status(), *graph, sources);

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
    std::printf("output %zu '%s': %s%s  %s\n", k, graph->outputs()[k]->name().c_str(),
                std::string(DTypeName(t.dtype())).c_str(), DimsToString(t.dims()).c_str(),
                StatsText(t).c_str());
    PrintTop1(t);
    if (references[k].defined()) PrintComparison(t, references[k], reference_paths[k]);
  }

  if (!opts.output_dir.empty()) {
    QCC_RETURN_IF_ERROR(EnsureDirectory(opts.output_dir, "--output-dir"));
    for (size_t k = 0; k < outputs->size(); ++k) {
      const std::string path = JoinPath(opts.output_dir, absl::StrCat("output_", k, ".pb"));
      QCC_RETURN_IF_ERROR(
          frontend::WriteTensorProtoFile(path, (*outputs)[k], graph->outputs()[k]->name()));
      std::printf("wrote %s\n", path.c_str());
    }
  }
  std::fflush(stdout);
  return absl::OkStatus();
}

}  // namespace qcc::tools
