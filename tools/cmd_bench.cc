// `qcc bench MODEL.onnx|MODEL.plan [--batch N] [--threads N] [--warmup K] [--iters K] [--shape
// NAME=DIMS] [--profile]`

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backend_cpu/evaluator.h"
#include "ir/op_kind.h"
#include "ir/printer.h"
#include "passes/passes.h"
#include "runtime/engine.h"
#include "runtime/steps.h"
#include "support/status.h"
#include "tools/commands.h"
#include "tools/plan_session.h"
#include "tools/tool_io.h"

namespace qcc::tools {
namespace {

// Parses "NAME=D0,D1,..." (also accepting 'x' between extents).
absl::StatusOr<std::pair<std::string, Dims>> ParseShapeArg(const std::string& arg) {
  QCC_ASSIGN_OR_RETURN(auto name_value, SplitNameValue(arg, "--shape"));
  Dims dims;
  for (absl::string_view part : absl::StrSplit(name_value.second, absl::ByAnyChar(",x"))) {
    int64_t d = 0;
    if (!absl::SimpleAtoi(part, &d) || d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--shape '", arg, "': extents must be non-negative integers, e.g. --shape x=1,3,64,64"));
    }
    dims.push_back(d);
  }
  return std::make_pair(name_value.first, dims);
}

// "1,3,D2,D3": known extents, the batch for a dynamic leading extent, and placeholders.
std::string ShapeTemplate(const std::vector<ir::Dim>& dims, int batch) {
  std::vector<std::string> parts;
  for (size_t a = 0; a < dims.size(); ++a) {
    parts.push_back(ir::IsKnown(dims[a]) ? absl::StrCat(dims[a])
                    : a == 0             ? absl::StrCat(batch)
                                         : absl::StrCat("D", a));
  }
  return absl::StrJoin(parts, ",");
}

// The concrete shape of each graph input: --shape when given, else the declared extents with a
// dynamic leading (batch) extent set to `batch`.
absl::StatusOr<std::vector<Dims>> InputShapes(const ir::Graph& graph, const BenchOptions& opts) {
  std::vector<Dims> shapes(graph.inputs().size());
  std::vector<bool> given(graph.inputs().size(), false);
  for (const std::string& arg : opts.shapes) {
    QCC_ASSIGN_OR_RETURN(auto name_dims, ParseShapeArg(arg));
    size_t i = 0;
    while (i < graph.inputs().size() && graph.inputs()[i]->name() != name_dims.first) ++i;
    if (i == graph.inputs().size()) {
      return absl::InvalidArgumentError(absl::StrCat("--shape '", arg,
                                                     "': the model has no input '", name_dims.first,
                                                     "'; its inputs are ", InputNameList(graph)));
    }
    shapes[i] = name_dims.second;
    given[i] = true;
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (given[i]) continue;
    const ir::Value& v = *graph.inputs()[i];
    const std::string type = ir::TypeToString(graph, v.type());
    if (!v.type().has_rank()) {
      return absl::InvalidArgumentError(absl::StrCat("input '", v.name(), "' (", type,
                                                     ") has an unknown rank; give --shape ",
                                                     v.name(), "=D0,D1,..."));
    }
    const auto& dims = *v.type().dims;
    for (size_t a = 0; a < dims.size(); ++a) {
      if (ir::IsKnown(dims[a])) {
        shapes[i].push_back(dims[a]);
      } else if (a == 0) {
        shapes[i].push_back(std::max(opts.batch, 1));
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("input '", v.name(), "' (", type, ") has a dynamic extent at axis ", a,
                         "; give its shape with --shape ", v.name(), "=",
                         ShapeTemplate(dims, std::max(opts.batch, 1))));
      }
    }
  }
  return shapes;
}

// Seeded random data: floats uniform in [-1, 1), integers and booleans 0 or 1 (valid as token
// ids, token types and attention masks: a plan refuses ids outside its embedding tables).
Tensor RandomTensor(DType dtype, const Dims& dims, std::mt19937& rng) {
  if (IsFloat(dtype)) {
    Tensor f(DType::kFloat32, dims);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = dist(rng);
    return dtype == DType::kFloat32 ? f : CastTensor(f, dtype);
  }
  Tensor n(DType::kInt64, dims);
  std::uniform_int_distribution<int64_t> dist(0, 1);
  for (int64_t i = 0; i < n.numel(); ++i) n.data<int64_t>()[i] = dist(rng);
  return dtype == DType::kInt64 ? n : CastTensor(n, dtype);
}

// A progress line on stderr, only when stderr is a terminal; redrawn at most 10 times a second.
class Progress {
 public:
  Progress() : enabled_(isatty(STDERR_FILENO) != 0) {}
  void Update(const char* phase, int i, int n) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (i != n && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    std::fprintf(stderr, "\rbench: %s %d/%d   ", phase, i, n);
    drawn_ = true;
  }
  ~Progress() {
    if (drawn_) std::fprintf(stderr, "\r%40s\r", "");
  }

 private:
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

// Time per step (a plan's step, or a node of the fused graph), from the runtime's step observer
// or the evaluator's value callback: each is called right after its step, so the time since the
// previous call is that step's. A step with several outputs is timed at its first.
class StepProfile {
 public:
  struct Row {
    std::string kind, name;
    double ms = 0;  // summed over the profiled runs
  };
  explicit StepProfile(std::vector<Row> rows) : rows_(std::move(rows)) {}

  void Reset() {
    for (Row& r : rows_) r.ms = 0;
    runs_ = 0;
  }
  void BeginRun() {
    last_ = std::chrono::steady_clock::now();
    last_step_ = -1;
    ++runs_;
  }
  void StepDone(int64_t step) {
    if (step == last_step_) return;
    const auto now = std::chrono::steady_clock::now();
    rows_[static_cast<size_t>(step)].ms +=
        std::chrono::duration<double, std::milli>(now - last_).count();
    last_ = now;
    last_step_ = step;
  }

  // Every step, slowest first, then every step kind, each as ms per run and share of the sum.
  void Print() const {
    double total = 0;
    for (const Row& r : rows_) total += r.ms;
    const double runs = std::max(runs_, 1);
    std::vector<size_t> order(rows_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return rows_[a].ms > rows_[b].ms; });
    std::printf("profile: %d runs, %zu steps, %.4g ms per run in steps\n", runs_, rows_.size(),
                total / runs);
    std::printf("  %-6s %9s %6s  %-22s %s\n", "step", "ms/run", "share", "kind", "name");
    for (size_t k = 0; k < order.size(); ++k) {
      const Row& r = rows_[order[k]];
      std::printf("  %-6zu %9.4f %5.1f%%  %-22s %s\n", order[k], r.ms / runs,
                  total > 0 ? 100.0 * r.ms / total : 0.0, r.kind.c_str(), r.name.c_str());
    }
    std::vector<std::string> kinds;
    absl::flat_hash_map<std::string, std::pair<double, int>> by_kind;
    for (const Row& r : rows_) {
      auto [it, added] = by_kind.try_emplace(r.kind, 0.0, 0);
      if (added) kinds.push_back(r.kind);
      it->second.first += r.ms;
      ++it->second.second;
    }
    std::stable_sort(kinds.begin(), kinds.end(), [&](const std::string& a, const std::string& b) {
      return by_kind[a].first > by_kind[b].first;
    });
    std::printf("  %-22s %6s %9s %6s\n", "by kind", "steps", "ms/run", "share");
    for (const std::string& k : kinds) {
      const auto& [ms, count] = by_kind[k];
      std::printf("  %-22s %6d %9.4f %5.1f%%\n", k.c_str(), count, ms / runs,
                  total > 0 ? 100.0 * ms / total : 0.0);
    }
  }

 private:
  std::vector<Row> rows_;
  int runs_ = 0;
  int64_t last_step_ = -1;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace

absl::Status BenchCommand(const BenchOptions& opts) {
  const int threads = opts.threads > 0
                          ? opts.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // What runs: the int8/fp32 plan on the runtime, or the model's fused fp32 graph (the default
  // pass pipeline, as calibration runs it) on the CPU evaluator.
  std::function<absl::Status(const std::vector<Tensor>&)> run;
  std::vector<std::pair<std::string, DType>> inputs;
  std::vector<Dims> shapes;
  std::unique_ptr<ir::Graph> graph;
  std::unique_ptr<cpu::Evaluator> evaluator;
  std::unique_ptr<PlanSession> session;
  // With --profile: a second, observed way to run (the timed runs stay unobserved).
  std::function<absl::Status(const std::vector<Tensor>&)> profiled_run;
  std::unique_ptr<StepProfile> profile;
  std::unique_ptr<cpu::Evaluator> profiled_evaluator;
  QCC_ASSIGN_OR_RETURN(const int64_t max_memory, ParseMaxMemory(opts.max_memory));
  if (absl::EndsWithIgnoreCase(opts.model, ".plan")) {
    QCC_ASSIGN_OR_RETURN(session, PlanSession::Open(opts.model, opts.device, threads, max_memory));
    const runtime::Engine* engine = &session->engine();
    const int64_t batch = opts.batch > 0 ? opts.batch : engine->batch_min();
    for (const runtime::TensorInfo& in : engine->inputs()) {
      inputs.emplace_back(in.name, in.dtype);
      Dims dims(in.dims.begin(), in.dims.end());
      if (!dims.empty() && dims[0] < 0) dims[0] = batch;
      shapes.push_back(dims);
    }
    run = [&](const std::vector<Tensor>& feeds) { return session->Run(feeds).status(); };
    if (opts.profile) {
      if (session->cpu_context() == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("--profile times the steps of the CPU runtime; '", opts.model,
                         "' runs on ", session->device(), " here: give --device cpu"));
      }
      std::vector<StepProfile::Row> rows;
      for (const runtime::PlanStep& step : engine->plan().steps) {
        rows.push_back({std::string(runtime::StepKindName(step.kind)), step.name});
      }
      profile = std::make_unique<StepProfile>(std::move(rows));
      profiled_run = [&](const std::vector<Tensor>& feeds) {
        session->cpu_context()->set_step_observer(
            [&](size_t step, int32_t, const Tensor&) { profile->StepDone(step); });
        profile->BeginRun();
        absl::Status status = session->Run(feeds).status();
        session->cpu_context()->set_step_observer(nullptr);
        return status;
      };
    }
  } else {
    QCC_ASSIGN_OR_RETURN(graph, LoadModel(opts.model));
    QCC_RETURN_IF_ERROR(passes::RunPipeline(*graph, passes::DefaultPipeline()).status());
    cpu::EvalOptions eval_options;
    eval_options.num_threads = threads;
    eval_options.max_memory = max_memory;
    QCC_ASSIGN_OR_RETURN(evaluator, cpu::Evaluator::Create(*graph, eval_options));
    QCC_ASSIGN_OR_RETURN(shapes, InputShapes(*graph, opts));
    for (const ir::Value* v : graph->inputs()) inputs.emplace_back(v->name(), v->dtype());
    run = [&](const std::vector<Tensor>& feeds) { return evaluator->Run(feeds).status(); };
    if (opts.profile) {
      absl::flat_hash_map<const ir::Node*, int64_t> index;
      for (const auto& node : graph->nodes()) {
        index[node.get()] = static_cast<int64_t>(index.size());
      }
      cpu::EvalOptions observed = eval_options;
      // Per node, not per value (on_value would turn the residual fusion off).
      observed.on_node_done = [&, index](const ir::Node& node) {
        auto it = index.find(&node);
        if (it != index.end()) profile->StepDone(it->second);
      };
      QCC_ASSIGN_OR_RETURN(profiled_evaluator, cpu::Evaluator::Create(*graph, observed));
      // A Conv fused into the Add after it runs in the Add's place: that row is the pair's.
      std::vector<StepProfile::Row> rows;
      for (const auto& node : graph->nodes()) {
        const ir::Node* conv = profiled_evaluator->FusedConvOf(*node);
        rows.push_back(conv == nullptr
                           ? StepProfile::Row{std::string(ir::OpName(node->kind())), node->name()}
                           : StepProfile::Row{"Conv+Add", conv->name()});
      }
      profile = std::make_unique<StepProfile>(std::move(rows));
      profiled_run = [&](const std::vector<Tensor>& feeds) {
        profile->BeginRun();
        return profiled_evaluator->Run(feeds).status();
      };
    }
  }

  std::mt19937 rng(opts.seed);
  std::vector<Tensor> feeds;
  int64_t batch = -1;
  for (size_t i = 0; i < shapes.size(); ++i) {
    feeds.push_back(RandomTensor(inputs[i].second, shapes[i], rng));
    std::printf("input '%s': %s%s (random, seed %u)\n", inputs[i].first.c_str(),
                std::string(DTypeName(inputs[i].second)).c_str(), DimsToString(shapes[i]).c_str(),
                opts.seed);
    if (batch < 0 && !shapes[i].empty()) batch = shapes[i][0];
  }
  if (batch < 0) batch = 1;
  if (opts.batch > 0 && batch != opts.batch) {
    std::fprintf(stderr,
                 "qcc: note: the model's inputs fix the batch at %lld; --batch %d ignored\n",
                 static_cast<long long>(batch), opts.batch);
  }

  std::vector<double> ms;
  {
    Progress progress;
    for (int i = 0; i < opts.warmup; ++i) {
      progress.Update("warmup", i + 1, opts.warmup);
      QCC_RETURN_IF_ERROR(run(feeds));
    }
    for (int i = 0; i < opts.iters; ++i) {
      progress.Update("iteration", i + 1, opts.iters);
      const auto start = std::chrono::steady_clock::now();
      QCC_RETURN_IF_ERROR(run(feeds));
      const auto stop = std::chrono::steady_clock::now();
      ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
    }
    if (profile != nullptr) {
      // As many observed runs as timed ones, after one to warm the second evaluator up.
      if (profiled_evaluator != nullptr) QCC_RETURN_IF_ERROR(profiled_run(feeds));
      profile->Reset();
      for (int i = 0; i < opts.iters; ++i) {
        progress.Update("profiled run", i + 1, opts.iters);
        QCC_RETURN_IF_ERROR(profiled_run(feeds));
      }
    }
  }
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  const double median = n % 2 == 1 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  // p90 by nearest rank: the smallest sample with at least 90% of samples at or below it.
  const double p90 = ms[static_cast<size_t>(std::ceil(0.9 * n)) - 1];
  const double throughput = static_cast<double>(batch) * 1000.0 / median;

  if (profile != nullptr) profile->Print();
  std::printf("latency: median %.4g ms, p90 %.4g ms (%d iterations after %d warmup, %d threads)\n",
              median, p90, opts.iters, opts.warmup, threads);
  std::printf("throughput: %.1f samples/s\n", throughput);
  const std::string device = session != nullptr ? session->device() : "cpu";
  std::printf(
      "bench: model=%s batch=%lld threads=%d median_ms=%.6g p90_ms=%.6g throughput=%.6g "
      "device=%s\n",
      opts.model.c_str(), static_cast<long long>(batch), threads, median, p90, throughput,
      device.c_str());
  std::fflush(stdout);
  return absl::OkStatus();
}

}  // namespace qcc::tools
