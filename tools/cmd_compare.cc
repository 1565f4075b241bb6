// `qcc compare MODEL.onnx MODEL.plan DATA`: runs the fp32 model (CPU evaluator) and the plan
// (runtime) on the same samples and reports how far the plan is from fp32: per output SQNR,
// cosine similarity, max abs error and top-1 agreement, and labelled top-1/top-5 of both.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backend_cpu/evaluator.h"
#include "calib/dataset.h"
#include "ir/fingerprint.h"
#include "passes/passes.h"
#include "runtime/engine.h"
#include "runtime/steps.h"
#include "support/quantize.h"
#include "support/status.h"
#include "tools/commands.h"
#include "tools/compare_metrics.h"
#include "tools/plan_session.h"
#include "tools/preprocess_options.h"
#include "tools/progress.h"
#include "tools/tool_io.h"

namespace qcc::tools {
namespace {

namespace fs = std::filesystem;

/// Labels by sample file: from the class sub-folder's position among DATA's sorted sub-folders,
/// or from a "NAME LABEL" text file (NAME the file's path relative to DATA, or its base name).
class Labels {
 public:
  static absl::StatusOr<Labels> FromFolders(const std::string& data) {
    Labels l;
    l.data_ = fs::path(data);
    std::vector<std::string> folders;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(data, ec)) {
      if (e.is_directory()) folders.push_back(e.path().filename().string());
    }
    if (folders.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--labels-from-folders: '", data, "' has no class sub-folders (DATA/<class>/<file>)"));
    }
    std::sort(folders.begin(), folders.end());
    for (size_t i = 0; i < folders.size(); ++i) l.by_folder_[folders[i]] = static_cast<int>(i);
    return l;
  }

  static absl::StatusOr<Labels> FromFile(const std::string& path, const std::string& data) {
    QCC_RETURN_IF_ERROR(CheckRegularFile(path, "labels file"));
    Labels l;
    l.data_ = fs::path(data);
    std::ifstream in(path);
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      std::istringstream fields(line);
      std::string name, label_text;
      int label = 0;
      if (!(fields >> name)) continue;
      if (!(fields >> label_text) || !absl::SimpleAtoi(label_text, &label) || label < 0) {
        return absl::InvalidArgumentError(absl::StrCat("labels file '", path, "' line ", number,
                                                       ": expected 'NAME LABEL' with LABEL >= 0"));
      }
      l.by_name_[name] = label;
    }
    if (l.by_name_.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("labels file '", path, "' has no labels"));
    }
    return l;
  }

  /// The label of the sample read from `file`, or -1 when unknown.
  int Of(const std::string& file) const {
    const fs::path rel = fs::path(file).lexically_relative(data_);
    if (!by_folder_.empty()) {
      auto it = by_folder_.find(rel.begin() == rel.end() ? "" : rel.begin()->string());
      return it == by_folder_.end() ? -1 : it->second;
    }
    auto it = by_name_.find(rel.string());
    if (it == by_name_.end()) it = by_name_.find(fs::path(file).filename().string());
    return it == by_name_.end() ? -1 : it->second;
  }

 private:
  fs::path data_;
  std::map<std::string, int> by_folder_;
  std::map<std::string, int> by_name_;
};

/// The number of pairs in a retrieval pairs file: a JSON list of [name, query, document].
absl::StatusOr<int64_t> CountPairs(const std::string& path) {
  QCC_RETURN_IF_ERROR(CheckRegularFile(path, "pairs file"));
  std::ifstream in(path, std::ios::binary);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_array() || j.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pairs file '", path, "' is not a non-empty JSON list of [name, query, document]"));
  }
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& p = j[i];
    if (!p.is_array() || p.size() != 3 || !p[0].is_string() || !p[1].is_string() ||
        !p[2].is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat("pairs file '", path, "': entry ", i, " is not [name, query, document]"));
    }
  }
  return static_cast<int64_t>(j.size());
}

/// Stacks equal-shaped samples into one batch per input.
std::vector<Tensor> Stack(const std::vector<calib::Sample>& samples) {
  std::vector<Tensor> batch;
  for (size_t i = 0; i < samples.front().tensors.size(); ++i) {
    const Tensor& first = samples.front().tensors[i];
    Dims dims = first.dims();
    dims[0] = static_cast<int64_t>(samples.size());
    Tensor t(first.dtype(), dims);
    auto* out = static_cast<uint8_t*>(t.raw());
    for (const calib::Sample& s : samples) {
      std::memcpy(out, s.tensors[i].raw(), first.nbytes());
      out += first.nbytes();
    }
    batch.push_back(std::move(t));
  }
  return batch;
}

/// Per-layer error: every int8 tensor of the plan, dequantized, against the fp32 model's value
/// of the same tensor.
class PerLayer {
 public:
  explicit PerLayer(const runtime::Plan& plan) : plan_(plan) {}

  /// Captures fp32 values (the evaluator reuses its buffers, so each is copied).
  void OnFp32(const ir::Value& v, const Tensor& t) {
    if (!IsFloat(t.dtype())) return;
    Tensor copy(DType::kFloat32, t.dims());
    const Tensor f = CastTensor(t, DType::kFloat32);
    std::memcpy(copy.raw(), f.raw(), f.nbytes());
    fp32_[v.name()] = std::move(copy);
  }

  /// Compares an int8 step output with the captured fp32 value of its tensor.
  void OnStep(size_t step, int32_t buffer, const Tensor& value) {
    const runtime::PlanBuffer& b = plan_.buffers[buffer];
    const std::string suffix = ":int8";
    if (b.dtype != DType::kInt8 || b.name.size() <= suffix.size()) return;
    const std::string tensor = b.name.substr(0, b.name.size() - suffix.size());
    auto meta = plan_.metadata.find("quant:" + tensor);
    auto ref = fp32_.find(tensor);
    if (meta == plan_.metadata.end() || ref == fp32_.end() ||
        ref->second.numel() != value.numel()) {
      return;
    }
    float scale = 1;
    int zp = 0;
    if (std::sscanf(meta->second.c_str(), "%f %d", &scale, &zp) != 2) return;
    // A tensor quantized only where its consumers are not constant is measured against the
    // fp32 values clamped to that interval: what its consumers can tell apart.
    double lo = -std::numeric_limits<double>::infinity();
    double hi = std::numeric_limits<double>::infinity();
    if (auto sat = plan_.metadata.find("saturates:" + tensor); sat != plan_.metadata.end()) {
      float a = 0, b = 0;
      if (std::sscanf(sat->second.c_str(), "%f %f", &a, &b) == 2 && a <= b) lo = a, hi = b;
    }
    Entry& e = entries_[tensor];
    if (e.node.empty()) {
      e.node = plan_.steps[step].name;
      e.kernel = std::string(runtime::StepKindName(plan_.steps[step].kind));
    }
    const int8_t* q = value.data<int8_t>();
    const float* r = ref->second.data<float>();
    for (int64_t i = 0; i < value.numel(); ++i) {
      const double x = std::clamp<double>(r[i], lo, hi), y = DequantizeValue(q[i], scale, zp);
      e.signal += x * x;
      e.noise += (x - y) * (x - y);
    }
  }

  void Print() const {
    std::vector<std::pair<double, std::string>> order;
    for (const auto& [tensor, e] : entries_) {
      order.emplace_back(e.noise == 0 ? std::numeric_limits<double>::infinity()
                                      : 10 * std::log10(e.signal / e.noise),
                         tensor);
    }
    std::sort(order.begin(), order.end());
    std::printf("per layer (%zu int8 tensors, worst SQNR first; exclude a node with --exclude):\n",
                order.size());
    std::printf("%4s %9s  %-14s %-40s %s\n", "rank", "SQNR dB", "kernel", "node", "tensor");
    for (size_t i = 0; i < order.size(); ++i) {
      const Entry& e = entries_.at(order[i].second);
      std::printf("%4zu %9.2f  %-14s %-40s %s\n", i + 1, order[i].first, e.kernel.c_str(),
                  e.node.c_str(), order[i].second.c_str());
    }
  }

 private:
  struct Entry {
    std::string node, kernel;
    double signal = 0, noise = 0;
  };
  const runtime::Plan& plan_;
  absl::flat_hash_map<std::string, Tensor> fp32_;
  std::map<std::string, Entry> entries_;
};

}  // namespace

absl::Status CompareCommand(const CompareOptions& options) {
  const int threads = options.threads > 0
                          ? options.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  QCC_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, LoadModel(options.model));
  if (options.per_layer && options.device != "cpu") {
    return absl::InvalidArgumentError(
        "--per-layer reads every step's output on the CPU runtime: use it with --device cpu");
  }
  QCC_ASSIGN_OR_RETURN(const int64_t max_memory, ParseMaxMemory(options.max_memory));
  QCC_ASSIGN_OR_RETURN(std::unique_ptr<PlanSession> session,
                       PlanSession::Open(options.plan, options.device, threads, max_memory));
  const runtime::Engine* engine = &session->engine();
  const auto& meta = engine->plan().metadata;
  if (auto it = meta.find("fingerprint");
      it != meta.end() && it->second != ir::Fingerprint(*graph)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "plan '", options.plan, "' was compiled from another model than '", options.model,
        "' (fingerprint ", it->second, " vs ", ir::Fingerprint(*graph), ")"));
  }
  QCC_RETURN_IF_ERROR(CheckDirectory(options.data, "data folder"));
  QCC_ASSIGN_OR_RETURN(calib::PreprocessSpec spec,
                       ChoosePreprocessing(options.preprocess, options.data, *graph));
  std::optional<Labels> labels;
  if (options.labels_from_folders) {
    QCC_ASSIGN_OR_RETURN(labels, Labels::FromFolders(options.data));
  } else if (!options.labels.empty()) {
    QCC_ASSIGN_OR_RETURN(labels, Labels::FromFile(options.labels, options.data));
  }
  int64_t pairs = 0;
  if (!options.pairs.empty()) {
    QCC_ASSIGN_OR_RETURN(pairs, CountPairs(options.pairs));
    if (options.max_samples > 0) pairs = std::min(pairs, options.max_samples / 2);
  }
  QCC_RETURN_IF_ERROR(passes::RunPipeline(*graph, passes::DefaultPipeline()).status());
  PerLayer per_layer(engine->plan());
  cpu::EvalOptions eval_options;
  eval_options.num_threads = threads;
  eval_options.max_memory = max_memory;
  if (options.per_layer) {
    eval_options.on_value = [&](const ir::Value& v, const Tensor& t) { per_layer.OnFp32(v, t); };
  }
  QCC_ASSIGN_OR_RETURN(std::unique_ptr<cpu::Evaluator> evaluator,
                       cpu::Evaluator::Create(*graph, eval_options));
  if (options.per_layer) {
    session->cpu_context()->set_step_observer(
        [&](size_t step, int32_t buffer, const Tensor& value) {
          per_layer.OnStep(step, buffer, value);
        });
  }

  calib::DatasetOptions data_options;
  data_options.preprocess = spec;
  data_options.max_samples = options.max_samples;
  if (!options.shard.empty()) {
    QCC_RETURN_IF_ERROR(
        ParseShard(options.shard, &data_options.shard_index, &data_options.shard_count));
  }
  QCC_ASSIGN_OR_RETURN(
      std::unique_ptr<calib::Dataset> data,
      calib::Dataset::Open(options.data, calib::GraphDataInputs(*graph), data_options));
  const int64_t batch =
      std::clamp<int64_t>(options.batch, engine->batch_min(), engine->batch_max());

  std::vector<OutputMetrics> metrics;
  for (const runtime::TensorInfo& out : engine->outputs()) metrics.emplace_back(out.name);
  LabelledAccuracy fp32_accuracy, plan_accuracy;
  RetrievalMetrics retrieval;
  ProgressBar progress("samples");
  const auto start = std::chrono::steady_clock::now();
  std::vector<calib::Sample> pending;
  int64_t samples = 0;
  auto flush = [&]() -> absl::Status {
    if (pending.empty()) return absl::OkStatus();
    std::vector<Tensor> inputs = Stack(pending);
    if (options.per_layer) {
      // The evaluator reports node outputs only; the model inputs are quantized too.
      for (size_t i = 0; i < inputs.size(); ++i) per_layer.OnFp32(*graph->inputs()[i], inputs[i]);
    }
    QCC_ASSIGN_OR_RETURN(std::vector<Tensor> want, evaluator->Run(inputs));
    QCC_ASSIGN_OR_RETURN(std::vector<Tensor> got, session->Run(inputs));
    std::vector<int> batch_labels;
    for (const calib::Sample& s : pending)
      batch_labels.push_back(labels ? labels->Of(s.source) : -1);
    for (size_t i = 0; i < metrics.size(); ++i) {
      const Tensor ref = CastTensor(want[i], DType::kFloat32);
      const Tensor q = CastTensor(got[i], DType::kFloat32);
      metrics[i].Add(ref, q);
      if (i == 0 && labels) {
        fp32_accuracy.Add(ref, batch_labels);
        plan_accuracy.Add(q, batch_labels);
      }
      if (i == 0 && pairs > 0) retrieval.Add(ref, q);
    }
    samples += static_cast<int64_t>(pending.size());
    progress.Update(samples, data->size());
    pending.clear();
    return absl::OkStatus();
  };
  while (true) {
    calib::Sample sample;
    QCC_ASSIGN_OR_RETURN(bool more, data->Next(&sample));
    if (!more) break;
    const bool same =
        pending.empty() || pending.front().tensors[0].dims() == sample.tensors[0].dims();
    if (!same) QCC_RETURN_IF_ERROR(flush());
    pending.push_back(std::move(sample));
    if (static_cast<int64_t>(pending.size()) >= batch) QCC_RETURN_IF_ERROR(flush());
  }
  QCC_RETURN_IF_ERROR(flush());
  progress.Finish();
  if (pairs > 0 && samples != 2 * pairs) {
    return absl::InvalidArgumentError(
        absl::StrCat("--pairs '", options.pairs, "': ", pairs, " pairs need ", 2 * pairs,
                     " samples (the query, then the document of each pair, in order); '",
                     options.data, "' gave ", samples));
  }
  if (pairs > 0 && !retrieval.consistent()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--pairs '", options.pairs, "': the embeddings of '", options.data,
                     "' do not all have the same size (samples of different lengths?)"));
  }
  retrieval.Finish();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::printf("compared %lld samples in %.1f s: fp32 model (CPU evaluator) vs plan %s (%s) on %s\n",
              static_cast<long long>(samples), seconds, options.plan.c_str(),
              meta.count("precision") ? meta.at("precision").c_str() : "?",
              session->device().c_str());
  for (const OutputMetrics& m : metrics) std::printf("%s\n", m.Describe().c_str());
  std::string machine = absl::StrCat("compare: samples=", samples);
  if (!metrics.empty()) absl::StrAppend(&machine, " ", metrics.front().MachineFields());
  if (labels) {
    // Top-5 only where it says something: a 2-class model always has every label in its top 5.
    const bool top5 = fp32_accuracy.has_top5();
    auto top5_text = [&](const LabelledAccuracy& a) {
      return top5 ? absl::StrFormat(" top-5 %.2f%%", 100 * a.top5()) : std::string();
    };
    std::printf(
        "labelled (%lld samples with a label): fp32 top-1 %.2f%%%s | plan top-1 %.2f%%%s | "
        "top-1 change %+.2f points\n",
        static_cast<long long>(fp32_accuracy.count()), 100 * fp32_accuracy.top1(),
        top5_text(fp32_accuracy).c_str(), 100 * plan_accuracy.top1(),
        top5_text(plan_accuracy).c_str(), 100 * (plan_accuracy.top1() - fp32_accuracy.top1()));
    absl::StrAppend(&machine, absl::StrFormat(" fp32_top1=%.4f plan_top1=%.4f",
                                              fp32_accuracy.top1(), plan_accuracy.top1()));
    if (top5) {
      absl::StrAppend(&machine, absl::StrFormat(" fp32_top5=%.4f plan_top5=%.4f",
                                                fp32_accuracy.top5(), plan_accuracy.top5()));
    }
  }
  if (pairs > 0) {
    std::printf("%s\n", retrieval.Describe().c_str());
    absl::StrAppend(&machine,
                    absl::StrFormat(" fp32_recall1=%.4f plan_recall1=%.4f same_nearest=%.4f",
                                    retrieval.fp32_recall(), retrieval.plan_recall(),
                                    retrieval.same_nearest()));
  }
  if (options.per_layer) per_layer.Print();
  std::printf("%s\n", machine.c_str());
  std::fflush(stdout);
  return absl::OkStatus();
}

}  // namespace qcc::tools
