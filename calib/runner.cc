#include "calib/runner.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backend_cpu/evaluator.h"
#include "backend_cuda/cuda_info.h"
#include "calib/runner_internal.h"
#include "ir/printer.h"
#include "kernels/cpu/thread_pool.h"
#include "passes/passes.h"
#include "support/status.h"

namespace qcc::calib {

absl::StatusOr<std::vector<passes::PassRecord>> InstrumentForCalibration(ir::Graph& graph) {
  passes::Pipeline pipeline = passes::OnnxFormPipeline();
  pipeline.push_back(passes::CreateInsertObserversPass());
  return passes::RunPipeline(graph, pipeline);
}

absl::StatusOr<Device> ParseDevice(absl::string_view text) {
  if (text == "auto") return Device::kAuto;
  if (text == "cpu") return Device::kCpu;
  if (text == "cuda") return Device::kCuda;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown device '", text, "': use auto, cpu or cuda"));
}

namespace {

/// Adds `x` to `stats`, split across threads: each piece fills its own TensorStats and the
/// pieces merge, which TensorStats guarantees is the same as adding everything in one stream.
void AddValues(const Tensor& x, int num_threads, TensorStats& stats) {
  constexpr int64_t kMinPerThread = 1 << 16;
  const int64_t n = x.numel();
  const float* data = x.data<float>();
  const int threads = static_cast<int>(std::min<int64_t>(num_threads, n / kMinPerThread));
  if (threads <= 1) {
    stats.Add(data, n);
    return;
  }
  std::vector<TensorStats> parts(threads);
  const int64_t piece = (n + threads - 1) / threads;
  cpu::ParallelFor(threads, threads, [&](int64_t begin, int64_t end, int) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t lo = p * piece;
      const int64_t hi = std::min(n, lo + piece);
      if (lo < hi) parts[p].Add(data + lo, hi - lo);
    }
  });
  for (const TensorStats& part : parts) stats.Merge(part);
}

/// Stacks samples of equal shapes [1, ...] into one [B, ...] tensor per input.
std::vector<Tensor> Stack(const std::vector<Sample>& samples) {
  std::vector<Tensor> batch;
  for (size_t i = 0; i < samples.front().tensors.size(); ++i) {
    const Tensor& first = samples.front().tensors[i];
    Dims dims = first.dims();
    dims[0] = static_cast<int64_t>(samples.size());
    Tensor t(first.dtype(), dims);
    uint8_t* out = static_cast<uint8_t*>(t.raw());
    for (const Sample& s : samples) {
      std::memcpy(out, s.tensors[i].raw(), first.nbytes());
      out += first.nbytes();
    }
    batch.push_back(std::move(t));
  }
  return batch;
}

bool SameShapes(const Sample& a, const Sample& b) {
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    if (a.tensors[i].dims() != b.tensors[i].dims()) return false;
  }
  return true;
}

/// The batch the model allows: 1 when an input's leading extent is fixed at 1.
absl::StatusOr<int64_t> EffectiveBatch(const ir::Graph& graph, int64_t requested) {
  for (const ir::Value* in : graph.inputs()) {
    if (!in->type().has_rank() || in->type().dims->empty()) continue;
    const ir::Dim d = in->type().dims->front();
    if (!ir::IsKnown(d)) continue;
    if (d == 1) return int64_t{1};
    return absl::UnimplementedError(absl::StrCat(
        "input '", in->name(), "' has a fixed batch of ", d,
        "; calibration feeds one sample at a time or a dynamic batch: export the model with a "
        "batch of 1 or a dynamic batch dimension"));
  }
  return std::max<int64_t>(1, requested);
}

}  // namespace

namespace internal {

absl::Status StreamBatches(Dataset& data, const RunnerOptions& options, int64_t batch,
                           const std::function<absl::Status(const std::vector<Tensor>&)>& run_batch,
                           CalibrationRun* run) {
  std::vector<Sample> pending;
  int64_t reported = 0;  // samples read when progress was last reported
  auto flush = [&]() -> absl::Status {
    if (pending.empty()) return absl::OkStatus();
    const absl::Status status = run_batch(Stack(pending));
    if (!status.ok()) {
      return absl::Status(
          status.code(), absl::StrCat("running the batch that starts with ", pending.front().source,
                                      ": ", status.message()));
    }
    run->samples += static_cast<int64_t>(pending.size());
    reported = pending.back().index + 1;
    pending.clear();
    // After every batch, also those cut short by a change of shape (images of varying size).
    if (options.on_progress) options.on_progress(reported, data.size());
    return absl::OkStatus();
  };
  data.Rewind();
  while (true) {
    Sample sample;
    QCC_ASSIGN_OR_RETURN(bool more, data.Next(&sample));
    if (!more) break;
    if (!pending.empty() && !SameShapes(pending.front(), sample)) QCC_RETURN_IF_ERROR(flush());
    pending.push_back(std::move(sample));
    if (static_cast<int64_t>(pending.size()) >= batch) QCC_RETURN_IF_ERROR(flush());
  }
  QCC_RETURN_IF_ERROR(flush());
  // Undecodable images at the end were read but never ran.
  if (options.on_progress && reported < data.size()) options.on_progress(data.size(), data.size());
  run->skipped_files = data.skipped_files();
  return absl::OkStatus();
}

}  // namespace internal

absl::StatusOr<CalibrationRun> RunCalibration(const ir::Graph& graph, Dataset& data,
                                              const RunnerOptions& options) {
  // Observer id -> tensor name.
  std::vector<std::string> names;
  for (const auto& node : graph.nodes()) {
    if (node->kind() != ir::OpKind::kObserve) continue;
    const int64_t id = node->attrs<ir::ObserveAttrs>().observer_id;
    if (id < 0) return absl::InternalError("negative observer id");
    if (static_cast<int64_t>(names.size()) <= id) names.resize(id + 1);
    names[id] = node->input(0)->name();
  }
  if (names.empty()) {
    return absl::InvalidArgumentError(
        "the model has no tensor to observe: none of its ops can run in int8, so there is "
        "nothing to calibrate");
  }
  QCC_ASSIGN_OR_RETURN(const int64_t batch, EffectiveBatch(graph, options.batch));
  // The GPU when asked for, or for auto when one is present (auto falls back to the CPU for a
  // model the CUDA runtime cannot run).
  if (options.device == Device::kCuda ||
      (options.device == Device::kAuto && cuda::DeviceCount() > 0)) {
    absl::StatusOr<CalibrationRun> gpu =
        internal::RunCalibrationCuda(graph, data, options, names, batch);
    if (gpu.ok() || options.device == Device::kCuda ||
        gpu.status().code() != absl::StatusCode::kUnimplemented) {
      return gpu;
    }
  }
  CalibrationRun run;
  run.device = Device::kCpu;
  run.batch = batch;
  const int threads = options.num_threads > 0
                          ? options.num_threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  std::vector<TensorStats> stats(names.size());
  cpu::EvalOptions eval_options;
  eval_options.num_threads = threads;
  eval_options.max_memory = options.max_memory;
  eval_options.on_observe = [&](int64_t id, const Tensor& x) { AddValues(x, threads, stats[id]); };
  QCC_ASSIGN_OR_RETURN(std::unique_ptr<cpu::Evaluator> evaluator,
                       cpu::Evaluator::Create(graph, eval_options));
  QCC_RETURN_IF_ERROR(internal::StreamBatches(
      data, options, batch,
      [&](const std::vector<Tensor>& inputs) { return evaluator->Run(inputs).status(); }, &run));
  for (size_t id = 0; id < names.size(); ++id) {
    if (names[id].empty()) continue;
    run.tensors[names[id]].Merge(stats[id]);
  }
  return run;
}

}  // namespace qcc::calib
