// The calibration runner on a CUDA GPU (calib/runner.h, Device::kCuda): the instrumented graph
// is lowered to an fp32 plan and run by the CUDA runtime; after every step that produces an
// observed tensor, the observer kernels (kernels/cuda/observer_kernels.h) reduce it on
// the same stream to min/max/counts and a histogram at the batch's own power-of-two range, and
// only those statistics come back to the host, where TensorStats::FromParts + Merge add them
// exactly (TensorStats histograms depend only on the set of values seen, so the table equals the
// CPU runner's). Observed model inputs are already on the host and are added there.
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "backend_cpu/lowering.h"
#include "calib/runner_internal.h"
#include "kernels/cuda/observer_collect.h"
#include "runtime/cuda/cuda_engine.h"
#include "support/status.h"

namespace qcc::calib::internal {

absl::StatusOr<CalibrationRun> RunCalibrationCuda(const ir::Graph& graph, Dataset& data,
                                                  const RunnerOptions& options,
                                                  const std::vector<std::string>& names,
                                                  int64_t batch) {
  cpu::LowerOptions lower;
  lower.batch_min = 1;
  lower.batch_max = batch;
  absl::StatusOr<runtime::Plan> plan = cpu::LowerToCpuPlan(graph, lower);
  if (!plan.ok()) {
    // A dynamic extent other than the batch: qcc calibrate --shape fixes it, as for compile.
    const bool extents = absl::StrContains(plan.status().message(), "dynamic extent");
    return absl::UnimplementedError(absl::StrCat(
        "the model cannot run on the CUDA runtime for calibration (", plan.status().message(),
        extents ? "); pass qcc calibrate the same --shape, or use --device cpu"
                : "); use --device cpu"));
  }
  // Observed tensor name -> observer id; then buffer id -> observer id.
  std::map<std::string, int> observer_of;
  for (size_t id = 0; id < names.size(); ++id) {
    if (!names[id].empty()) observer_of[names[id]] = static_cast<int>(id);
  }
  std::vector<int> buffer_observer(plan->buffers.size(), -1);
  std::vector<int> input_observer(plan->inputs.size(), -1);
  for (size_t b = 0; b < plan->buffers.size(); ++b) {
    auto it = observer_of.find(plan->buffers[b].name);
    if (it != observer_of.end() && plan->buffers[b].dtype == DType::kFloat32) {
      buffer_observer[b] = it->second;
    }
  }
  // Inputs are observed on the host, fp16 ones (an fp16 model's) widened as the CPU runner sees
  // them; the plan's own fp32 copy of such an input is a buffer of another name.
  for (size_t i = 0; i < plan->inputs.size(); ++i) {
    const runtime::PlanBuffer& buffer = plan->buffers[plan->inputs[i].buffer];
    auto it = observer_of.find(buffer.name);
    if (it != observer_of.end() &&
        (buffer.dtype == DType::kFloat32 || buffer.dtype == DType::kFloat16)) {
      input_observer[i] = it->second;
    }
  }
  QCC_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::CudaEngine> engine,
                       runtime::CudaEngine::Create(*std::move(plan)));
  QCC_ASSIGN_OR_RETURN(std::unique_ptr<runtime::CudaExecutionContext> context,
                       engine->CreateContext());
  QCC_ASSIGN_OR_RETURN(std::unique_ptr<cuda::DeviceStatsSlots> slots,
                       cuda::DeviceStatsSlots::Create(static_cast<int>(names.size())));

  CalibrationRun run;
  run.device = Device::kCuda;
  run.batch = batch;
  std::vector<TensorStats> stats(names.size());
  absl::Status observe_status;
  context->set_device_step_observer([&](size_t step, int32_t buffer, const void* device_data,
                                        DType dtype, const Dims& dims, void* stream) {
    const int id = buffer >= 0 ? buffer_observer[buffer] : -1;
    if (id < 0 || dtype != DType::kFloat32 || !observe_status.ok()) return;
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    observe_status = slots->Enqueue(id, static_cast<const float*>(device_data), n, stream);
  });

  std::vector<cuda::BatchStats> batch_stats;
  std::vector<bool> filled;
  auto run_batch = [&](const std::vector<Tensor>& inputs) -> absl::Status {
    for (size_t i = 0; i < inputs.size() && i < input_observer.size(); ++i) {
      if (input_observer[i] < 0) continue;
      if (inputs[i].dtype() == DType::kFloat32) {
        stats[input_observer[i]].Add(inputs[i].data<float>(), inputs[i].numel());
      } else if (inputs[i].dtype() == DType::kFloat16) {
        const Tensor wide = CastTensor(inputs[i], DType::kFloat32);
        stats[input_observer[i]].Add(wide.data<float>(), wide.numel());
      }
    }
    QCC_RETURN_IF_ERROR(context->Run(inputs).status());
    QCC_RETURN_IF_ERROR(observe_status);
    QCC_RETURN_IF_ERROR(slots->Collect(context->stream(), &batch_stats, &filled));
    for (size_t id = 0; id < batch_stats.size(); ++id) {
      if (!filled[id]) continue;
      const cuda::BatchStats& s = batch_stats[id];
      const bool none = s.range_log2 == cuda::kStatsNoRange;
      QCC_ASSIGN_OR_RETURN(
          TensorStats part,
          TensorStats::FromParts(s.min, s.max, static_cast<int64_t>(s.count),
                                 static_cast<int64_t>(s.nan), static_cast<int64_t>(s.posinf),
                                 static_cast<int64_t>(s.neginf),
                                 none ? 0.0 : std::ldexp(1.0, s.range_log2),
                                 std::vector<int64_t>(s.bins, s.bins + cuda::kStatsBins)));
      stats[id].Merge(part);
    }
    return absl::OkStatus();
  };
  QCC_RETURN_IF_ERROR(StreamBatches(data, options, batch, run_batch, &run));
  for (size_t id = 0; id < names.size(); ++id) {
    if (!names[id].empty()) run.tensors[names[id]].Merge(stats[id]);
  }
  return run;
}

}  // namespace qcc::calib::internal
