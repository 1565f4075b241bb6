#include "calib/runner.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "backend_cpu/evaluator.h"
#include "backend_cuda/cuda_info.h"
#include "calib/runner_internal.h"
#include "calib/sample_prefetch.h"
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

/// For each observer id, the observer ids whose tensors hold exactly its tensor's values (a
/// Concat of observed tensors, or an observed tensor reshaped, flattened, squeezed or
/// transposed), in graph order; empty where it must be observed itself. The statistics of such a
/// tensor are the merge of theirs (TensorStats::Merge equals adding both streams), so they need
/// not be collected twice: squeezenet1.1's 8 Concats hold a third of the values its observers see.
std::vector<std::vector<int64_t>> DerivedObservers(const ir::Graph& graph, size_t ids) {
  absl::flat_hash_map<const ir::Value*, int64_t> observed;
  for (const auto& node : graph.nodes()) {
    if (node->kind() == ir::OpKind::kObserve) {
      observed.emplace(node->input(0), node->attrs<ir::ObserveAttrs>().observer_id);
    }
  }
  std::vector<std::vector<int64_t>> derived(ids);
  for (const auto& node : graph.nodes()) {
    if (node->kind() != ir::OpKind::kObserve) continue;
    const ir::Value* v = node->input(0);
    const ir::Node* p = v->producer();
    if (p == nullptr || p->num_outputs() != 1) continue;
    const ir::OpKind k = p->kind();
    const bool concat = k == ir::OpKind::kConcat;
    if (!concat && k != ir::OpKind::kReshape && k != ir::OpKind::kFlatten &&
        k != ir::OpKind::kSqueeze && k != ir::OpKind::kUnsqueeze && k != ir::OpKind::kTranspose) {
      continue;
    }
    std::vector<int64_t> from;
    const int data_inputs = concat ? p->num_inputs() : 1;
    for (int i = 0; i < data_inputs; ++i) {
      auto it = observed.find(p->input(i));
      if (it == observed.end() || p->input(i)->dtype() != v->dtype()) {
        from.clear();
        break;
      }
      from.push_back(it->second);
    }
    derived[node->attrs<ir::ObserveAttrs>().observer_id] = std::move(from);
  }
  return derived;
}

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

/// The statistics the observers of the batch this thread runs report into.
thread_local std::vector<TensorStats>* t_lane_stats = nullptr;

/// Points t_lane_stats at a lane's statistics for a scope.
class LaneScope {
 public:
  explicit LaneScope(std::vector<TensorStats>* stats) : saved_(t_lane_stats) {
    t_lane_stats = stats;
  }
  ~LaneScope() { t_lane_stats = saved_; }
  LaneScope(const LaneScope&) = delete;
  LaneScope& operator=(const LaneScope&) = delete;

 private:
  std::vector<TensorStats>* saved_;
};

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

/// A batch's failed run as the error, naming the batch's first sample's file.
absl::Status BatchFailed(const absl::Status& status, const Sample& first) {
  return absl::Status(status.code(), absl::StrCat("running the batch that starts with ",
                                                  first.source, ": ", status.message()));
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
  std::vector<Sample> pending;  // the batch being filled
  int64_t reported = 0;         // samples read when progress was last reported
  // Runs the batch being filled.
  auto flush = [&]() -> absl::Status {
    if (pending.empty()) return absl::OkStatus();
    const absl::Status status = run_batch(Stack(pending));
    if (!status.ok()) return BatchFailed(status, pending.front());
    run->samples += static_cast<int64_t>(pending.size());
    reported = pending.back().index + 1;
    // After every batch, also those cut short by a change of shape (images of varying size).
    if (options.on_progress) options.on_progress(reported, data.size());
    pending.clear();
    return absl::OkStatus();
  };
  {
    // The next batch's samples are decoded while this one runs.
    SamplePrefetcher reader(data, batch);
    while (true) {
      Sample sample;
      QCC_ASSIGN_OR_RETURN(bool more, reader.Next(&sample));
      if (!more) break;
      if (!pending.empty() && !SameShapes(pending.front(), sample)) QCC_RETURN_IF_ERROR(flush());
      pending.push_back(std::move(sample));
      if (static_cast<int64_t>(pending.size()) >= batch) QCC_RETURN_IF_ERROR(flush());
    }
    QCC_RETURN_IF_ERROR(flush());
  }  // the reader is joined: `data` is ours again
  // Undecodable images at the end were read but never ran.
  if (options.on_progress && reported < data.size()) options.on_progress(data.size(), data.size());
  run->skipped_files = data.skipped_files();
  return absl::OkStatus();
}

absl::Status StreamLanes(Dataset& data, const RunnerOptions& options, int lanes,
                         const RunLaneSampleFn& run_sample, CalibrationRun* run) {
  std::mutex mu;  // guards everything below that the lanes share
  int64_t done = 0;
  bool stop = false;          // a read or a run failed: lanes take no more samples
  absl::Status read_error;    // where reading stopped
  int64_t failed_index = -1;  // the failed sample that comes first in reading order
  absl::Status failed;
  {
    SamplePrefetcher reader(data, 2 * static_cast<int64_t>(lanes));
    cpu::ParallelFor(lanes, lanes, [&](int64_t lane, int64_t, int) {
      while (true) {
        {
          std::lock_guard<std::mutex> lock(mu);
          if (stop) return;
        }
        Sample sample;
        absl::StatusOr<bool> more = reader.Next(&sample);
        if (!more.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          if (read_error.ok()) read_error = more.status();
          stop = true;
          return;
        }
        if (!*more) return;
        const absl::Status status = run_sample(static_cast<int>(lane), sample.tensors);
        std::lock_guard<std::mutex> lock(mu);
        if (!status.ok()) {
          if (failed_index < 0 || sample.index < failed_index) {
            failed_index = sample.index;
            failed = BatchFailed(status, sample);
          }
          stop = true;
          return;
        }
        ++run->samples;
        ++done;
        if (options.on_progress) options.on_progress(done, data.size());
      }
    });
  }  // the reader is joined: `data` is ours again
  if (!failed.ok()) return failed;
  QCC_RETURN_IF_ERROR(read_error);
  // Undecodable images at the end were read but never ran.
  if (options.on_progress && done < data.size()) options.on_progress(data.size(), data.size());
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

  // At batch 1, one lane per thread, each running whole samples with its own statistics
  // (StreamLanes): a sample's kernels and observers then run on one thread, with no fork and
  // join per op (squeezenet1.1 on 2 threads: 3.84 -> 3.53 s; a quarter of the time went to the
  // kernel, mostly a worker yielding while it waited). The lanes' statistics merge at the end,
  // and TensorStats::Merge is the same as adding everything in one stream, so the table does not
  // depend on the lanes or on which samples each ran. Larger batches keep one lane: their ops are
  // big enough to share, and a second batch of activations is not free (efficientnet-lite0 at batch
  // 16: 3.33 s and 163 MB with one lane, 3.70 s and 297 MB with two). Under a --max-memory cap, one
  // lane: the cap is on one batch's activations.
  const int lanes = batch == 1 && options.max_memory == 0 ? threads : 1;
  std::vector<std::vector<TensorStats>> stats(lanes, std::vector<TensorStats>(names.size()));
  cpu::EvalOptions eval_options;
  eval_options.num_threads = threads;
  eval_options.max_memory = options.max_memory;
  // Observers report on the thread that runs the batch, into its lane's statistics; a kernel's
  // or AddValues' parallel loop inside a lane runs on that thread (thread_pool.h).
  const std::vector<std::vector<int64_t>> derived = DerivedObservers(graph, names.size());
  eval_options.on_observe = [&](int64_t id, const Tensor& x) {
    if (derived[id].empty()) AddValues(x, threads, (*t_lane_stats)[id]);
  };
  QCC_ASSIGN_OR_RETURN(std::unique_ptr<cpu::Evaluator> evaluator,
                       cpu::Evaluator::Create(graph, eval_options));
  if (lanes > 1) {
    QCC_RETURN_IF_ERROR(internal::StreamLanes(
        data, options, lanes,
        [&](int lane, const std::vector<Tensor>& inputs) {
          LaneScope scope(&stats[lane]);
          return evaluator->Run(inputs).status();
        },
        &run));
  } else {
    QCC_RETURN_IF_ERROR(internal::StreamBatches(
        data, options, batch,
        [&](const std::vector<Tensor>& inputs) {
          LaneScope scope(&stats[0]);
          return evaluator->Run(inputs).status();
        },
        &run));
  }
  for (size_t id = 0; id < names.size(); ++id) {
    if (names[id].empty() || !derived[id].empty()) continue;
    for (const std::vector<TensorStats>& lane : stats) run.tensors[names[id]].Merge(lane[id]);
  }
  // Then the derived ones, in graph order (a Concat of Concats finds its inputs done).
  for (const auto& node : graph.nodes()) {
    if (node->kind() != ir::OpKind::kObserve) continue;
    const int64_t id = node->attrs<ir::ObserveAttrs>().observer_id;
    if (derived[id].empty()) continue;
    TensorStats merged;
    for (int64_t from : derived[id]) merged.Merge(run.tensors.at(names[from]));
    run.tensors[names[id]] = std::move(merged);
  }
  return run;
}

}  // namespace qcc::calib
